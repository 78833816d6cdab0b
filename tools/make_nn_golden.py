#!/usr/bin/python3
"""Golden values for tests/test_nn_functional.cpp, from PyTorch (Debian's python3-torch):

    /usr/bin/python3 tools/make_nn_golden.py     # writes tests/data/nn_golden.safetensors

For each case NAME the file holds its inputs (NAME.x, NAME.w, ...), the output NAME.y, a random
cotangent NAME.r and the gradients of sum(y * r) with respect to each input (NAME.gx, NAME.gw, ...).
All f64, except the f32 cases at the end (case32: computed by PyTorch in f32, stored in f32), which pin
f32 rounding: softmax, log_softmax and cross entropy at logits near ±1e3 and nearly tied logits.
The C++ test runs the same op with the parameters stated beside each case here and there.
"""
import pathlib

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from golden_common import store_case

torch.manual_seed(0)
out = {}


def case(name, fn, dtype=torch.float64, **inputs):
    leaves = {k: v.clone().to(dtype).requires_grad_(v.is_floating_point()) for k, v in inputs.items()}
    y = fn(**leaves)
    r = torch.randn_like(y)
    (y * r).sum().backward()
    store_case(out, name, leaves, y, r)


def case32(name, fn, **inputs):
    """As case, but inputs, output, cotangent and gradients stay f32 (PyTorch's f32 CPU kernels)."""
    case(name, fn, torch.float32, **inputs)


def idx(*shape, high):
    return torch.randint(0, high, shape)


# conv2d: plain with bias; strided + padded + dilated; grouped without bias
case("conv_plain", lambda x, w, b: F.conv2d(x, w, b, padding=1), x=torch.randn(2, 3, 5, 6), w=torch.randn(4, 3, 3, 3), b=torch.randn(4))
case("conv_strided", lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2)),
     x=torch.randn(2, 2, 7, 6), w=torch.randn(3, 2, 3, 2), b=torch.randn(3))
case("conv_grouped", lambda x, w: F.conv2d(x, w, stride=2, padding=1, groups=2), x=torch.randn(2, 4, 6, 6), w=torch.randn(6, 2, 3, 3))
# pooling
case("maxpool", lambda x: F.max_pool2d(x, 3, stride=2, padding=1), x=torch.randn(2, 3, 7, 8))
case("avgpool", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1), x=torch.randn(2, 3, 7, 8))
case("avgpool_nopad", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False), x=torch.randn(2, 3, 7, 8))
case("adaptive", lambda x: F.adaptive_avg_pool2d(x, 1), x=torch.randn(2, 3, 4, 5))
# normalisation (running statistics after the training step are stored as NAME.rm / NAME.rv)
rm, rv = torch.randn(3).double(), torch.rand(3).double() + 0.5
rm_t, rv_t = rm.clone(), rv.clone()
case("bn_train", lambda x, w, b: F.batch_norm(x, rm_t, rv_t, w, b, training=True, momentum=0.1, eps=1e-5),
     x=torch.randn(4, 3, 2, 3), w=torch.randn(3), b=torch.randn(3))
