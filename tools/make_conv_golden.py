#!/usr/bin/python3
"""Golden values for tests/test_conv_pool2.cpp (issue 30: convolution, pooling, padding and resampling), from
PyTorch 1.13 (Debian's python3-torch):

    /usr/bin/python3 tools/make_conv_golden.py     # writes tests/data/conv_golden.safetensors

Every case NAME is computed twice by PyTorch, in f64 (NAME.*) and in f32 (NAME_f32.*): its inputs (NAME.x,
NAME.w, ...), the output NAME.y, a random cotangent NAME.r, and the gradients of sum(y * r) with respect
to each floating input (NAME.gx, NAME.gw, ...). Integer constants (max-pool indices for unpooling) are
NAME.KEY; the indices a pooling returns are NAME.idx. The C++ test runs the same op with the parameters
stated beside each case here.
"""
import pathlib

import torch
import torch.nn.functional as F
from safetensors.torch import save_file
from torch.nn.utils.stateless import functional_call

torch.manual_seed(30)
out = {}


def run(name, fn, dtype, consts, inputs):
    leaves = {k: v.clone().to(dtype).requires_grad_() for k, v in inputs.items()}
    res = fn(**leaves, **consts)
    y, idx = res if isinstance(res, tuple) else (res, None)
    r = torch.randn(y.shape, dtype=torch.float64).to(dtype)
    (y * r).sum().backward()
    for k, v in leaves.items():
        out[f"{name}.{k}"] = v.detach().contiguous()
        out[f"{name}.g{k}"] = v.grad.contiguous()
    for k, v in consts.items():
        out[f"{name}.{k}"] = v.clone().contiguous()
    out[f"{name}.y"] = y.detach().contiguous()
    out[f"{name}.r"] = r.contiguous()
    if idx is not None:
        out[f"{name}.idx"] = idx.contiguous()


def case(name, fn, consts=None, **inputs):
    """NAME in f64 and NAME_f32 in f32, from the same f64 draws."""
    consts = consts or {}
    inputs = {k: v.double() for k, v in inputs.items()}
    run(name, fn, torch.float64, consts, inputs)
    run(name + "_f32", fn, torch.float32, consts, inputs)


def module(cls, *args, **kwargs):
    """A conv Module applied with the given weight and bias (their gradients come back as gw, gb)."""
    m = cls(*args, **kwargs).double()

    def fn(x, w, b):
        m.to(x.dtype)
        return functional_call(m, {"weight": w, "bias": b}, (x,))
    return fn


rn = torch.randn

# --- F::pad ------------------------------------------------------------------------------------------
case("pad_const_1d", lambda x: F.pad(x, (1, 2), value=0.5), x=rn(2, 3, 5))
case("pad_const_neg", lambda x: F.pad(x, (-1, 2, 1, -2), value=-1.0), x=rn(2, 3, 4, 5))
case("pad_const_3pairs", lambda x: F.pad(x, (1, 0, 0, 2, 1, 1)), x=rn(2, 3, 4))
case("pad_const_crop_all", lambda x: F.pad(x, (-2, -1)), x=rn(2, 4))
case("pad_reflect_1d", lambda x: F.pad(x, (2, 3), mode="reflect"), x=rn(2, 3, 6))
case("pad_reflect_2d", lambda x: F.pad(x, (1, 2, 3, 0), mode="reflect"), x=rn(2, 2, 4, 5))
case("pad_reflect_neg", lambda x: F.pad(x, (-1, 3), mode="reflect"), x=rn(1, 2, 6))
case("pad_reflect_3d", lambda x: F.pad(x, (1, 1, 2, 0, 1, 2), mode="reflect"), x=rn(1, 2, 3, 4, 5))
case("pad_reflect_unbatched", lambda x: F.pad(x, (2, 1), mode="reflect"), x=rn(3, 6))
case("pad_replicate_2d", lambda x: F.pad(x, (2, 1, 0, 3), mode="replicate"), x=rn(2, 2, 3, 4))
case("pad_replicate_neg", lambda x: F.pad(x, (-2, 3), mode="replicate"), x=rn(1, 2, 5))
case("pad_replicate_3d_unbatched", lambda x: F.pad(x, (1, 0, 2, 1, 0, 1), mode="replicate"), x=rn(2, 3, 4, 5))
case("pad_circular_1d", lambda x: F.pad(x, (2, 3), mode="circular"), x=rn(2, 2, 5))
case("pad_circular_2d", lambda x: F.pad(x, (1, 2, 3, 1), mode="circular"), x=rn(1, 2, 4, 5))
case("pad_circular_neg", lambda x: F.pad(x, (-2, 3), mode="circular"), x=rn(1, 2, 6))
case("pad_circular_3d", lambda x: F.pad(x, (1, 1, 1, 2, 2, 0), mode="circular"), x=rn(1, 1, 3, 4, 5))

