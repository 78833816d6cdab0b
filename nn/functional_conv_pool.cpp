// conv2d and pooling: fused Backend ops with fused backward passes.
#include <sstream>
#include <string>
#include <utility>

#include "autograd/node.h"
#include "core/raw.h"
#include "nn/functional.h"

namespace ember::nn::functional {
namespace {

using autograd::SavedTensor;

// 3-D inputs are one unbatched image: run as a batch of one, then drop the batch dim again.
struct Batched {
  Tensor x;
  bool added;
  Batched(const Tensor& in, const char* op) : x(in), added(in.dim() == 3) {
    EMBER_CHECK(in.dim() == 3 || in.dim() == 4, op, ": expected input [N, C, H, W] or [C, H, W], got shape ",
                in.shape());
    if (added) x = in.unsqueeze(0);
  }
  Tensor finish(const Tensor& y) const { return added ? y.squeeze(0) : y; }
};

struct Conv2dBackward : autograd::Node {
  Conv2dParams p;
  SavedTensor x, w;
  bool has_bias = false;
  std::string_view name() const override { return "conv2d"; }
  void release() override {
    x.release();
    w.release();
  }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Tensor xv = x.unpack(*this), wv = w.unpack(*this), gy = raw::contiguous(g);
    TensorArg gxa, gwa, gba;
    if (needs_grad(0)) gxa = (grad_inputs[0] = raw::empty(xv.shape(), xv.dtype(), xv.device())).arg();
    if (needs_grad(1)) gwa = (grad_inputs[1] = raw::empty(wv.shape(), wv.dtype(), wv.device())).arg();
    if (has_bias && needs_grad(2)) gba = (grad_inputs[2] = raw::empty({wv.size(0)}, wv.dtype(), wv.device())).arg();
    backend(xv.device()).conv2d_backward(xv.arg(), wv.arg(), gy.arg(), needs_grad(0) ? &gxa : nullptr,
                                         needs_grad(1) ? &gwa : nullptr, has_bias && needs_grad(2) ? &gba : nullptr, p);
  }
};

// The output length along one dim, PyTorch's rule with floor division: (in + 2·pad - (dilation·(kernel-1)+1))
// / stride + 1. A window larger than the padded input gives 0 or less here (C++'s truncating division would
// round -1/2 up to 0 and give 1: a silent 1×1 output).
// ceil_mode (pooling) rounds up instead, then drops a last window that would start past the input and the
// left padding (PyTorch's pooling_output_shape).
int64_t out_size(int64_t in, int64_t pad, int64_t dilation, int64_t kernel, int64_t stride, bool ceil_mode = false) {
  const int64_t span = in + 2 * pad - (dilation * (kernel - 1) + 1) + (ceil_mode ? stride - 1 : 0);
  int64_t out = (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

std::string pair_str(const int64_t* v) {
  std::ostringstream s;
  s << "[" << v[0] << ", " << v[1] << "]";
  return s.str();
}

// Refuses an output of fewer than one element per spatial dim, as PyTorch ("Output size is too small"),
// naming what gave it.
void check_output_size(const char* op, const Shape& input, const int64_t* kernel, const int64_t* dilation,
                       const int64_t* stride, const int64_t* padding, int64_t OH, int64_t OW, bool ceil_mode = false) {
  if (OH > 0 && OW > 0) return;
  const int64_t eff[2] = {dilation[0] * (kernel[0] - 1) + 1, dilation[1] * (kernel[1] - 1) + 1};
  const bool dilated = dilation[0] != 1 || dilation[1] != 1;
  const int64_t out[2] = {OH, OW};
  std::ostringstream m;
  m << op << ": output size is too small: the input " << input << " (H×W " << input[input.size() - 2] << "×"
    << input[input.size() - 1] << ") with kernel " << pair_str(kernel);
  if (dilated) m << " (dilation " << pair_str(dilation) << ": effective " << pair_str(eff) << ")";
  m << ", stride " << pair_str(stride) << " and padding " << pair_str(padding) << (ceil_mode ? " (ceil_mode)" : "")
    << " gives output " << pair_str(out)
    << "; the " << (dilated ? "effective " : "") << "kernel must fit in the padded input ("
    << (ceil_mode ? "H + 2·padding + stride - 1 >= kernel in ceil_mode" : "H + 2·padding >= kernel")
    << "): use a smaller kernel, more padding or a larger input";
  throw Error(m.str());
}

struct Pool2dBackward : autograd::Node {
  PoolOp op;
  Pool2dParams p;
  Shape input_shape;
  SavedTensor indices;  // max only
  std::string_view name() const override {
    if (p.adaptive) return op == PoolOp::max ? "adaptive_max_pool2d" : "adaptive_avg_pool2d";
    return op == PoolOp::max ? "max_pool2d" : "avg_pool2d";
  }
  void release() override { indices.release(); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Tensor gy = raw::contiguous(g);
    Tensor gx = raw::empty(input_shape, gy.dtype(), gy.device());
    const Tensor idx = op == PoolOp::max ? indices.unpack(*this) : Tensor();
    const TensorArg ia = idx.defined() ? idx.arg() : TensorArg{};
    backend(gy.device()).pool2d_backward(op, gy.arg(), idx.defined() ? &ia : nullptr, gx.arg(), p);
    grad_inputs[0] = gx;
  }
};

// The pooling op on the contiguous batched x into [N, C, OH, OW] (and the indices of the maxima for max),
// recorded for autograd against b.x.
std::pair<Tensor, Tensor> run_pool(PoolOp op, const Batched& b, const Tensor& x, int64_t OH, int64_t OW,
                                   const Pool2dParams& p) {
  Tensor y = raw::empty({x.size(0), x.size(1), OH, OW}, x.dtype(), x.device());
  Tensor idx = op == PoolOp::max ? raw::empty(y.shape(), DType::i64, x.device()) : Tensor();
  const TensorArg ia = idx.defined() ? idx.arg() : TensorArg{};
  backend(x.device()).pool2d_forward(op, x.arg(), y.arg(), idx.defined() ? &ia : nullptr, p);
  if (auto node = autograd::make_node<Pool2dBackward>(b.x)) {
    node->op = op;
    node->p = p;
    node->input_shape = x.shape();
    if (idx.defined()) node->indices.save(idx);
    autograd::set_history(y, std::move(node));
  }
  return {y, idx};
}

Tensor pool2d(PoolOp op, const Tensor& input, const Pool2dOptions& o) {
  const char* name = op == PoolOp::max ? "max_pool2d" : "avg_pool2d";
  const Batched b(input, name);
  EMBER_CHECK(is_floating(input.dtype()), name, ": needs a floating input, got ", dtype_name(input.dtype()));
  Pool2dParams p;
  for (int i = 0; i < 2; ++i) {
    p.kernel[i] = o.kernel_size()[i];
    p.stride[i] = o.stride()[i] == 0 ? o.kernel_size()[i] : o.stride()[i];
    p.padding[i] = o.padding()[i];
    EMBER_CHECK(p.kernel[i] > 0 && p.stride[i] > 0 && p.padding[i] >= 0, name, ": kernel_size ",
                pair_str(o.kernel_size().data()), " and stride must be positive, padding non-negative");
    EMBER_CHECK(2 * o.padding()[i] <= o.kernel_size()[i], name, ": padding ", pair_str(o.padding().data()),
                " must be at most half the kernel ", pair_str(o.kernel_size().data()),
                " (PyTorch's rule: pad should be at most half of effective kernel size)");
  }
  p.count_include_pad = o.count_include_pad();
  const Tensor x = raw::contiguous(b.x);
  // The backends take OH, OW from y; their windows (nn_math::pool_window) clip a ceil_mode window that
  // reaches past the padding.
  const int64_t OH = out_size(x.size(2), p.padding[0], 1, p.kernel[0], p.stride[0], o.ceil_mode());
  const int64_t OW = out_size(x.size(3), p.padding[1], 1, p.kernel[1], p.stride[1], o.ceil_mode());
  const int64_t no_dilation[2] = {1, 1};
  check_output_size(name, input.shape(), p.kernel, no_dilation, p.stride, p.padding, OH, OW, o.ceil_mode());
  return b.finish(run_pool(op, b, x, OH, OW, p).first);
}

}  // namespace

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const Conv2dOptions& o) {
  const Batched b(input, "conv2d");
  raw::check_same_device(input, weight, "conv2d");
  EMBER_CHECK(weight.dim() == 4, "conv2d: weight must be [O, C/groups, KH, KW], got shape ", weight.shape());
  EMBER_CHECK(is_floating(input.dtype()) && input.dtype() == weight.dtype(), "conv2d: input (", dtype_name(input.dtype()),
              ") and weight (", dtype_name(weight.dtype()), ") must share a floating dtype");
  const int64_t C = b.x.size(1), O = weight.size(0), G = o.groups();
  EMBER_CHECK(G >= 1 && C % G == 0 && O % G == 0, "conv2d: groups ", G, " must divide the input channels ", C,
              " and the output channels ", O);
  EMBER_CHECK(weight.size(1) * G == C, "conv2d: the input has ", C, " channels but the weight ", weight.shape(),
              " expects ", weight.size(1) * G, " (weight.size(1) · groups)");
  if (bias.defined()) {
    raw::check_same_device(input, bias, "conv2d");
    EMBER_CHECK(bias.shape() == Shape({O}) && bias.dtype() == weight.dtype(), "conv2d: bias must be [", O, "] ",
                dtype_name(weight.dtype()), ", got ", bias.shape(), " ", dtype_name(bias.dtype()));
  }
  Conv2dParams p;
  p.groups = G;
  for (int i = 0; i < 2; ++i) {
    p.stride[i] = o.stride()[i];
    p.padding[i] = o.padding()[i];
    p.dilation[i] = o.dilation()[i];
    EMBER_CHECK(p.stride[i] > 0 && p.dilation[i] > 0 && p.padding[i] >= 0,
                "conv2d: stride and dilation must be positive and padding non-negative");
  }
  const Tensor x = raw::contiguous(b.x), w = raw::contiguous(weight);
  const int64_t OH = out_size(x.size(2), p.padding[0], p.dilation[0], w.size(2), p.stride[0]);
  const int64_t OW = out_size(x.size(3), p.padding[1], p.dilation[1], w.size(3), p.stride[1]);
  const int64_t kernel[2] = {w.size(2), w.size(3)};
  check_output_size("conv2d", input.shape(), kernel, p.dilation, p.stride, p.padding, OH, OW);
  Tensor y = raw::empty({x.size(0), O, OH, OW}, x.dtype(), x.device());
  const Tensor bc = bias.defined() ? raw::contiguous(bias) : Tensor();
  const TensorArg ba = bc.defined() ? bc.arg() : TensorArg{};
  backend(x.device()).conv2d_forward(x.arg(), w.arg(), bc.defined() ? &ba : nullptr, y.arg(), p);
  auto node = bias.defined() ? autograd::make_node<Conv2dBackward>(b.x, weight, bias)
                             : autograd::make_node<Conv2dBackward>(b.x, weight);
  if (node) {
    node->p = p;
    node->has_bias = bias.defined();
    node->x.save(x);
    node->w.save(w);
    autograd::set_history(y, std::move(node));
  }
  return b.finish(y);
}

// conv1d is conv2d on [N, C, 1, L] with a [O, C/groups, 1, K] weight: the unit height adds no padding,
// stride or dilation, so the output is [N, O, 1, OL] and the backward is conv2d's.
Tensor conv1d(const Tensor& input, const Tensor& weight, const Tensor& bias, const Conv1dOptions& o) {
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3, "conv1d: expected input [N, C, L] or [C, L], got shape ",
              input.shape());
  EMBER_CHECK(weight.dim() == 3, "conv1d: weight must be [O, C/groups, K], got shape ", weight.shape());
  Conv2dOptions o2;
  o2.stride({1, o.stride()[0]}).padding({0, o.padding()[0]}).dilation({1, o.dilation()[0]}).groups(o.groups());
  const int64_t h_dim = input.dim() - 1;  // [N, C, 1, L] or [C, 1, L]
  try {
    return conv2d(input.unsqueeze(h_dim), weight.unsqueeze(2), bias, o2).squeeze(h_dim);
  } catch (const Error& e) {
    // conv2d's messages speak of the 4-D views; say which op was called.
    throw Error(std::string("conv1d (as conv2d over [N, C, 1, L]): ") + e.what());
  }
}