out["bn_train.rm0"], out["bn_train.rv0"], out["bn_train.rm"], out["bn_train.rv"] = rm, rv, rm_t, rv_t
case("bn_eval", lambda x, w, b: F.batch_norm(x, rm, rv, w, b, training=False, eps=1e-5), x=torch.randn(4, 3, 2, 3), w=torch.randn(3), b=torch.randn(3))
out["bn_eval.rm"], out["bn_eval.rv"] = rm, rv
case("bn1d", lambda x: F.batch_norm(x, None, None, None, None, training=True), x=torch.randn(5, 4))
case("layernorm", lambda x, w, b: F.layer_norm(x, (3, 4), w, b, eps=1e-5), x=torch.randn(2, 3, 4), w=torch.randn(3, 4), b=torch.randn(3, 4))
# losses
t = torch.tensor([1, 0, 4, 2, 4, 3])
case("ce_mean", lambda x: F.cross_entropy(x, t), x=torch.randn(6, 5) * 3)
case("ce_smooth_ignore", lambda x: F.cross_entropy(x, torch.tensor([1, -100, 4, 2, -100, 3]), label_smoothing=0.2), x=torch.randn(6, 5))
case("ce_sum", lambda x: F.cross_entropy(x, t, reduction="sum"), x=torch.randn(6, 5))
case("ce_none", lambda x: F.cross_entropy(x, t, reduction="none", ignore_index=4), x=torch.randn(6, 5))
out["ce.t"] = t
case("nll", lambda x: F.nll_loss(F.log_softmax(x, 1), t), x=torch.randn(6, 5))
case("mse", lambda x, t: F.mse_loss(x, t), x=torch.randn(3, 4), t=torch.randn(3, 4))
case("l1", lambda x, t: F.l1_loss(x, t, reduction="sum"), x=torch.randn(3, 4), t=torch.randn(3, 4))
case("bce", lambda x, t: F.binary_cross_entropy_with_logits(x, t), x=torch.randn(3, 4) * 4, t=torch.rand(3, 4))
case("linear", lambda x, w, b: F.linear(x, w, b), x=torch.randn(4, 3), w=torch.randn(5, 3), b=torch.randn(5))
e_idx = torch.tensor([[1, 3], [0, 3]])
case("embedding", lambda w: F.embedding(e_idx, w), w=torch.randn(4, 3))
out["embedding.i"] = e_idx
case("gelu", lambda x: F.gelu(x), x=torch.randn(7) * 2)
case("logsoftmax", lambda x: F.log_softmax(x, dim=0), x=torch.randn(4, 3))

# f32 at large and nearly tied logits (the values are rounded to f32 before PyTorch sees them). Rows:
# ~1e3 and ~-1e3 with O(1) spread; 1e3 and -1e3 plus multiples of f32's spacing there (2^-14, nearly tied);
# ~5e3; a row of exact ties at 1e3; O(1) logits.
ulp = 2.0 ** -14
big = torch.stack([
    1000 + 3 * torch.randn(7, dtype=torch.float64),
    -1000 + 3 * torch.randn(7, dtype=torch.float64),
    1000 + ulp * torch.tensor([0, 1, 3, 2, 1, 0, 5], dtype=torch.float64),
    -1000 + ulp * torch.tensor([2, 0, 1, 1, 4, 0, 3], dtype=torch.float64),
    5000 + 0.5 * torch.randn(7, dtype=torch.float64),
    torch.full((7,), 1000.0, dtype=torch.float64),
    torch.randn(7, dtype=torch.float64),
]).float()
case32("f32_softmax_large", lambda x: F.softmax(x, dim=1), x=big)
case32("f32_log_softmax_large", lambda x: F.log_softmax(x, dim=1), x=big)
t_big = torch.tensor([3, 0, 6, 4, 2, 5, 1])
out["f32_ce.t"] = t_big
out["f32_ce.t_ignore"] = torch.tensor([3, -100, 6, 4, -100, 5, 1])
case32("f32_ce_large", lambda x: F.cross_entropy(x, t_big), x=big)
case32("f32_ce_large_none", lambda x: F.cross_entropy(x, t_big, reduction="none"), x=big)
case32("f32_ce_large_smooth", lambda x: F.cross_entropy(x, t_big, label_smoothing=0.1, reduction="none"), x=big)
case32("f32_ce_large_smooth_ignore", lambda x: F.cross_entropy(x, out["f32_ce.t_ignore"], label_smoothing=0.2), x=big)
case32("f32_ce_large_ignore_index", lambda x: F.cross_entropy(x, t_big, ignore_index=6, reduction="sum"), x=big)

