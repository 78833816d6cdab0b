#!/usr/bin/python3
"""Golden values for tests/test_attention.cpp (scaled_dot_product_attention), from PyTorch:

    /usr/bin/python3 tools/make_attention_golden.py     # writes tests/data/attention_golden.safetensors

Debian's python3-torch is 1.13, which has no F.scaled_dot_product_attention: the reference is PyTorch 2.x's
math definition written out with PyTorch ops (softmax(q·kᵀ·scale + mask) · v, is_causal as a top-left
lower-triangular bool mask, bool masks as -inf where False, fully masked rows 0 as its _safe_softmax),
which is what its math kernel (aten/src/ATen/native/transformers/attention.cpp) computes.

For each case NAME and dtype D (f32, f64) the file holds the inputs NAME.D.q/k/v (and NAME.D.mask), the
output NAME.D.y, a random cotangent NAME.D.r and the gradients of sum(y * r): NAME.D.gq/gk/gv. Each dtype is
computed by PyTorch in that dtype. The options of each case are written beside it here and in the test.
"""
import math
import pathlib

import torch
from safetensors.torch import save_file

torch.manual_seed(0)
out = {}


def sdpa(q, k, v, mask=None, causal=False, scale=None):
    L, S = q.size(-2), k.size(-2)
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

path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "attention_golden.safetensors"
save_file(out, str(path))
print(f"wrote {len(out)} tensors to {path}")