Tensor max_pool2d(const Tensor& x, const Pool2dOptions& options) { return pool2d(PoolOp::max, x, options); }
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options) { return pool2d(PoolOp::avg, x, options); }

namespace {

// Adaptive pooling through the pool2d Backend entries with Pool2dParams::adaptive (the windows are
// nn_math::adaptive_start/end of H, W and the output size). Returns y and, for max, the indices.
std::tuple<Tensor, Tensor> adaptive_pool2d(PoolOp op, const Tensor& input, int64_t out_h, int64_t out_w) {
  const char* name = op == PoolOp::max ? "adaptive_max_pool2d" : "adaptive_avg_pool2d";
  const Batched b(input, name);
  EMBER_CHECK(is_floating(input.dtype()), name, ": needs a floating input, got ", dtype_name(input.dtype()));
  const int64_t H = b.x.size(2), W = b.x.size(3);
  EMBER_CHECK(H > 0 && W > 0, name, ": the input ", input.shape(),
              " has an empty spatial dim; there is nothing to pool (H and W must be at least 1)");
  EMBER_CHECK(out_h > 0 && out_w > 0, name, ": output size [", out_h, ", ", out_w,
              "] must be positive (the input is ", input.shape(), ")");
  Pool2dParams p;
  p.adaptive = true;
  const Tensor x = raw::contiguous(b.x);
  auto [y, idx] = run_pool(op, b, x, out_h, out_w, p);
  return {b.finish(y), idx.defined() ? b.finish(idx) : Tensor()};
}

}  // namespace

Tensor adaptive_avg_pool2d(const Tensor& x, int64_t output_size) { return adaptive_avg_pool2d(x, output_size, output_size); }

Tensor adaptive_avg_pool2d(const Tensor& x, int64_t out_h, int64_t out_w) {
  // Global average pooling as one mean (the common case; the same windows)
  if (out_h == 1 && out_w == 1 && (x.dim() == 3 || x.dim() == 4) && x.size(-2) > 0 && x.size(-1) > 0 &&
      is_floating(x.dtype()))
    return mean(x, {-2, -1}, /*keepdim=*/true);
  return std::get<0>(adaptive_pool2d(PoolOp::avg, x, out_h, out_w));
}

Tensor adaptive_max_pool2d(const Tensor& x, int64_t output_size) { return adaptive_max_pool2d(x, output_size, output_size); }

Tensor adaptive_max_pool2d(const Tensor& x, int64_t out_h, int64_t out_w) {
  return std::get<0>(adaptive_pool2d(PoolOp::max, x, out_h, out_w));
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& x, int64_t out_h, int64_t out_w) {
  return adaptive_pool2d(PoolOp::max, x, out_h, out_w);
}

}  // namespace ember::nn::functional
