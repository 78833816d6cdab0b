#!/usr/bin/python3
"""Golden values for the masking/indexing ops (tests/test_indexing.cpp, IndexGolden), from PyTorch 1.13
(Debian's python3-torch):

    /usr/bin/python3 tools/make_index_golden.py     # writes tests/data/index_golden.safetensors

Differentiable cases NAME, dtype D (f32, f64): inputs NAME.D.x (and NAME.D.s, a second differentiable input:
scatter's src, index_add's source, masked_fill's 0-d value), the output NAME.D.y, a random cotangent NAME.D.r
and the gradients of sum(y * r), NAME.D.gx (and NAME.D.gs). Constant operands (the same for both dtypes) are
NAME.mask and NAME.index. The C++ test runs each op with the parameters stated here.

Non-differentiable cases: one_hot outputs (ONE_HOT.y), arange outputs (ARANGE.y, in PyTorch's dtype), and
the piece sizes chunk/split give (SPLIT.sizes).
"""
import pathlib

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

torch.manual_seed(0)
out = {}


def index(*rows):
    return torch.tensor(rows, dtype=torch.long)


# name: (fn(x, s, c), x shape, s shape or None, constants)
mask_4 = torch.tensor([True, False, False, True])
mask_34 = torch.rand(3, 4) > 0.5
mask_23 = torch.tensor([[True, False, True], [False, False, True]])
scatter_index_1 = index([4, 0], [1, 3], [2, 2])               # dim 1 of [3, 5]; distinct per row
scatter_index_0 = index([3, 0, 1], [1, 2, 0])                  # dim 0 of [4, 3]; distinct per column
index_add_0 = torch.tensor([0, 2, 0, 4])                       # repeats add up
index_add_1 = torch.tensor([3, 1, 3])

# scatter with src larger than the index: PyTorch 1.13 computes a forward but its backward fails ("invalid
# gradient ... got [3, 2] but expected shape compatible with [3, 3]"), so the cases here use an index-shaped src.
CASES = {
    "masked_fill": (lambda x, s, c: x.masked_fill(c["mask"], -1.5), (3, 4), None, {"mask": mask_4}),
    "masked_fill_broadcast": (lambda x, s, c: torch.masked_fill(x, c["mask"], 2.25), (4,), None, {"mask": mask_34}),
    "masked_fill_tensor": (lambda x, s, c: x.masked_fill(c["mask"], s), (2, 3), (), {"mask": mask_23}),
    "tril": (lambda x, s, c: torch.tril(x), (2, 3, 4), None, {}),
    "tril_1": (lambda x, s, c: torch.tril(x, 1), (3, 4), None, {}),
    "tril_m1": (lambda x, s, c: torch.tril(x, -1), (4, 3), None, {}),
    "triu": (lambda x, s, c: torch.triu(x), (2, 4, 3), None, {}),
    "triu_2": (lambda x, s, c: torch.triu(x, 2), (3, 5), None, {}),
    "triu_m2": (lambda x, s, c: x.triu(-2), (5, 3), None, {}),
    "scatter": (lambda x, s, c: x.scatter(1, c["index"], s), (3, 5), (3, 2), {"index": scatter_index_1}),
    "scatter_dim0": (lambda x, s, c: torch.scatter(x, 0, c["index"], s), (4, 3), (2, 3), {"index": scatter_index_0}),
    "scatter_value": (lambda x, s, c: x.scatter(-1, c["index"], 2.5), (3, 5), None, {"index": scatter_index_1}),
    "index_add": (lambda x, s, c: x.index_add(0, c["index"], s), (5, 3), (4, 3), {"index": index_add_0}),
    "index_add_alpha": (lambda x, s, c: torch.index_add(x, 1, c["index"], s, alpha=-0.5), (2, 4), (2, 3),
                        {"index": index_add_1}),
    "repeat": (lambda x, s, c: x.repeat(2, 1, 3), (2, 3), None, {}),
    "repeat_2d": (lambda x, s, c: x.repeat(2, 2), (2, 3), None, {}),
    "flip": (lambda x, s, c: torch.flip(x, (0, 2)), (2, 3, 4), None, {}),
    "flip_last": (lambda x, s, c: x.flip(-1), (3, 4), None, {}),
}