# --- conv padding "same" / "valid" and the Conv modules' padding_mode ---------------------------------------
case("conv2d_same_odd", lambda x, w, b: F.conv2d(x, w, b, padding="same"), x=rn(2, 3, 6, 7), w=rn(4, 3, 3, 3), b=rn(4))
case("conv2d_same_even", lambda x, w, b: F.conv2d(x, w, b, padding="same", dilation=(1, 3)), x=rn(2, 3, 6, 7),
     w=rn(4, 3, 4, 2), b=rn(4))
case("conv2d_same_groups", lambda x, w: F.conv2d(x, w, padding="same", groups=2), x=rn(1, 4, 5, 5), w=rn(6, 2, 2, 4))
case("conv2d_valid", lambda x, w, b: F.conv2d(x, w, b, padding="valid", stride=2), x=rn(2, 3, 7, 6), w=rn(4, 3, 3, 2),
     b=rn(4))
case("conv1d_same_even", lambda x, w, b: F.conv1d(x, w, b, padding="same"), x=rn(2, 3, 9), w=rn(4, 3, 4), b=rn(4))
case("conv1d_same_dil", lambda x, w, b: F.conv1d(x, w, b, padding="same", dilation=2), x=rn(2, 3, 9), w=rn(4, 3, 3),
     b=rn(4))
case("conv1d_valid", lambda x, w: F.conv1d(x, w, padding="valid"), x=rn(2, 3, 9), w=rn(4, 3, 3))
case("conv2d_mode_reflect", module(torch.nn.Conv2d, 3, 4, 3, padding=1, padding_mode="reflect"), x=rn(2, 3, 5, 6),
     w=rn(4, 3, 3, 3), b=rn(4))
case("conv2d_mode_circular_same", module(torch.nn.Conv2d, 3, 4, (4, 3), padding="same", dilation=(1, 2),
                                         padding_mode="circular"), x=rn(2, 3, 5, 6), w=rn(4, 3, 4, 3), b=rn(4))
case("conv2d_mode_replicate", module(torch.nn.Conv2d, 3, 4, 3, padding=(2, 1), stride=2, padding_mode="replicate"),
     x=rn(2, 3, 5, 6), w=rn(4, 3, 3, 3), b=rn(4))
case("conv2d_mode_reflect_unbatched", module(torch.nn.Conv2d, 2, 3, 3, padding=(1, 2), padding_mode="reflect"),
     x=rn(2, 5, 6), w=rn(3, 2, 3, 3), b=rn(3))
case("conv1d_mode_reflect_same", module(torch.nn.Conv1d, 3, 4, 4, padding="same", padding_mode="reflect"),
     x=rn(2, 3, 8), w=rn(4, 3, 4), b=rn(4))
case("conv1d_mode_circular", module(torch.nn.Conv1d, 2, 3, 3, padding=2, padding_mode="circular"), x=rn(2, 2, 7),
     w=rn(3, 2, 3), b=rn(3))
case("conv1d_mode_replicate", module(torch.nn.Conv1d, 2, 3, 3, padding=1, stride=2, padding_mode="replicate"),
     x=rn(2, 2, 7), w=rn(3, 2, 3), b=rn(3))

# --- transposed convolution ---------------------------------------------------------------------------------
case("convt2d_plain", lambda x, w, b: F.conv_transpose2d(x, w, b), x=rn(2, 3, 4, 5), w=rn(3, 4, 3, 3), b=rn(4))
case("convt2d_stride_pad_op", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=(2, 3), padding=(1, 0),
                                                                 output_padding=(1, 2)),
     x=rn(2, 3, 4, 3), w=rn(3, 2, 3, 4), b=rn(2))
