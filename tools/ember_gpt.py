"""nn::GPT's PyTorch twin: the same layers (PyTorch's own torch.nn.TransformerEncoderLayer blocks), the same
state_dict keys and the same initialisation, so that an Ember GPT safetensors file loads here with
load_state_dict(strict=True) and the other way round.

    import sys; sys.path.insert(0, "tools")
    from ember_gpt import GPT
    model = GPT(vocab_size=65, context=128, dim=128, layers=4, heads=4)   # GPTOptions' fields and defaults
    logits = model(tokens)                                                 # i64 [B, T] → [B, T, V]

Keys (nn/transformer.h): tok_emb.weight [V, D]; pos_emb.weight [context, D] (learned only; the sinusoidal
table is a non-persistent buffer pos_emb.pe); blocks.{i}.* (TransformerEncoderLayer: norm_first, gelu,
batch_first, dim_feedforward = mlp_ratio·D); ln_f.weight/bias; head.weight [V, D] only without tie_weights.
bias=False removes every bias of the blocks and of ln_f (PyTorch 2.1's bias=False, done by hand for 1.13).
Written for Debian's python3-torch 1.13 (no is_causal: the causal mask is an explicit float mask).
"""
import math

import torch
import torch.nn.functional as F
from torch import nn


class SinusoidalPositionalEncoding(nn.Module):
    """pe[p, 2i] = sin(p / 10000^(2i/D)), pe[p, 2i+1] = cos(same), as nn::SinusoidalPositionalEncoding."""

    def __init__(self, max_len, dim):
        super().__init__()
        pos = torch.arange(max_len, dtype=torch.float64)[:, None]
        i = torch.arange(dim)
        angle = pos * torch.exp(-math.log(10000.0) * (i - i % 2).to(torch.float64) / dim)
        pe = torch.where(i % 2 == 0, torch.sin(angle), torch.cos(angle))
        self.register_buffer("pe", pe.to(torch.float32), persistent=False)

    def forward(self, x, offset=0):
        return x + self.pe[offset:offset + x.size(-2)].to(x.dtype)


def _drop_bias(module, name="bias"):
    setattr(module, name, None)  # a registered parameter set to None: not in state_dict, None in forward


class GPT(nn.Module):
    def __init__(self, vocab_size, context=128, dim=128, layers=4, heads=4, mlp_ratio=4, dropout=0.1,
                 position="learned", tie_weights=True, bias=True):
        super().__init__()
        assert position in ("learned", "sinusoidal"), position
        self.context = context
        self.tok_emb = nn.Embedding(vocab_size, dim)
        self.pos_emb = nn.Embedding(context, dim) if position == "learned" else SinusoidalPositionalEncoding(context, dim)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(dim, heads, mlp_ratio * dim, dropout, activation="gelu", batch_first=True,
                                       norm_first=True) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)
        self.head = None if tie_weights else nn.Linear(dim, vocab_size, bias=False)
        if not bias:
            for b in self.blocks:
                _drop_bias(b.self_attn, "in_proj_bias")
                for m in (b.self_attn.out_proj, b.linear1, b.linear2, b.norm1, b.norm2):
                    _drop_bias(m)
            _drop_bias(self.ln_f)
        # GPT-2's init, as nn::GPT: N(0, 0.02), the residual projections N(0, 0.02/sqrt(2·layers)), zero biases.
        residual = 0.02 / math.sqrt(2 * layers)
        with torch.no_grad():
            self.tok_emb.weight.normal_(0, 0.02)
            if position == "learned":
                self.pos_emb.weight.normal_(0, 0.02)
            for b in self.blocks:
                b.self_attn.in_proj_weight.normal_(0, 0.02)
                b.self_attn.out_proj.weight.normal_(0, residual)
                b.linear1.weight.normal_(0, 0.02)
                b.linear2.weight.normal_(0, residual)
                for t in (b.self_attn.in_proj_bias, b.self_attn.out_proj.bias, b.linear1.bias, b.linear2.bias):
                    if t is not None:
                        t.zero_()
            if self.head is not None:
                self.head.weight.normal_(0, 0.02)

    def forward(self, tokens):
        T = tokens.size(1)
        assert T <= self.context, f"a sequence of {T} tokens is longer than the context {self.context}"
        x = self.tok_emb(tokens)
        x = x + self.pos_emb.weight[:T] if isinstance(self.pos_emb, nn.Embedding) else self.pos_emb(x)
        x = self.drop(x)
        mask = torch.triu(torch.full((T, T), float("-inf"), dtype=x.dtype, device=x.device), 1)
        for b in self.blocks:
            x = b(x, src_mask=mask)
        x = self.ln_f(x)
        return F.linear(x, self.tok_emb.weight) if self.head is None else self.head(x)
