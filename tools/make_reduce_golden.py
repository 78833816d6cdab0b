#!/usr/bin/python3
"""Golden values for var/std, logsumexp, cumsum, sort/argsort/topk (tests/test_reduce.cpp, ReduceGolden), from
PyTorch 1.13 (Debian's python3-torch):

    /usr/bin/python3 tools/make_reduce_golden.py     # writes tests/data/reduce_golden.safetensors

For each floating case NAME and dtype D (f32, f64) the file holds the input NAME.D.x, the output NAME.D.y,
the indices NAME.D.i (sort, topk, argsort), a random cotangent NAME.D.r and the gradient of sum(y * r) with
respect to x, NAME.D.gx (differentiable cases). The f32 values are PyTorch's own f32 computation. Integer
and bool cases (no dtype tag) hold NAME.x, NAME.y and NAME.i. The C++ test runs each op with the arguments
stated here; the inputs carry ties, NaN and infinities where the op defines an order or a special value.
"""
import pathlib

import torch
from safetensors.torch import save_file

torch.manual_seed(0)
out = {}
nan, inf = float("nan"), float("inf")

x34 = torch.randn(3, 4) * 2
x234 = torch.randn(2, 3, 4)
x35 = torch.randn(3, 5) * 3
big = torch.tensor([[80.0, 79.0, -80.0, 0.5], [-100.0, -101.0, -99.5, -100.0], [1.0, 2.0, 3.0, 4.0]])
const_rows = torch.tensor([[1.5, 1.5, 1.5, 1.5], [1.0, -2.0, 0.5, 3.0]])
# ties (3.0 twice, -1.0 twice) and NaN in each row
ties = torch.tensor([[3.0, -1.0, nan, 3.0, 0.5, -1.0], [2.0, nan, 2.0, -4.0, nan, 7.0], [1.0, 1.0, 1.0, 0.0, 5.0, -5.0]])
distinct = torch.randn(4, 7)
infs = torch.tensor([[-inf, -inf, -inf], [inf, 1.0, 2.0], [-inf, 0.0, 1.0], [nan, 1.0, 2.0]])

# name: (fn returning a tensor or (values, indices), input, differentiable)
CASES = {
    "var_all": (lambda x: torch.var(x), x34, True),
    "var_unbiased_false": (lambda x: torch.var(x, unbiased=False), x34, True),
    "var_dim1": (lambda x: torch.var(x, 1), x34, True),
    "var_dims02_keepdim_c0": (lambda x: torch.var(x, (0, 2), correction=0, keepdim=True), x234, True),
    "var_dim0_c2": (lambda x: torch.var(x, 0, correction=2), x34, True),
    "var_dim1_c4": (lambda x: torch.var(x, 1, correction=4), x34, True),  # N = correction: inf
    "std_all": (lambda x: torch.std(x), x34, True),
    "std_unbiased_false": (lambda x: torch.std(x, unbiased=False), x234, True),
    "std_dim0_keepdim": (lambda x: torch.std(x, 0, keepdim=True), x34, True),
    "std_dim_m1_c0": (lambda x: torch.std(x, -1, correction=0), x234, True),
    "std_const_rows": (lambda x: torch.std(x, 1), const_rows, True),  # std 0: gradient 0
    "logsumexp_dim1": (lambda x: torch.logsumexp(x, 1), x35, True),
    "logsumexp_dims02_keepdim": (lambda x: torch.logsumexp(x, (0, 2), keepdim=True), x234, True),
    "logsumexp_big": (lambda x: torch.logsumexp(x, -1), big, True),
    "logsumexp_infs": (lambda x: torch.logsumexp(x, 1), infs, True),
    "cumsum_dim1": (lambda x: torch.cumsum(x, 1), x35, True),
    "cumsum_dim0": (lambda x: torch.cumsum(x, 0), x234, True),
    "cumsum_dim_m1": (lambda x: torch.cumsum(x, -1), x234, True),
    "sort": (lambda x: torch.sort(x, stable=True), ties, True),
    "sort_descending": (lambda x: torch.sort(x, descending=True, stable=True), ties, True),
    "sort_dim0": (lambda x: torch.sort(x, dim=0, stable=True), ties, True),
    "sort_3d_dim1": (lambda x: torch.sort(x, 1), x234, True),
    "argsort_descending": (lambda x: torch.argsort(x, dim=1, descending=True, stable=True), ties, False),
    "topk_3": (lambda x: torch.topk(x, 3), distinct, True),
    "topk_2_smallest_dim0": (lambda x: torch.topk(x, 2, dim=0, largest=False), distinct, True),
    "topk_nan": (lambda x: torch.topk(x, 2), torch.tensor([[1.0, nan, 0.0, 2.0], [5.0, -1.0, 4.0, 3.0]]), True),
    "topk_nan_smallest": (lambda x: torch.topk(x, 3, largest=False),
                          torch.tensor([[1.0, nan, 0.0, 2.0], [5.0, -1.0, 4.0, 3.0]]), True),
}

for name, (fn, x0, differentiable) in CASES.items():
    for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
        x = x0.to(dtype).clone().requires_grad_(differentiable)
        result = fn(x)
        values, indices = (result, None) if isinstance(result, torch.Tensor) else (result[0], result[1])
        key = f"{name}.{tag}"
        out[f"{key}.x"] = x.detach().contiguous()
        if values.dtype == torch.int64:  # argsort: the indices are the result
            out[f"{key}.i"] = values.contiguous()
            continue
        out[f"{key}.y"] = values.detach().contiguous()
        if indices is not None:
            out[f"{key}.i"] = indices.contiguous()
        if differentiable:
            r = torch.randn(values.shape, generator=torch.Generator().manual_seed(len(name))).to(dtype)
            (values * r).sum().backward()
            out[f"{key}.r"] = r.contiguous()
            out[f"{key}.gx"] = x.grad.contiguous()

# Integer and bool inputs: cumsum counts in i64; sort orders them (stable for ties).
ints = torch.tensor([[4, -2, 4, 9, 0, -2], [1, 1, 1, 1, 1, 1]], dtype=torch.int64)
mask = torch.tensor([[True, False, True, True, False], [False, False, True, False, True]])
out["cumsum_i64.x"] = ints
out["cumsum_i64.y"] = torch.cumsum(ints, 1)
out["cumsum_bool.x"] = mask
out["cumsum_bool.y"] = torch.cumsum(mask, 1)
v, i = torch.sort(ints, dim=1, stable=True)
out["sort_i64.x"], out["sort_i64.y"], out["sort_i64.i"] = ints, v, i
v, i = torch.sort(ints, dim=1, descending=True, stable=True)
out["sort_i64_descending.x"], out["sort_i64_descending.y"], out["sort_i64_descending.i"] = ints, v, i
v, i = torch.sort(mask, dim=1, stable=True)
out["sort_bool.x"], out["sort_bool.y"], out["sort_bool.i"] = mask, v, i
out["logsumexp_i64.x"] = ints
out["logsumexp_i64.y"] = torch.logsumexp(ints, 1)  # f32

out = {k: v.clone() for k, v in out.items()}  # safetensors refuses tensors that share memory
path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "reduce_golden.safetensors"
save_file(out, str(path))
print(f"wrote {len(out)} tensors to {path}")
