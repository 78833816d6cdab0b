#!/usr/bin/python3
"""Golden values for tests/test_attention.cpp (scaled_dot_product_attention, apply_rotary), from PyTorch:

    /usr/bin/python3 tools/make_attention_golden.py     # writes tests/data/attention_golden.safetensors

Debian's python3-torch is 1.13, which has no F.scaled_dot_product_attention: the reference is PyTorch 2.x's
math definition written out with PyTorch ops (softmax(q·kᵀ·scale + mask) · v, is_causal as a top-left
lower-triangular bool mask, bool masks as -inf where False, fully masked rows 0 as its _safe_softmax),
which is what its math kernel (aten/src/ATen/native/transformers/attention.cpp) computes.

For each case NAME and dtype D (f32, f64) the file holds the inputs NAME.D.q/k/v (and NAME.D.mask), the
output NAME.D.y, a random cotangent NAME.D.r and the gradients of sum(y * r): NAME.D.gq/gk/gv. Each dtype is
computed by PyTorch in that dtype. The options of each case are written beside it here and in the test.

Grouped-query attention (the gqa_/mqa_ cases, PyTorch 2.5's enable_gqa=True, which 1.13 lacks either): k and
v of fewer heads, repeat_interleave'd along dim -3 to q's heads as PyTorch 2.5's math kernel does
(pre_process_group_query_attention_input); autograd sums the copies' gradients into k's and v's.

Rotary position embedding (the rope_ cases: NAME.D.x, y, r, gx): Hugging Face's LlamaRotaryEmbedding and
apply_rotary_pos_emb (rotate_half) and GPT-J's rotate_every_two (interleaved) written with PyTorch ops, the
tables in the case's dtype (f32: HF's own f32 inv_freq and angles).
"""
import math
import pathlib

import torch
from safetensors.torch import save_file

torch.manual_seed(0)
out = {}