# pooling with ceil_mode (after the f32 cases: the cases above keep their random draws). H 8, kernel 3,
# stride 2, padding 1: 5 rows instead of 4, the last window reaching past the padding; "rule": H 3 and W 5
# with kernel 2, stride 2, padding 1, where rounding up would add a window starting in the right padding,
# which PyTorch drops; 2x2 stride 2 over odd sizes (Ember's 2x2 fast path must not take it).
case("maxpool_ceil", lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True), x=torch.randn(2, 3, 8, 9))
case("avgpool_ceil", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True), x=torch.randn(2, 3, 8, 9))
case("avgpool_ceil_nopad", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
     x=torch.randn(2, 3, 8, 9))
case("avgpool_ceil_unpadded", lambda x: F.avg_pool2d(x, 3, stride=2, ceil_mode=True), x=torch.randn(2, 3, 8, 7))
case("maxpool_ceil_rule", lambda x: F.max_pool2d(x, 2, stride=2, padding=1, ceil_mode=True), x=torch.randn(1, 2, 3, 5))
case("avgpool_ceil_rule", lambda x: F.avg_pool2d(x, 2, stride=2, padding=1, ceil_mode=True), x=torch.randn(1, 2, 3, 5))
case("maxpool2x2_ceil", lambda x: F.max_pool2d(x, 2, ceil_mode=True), x=torch.randn(2, 3, 5, 7))


# --- PyTorch parity round 2 (after the cases above: they keep their random draws) ---------------------------
# Each case_both case is stored twice: NAME in f64 and NAME_f32 computed by PyTorch in f32. `consts` are
# inputs without gradient (targets, class weights, pos_weight, indices), stored as NAME.KEY (floating ones in
# the case's dtype); the C++ test reads them from there.
def case_both(name, fn, consts=None, **inputs):
    consts = consts or {}
    for suffix, dtype, run in (("", torch.float64, case), ("_f32", torch.float32, case32)):
        c = {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in consts.items()}
        for k, v in c.items():
            out[f"{name}{suffix}.{k}"] = v.clone().contiguous()
        run(name + suffix, lambda c=c, **kw: fn(**kw, **c), **inputs)


# cross entropy: class weights (mean divides by the summed weights of the non-ignored targets), with label
# smoothing and ignore_index; probability targets (with smoothing and weight); K-dim inputs [N, C, d1, d2];
# an unbatched [C] input with a 0-d target.
cw = torch.rand(5) + 0.25
t_ign = torch.tensor([1, -100, 4, 2, -100, 3])
case_both("ce_w", lambda x, t, w: F.cross_entropy(x, t, weight=w), consts={"t": t, "w": cw}, x=torch.randn(6, 5) * 2)
case_both("ce_w_smooth_ignore", lambda x, t, w: F.cross_entropy(x, t, weight=w, label_smoothing=0.2),
          consts={"t": t_ign, "w": cw}, x=torch.randn(6, 5))
case_both("ce_w_sum", lambda x, t, w: F.cross_entropy(x, t, weight=w, reduction="sum", ignore_index=2, label_smoothing=0.1),
          consts={"t": torch.tensor([1, 2, 4, 2, 0, 3]), "w": cw}, x=torch.randn(6, 5))
case_both("ce_w_none", lambda x, t, w: F.cross_entropy(x, t, weight=w, reduction="none", label_smoothing=0.3),
          consts={"t": t_ign, "w": cw}, x=torch.randn(6, 5))
case_both("ce_prob", lambda x, t: F.cross_entropy(x, t), x=torch.randn(6, 5) * 2, t=torch.softmax(torch.randn(6, 5), 1))
case_both("ce_prob_smooth_w", lambda x, t, w: F.cross_entropy(x, t, weight=w, label_smoothing=0.2, reduction="none"),
          consts={"w": cw}, x=torch.randn(6, 5), t=torch.softmax(torch.randn(6, 5), 1))
