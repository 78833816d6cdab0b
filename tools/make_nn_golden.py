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

torch.manual_seed(0)
out = {}


def case(name, fn, **inputs):
    leaves = {k: v.clone().double().requires_grad_(v.is_floating_point()) for k, v in inputs.items()}
    y = fn(**leaves)
    r = torch.randn_like(y)
    (y * r).sum().backward()
    for k, v in leaves.items():
        out[f"{name}.{k}"] = v.detach().contiguous()
        if v.grad is not None:
            out[f"{name}.g{k}"] = v.grad.contiguous()
    out[f"{name}.y"] = y.detach().contiguous()
    out[f"{name}.r"] = r.contiguous()


def case32(name, fn, **inputs):
    """As case, but inputs, output, cotangent and gradients stay f32 (PyTorch's f32 CPU kernels)."""
    leaves = {k: v.clone().float().requires_grad_(v.is_floating_point()) for k, v in inputs.items()}
    y = fn(**leaves)
    r = torch.randn_like(y)
    (y * r).sum().backward()
    for k, v in leaves.items():
        out[f"{name}.{k}"] = v.detach().contiguous()
        if v.grad is not None:
            out[f"{name}.g{k}"] = v.grad.contiguous()
    out[f"{name}.y"] = y.detach().contiguous()
    out[f"{name}.r"] = r.contiguous()


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

path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "nn_golden.safetensors"
save_file({k: v.clone().contiguous() for k, v in out.items()}, str(path), metadata={"torch": torch.__version__})
print(f"wrote {path} ({len(out)} tensors)")
