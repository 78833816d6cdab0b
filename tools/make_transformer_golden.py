#!/usr/bin/python3
"""Golden values for tests/test_transformer.cpp, from PyTorch's own layers (Debian's python3-torch 1.13):

    /usr/bin/python3 tools/make_transformer_golden.py
        # writes tests/data/transformer_golden.safetensors and tests/data/gpt_torch.safetensors

Cases, each in f64 and f32 (PyTorch computes each dtype itself), in eval mode (dropout off):
  - torch.nn.MultiheadAttention: batch_first true/false, self- and cross-attention, bool/float attn_mask
    ([L, S] and [B·H, L, S]), key_padding_mask, unbatched, averaged and per-head weights;
  - torch.nn.TransformerEncoderLayer: norm_first true/false, relu/gelu, causal and padding masks;
  - tools/ember_gpt.py's GPT (the twin of nn::GPT): learned/tied and sinusoidal/untied/bias=False.
For case NAME and dtype D the file holds NAME.D.p.<key> (the layer's state_dict: every parameter random, the
biases and norms too, so that none hides behind 0 or 1), the inputs (x, or q/k/v; masks), the outputs (y,
and w the attention weights), a random cotangent r and the gradients of sum(y·r): NAME.D.g.<key> for every
parameter and NAME.D.gx (gq, gk, gv) for the inputs.

gpt_torch.safetensors is the "gpt_a" twin's state_dict as PyTorch saves it (f32): Ember loads it with
strict=True and saves it back, and the test compares the two files' keys and bytes.
"""
import pathlib
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from ember_gpt import GPT  # noqa: E402

torch.manual_seed(0)
out = {}
DTYPES = ((torch.float64, "f64"), (torch.float32, "f32"))


def randomize(module):
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(torch.randn(p.shape, dtype=torch.float64) * (0.5 if p.dim() > 1 else 0.3)
                    + (1.0 if name.endswith("norm1.weight") or name.endswith("norm2.weight") else 0.0))


def record(prefix, module, inputs, y, w=None):
    """inputs: {name: leaf tensor that requires grad or a mask}; y the output, w the weights."""
    r = torch.randn(y.shape, dtype=torch.float64).to(y.dtype)
    (y * r).sum().backward()
    for k, v in module.state_dict().items():
        out[f"{prefix}.p.{k}"] = v.detach().clone().contiguous()
    for k, p in module.named_parameters():
        out[f"{prefix}.g.{k}"] = p.grad.detach().clone().contiguous()
    for k, t in inputs.items():
        out[f"{prefix}.{k}"] = t.detach().clone().contiguous()
        if t.requires_grad:
            out[f"{prefix}.g{k}"] = t.grad.detach().clone().contiguous()
    out[f"{prefix}.y"] = y.detach().contiguous()
    out[f"{prefix}.r"] = r.contiguous()
    if w is not None:
        out[f"{prefix}.w"] = w.detach().contiguous()


def leaf(t, dtype):
    return t.to(dtype).clone().requires_grad_()


def rn(*shape):
    return torch.randn(*shape, dtype=torch.float64)


def padding(b, s, pad):  # bool [B, S]: True = ignore; row i ignores its last pad[i] keys (never all)
    m = torch.zeros(b, s, dtype=torch.bool)
    for i, n in enumerate(pad):
        if n:
            m[i, -n:] = True
    return m


def causal_bool(n):  # True above the diagonal: not allowed (MultiheadAttention's convention)
    return torch.ones(n, n, dtype=torch.bool).triu(1)


def causal_float(n):  # generate_square_subsequent_mask
    return torch.triu(torch.full((n, n), float("-inf"), dtype=torch.float64), 1)


# --- MultiheadAttention ---------------------------------------------------------------------------------
E, H = 8, 2


def mha_case(name, batch_first, q, k=None, v=None, attn_mask=None, kpm=None, average=True, bias=True):
    base = torch.nn.MultiheadAttention(E, H, dropout=0.0, bias=bias, batch_first=batch_first)
    randomize(base)
    for dtype, tag in DTYPES:
        m = torch.nn.MultiheadAttention(E, H, dropout=0.0, bias=bias, batch_first=batch_first).to(dtype)
        m.load_state_dict({k_: t.to(dtype) for k_, t in base.state_dict().items()})
        m.eval()
        inputs = {}
        if k is None:  # self-attention: one tensor
            x = leaf(q, dtype)
            inputs["x"] = x
            qq = kk = vv = x
        else:
            qq, kk, vv = leaf(q, dtype), leaf(k, dtype), leaf(v, dtype)
            inputs.update(q=qq, k=kk, v=vv)
        am = None if attn_mask is None else (attn_mask if attn_mask.dtype == torch.bool else attn_mask.to(dtype))
        pm = None if kpm is None else (kpm if kpm.dtype == torch.bool else kpm.to(dtype))
        if am is not None:
            inputs["attn_mask"] = am
        if pm is not None:
            inputs["kpm"] = pm
        y, w = m(qq, kk, vv, key_padding_mask=pm, need_weights=True, attn_mask=am, average_attn_weights=average)
        record(f"{name}.{tag}", m, inputs, y, w)