case_both("ce_prob_kdim_sum", lambda x, t: F.cross_entropy(x, t, reduction="sum", label_smoothing=0.1),
          x=torch.randn(2, 5, 3), t=torch.softmax(torch.randn(2, 5, 3), 1))
t_k = torch.tensor([[[1, 0], [3, -100], [2, 2]], [[0, 3], [-100, 1], [3, 0]]])  # [2, 3, 2], classes 4
case_both("ce_kdim_w", lambda x, t, w: F.cross_entropy(x, t, weight=w), consts={"t": t_k, "w": torch.rand(4) + 0.25},
          x=torch.randn(2, 4, 3, 2))
case_both("ce_kdim_none", lambda x, t: F.cross_entropy(x, t, reduction="none", label_smoothing=0.1), consts={"t": t_k},
          x=torch.randn(2, 4, 3, 2))
case_both("ce_kdim_mean", lambda x, t: F.cross_entropy(x, t, label_smoothing=0.2), consts={"t": t_k},
          x=torch.randn(2, 4, 3, 2))
case_both("ce_unbatched_w", lambda x, t, w: F.cross_entropy(x, t, weight=w, label_smoothing=0.1),
          consts={"t": torch.tensor(3), "w": cw}, x=torch.randn(5))
# nll_loss with weight (and K-dim)
case_both("nll_w", lambda x, t, w: F.nll_loss(F.log_softmax(x, 1), t, weight=w), consts={"t": t_ign, "w": cw},
          x=torch.randn(6, 5))
case_both("nll_kdim_w_none", lambda x, t, w: F.nll_loss(F.log_softmax(x, 1), t, weight=w, reduction="none"),
          consts={"t": t_k, "w": torch.rand(4) + 0.25}, x=torch.randn(2, 4, 3, 2))
# binary cross entropy with logits: weight (broadcast [3, 1]), pos_weight [4] (the last dim), logits up
# to ±40 (stability); gradients for logits and target
x_bce = torch.randn(3, 4) * 4
x_bce[0, 0], x_bce[1, 2], x_bce[2, 3] = 40.0, -40.0, 25.0
case_both("bce_w_pos", lambda x, t, w, p: F.binary_cross_entropy_with_logits(x, t, weight=w, pos_weight=p),
          consts={"w": torch.rand(3, 1) + 0.5, "p": torch.rand(4) * 3}, x=x_bce, t=torch.rand(3, 4))
case_both("bce_pos_none", lambda x, t, p: F.binary_cross_entropy_with_logits(x, t, pos_weight=p, reduction="none"),
          consts={"p": torch.rand(4) * 3}, x=x_bce, t=torch.rand(3, 4))
case_both("bce_w_sum", lambda x, t, w: F.binary_cross_entropy_with_logits(x, t, weight=w, reduction="sum"),
          consts={"w": torch.rand(4) + 0.5}, x=x_bce, t=torch.rand(3, 4))
case_both("mse_sum", lambda x, t: F.mse_loss(x, t, reduction="sum"), x=torch.randn(3, 4), t=torch.randn(3, 4))
case_both("l1_none", lambda x, t: F.l1_loss(x, t, reduction="none"), x=torch.randn(3, 4), t=torch.randn(3, 4))
# adaptive pooling to sizes that do not divide the input (overlapping windows of different sizes), one
# int meaning out×out, and outputs larger than the input
case_both("adaptive_avg_7", lambda x: F.adaptive_avg_pool2d(x, 7), x=torch.randn(2, 3, 10, 9))
case_both("adaptive_avg_3x4", lambda x: F.adaptive_avg_pool2d(x, (3, 4)), x=torch.randn(2, 3, 5, 7))
case_both("adaptive_avg_up", lambda x: F.adaptive_avg_pool2d(x, (4, 5)), x=torch.randn(1, 2, 3, 3))
case_both("adaptive_max_7", lambda x: F.adaptive_max_pool2d(x, 7), x=torch.randn(2, 3, 10, 9))
case_both("adaptive_max_3x4", lambda x: F.adaptive_max_pool2d(x, (3, 4)), x=torch.randn(2, 3, 5, 7))
case_both("adaptive_max_up", lambda x: F.adaptive_max_pool2d(x, (4, 5)), x=torch.randn(1, 2, 3, 3))
_, amax_idx = F.adaptive_max_pool2d(out["adaptive_max_3x4.x"], (3, 4), return_indices=True)
out["adaptive_max_3x4.idx"] = amax_idx
# embedding with padding_idx (1, and -1 meaning the last row): no gradient to that row
e_pad = torch.tensor([[1, 3, 1], [0, 2, 1]])
case_both("embedding_pad", lambda w, i: F.embedding(i, w, padding_idx=1), consts={"i": e_pad}, w=torch.randn(4, 3))
case_both("embedding_pad_neg", lambda w, i: F.embedding(i, w, padding_idx=-1), consts={"i": torch.tensor([3, 0, 3, 2])},
          w=torch.randn(4, 3))