for name, (fn, xs, ss, consts) in CASES.items():
    x0 = torch.randn(xs)
    s0 = torch.randn(ss) if ss is not None else None
    for key, c in consts.items():
        out[f"{name}.{key}"] = c.clone()
    r0 = None
    for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
        x = x0.to(dtype).clone().requires_grad_(True)
        s = s0.to(dtype).clone().requires_grad_(True) if s0 is not None else None
        y = fn(x, s, consts)
        if r0 is None:
            r0 = torch.randn(y.shape)
        r = r0.to(dtype)
        (y * r).sum().backward()
        out[f"{name}.{tag}.x"] = x.detach().contiguous()
        out[f"{name}.{tag}.y"] = y.detach().contiguous()
        out[f"{name}.{tag}.r"] = r.contiguous()
        out[f"{name}.{tag}.gx"] = x.grad.contiguous()
        if s is not None:
            out[f"{name}.{tag}.s"] = s.detach().contiguous()
            out[f"{name}.{tag}.gs"] = s.grad.contiguous()

# one_hot (i64 in, i64 out)
ONE_HOT = {
    "one_hot_infer": (torch.tensor([3, 0, 1, 3]), -1),
    "one_hot_5": (torch.tensor([[0, 4], [2, 2], [1, 0]]), 5),
    "one_hot_scalar": (torch.tensor(2), 4),
    "one_hot_empty": (torch.zeros(0, 2, dtype=torch.long), 3),
}
for name, (idx, n) in ONE_HOT.items():
    out[f"{name}.x"] = idx.contiguous()
    out[f"{name}.y"] = F.one_hot(idx, n).contiguous()

# arange: values and dtype as PyTorch gives them (the C++ test states the matching call).
ARANGE = {
    "arange_int": torch.arange(5),                                   # integers: int64
    "arange_int_step": torch.arange(5, 0, -2),
    "arange_float": torch.arange(0, 1, 0.3),                        # a float argument: float32
    "arange_float_end": torch.arange(2.5),
    "arange_f64": torch.arange(1, 2, 0.1, dtype=torch.float64),
    "arange_i64_trunc": torch.arange(-1.5, 5, 1.5, dtype=torch.int64),  # truncated to (-1, 5, 1)
    "arange_i64_trunc_start": torch.arange(0.5, 5, dtype=torch.int64),
    "arange_empty": torch.arange(3, 3),
    "arange_neg_float": torch.arange(1, -1, -0.25),
}
for name, y in ARANGE.items():
    out[f"{name}.y"] = y.contiguous()

# chunk / split / unbind piece sizes along dim 0 of arange(N)
SPLIT = {
    "chunk_10_4": torch.arange(10).chunk(4),
    "chunk_6_4": torch.arange(6).chunk(4),
    "chunk_5_3": torch.arange(5).chunk(3),
    "chunk_0_3": torch.arange(0).chunk(3),
    "chunk_3_5": torch.arange(3).chunk(5),
    "split_10_4": torch.arange(10).split(4),
    "split_10_3_7": torch.arange(10).split([3, 7]),
    "split_0_0": torch.arange(0).split(0),
    "split_4_6": torch.arange(4).split(6),
    "unbind_3": torch.arange(3).unbind(0),
}
for name, pieces in SPLIT.items():
    out[f"{name}.sizes"] = torch.tensor([p.numel() for p in pieces], dtype=torch.long)

path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "index_golden.safetensors"
save_file(out, str(path))
print(f"wrote {len(out)} tensors to {path}")