case("convt2d_groups_dil", lambda x, w: F.conv_transpose2d(x, w, padding=1, groups=2, dilation=(2, 1)),
     x=rn(2, 4, 4, 4), w=rn(4, 3, 3, 2))
case("convt2d_op_dilation", lambda x, w: F.conv_transpose2d(x, w, output_padding=(2, 1), dilation=(3, 2)),
     x=rn(1, 2, 3, 4), w=rn(2, 2, 2, 2))
case("convt2d_everything", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=(1, 2), output_padding=(1, 0),
                                                              groups=3, dilation=2),
     x=rn(2, 6, 3, 4), w=rn(6, 2, 3, 3), b=rn(6))
case("convt2d_unbatched", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2), x=rn(3, 3, 4), w=rn(3, 2, 2, 3),
     b=rn(2))
# nn.ConvTranspose2d(3, 2, 3, stride=2).forward(x, output_size=[9, 10]) is output_padding (0, 1)
case("convt2d_outsize", lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, output_padding=(0, 1)), x=rn(1, 3, 4, 4),
     w=rn(3, 2, 3, 3), b=rn(2))
case("convt1d_plain", lambda x, w, b: F.conv_transpose1d(x, w, b, stride=2, padding=1, output_padding=1), x=rn(2, 3, 7),
     w=rn(3, 5, 4), b=rn(5))
case("convt1d_groups", lambda x, w: F.conv_transpose1d(x, w, groups=2, dilation=2), x=rn(2, 4, 5), w=rn(4, 1, 3))

# --- pooling options -----------------------------------------------------------------------------------------
case("maxpool_dil", lambda x: F.max_pool2d(x, 3, stride=2, padding=1, dilation=2), x=rn(2, 3, 9, 10))
case("maxpool_dil_ceil", lambda x: F.max_pool2d(x, (2, 3), stride=(2, 1), padding=1, dilation=(3, 2), ceil_mode=True),
     x=rn(2, 2, 8, 9))
case("maxpool_idx", lambda x: F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True), x=rn(2, 3, 7, 8))
case("maxpool_idx_ceil", lambda x: F.max_pool2d(x, 2, ceil_mode=True, return_indices=True), x=rn(2, 2, 5, 7))
case("maxpool_dil_idx", lambda x: F.max_pool2d(x, 2, stride=1, padding=1, dilation=2, return_indices=True),
     x=rn(1, 2, 5, 6))
case("maxpool_idx_unbatched", lambda x: F.max_pool2d(x, 2, return_indices=True), x=rn(3, 4, 6))
case("avgpool_div", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, divisor_override=5), x=rn(2, 3, 7, 8))
case("avgpool_div_ceil", lambda x: F.avg_pool2d(x, (2, 3), stride=2, padding=1, ceil_mode=True, divisor_override=2),
     x=rn(2, 2, 6, 7))