# conv1d (appended: the cases above keep their random draws): plain with bias; strided + padded + dilated;
# grouped without bias; and one computed by PyTorch in f32.
case("conv1d_plain", lambda x, w, b: F.conv1d(x, w, b, padding=1), x=torch.randn(2, 3, 9), w=torch.randn(4, 3, 3),
     b=torch.randn(4))
case("conv1d_strided", lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=2, dilation=2), x=torch.randn(2, 2, 11),
     w=torch.randn(3, 2, 3), b=torch.randn(3))
case("conv1d_grouped", lambda x, w: F.conv1d(x, w, stride=3, padding=1, groups=2), x=torch.randn(2, 4, 10),
     w=torch.randn(6, 2, 4))
case32("f32_conv1d", lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), x=torch.randn(3, 5, 16),
       w=torch.randn(8, 5, 5), b=torch.randn(8))


# --- language-model layers (issue 31): RMSNorm and SwiGLU ------------------------------------------------------
# Their own random stream (fork_rng), so they neither shift nor depend on the draws of the cases above.
# torch 1.13 has no F.rms_norm: PyTorch 2.4's definition, y = x·rsqrt(mean(x², normalized dims) + eps)·w,
# with eps = torch.finfo(x.dtype).eps when not given (the default-eps cases have x small enough that eps
# shows: mean(x²) ~ 1e-14 in f64, ~1e-6 in f32).
def rms_norm(x, dims, w=None, eps=None):
    eps = torch.finfo(x.dtype).eps if eps is None else eps
    y = x * torch.rsqrt(x.pow(2).mean(tuple(range(-dims, 0)), keepdim=True) + eps)
    return y if w is None else y * w


with torch.random.fork_rng():
    torch.manual_seed(31)
    case("rmsnorm", lambda x, w: rms_norm(x, 2, w, eps=1e-5), x=torch.randn(2, 3, 4), w=torch.randn(3, 4))
    case("rmsnorm_default_eps", lambda x, w: rms_norm(x, 1, w), x=torch.randn(3, 5) * 1e-7, w=torch.randn(5))
    case32("f32_rmsnorm_default_eps", lambda x, w: rms_norm(x, 1, w), x=torch.randn(3, 5) * 1e-3, w=torch.randn(5))
    # SwiGLU (Llama's MLP): down(silu(gate(x)) * up(x)), bias-free; dim 6, hidden 10
    case("swiglu", lambda x, gate, up, down: F.linear(F.silu(F.linear(x, gate)) * F.linear(x, up), down),
         x=torch.randn(2, 3, 6), gate=torch.randn(10, 6) * 0.4, up=torch.randn(10, 6) * 0.4, down=torch.randn(6, 10) * 0.3)

path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "nn_golden.safetensors"
save_file({k: v.clone().contiguous() for k, v in out.items()}, str(path), metadata={"torch": torch.__version__})
print(f"wrote {path} ({len(out)} tensors)")