mha_case("mha_self_bf", True, rn(2, 5, E))
mha_case("mha_cross_seq", False, rn(4, 2, E), rn(6, 2, E), rn(6, 2, E), attn_mask=rn(4, 6),
         kpm=padding(2, 6, [0, 2]), average=False)
mha_case("mha_bool_causal", True, rn(2, 5, E), attn_mask=causal_bool(5), kpm=padding(2, 5, [1, 0]))
mha_case("mha_unbatched", False, rn(5, E), rn(6, E), rn(6, E), kpm=padding(1, 6, [2])[0])
mha_case("mha_mask3d", True, rn(2, 4, E), rn(2, 5, E), rn(2, 5, E), attn_mask=rn(2 * H, 4, 5), average=False)
mha_case("mha_nobias_float_kpm", True, rn(2, 5, E), kpm=torch.where(padding(2, 5, [2, 1]), -2.5, 0.5).double(),
         bias=False)

# --- TransformerEncoderLayer ----------------------------------------------------------------------------
FF = 16


def enc_case(name, norm_first, activation, batch_first, src, mask=None, kpm=None):
    base = torch.nn.TransformerEncoderLayer(E, H, FF, 0.0, activation=activation, batch_first=batch_first,
                                            norm_first=norm_first)
    randomize(base)
    for dtype, tag in DTYPES:
        m = torch.nn.TransformerEncoderLayer(E, H, FF, 0.0, activation=activation, batch_first=batch_first,
                                             norm_first=norm_first).to(dtype)
        m.load_state_dict({k: t.to(dtype) for k, t in base.state_dict().items()})
        m.eval()
        x = leaf(src, dtype)
        inputs = {"x": x}
        am = None if mask is None else (mask if mask.dtype == torch.bool else mask.to(dtype))
        if am is not None:
            inputs["attn_mask"] = am
        if kpm is not None:
            inputs["kpm"] = kpm
        y = m(x, src_mask=am, src_key_padding_mask=kpm)
        record(f"{name}.{tag}", m, inputs, y)


enc_case("enc_post_relu", False, "relu", False, rn(5, 2, E), kpm=padding(2, 5, [0, 2]))
enc_case("enc_pre_gelu_causal", True, "gelu", True, rn(2, 6, E), mask=causal_float(6))
enc_case("enc_post_gelu_causal", False, "gelu", True, rn(2, 6, E), mask=causal_bool(6), kpm=padding(2, 6, [1, 0]))
enc_case("enc_pre_relu", True, "relu", False, rn(4, 3, E))

# --- GPT (tools/ember_gpt.py) ---------------------------------------------------------------------------
GPT_CASES = {
    "gpt_a": dict(vocab_size=11, context=8, dim=16, layers=2, heads=2, mlp_ratio=4, dropout=0.0,
                  position="learned", tie_weights=True, bias=True),
    "gpt_b": dict(vocab_size=13, context=8, dim=12, layers=2, heads=3, mlp_ratio=2, dropout=0.0,
                  position="sinusoidal", tie_weights=False, bias=False),
}
for name, cfg in GPT_CASES.items():
    base = GPT(**cfg)
    randomize(base)
    tokens = torch.randint(0, cfg["vocab_size"], (2, 7))
    if name == "gpt_a":
        save_file({k: v.contiguous() for k, v in base.state_dict().items()},
                  str(pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "gpt_torch.safetensors"))
    for dtype, tag in DTYPES:
        m = GPT(**cfg).to(dtype)
        m.load_state_dict({k: t.to(dtype) for k, t in base.state_dict().items()}, strict=True)
        m.eval()
        y = m(tokens)
        record(f"{name}.{tag}", m, {"tokens": tokens}, y)

path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "transformer_golden.safetensors"
save_file(out, str(path))
print(f"wrote {len(out)} tensors to {path}")