case("avgpool_nopad_ceil_asym", lambda x: F.avg_pool2d(x, (3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=True,
                                                       count_include_pad=False), x=rn(2, 2, 8, 9))
case("maxpool1d", lambda x: F.max_pool1d(x, 3, stride=2, padding=1), x=rn(2, 3, 11))
case("maxpool1d_dil_ceil", lambda x: F.max_pool1d(x, 3, stride=2, padding=1, dilation=2, ceil_mode=True), x=rn(2, 3, 12))
case("maxpool1d_idx", lambda x: F.max_pool1d(x, 2, stride=2, return_indices=True), x=rn(2, 3, 9))
case("maxpool1d_unbatched", lambda x: F.max_pool1d(x, 3, stride=1), x=rn(3, 8))
case("avgpool1d", lambda x: F.avg_pool1d(x, 3, stride=2, padding=1), x=rn(2, 3, 11))
case("avgpool1d_nopad_ceil", lambda x: F.avg_pool1d(x, 4, stride=3, padding=2, ceil_mode=True, count_include_pad=False),
     x=rn(2, 3, 10))
case("avgpool1d_unbatched", lambda x: F.avg_pool1d(x, 2), x=rn(3, 7))
# max_unpool: the indices come from pooling another random tensor
_, i2 = F.max_pool2d(rn(2, 3, 6, 8), 2, return_indices=True)
case("unpool2d", lambda x, i: F.max_unpool2d(x, i, 2), consts={"i": i2}, x=rn(2, 3, 3, 4))
_, i2b = F.max_pool2d(rn(1, 2, 7, 8), 3, stride=2, padding=1, return_indices=True)
case("unpool2d_outsize", lambda x, i: F.max_unpool2d(x, i, 3, stride=2, padding=1, output_size=(7, 8)),
     consts={"i": i2b}, x=rn(1, 2, 4, 4))
_, i1 = F.max_pool1d(rn(2, 2, 9), 2, return_indices=True)
case("unpool1d", lambda x, i: F.max_unpool1d(x, i, 2, output_size=[9]), consts={"i": i1}, x=rn(2, 2, 4))

# --- interpolate -----------------------------------------------------------------------------------------------
case("nearest_2d_size", lambda x: F.interpolate(x, size=(8, 4)), x=rn(2, 3, 5, 7))
case("nearest_2d_scale", lambda x: F.interpolate(x, scale_factor=(2.5, 1.7)), x=rn(2, 3, 5, 7))
case("nearest_1d", lambda x: F.interpolate(x, size=10), x=rn(2, 3, 7))
case("nearest_1d_scale_down", lambda x: F.interpolate(x, scale_factor=0.45), x=rn(2, 3, 9))
case("nearest_1d_same_size_scale", lambda x: F.interpolate(x, scale_factor=1.2), x=rn(1, 2, 4))
case("nearest_3d", lambda x: F.interpolate(x, size=(5, 3, 8)), x=rn(1, 2, 3, 4, 5))
case("nearest_exact_2d", lambda x: F.interpolate(x, size=(7, 4), mode="nearest-exact"), x=rn(2, 3, 5, 7))
case("bilinear", lambda x: F.interpolate(x, size=(8, 11), mode="bilinear", align_corners=False), x=rn(2, 3, 5, 7))
case("bilinear_ac", lambda x: F.interpolate(x, size=(8, 11), mode="bilinear", align_corners=True), x=rn(2, 3, 5, 7))
case("bilinear_scale", lambda x: F.interpolate(x, scale_factor=(1.5, 0.6), mode="bilinear"), x=rn(2, 3, 5, 7))
case("bilinear_scale_recompute", lambda x: F.interpolate(x, scale_factor=(1.5, 0.6), mode="bilinear",
                                                         recompute_scale_factor=True), x=rn(2, 3, 5, 7))
case("bilinear_down", lambda x: F.interpolate(x, size=(3, 4), mode="bilinear"), x=rn(2, 3, 7, 9))
case("bilinear_ac_scale", lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
     x=rn(1, 2, 3, 4))
case("bilinear_same_size_scale", lambda x: F.interpolate(x, scale_factor=1.2, mode="bilinear"), x=rn(1, 2, 4, 4))
case("bilinear_to_one", lambda x: F.interpolate(x, size=(1, 3), mode="bilinear", align_corners=True), x=rn(1, 2, 4, 5))
case("linear_1d", lambda x: F.interpolate(x, size=13, mode="linear"), x=rn(2, 3, 6))
case("linear_1d_ac", lambda x: F.interpolate(x, size=4, mode="linear", align_corners=True), x=rn(2, 3, 6))
case("linear_1d_scale", lambda x: F.interpolate(x, scale_factor=2.3, mode="linear"), x=rn(2, 3, 6))
case("trilinear", lambda x: F.interpolate(x, size=(5, 3, 7), mode="trilinear"), x=rn(1, 2, 3, 4, 5))
case("area_2d", lambda x: F.interpolate(x, size=(3, 4), mode="area"), x=rn(2, 3, 7, 9))
case("area_1d_scale", lambda x: F.interpolate(x, scale_factor=0.5, mode="area"), x=rn(2, 3, 9))

# --- pixel shuffle -----------------------------------------------------------------------------------------------
case("pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), x=rn(2, 12, 3, 4))
case("pixel_shuffle_5d", lambda x: F.pixel_shuffle(x, 3), x=rn(2, 1, 18, 2, 3))
case("pixel_unshuffle", lambda x: F.pixel_unshuffle(x, 2), x=rn(2, 3, 6, 8))

path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "conv_golden.safetensors"
save_file(out, str(path))
print(f"wrote {len(out)} tensors to {path}")
