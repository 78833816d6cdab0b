// F::pad, F::interpolate, pixel_shuffle / pixel_unshuffle: compositions of differentiable tensor ops (index_select
// along each resized dim with host-computed indices and weights, cat, narrow, reshape/permute), so they run on
// every backend with autograd: the backward of index_select adds each output gradient back to its source.
// The index and weight formulas are PyTorch 1.13's (aten/src/ATen/native/UpSample.h, PadNd.cpp).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/raw.h"
#include "nn/functional.h"

namespace ember::nn::functional {
namespace {

const char* pad_mode_name(PadMode m) {
  switch (m) {
    case PadMode::constant: return "constant";
    case PadMode::reflect: return "reflect";
    case PadMode::replicate: return "replicate";
    case PadMode::circular: return "circular";
  }
  return "?";
}

Tensor index_tensor(const std::vector<int64_t>& v, Device device) {
  return from_vector(v, {static_cast<int64_t>(v.size())}).to(device);
}

// The source position of every output element along one dim of a non-constant pad: p = j - left in the
// input's coordinates, mirrored (reflect), clamped (replicate), or wrapped within the kept (cropped) part
// (circular, as PyTorch 1.13's _pad_circular copies from the padded output itself).
std::vector<int64_t> pad_indices(PadMode mode, int64_t size, int64_t left, int64_t right) {
  const int64_t out = size + left + right;
  std::vector<int64_t> idx(static_cast<size_t>(out));
  const int64_t core_start = std::max<int64_t>(-left, 0), core = size + std::min<int64_t>(left, 0) + std::min<int64_t>(right, 0);
  for (int64_t j = 0; j < out; ++j) {
    const int64_t p = j - left;
    int64_t i = p;
    if (mode == PadMode::reflect) i = p < 0 ? -p : p >= size ? 2 * (size - 1) - p : p;
    if (mode == PadMode::replicate) i = std::clamp<int64_t>(p, 0, size - 1);
    if (mode == PadMode::circular) {
      const int64_t q = j - std::max<int64_t>(left, 0);
      i = core_start + ((q % core) + core) % core;
    }
    idx[static_cast<size_t>(j)] = i;
  }
  return idx;
}

}  // namespace

Tensor pad(const Tensor& x, const PadFuncOptions& o) {
  const std::vector<int64_t>& pad = o.pad();
  const int64_t nd = x.dim(), pairs = static_cast<int64_t>(pad.size()) / 2;
  const char* mode = pad_mode_name(o.mode());
  EMBER_CHECK(pad.size() % 2 == 0, "pad: the padding list has ", pad.size(),
              " elements; it must be (left, right) pairs from the last dim backwards (PyTorch: Padding length must "
              "be divisible by 2)");
  EMBER_CHECK(pairs <= nd, "pad: ", pairs, " (left, right) pairs for the ", nd, "-d input ", x.shape(),
              "; at most one pair per dim (PyTorch: Padding length too large)");
  if (o.mode() == PadMode::constant) {
    Tensor y = x;
    for (int64_t i = 0; i < pairs; ++i) {
      const int64_t dim = nd - 1 - i, left = pad[2 * i], right = pad[2 * i + 1], size = y.size(dim);
      const int64_t crop_l = std::max<int64_t>(-left, 0), crop_r = std::max<int64_t>(-right, 0);
      EMBER_CHECK(crop_l + crop_r <= size, "pad: the negative padding (", left, ", ", right, ") of dim ", dim,
                  " crops more than its ", size, " elements (input ", x.shape(), ")");
      if (crop_l > 0 || crop_r > 0) y = y.narrow(dim, crop_l, size - crop_l - crop_r);
      if (left <= 0 && right <= 0) continue;
      std::vector<Tensor> parts;
      Shape side = y.shape();
      if (left > 0) {
        side[dim] = left;
        parts.push_back(full(side, o.value(), {.dtype = x.dtype(), .device = x.device()}));
      }
      parts.push_back(y);
      if (right > 0) {
        side[dim] = right;
        parts.push_back(full(side, o.value(), {.dtype = x.dtype(), .device = x.device()}));
      }
      y = cat(parts, dim);
    }
    return y;
  }
  EMBER_CHECK(o.value() == 0.0, "pad: mode ", mode, " takes no value, got ", o.value(), " (PyTorch: Padding mode \"",
              mode, "\" doesn't take in value argument)");
  const bool shape_ok = (pairs == 1 && (nd == 2 || nd == 3)) || (pairs == 2 && (nd == 3 || nd == 4)) ||
                        (pairs == 3 && (nd == 4 || nd == 5));
  EMBER_CHECK(shape_ok, "pad: mode ", mode, " pads the last 1, 2 or 3 dims of a [C, *] or [N, C, *] input (2-D to 5-D, ",
              "one or two dims more than the padded ones), got ", pairs, " (left, right) pairs for the input ", x.shape(),
              " (PyTorch: Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now)");
  if (o.mode() == PadMode::circular)
    EMBER_CHECK(nd == pairs + 2, "pad: circular padding of ", pairs, " dims needs a batched input [N, C, ...] of ",
                pairs + 2, " dims, got ", x.shape(), " (as PyTorch 1.13); add the batch dim with unsqueeze(0)");
  // reflect / replicate (PyTorch's reflection_pad / replication_pad checks): an output dim may be empty as
  // long as one padded dim is not.
  bool any_nonempty = false;
  for (int64_t i = 0; i < pairs; ++i) any_nonempty = any_nonempty || x.size(nd - 1 - i) + pad[2 * i] + pad[2 * i + 1] >= 1;
  EMBER_CHECK(o.mode() == PadMode::circular || any_nonempty, "pad: ", mode, " padding ", x.shape(), " by ",
              Shape(pad), " leaves every padded dim empty; at least one needs an element (PyTorch: input is too small)");
  Tensor y = x;
  for (int64_t i = 0; i < pairs; ++i) {
    const int64_t dim = nd - 1 - i, left = pad[2 * i], right = pad[2 * i + 1], size = x.size(dim);
    const int64_t out = size + left + right;
    EMBER_CHECK(out >= 0, "pad: the negative ", mode, " padding (", left, ", ", right, ") of dim ", dim,
                " crops more than its ", size, " elements (input ", x.shape(), ")");
    if (o.mode() == PadMode::reflect) {
      EMBER_CHECK(left < size && right < size, "pad: reflect padding (", left, ", ", right, ") of dim ", dim,
                  " must be smaller than its size ", size, " (input ", x.shape(), ")");
    } else if (o.mode() == PadMode::replicate) {
      EMBER_CHECK(size >= 1, "pad: replicate padding needs non-empty padded dims, but dim ", dim, " of the input ",
                  x.shape(), " is empty");
    } else {
      const int64_t core = size + std::min<int64_t>(left, 0) + std::min<int64_t>(right, 0);
      EMBER_CHECK(left <= size && right <= size, "pad: circular padding (", left, ", ", right, ") of dim ", dim,
                  " is larger than its size ", size, " (input ", x.shape(),
                  "): it would wrap around more than once (PyTorch: Padding value causes wrapping around more than once.)");
      EMBER_CHECK(out == 0 || (left <= core && right <= core), "pad: circular padding (", left, ", ", right, ") of dim ",
                  dim, " wraps around the ", core, " elements its negative side leaves more than once (input ", x.shape(),
                  ")");
    }
    if (out == 0) {
      y = y.narrow(dim, 0, 0);
      continue;
    }
    if (left == 0 && right == 0) continue;
    y = index_select(y, dim, index_tensor(pad_indices(o.mode(), size, left, right), x.device()));
  }
  return y;
}

// --- interpolate ----------------------------------------------------------------------------------------
namespace {

const char* mode_name(InterpolateMode m) {
  switch (m) {
    case InterpolateMode::nearest: return "nearest";
    case InterpolateMode::nearest_exact: return "nearest-exact";
    case InterpolateMode::linear: return "linear";
    case InterpolateMode::bilinear: return "bilinear";
    case InterpolateMode::trilinear: return "trilinear";
    case InterpolateMode::area: return "area";
  }
  return "?";
}

// PyTorch's compute_scales_value<T>: 1/scale_factor when one was given (and positive), else in/out.
template <typename T>
T scales_value(const std::optional<double>& scale, int64_t in, int64_t out) {
  return scale.has_value() && *scale > 0.0 ? static_cast<T>(1.0 / *scale) : static_cast<T>(in) / static_cast<T>(out);
}

// The source index of each output element of a nearest resize along one dim (HelperInterpNearest /
// HelperInterpNearestExact of UpSampleKernel.cpp, computed in the tensor's dtype T as there, floorf included).
template <typename T>
std::vector<int64_t> nearest_indices(int64_t in, int64_t out, const std::optional<double>& scale, bool exact) {
  const T s = scales_value<T>(scale, in, out);
  std::vector<int64_t> idx(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    int64_t src;
    if (exact) {
      T real = s * (static_cast<T>(i) + static_cast<T>(0.5)) - static_cast<T>(0.5);
      if (real < static_cast<T>(0)) real = static_cast<T>(0);
      src = static_cast<int64_t>(std::floor(static_cast<float>(real + static_cast<T>(0.5))));
    } else {
      src = static_cast<int64_t>(std::floor(static_cast<float>(s * static_cast<T>(i))));
    }
    idx[static_cast<size_t>(i)] = std::min(src, in - 1);
  }
  return idx;
}

// The two source indices and weights of each output element of a linear resize along one dim (PyTorch's
// area_pixel_compute_scale / area_pixel_compute_source_index / compute_source_index_and_lambda in T).
template <typename T>
void linear_weights(int64_t in, int64_t out, const std::optional<double>& scale, bool align_corners,
                    std::vector<int64_t>& i0, std::vector<int64_t>& i1, std::vector<double>& l0, std::vector<double>& l1) {
  const T s = align_corners ? (out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : static_cast<T>(0))
                            : scales_value<T>(scale, in, out);
  for (int64_t i = 0; i < out; ++i) {
    T real;
    if (align_corners) {
      real = s * static_cast<T>(i);
    } else {
      real = s * (static_cast<T>(i) + static_cast<T>(0.5)) - static_cast<T>(0.5);
      if (real < static_cast<T>(0)) real = static_cast<T>(0);
    }
    const int64_t a = static_cast<int64_t>(real);
    const int64_t b = a + (a < in - 1 ? 1 : 0);
    const T lambda1 = std::min(std::max(real - static_cast<T>(a), static_cast<T>(0)), static_cast<T>(1));
    const T lambda0 = static_cast<T>(1) - lambda1;
    i0.push_back(a);
    i1.push_back(b);
    l0.push_back(static_cast<double>(lambda0));
    l1.push_back(static_cast<double>(lambda1));
  }
}

// A [out] weight vector shaped to broadcast along `dim` of an nd-dim tensor.
Tensor weight_along(const std::vector<double>& w, int64_t dim, int64_t nd, const Tensor& like) {
  Shape s = Shape::filled(static_cast<int>(nd - dim), 1);
  s[0] = static_cast<int64_t>(w.size());
  return from_vector(w, s).to(like.dtype()).to(like.device());
}

}  // namespace

Tensor interpolate(const Tensor& x, const InterpolateFuncOptions& o) {
  const InterpolateMode mode = o.mode();
  const char* name = mode_name(mode);
  const int64_t nd = x.dim(), sd = nd - 2;
  const bool linear_mode =
      mode == InterpolateMode::linear || mode == InterpolateMode::bilinear || mode == InterpolateMode::trilinear;
  EMBER_CHECK(linear_mode || !o.align_corners().has_value(), "interpolate: align_corners option can only be set with ",
              "the interpolating modes: linear | bilinear | trilinear (mode is ", name, ")");
  EMBER_CHECK(nd >= 3 && nd <= 5, "interpolate: expected input [N, C, *spatial] with 1 to 3 spatial dims (3-D to 5-D), got shape ",
              x.shape(), "; add the batch dim with unsqueeze(0)");
  EMBER_CHECK(is_floating(x.dtype()), "interpolate: needs a floating input, got ", dtype_name(x.dtype()));
  const int64_t want = mode == InterpolateMode::linear ? 3 : mode == InterpolateMode::bilinear ? 4 : mode == InterpolateMode::trilinear ? 5 : nd;
  EMBER_CHECK(want == nd, "interpolate: got ", nd, "D input, but ", name, " mode needs ", want, "D input (",
              want == 3 ? "linear: [N, C, L]" : want == 4 ? "bilinear: [N, C, H, W]" : "trilinear: [N, C, D, H, W]", ")");
  EMBER_CHECK(mode != InterpolateMode::area || nd <= 4, "interpolate: area mode takes 3-D or 4-D input, got ", x.shape());
  EMBER_CHECK(!(o.size().has_value() && o.scale_factor().has_value()),
              "interpolate: only one of size or scale_factor should be defined");
  EMBER_CHECK(o.size().has_value() || o.scale_factor().has_value(),
              "interpolate: either size or scale_factor should be defined");
  const bool recompute = o.recompute_scale_factor().value_or(false);
  EMBER_CHECK(!(recompute && o.size().has_value()),
              "interpolate: recompute_scale_factor is not meaningful with an explicit size");
  std::vector<int64_t> out(static_cast<size_t>(sd));
  std::vector<std::optional<double>> scales(static_cast<size_t>(sd));
  if (o.size().has_value()) {
    const auto& s = *o.size();
    EMBER_CHECK(s.size() == 1 || static_cast<int64_t>(s.size()) == sd, "interpolate: input and output must have the same ",
                "number of spatial dimensions, but got input ", x.shape(), " (", sd, " spatial) and an output size of ",
                s.size(), " values");
    for (int64_t d = 0; d < sd; ++d) out[d] = s.size() == 1 ? s[0] : s[d];
  } else {
    const auto& f = *o.scale_factor();
    EMBER_CHECK(f.size() == 1 || static_cast<int64_t>(f.size()) == sd, "interpolate: input and scale_factor must have ",
                "the same number of spatial dimensions, but got input ", x.shape(), " (", sd, " spatial) and ", f.size(),
                " scale factors");
    for (int64_t d = 0; d < sd; ++d) {
      const double factor = f.size() == 1 ? f[0] : f[d];
      out[d] = static_cast<int64_t>(std::floor(static_cast<double>(x.size(2 + d)) * factor));
      if (!recompute && mode != InterpolateMode::area) scales[d] = factor;
    }
  }
  for (int64_t d = 0; d < sd; ++d)
    EMBER_CHECK(x.size(2 + d) > 0 && out[d] > 0, "interpolate: input and output sizes should be greater than 0, but got input ",
                x.shape(), " and output size ", out[d], " for spatial dim ", d);
  if (mode == InterpolateMode::area) {
    if (nd == 3) return adaptive_avg_pool2d(x.unsqueeze(2), 1, out[0]).squeeze(2);
    return adaptive_avg_pool2d(x, out[0], out[1]);
  }
  const bool f64 = x.dtype() == DType::f64;
  Tensor y = x;
  // Innermost dim first: PyTorch's separable kernel nests the last dim innermost (h0·(w0·x00 + w1·x01) + ...).
  for (int64_t d = sd - 1; d >= 0; --d) {
    const int64_t dim = 2 + d, in = x.size(dim);
    if (!linear_mode) {
      const bool exact = mode == InterpolateMode::nearest_exact;
      const auto idx = f64 ? nearest_indices<double>(in, out[d], scales[d], exact)
                           : nearest_indices<float>(in, out[d], scales[d], exact);
      y = index_select(y, dim, index_tensor(idx, x.device()));
      continue;
    }
    if (in == out[d]) continue;  // compute_source_index_and_lambda: the same size copies
    std::vector<int64_t> i0, i1;
    std::vector<double> l0, l1;
    const bool ac = o.align_corners().value_or(false);
    if (f64) linear_weights<double>(in, out[d], scales[d], ac, i0, i1, l0, l1);
    else linear_weights<float>(in, out[d], scales[d], ac, i0, i1, l0, l1);
    const Tensor a = index_select(y, dim, index_tensor(i0, x.device()));
    const Tensor b = index_select(y, dim, index_tensor(i1, x.device()));
    y = a * weight_along(l0, dim, nd, x) + b * weight_along(l1, dim, nd, x);
  }
  return y;
}

// --- pixel shuffle ----------------------------------------------------------------------------------------
Tensor pixel_shuffle(const Tensor& x, int64_t r) {
  EMBER_CHECK(x.dim() >= 3, "pixel_shuffle: expects input to have at least 3 dimensions [*, C·r², H, W], but got ",
              x.shape());
  EMBER_CHECK(r > 0, "pixel_shuffle: expects a positive upscale_factor, but got ", r);
  const int64_t b = x.dim() - 3, C = x.size(-3), H = x.size(-2), W = x.size(-1);
  EMBER_CHECK(C % (r * r) == 0, "pixel_shuffle: expects its input's 'channel' dimension to be divisible by the square ",
              "of upscale_factor, but input.size(-3)=", C, " is not divisible by ", r * r, " (input ", x.shape(), ")");
  Shape lead;
  for (int64_t i = 0; i < b; ++i) lead.push_back(x.size(i));
  Shape split = lead, dims, merged = lead;
  for (int64_t v : {C / (r * r), r, r, H, W}) split.push_back(v);
  for (int64_t i = 0; i < b; ++i) dims.push_back(i);
  for (int64_t v : {0, 3, 1, 4, 2}) dims.push_back(b + v);
  for (int64_t v : {C / (r * r), H * r, W * r}) merged.push_back(v);
  return x.reshape(split).permute(dims).reshape(merged);
}

Tensor pixel_unshuffle(const Tensor& x, int64_t r) {
  EMBER_CHECK(x.dim() >= 3, "pixel_unshuffle: expects input to have at least 3 dimensions [*, C, H·r, W·r], but got ",
              x.shape());
  EMBER_CHECK(r > 0, "pixel_unshuffle: expects a positive downscale_factor, but got ", r);
  const int64_t b = x.dim() - 3, C = x.size(-3), H = x.size(-2), W = x.size(-1);
  EMBER_CHECK(H % r == 0, "pixel_unshuffle: expects height to be divisible by downscale_factor, but input.size(-2)=", H,
              " is not divisible by ", r);
  EMBER_CHECK(W % r == 0, "pixel_unshuffle: expects width to be divisible by downscale_factor, but input.size(-1)=", W,
              " is not divisible by ", r);
  Shape lead;
  for (int64_t i = 0; i < b; ++i) lead.push_back(x.size(i));
  Shape split = lead, dims, merged = lead;
  for (int64_t v : {C, H / r, r, W / r, r}) split.push_back(v);
  for (int64_t i = 0; i < b; ++i) dims.push_back(i);
  for (int64_t v : {0, 2, 4, 1, 3}) dims.push_back(b + v);
  for (int64_t v : {C * r * r, H / r, W / r}) merged.push_back(v);
  return x.reshape(split).permute(dims).reshape(merged);
}

}  // namespace ember::nn::functional
