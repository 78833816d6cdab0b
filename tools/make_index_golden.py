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

Round 3 (tests/test_indexing2.cpp): scatter_add/scatter_reduce, take_along_dim, masked_select, x[...] and
index_put, embedding's max_norm/scale_grad_by_freq and embedding_bag; integer scatter_reduce and nonzero.
"""
import pathlib

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from golden_common import store_case

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


def store_cases(cases, new):
    """Each case in f32 and f64, from one draw of its inputs and cotangent (new(shape), or new(tensor) for a
    given input): NAME.D.x as before the op (embedding's max_norm renormalises it in place: NAME.D.x_after
    after), s, the output, the cotangent and the gradients; NAME.KEY its constants."""
    for name, (fn, xs, ss, consts) in cases.items():
        x0 = new(xs)
        s0 = new(ss) if ss is not None else None
        for key, c in consts.items():
            out[f"{name}.{key}"] = c.clone()
        r0 = None
        for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
            x = x0.to(dtype).clone().requires_grad_(True)
            s = s0.to(dtype).clone().requires_grad_(True) if s0 is not None else None
            x_before = x.detach().clone()
            y = fn(x, s, consts)
            if r0 is None:
                r0 = new(tuple(y.shape))
            r = r0.to(dtype)
            (y * r).sum().backward()
            store_case(out, f"{name}.{tag}", {"x": x} if s is None else {"x": x, "s": s}, y, r)
            out[f"{name}.{tag}.x"] = x_before.contiguous()
            if "max_norm" in name:
                out[f"{name}.{tag}.x_after"] = x.detach().clone().contiguous()


store_cases(CASES, torch.randn)

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

# --- round 3 (tests/test_indexing2.cpp, Index2Golden): scatter_add/scatter_reduce, take_along_dim,
# masked_select, advanced indexing (x[...] and index_put), embedding options and embedding_bag. Same key
# layout as above; inputs come from their own generator (so the cases above keep their values), and a case
# may give its inputs explicitly (ties, zeros) instead of shapes. Embedding cases: x is the weight (before
# max_norm renormalises it; NAME.D.x_after after), s per_sample_weights. Constants NAME.index/mask/...
gen = torch.Generator().manual_seed(30)


def randn(*shape):
    return torch.randn(*shape, generator=gen, dtype=torch.float64)


def ints(lo, hi, *shape):
    return torch.randint(lo, hi, shape, generator=gen).to(torch.float64)


def long(*rows):
    return torch.tensor(rows, dtype=torch.long)


reduce_index = long([0, 2, 0, 3, 0], [1, 1, 1, 1, 3], [3, 2, 0, 2, 3])  # dim 1 of [3, 4]; repeats, an unnamed slot
prod_x = torch.tensor([[0.5, 0.0, -1.5, 2.0], [1.25, -0.75, 3.0, 0.0], [2.0, 1.5, -0.5, 1.0]], dtype=torch.float64)
prod_src = torch.tensor([[0.0, 1.5, 2.0, -1.0, 0.5], [-2.0, 0.0, 0.0, 1.5, 0.75],
                         [0.0, -1.25, 0.5, 0.0, 2.5]], dtype=torch.float64)  # single and double zeros per slot
mask_45 = torch.rand(4, 5, generator=gen) > 0.4
mask_4 = torch.tensor([True, False, True, True])
CASES3 = {
    "scatter_add": (lambda x, s, c: x.scatter_add(1, c["index"], s), (3, 5), (3, 2), {"index": long([4, 0], [4, 4], [2, 2])}),
    "scatter_add_dim0": (lambda x, s, c: torch.scatter_add(x, 0, c["index"], s), (4, 3), (2, 3),
                         {"index": long([3, 0, 1], [3, 2, 1])}),
    "take_along_dim": (lambda x, s, c: torch.take_along_dim(x, c["index"], 1), (3, 4), None, {"index": long([3, 0], [1, 1], [2, 3])}),
    "take_along_dim_broadcast": (lambda x, s, c: x.take_along_dim(c["index"], dim=0), (3, 4), None,
                                 {"index": long([2], [0])}),
    "take_along_dim_flat": (lambda x, s, c: torch.take_along_dim(x, c["index"]), (3, 4), None, {"index": long([11, 0], [5, 5])}),
    "masked_select": (lambda x, s, c: x.masked_select(c["mask"]), (4, 5), None, {"mask": mask_45}),
    "masked_select_broadcast": (lambda x, s, c: torch.masked_select(x, c["mask"]), (5,), None, {"mask": mask_45}),
    "index_int": (lambda x, s, c: x[c["index"]], (5, 3), None, {"index": long([0, 4], [4, -1])}),
    "index_mask": (lambda x, s, c: x[c["mask"]], (4, 5), None, {"mask": mask_45}),
    "index_mask_rows": (lambda x, s, c: x[c["mask"]], (4, 3), None, {"mask": mask_4}),
    "index_separated": (lambda x, s, c: x[c["index"], :, c["index2"]], (3, 4, 5), None,
                        {"index": long([2, 0, 2]), "index2": long([4, -5, 1])}),
    "index_adjacent": (lambda x, s, c: x[:, c["index"], c["index2"]], (2, 3, 4, 5), None,
                       {"index": long([2], [0]), "index2": long(1, 3, 3)}),
    "index_slices_none": (lambda x, s, c: x[1:, None, c["index"], ::2], (3, 4, 5), None, {"index": long([3, 1])}),
    "index_ellipsis": (lambda x, s, c: x[..., c["index"]], (2, 3, 4), None, {"index": long(3, 0, -1)}),
    "index_int_between": (lambda x, s, c: x[c["index"], 1, c["index"]], (3, 4, 5), None, {"index": long(2, 0)}),
    "index_put": (lambda x, s, c: x.index_put((c["index"],), s), (5, 3), (2, 3), {"index": long(4, 1)}),
    "index_put_accumulate": (lambda x, s, c: torch.index_put(x, (c["index"], c["index2"]), s, accumulate=True), (3, 4), (5,),
                             {"index": long(0, 2, 0, 1, 0), "index2": long(3, 1, 3, 0, 3)}),
    "index_put_mask": (lambda x, s, c: x.index_put((c["mask"],), s), (4, 3), (3,), {"mask": mask_4}),
    "index_put_broadcast": (lambda x, s, c: x.index_put((c["index"],), s, accumulate=True), (4, 3), (3,),
                            {"index": long(3, 0, 3)}),
}
for reduce in ("sum", "prod", "mean", "amax", "amin"):
    for include_self in (True, False):
        name = f"scatter_reduce_{reduce}" + ("" if include_self else "_noself")
        CASES3[name] = ((lambda r, i: lambda x, s, c: x.scatter_reduce(1, c["index"], s, r, include_self=i))(reduce, include_self),
                        (3, 4), (3, 5), {"index": reduce_index})
for include_self in (True, False):
    name = "scatter_reduce_prod_zeros" + ("" if include_self else "_noself")
    CASES3[name] = ((lambda i: lambda x, s, c: torch.scatter_reduce(x, 1, c["index"], s, "prod", include_self=i))(include_self),
                    prod_x, prod_src, {"index": reduce_index})
# Ties (integer values): the gradient is split evenly among the equal values (self included).
CASES3["scatter_reduce_amax_ties"] = (lambda x, s, c: x.scatter_reduce(1, c["index"], s, "amax"), ints(0, 3, 3, 4),
                                      ints(0, 3, 3, 5), {"index": reduce_index})
CASES3["scatter_reduce_amin_ties"] = (lambda x, s, c: x.scatter_reduce(1, c["index"], s, "amin"), ints(0, 3, 3, 4),
                                      ints(0, 3, 3, 5), {"index": reduce_index})

bag_input = long(1, 2, 4, 5, 4, 3, 2, 9, 0, 4)
bag_offsets = long(0, 3, 3, 7)  # a bag of 3, an empty one, a bag of 4, a bag of 3
EMBEDDING = {  # name: (fn(weight, s, c), weight shape, s shape)
    "embedding_scale_grad": (lambda w, s, c: F.embedding(c["index"], w, padding_idx=1, scale_grad_by_freq=True), (6, 3),
                             None, {"index": long([1, 2, 2], [5, 2, 1])}),
    "embedding_max_norm": (lambda w, s, c: F.embedding(c["index"], w, max_norm=1.5), (6, 3), None,
                           {"index": long([0, 2, 2], [5, 3, 0])}),
    "embedding_max_norm_p1": (lambda w, s, c: F.embedding(c["index"], w, max_norm=2.0, norm_type=1.0), (6, 3), None,
                              {"index": long(4, 1, 4, 0)}),
    "embedding_bag_sum": (lambda w, s, c: F.embedding_bag(c["index"], w, c["offsets"], mode="sum"), (10, 3), None,
                          {"index": bag_input, "offsets": bag_offsets}),
    "embedding_bag_mean": (lambda w, s, c: F.embedding_bag(c["index"], w, c["offsets"], mode="mean", padding_idx=4), (10, 3),
                           None, {"index": bag_input, "offsets": bag_offsets}),
    "embedding_bag_max": (lambda w, s, c: F.embedding_bag(c["index"], w, c["offsets"], mode="max"), (10, 3), None,
                          {"index": bag_input, "offsets": bag_offsets}),
    "embedding_bag_max_padding": (lambda w, s, c: F.embedding_bag(c["index"], w, c["offsets"], mode="max", padding_idx=2),
                                  (10, 3), None, {"index": bag_input, "offsets": bag_offsets}),
    "embedding_bag_weights": (lambda w, s, c: F.embedding_bag(c["index"], w, c["offsets"], mode="sum",
                                                              per_sample_weights=s, include_last_offset=True),
                              (10, 3), (10,), {"index": bag_input, "offsets": long(0, 3, 3, 7, 10)}),
    # every index occurs equally often: PyTorch 1.13's CPU embedding_bag scales each index's gradient by
    # another index's count (tests/test_indexing2.cpp, ScaleGradByFreqDividesByTheCount), so only equal
    # counts give the documented result
    "embedding_bag_2d": (lambda w, s, c: F.embedding_bag(c["index"], w, mode="mean", scale_grad_by_freq=True), (10, 3),
                         None, {"index": long([1, 2, 1], [7, 7, 2])}),
    "embedding_bag_max_norm": (lambda w, s, c: F.embedding_bag(c["index"], w, c["offsets"], mode="sum", max_norm=1.0),
                               (10, 3), None, {"index": bag_input, "offsets": bag_offsets}),
}


def make(spec):
    return spec.clone() if isinstance(spec, torch.Tensor) else randn(*spec)


store_cases({**CASES3, **EMBEDDING}, make)

# Integer scatter_reduce (i64 in and out; mean rounds down) and nonzero (i64 out).
int_x = torch.tensor([[5, -3, 7, 0], [2, 2, -8, 1]])
int_src = torch.tensor([[-3, 2, 4, -5, 9], [1, -7, 3, 3, 6]])
int_index = long([0, 0, 1, 1, 3], [2, 2, 2, 0, 0])
out["scatter_reduce_int.x"], out["scatter_reduce_int.s"], out["scatter_reduce_int.index"] = int_x, int_src, int_index
for reduce in ("sum", "prod", "mean", "amax", "amin"):
    for include_self in (True, False):
        key = f"scatter_reduce_int.{reduce}" + ("" if include_self else "_noself")
        out[key] = int_x.scatter_reduce(1, int_index, int_src, reduce, include_self=include_self).contiguous()
nz = (torch.rand(3, 4, 2, generator=gen) > 0.5).to(torch.float32) * torch.randn(3, 4, 2, generator=gen)
out["nonzero.x"] = nz
out["nonzero.y"] = torch.nonzero(nz).contiguous()

path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "index_golden.safetensors"
save_file(out, str(path))
print(f"wrote {len(out)} tensors to {path}")