def sdpa(q, k, v, mask=None, causal=False, scale=None, enable_gqa=False):
    L, S = q.size(-2), k.size(-2)
    if enable_gqa:
        k = k.repeat_interleave(q.size(-3) // k.size(-3), dim=-3)
        v = v.repeat_interleave(q.size(-3) // v.size(-3), dim=-3)
    s = q @ k.transpose(-2, -1) * (scale if scale is not None else 1.0 / math.sqrt(q.size(-1)))
    if causal:
        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    # PyTorch >= 2.5's math kernel uses at::_safe_softmax: a row whose scores are all -inf gives 0 (not the
    # NaN of softmax) and passes no gradient. Written out: such rows get finite scores, then weight 0.
    dead = torch.isneginf(s).all(-1, keepdim=True)
    p = torch.softmax(s.masked_fill(dead, 0.0), -1).masked_fill(dead, 0.0)
    return p @ v


def case(name, q, k, v, mask=None, **options):
    for dtype, tag in ((torch.float64, "f64"), (torch.float32, "f32")):
        leaves = [t.detach().to(dtype).clone().requires_grad_() for t in (q, k, v)]
        m = mask if mask is None or mask.dtype == torch.bool else mask.to(dtype)
        y = sdpa(*leaves, mask=m, **options)
        r = torch.randn(y.shape, dtype=torch.float64).to(dtype)
        (y * r).sum().backward()
        p = f"{name}.{tag}."
        for n, t in zip("qkv", leaves):
            out[p + n] = t.detach().contiguous()
            out[p + "g" + n] = t.grad.contiguous()
        if m is not None:
            out[p + "mask"] = m.clone()
        out[p + "y"] = y.detach().contiguous()
        out[p + "r"] = r.contiguous()


def rn(*shape):
    return torch.randn(*shape, dtype=torch.float64)


def bool_mask(*shape):  # random, with the diagonal kept so that no row is fully masked
    m = torch.rand(*shape) < 0.6
    return m | torch.eye(shape[-2], shape[-1], dtype=torch.bool)


case("plain", rn(1, 2, 5, 8), rn(1, 2, 5, 8), rn(1, 2, 5, 8))
case("causal", rn(2, 3, 6, 4), rn(2, 3, 6, 4), rn(2, 3, 6, 4), causal=True)
case("causal_rect", rn(2, 4, 4), rn(2, 6, 4), rn(2, 6, 4), causal=True)  # L < S: top-left aligned
case("causal_tall", rn(2, 7, 4), rn(2, 3, 4), rn(2, 3, 4), causal=True)  # L > S
case("bool_mask", rn(2, 5, 4), rn(2, 7, 4), rn(2, 7, 4), mask=bool_mask(5, 7))
case("float_mask", rn(2, 3, 5, 4), rn(2, 3, 7, 4), rn(2, 3, 7, 4), mask=rn(2, 1, 5, 7))  # broadcast over heads
case("scale", rn(2, 5, 6), rn(2, 5, 6), rn(2, 5, 6), scale=0.3)
case("rect", rn(3, 4, 5), rn(3, 9, 5), rn(3, 9, 5))  # L != S
case("lead3", rn(2, 2, 3, 5, 4), rn(2, 2, 3, 6, 4), rn(2, 2, 3, 6, 4), mask=bool_mask(2, 1, 1, 5, 6))
case("ev", rn(2, 5, 6), rn(2, 7, 6), rn(2, 7, 3))  # Ev != E
case("unbatched", rn(5, 4), rn(6, 4), rn(6, 3))
# Across the CPU kernel's 64×128 blocks: several query and key blocks, ragged edges.
case("blocks_causal", rn(1, 150, 4), rn(1, 150, 4), rn(1, 150, 4), causal=True)
case("blocks_mask", rn(1, 130, 4), rn(1, 200, 4), rn(1, 200, 6), mask=rn(1, 200) * 2)  # a key bias
case("blocks_bool", rn(1, 100, 8), rn(1, 140, 8), rn(1, 140, 8), mask=bool_mask(1, 100, 140))
# A fully masked row (row 1): 0 output and no gradient (PyTorch >= 2.5's _safe_softmax).
fm = bool_mask(4, 5)
fm[1] = False
case("fully_masked", rn(4, 3), rn(5, 3), rn(5, 3), mask=fm)
# Grouped-query (4 or 6 query heads on 2 or 3 kv heads) and multi-query (1 kv head) attention.
case("gqa", rn(2, 4, 5, 8), rn(2, 2, 6, 8), rn(2, 2, 6, 3), enable_gqa=True)
case("gqa_causal", rn(2, 6, 7, 4), rn(2, 3, 7, 4), rn(2, 3, 7, 4), causal=True, enable_gqa=True)
case("mqa_mask", rn(1, 4, 5, 4), rn(1, 1, 7, 4), rn(1, 1, 7, 4), mask=rn(1, 4, 5, 7), enable_gqa=True)  # a mask per query head
case("gqa_lead3", rn(2, 2, 4, 3, 4), rn(2, 2, 2, 5, 4), rn(2, 2, 2, 5, 4), mask=bool_mask(3, 5), enable_gqa=True)
case("mqa_unbatched", rn(3, 4, 4), rn(1, 6, 4), rn(1, 6, 5), enable_gqa=True)
case("gqa_blocks_causal", rn(1, 4, 150, 8), rn(1, 2, 200, 8), rn(1, 2, 200, 8), causal=True, enable_gqa=True)



def rope(x, theta=10000.0, interleaved=False, offset=0, rotary_dim=None):
    L, E = x.size(-2), x.size(-1)
    R = rotary_dim or E
    # LlamaRotaryEmbedding.__init__ / forward, in x's dtype: inv_freq, then position × inv_freq (HF's matmul over
    # a dim of one: one product each)
    inv_freq = 1.0 / (theta ** (torch.arange(0, R, 2, dtype=torch.int64).to(x.dtype) / R))
    freqs = torch.outer(torch.arange(offset, offset + L, dtype=torch.int64).to(x.dtype), inv_freq)
    xr, xp = x[..., :R], x[..., R:]
    if interleaved:  # GPT-J: pairs (2i, 2i+1), the tables repeat_interleave'd
        cos, sin = freqs.cos().repeat_interleave(2, -1), freqs.sin().repeat_interleave(2, -1)
        rotated = torch.stack((-xr[..., 1::2], xr[..., ::2]), -1).flatten(-2)
    else:  # Llama: emb = cat(freqs, freqs), rotate_half(x) = cat(-x2, x1)
        emb = torch.cat((freqs, freqs), -1)
        cos, sin = emb.cos(), emb.sin()
        rotated = torch.cat((-xr[..., R // 2:], xr[..., :R // 2]), -1)
    return torch.cat((xr * cos + rotated * sin, xp), -1)


def rope_case(name, x, **options):
    for dtype, tag in ((torch.float64, "f64"), (torch.float32, "f32")):
        leaf = x.detach().to(dtype).clone().requires_grad_()
        y = rope(leaf, **options)
        r = torch.randn(y.shape, dtype=torch.float64).to(dtype)
        (y * r).sum().backward()
        p = f"{name}.{tag}."
        out[p + "x"] = leaf.detach().contiguous()
        out[p + "gx"] = leaf.grad.contiguous()
        out[p + "y"] = y.detach().contiguous()
        out[p + "r"] = r.contiguous()


rope_case("rope", rn(2, 4, 9, 16))
rope_case("rope_offset", rn(1, 2, 3, 8), offset=37)
rope_case("rope_interleaved", rn(2, 3, 7, 12), interleaved=True, offset=5)
rope_case("rope_partial", rn(2, 2, 6, 10), rotary_dim=4, offset=3)
rope_case("rope_partial_interleaved_theta", rn(2, 6, 8), interleaved=True, rotary_dim=6, theta=500000.0)
rope_case("rope_long", rn(1, 1, 300, 16))  # positions up to 299: the f32 angles' rounding matters

path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "attention_golden.safetensors"
save_file(out, str(path))
print(f"wrote {len(out)} tensors to {path}")
