// conv2d and pooling: fused Backend ops with fused backward passes; conv_transpose2d as one node over the
// backends' conv2d entries; dilated max pooling, divisor_override and max_unpool as composites of them.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "autograd/node.h"
#include "core/raw.h"
#include "nn/functional.h"

namespace ember::nn::functional {
namespace {

// A 1-D op (conv1d, conv_transpose1d) run as its 2-D one (op2d) over [N, C, 1, L] (or [C, 1, L]) with the
// weight as [*, *, 1, K]: the unit height adds no padding, stride or dilation. op2d's messages speak of the
// 4-D views, so its errors are prefixed with the op that was called.
template <typename Op2d>
Tensor as_unit_height(const char* op, const char* weight_shape, const char* op2d_name, const Tensor& input,
                      const Tensor& weight, Op2d op2d) {
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3, op, ": expected input [N, C, L] or [C, L], got shape ",
              input.shape());
  EMBER_CHECK(weight.dim() == 3, op, ": weight must be ", weight_shape, ", got shape ", weight.shape());
  const int64_t h_dim = input.dim() - 1;
  try {
    return op2d(input.unsqueeze(h_dim), weight.unsqueeze(2)).squeeze(h_dim);
  } catch (const Error& e) {
    throw Error(std::string(op) + " (as " + op2d_name + " over [N, C, 1, L]): " + e.what());
  }
}

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
  void release() override { release_all(x, w); }
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

// Max pooling with dilation > 1 (the backends' pooling has none), as a composite of differentiable ops:
// every window's elements gathered by one index_select over the flattened H·W plane, then max over the
// window. A window element outside the input reads the window's first element inside it (PyTorch starts
// its scan there, with maximum -inf), so ties and the reported index are PyTorch's; a window with no
// element inside the input (possible with dilation) reads an appended -inf and reports PyTorch's index.
// Returns y and the indices (h·W + w).
std::pair<Tensor, Tensor> dilated_max_pool(const Tensor& x, const Pool2dParams& p, const int64_t* dilation, int64_t OH,
                                           int64_t OW) {
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t KH = p.kernel[0], KW = p.kernel[1], K = KH * KW;
  std::vector<int64_t> table(static_cast<size_t>(OH * OW * K)), report(table.size());
  bool sentinel = false;
  for (int64_t oh = 0; oh < OH; ++oh)
    for (int64_t ow = 0; ow < OW; ++ow) {
      const int64_t h0 = oh * p.stride[0] - p.padding[0], w0 = ow * p.stride[1] - p.padding[1];
      const int64_t h_end = std::min(h0 + (KH - 1) * dilation[0] + 1, H), w_end = std::min(w0 + (KW - 1) * dilation[1] + 1, W);
      int64_t h_first = h0, w_first = w0;  // PyTorch's while (ih0 < 0) ih0 += dilation
      while (h_first < 0) h_first += dilation[0];
      while (w_first < 0) w_first += dilation[1];
      const bool empty = h_first >= h_end || w_first >= w_end;
      sentinel = sentinel || empty;
      const int64_t first = empty ? H * W : h_first * W + w_first;
      int64_t* t = table.data() + (oh * OW + ow) * K;
      int64_t* r = report.data() + (oh * OW + ow) * K;
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw) {
          const int64_t ih = h0 + kh * dilation[0], iw = w0 + kw * dilation[1];
          const bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
          t[kh * KW + kw] = inside ? ih * W + iw : first;
          r[kh * KW + kw] = inside ? ih * W + iw : h_first * W + w_first;
        }
    }
  Tensor flat = x.reshape({N, C, H * W});
  if (sentinel) flat = cat({flat, full({N, C, 1}, -INFINITY, {.dtype = x.dtype(), .device = x.device()})}, 2);
  const Tensor t = from_vector(table, {static_cast<int64_t>(table.size())}).to(x.device());
  const Tensor windows = index_select(flat, 2, t).reshape({N, C, OH, OW, K});
  auto [y, slot] = max(windows, -1);
  // slot (the position within the window) → the input position: report[(oh·OW + ow)·K + slot]
  const Tensor base = raw::reshape(raw::to(arange(int64_t{0}, OH * OW * K, K), x.device()), {OH, OW});
  const Tensor pick = raw::binary(BinaryOp::add, slot, base);
  const Tensor r = from_vector(report, {static_cast<int64_t>(report.size())}).to(x.device());
  const Tensor idx = raw::reshape(raw::index_select(r, 0, raw::reshape(pick, {-1})), {N, C, OH, OW});
  return {y, idx};
}

// max/avg pooling of the batched 4-D (or 3-D) input: the backends' fused pooling, with dilation (max) and
// divisor_override (avg) on top. Returns y and, for max, the indices.
std::pair<Tensor, Tensor> pool2d(PoolOp op, const Tensor& input, const Pool2dOptions& o, const char* name) {
  const Batched b(input, name);
  EMBER_CHECK(is_floating(input.dtype()), name, ": needs a floating input, got ", dtype_name(input.dtype()));
  Pool2dParams p;
  int64_t dilation[2];
  for (int i = 0; i < 2; ++i) {
    p.kernel[i] = o.kernel_size()[i];
    p.stride[i] = o.stride()[i] == 0 ? o.kernel_size()[i] : o.stride()[i];
    p.padding[i] = o.padding()[i];
    dilation[i] = o.dilation()[i];
    EMBER_CHECK(p.kernel[i] > 0 && p.stride[i] > 0 && p.padding[i] >= 0, name, ": kernel_size ",
                pair_str(o.kernel_size().data()), " and stride must be positive, padding non-negative");
    EMBER_CHECK(dilation[i] > 0, name, ": dilation ", pair_str(o.dilation().data()), " must be positive");
    EMBER_CHECK(2 * o.padding()[i] <= o.kernel_size()[i], name, ": padding ", pair_str(o.padding().data()),
                " must be at most half the kernel ", pair_str(o.kernel_size().data()),
                " (PyTorch's rule: pad should be at most half of effective kernel size)");
  }
  const bool dilated = dilation[0] != 1 || dilation[1] != 1;
  EMBER_CHECK(op == PoolOp::max || !dilated, name, ": dilation ", pair_str(o.dilation().data()),
              " is a max pooling option (PyTorch's avg_pool2d has none); leave it 1");
  EMBER_CHECK(op == PoolOp::avg || !o.divisor_override().has_value(), name,
              ": divisor_override is an avg_pool2d option; max pooling takes none");
  EMBER_CHECK(!o.divisor_override().has_value() || *o.divisor_override() != 0, name,
              ": divisor_override must not be zero (PyTorch: divisor must be not zero)");
  p.count_include_pad = o.count_include_pad();
  const Tensor x = raw::contiguous(b.x);
  // The backends take OH, OW from y; their windows (nn_math::pool_window) clip a ceil_mode window that
  // reaches past the padding.
  const int64_t OH = out_size(x.size(2), p.padding[0], dilation[0], p.kernel[0], p.stride[0], o.ceil_mode());
  const int64_t OW = out_size(x.size(3), p.padding[1], dilation[1], p.kernel[1], p.stride[1], o.ceil_mode());
  check_output_size(name, input.shape(), p.kernel, dilation, p.stride, p.padding, OH, OW, o.ceil_mode());
  if (dilated) {
    auto [y, idx] = dilated_max_pool(b.x, p, dilation, OH, OW);
    return {b.finish(y), b.finish(idx)};
  }
  if (op == PoolOp::avg && o.divisor_override().has_value()) {
    // Σ over the window's input elements / divisor: the average over those elements (count_include_pad
    // off) times count / divisor, the count of each window from PyTorch's clipped window bounds.
    p.count_include_pad = false;
    std::vector<double> factor(static_cast<size_t>(OH * OW));
    const int64_t H = x.size(2), W = x.size(3);
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t h0 = oh * p.stride[0] - p.padding[0], w0 = ow * p.stride[1] - p.padding[1];
        const int64_t h1 = std::min(h0 + p.kernel[0], H), w1 = std::min(w0 + p.kernel[1], W);
        const int64_t count = (h1 - std::max<int64_t>(h0, 0)) * (w1 - std::max<int64_t>(w0, 0));
        factor[oh * OW + ow] = static_cast<double>(count) / static_cast<double>(*o.divisor_override());
      }
    const Tensor y = run_pool(op, b, x, OH, OW, p).first;
    const Tensor f = from_vector(factor, {OH, OW}).to(x.dtype()).to(x.device());
    return {b.finish(y * f), Tensor()};
  }
  auto [y, idx] = run_pool(op, b, x, OH, OW, p);
  return {b.finish(y), idx.defined() ? b.finish(idx) : Tensor()};
}

// Pool1dOptions as the 2-D options of unit height.
Pool2dOptions as_2d(const Pool1dOptions& o) {
  Pool2dOptions o2({1, o.kernel_size()[0]});
  o2.stride({1, o.stride()[0] == 0 ? o.kernel_size()[0] : o.stride()[0]})
      .padding({0, o.padding()[0]})
      .dilation({1, o.dilation()[0]})
      .ceil_mode(o.ceil_mode())
      .count_include_pad(o.count_include_pad());
  return o2;
}

// The 1-D pools: x [N, C, L] or [C, L] as [N, C, 1, L]; errors say which op was called.
std::pair<Tensor, Tensor> pool1d(PoolOp op, const Tensor& input, const Pool1dOptions& o, const char* name) {
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3, name, ": expected input [N, C, L] or [C, L], got shape ",
              input.shape());
  EMBER_CHECK(op == PoolOp::max || !o.divisor_override().has_value(), name,
              ": PyTorch's avg_pool1d has no divisor_override; use avg_pool2d on [N, C, 1, L]");
  const int64_t h_dim = input.dim() - 1;
  try {
    auto [y, idx] = pool2d(op, input.unsqueeze(h_dim), as_2d(o), op == PoolOp::max ? "max_pool2d" : "avg_pool2d");
    return {y.squeeze(h_dim), idx.defined() ? raw::squeeze(idx, h_dim) : Tensor()};
  } catch (const Error& e) {
    const char* as = op == PoolOp::max ? " (as max_pool2d over [N, C, 1, L]): " : " (as avg_pool2d over [N, C, 1, L]): ";
    throw Error(std::string(name) + as + e.what());
  }
}

// --- transposed convolution ---------------------------------------------------------------------------
// y = conv2dᵀ(x): the backends' conv2d data gradient with x as grad_y. Inputs: x [N, C_in, H, W] (H, W the
// exact output size of conv2d over y), w [C_in, C_out/G, KH, KW]. Backward: gx = conv2d(gy, w), gw =
// conv2d's filter gradient with input gy and output gradient x.
struct ConvTranspose2dBackward : autograd::Node {
  Conv2dParams p;
  SavedTensor x, w;
  std::string_view name() const override { return "conv_transpose2d"; }
  void release() override { release_all(x, w); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Tensor xv = x.unpack(*this), wv = w.unpack(*this), gy = raw::contiguous(g);
    Backend& be = backend(gy.device());
    if (needs_grad(0)) {
      grad_inputs[0] = raw::empty(xv.shape(), xv.dtype(), xv.device());
      be.conv2d_forward(gy.arg(), wv.arg(), nullptr, grad_inputs[0].arg(), p);
    }
    if (needs_grad(1)) {
      grad_inputs[1] = raw::empty(wv.shape(), wv.dtype(), wv.device());
      const TensorArg gwa = grad_inputs[1].arg();
      be.conv2d_backward(gy.arg(), wv.arg(), xv.arg(), nullptr, &gwa, nullptr, p);
    }
  }
};

}  // namespace

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvTranspose2dOptions& o) {
  const Batched b(input, "conv_transpose2d");
  raw::check_same_device(input, weight, "conv_transpose2d");
  EMBER_CHECK(weight.dim() == 4, "conv_transpose2d: weight must be [C_in, C_out/groups, KH, KW], got shape ",
              weight.shape());
  EMBER_CHECK(is_floating(input.dtype()) && input.dtype() == weight.dtype(), "conv_transpose2d: input (",
              dtype_name(input.dtype()), ") and weight (", dtype_name(weight.dtype()), ") must share a floating dtype");
  const int64_t C = b.x.size(1), G = o.groups();
  EMBER_CHECK(weight.size(0) == C, "conv_transpose2d: the input has ", C, " channels but the weight ", weight.shape(),
              " expects ", weight.size(0), " (a transposed convolution's weight is [C_in, C_out/groups, KH, KW])");
  EMBER_CHECK(G >= 1 && C % G == 0, "conv_transpose2d: groups ", G, " must divide the input channels ", C);
  const int64_t O = weight.size(1) * G;
  if (bias.defined()) {
    raw::check_same_device(input, bias, "conv_transpose2d");
    EMBER_CHECK(bias.shape() == Shape({O}) && bias.dtype() == weight.dtype(), "conv_transpose2d: bias must be [", O,
                "] ", dtype_name(weight.dtype()), ", got ", bias.shape(), " ", dtype_name(bias.dtype()));
  }
  Conv2dParams p;
  p.groups = G;
  int64_t out[2], grow[2], op[2];
  for (int i = 0; i < 2; ++i) {
    p.stride[i] = o.stride()[i];
    p.padding[i] = o.padding()[i];
    p.dilation[i] = o.dilation()[i];
    op[i] = o.output_padding()[i];
    EMBER_CHECK(p.stride[i] > 0 && p.dilation[i] > 0 && p.padding[i] >= 0 && op[i] >= 0,
                "conv_transpose2d: stride and dilation must be positive, padding and output_padding non-negative");
    EMBER_CHECK(op[i] < p.stride[i] || op[i] < p.dilation[i], "conv_transpose2d: output_padding ",
                pair_str(o.output_padding().data()), " must be smaller than either stride ", pair_str(p.stride),
                " or dilation ", pair_str(p.dilation), " (PyTorch's rule)");
    const int64_t in = b.x.size(2 + i), k = weight.size(2 + i);
    out[i] = (in - 1) * p.stride[i] - 2 * p.padding[i] + p.dilation[i] * (k - 1) + op[i] + 1;
    // conv2d over the output gives in + ⌊output_padding / stride⌋ rows (more than `in` only when
    // output_padding >= stride, allowed by a larger dilation): the extra input rows are zeros.
    grow[i] = op[i] / p.stride[i];
  }
  EMBER_CHECK(out[0] > 0 && out[1] > 0, "conv_transpose2d: the input ", input.shape(), " with kernel [",
              weight.size(2), ", ", weight.size(3), "], stride ", pair_str(p.stride), ", padding ", pair_str(p.padding),
              ", dilation ", pair_str(p.dilation), " and output_padding ", pair_str(o.output_padding().data()),
              " gives output ", pair_str(out), ": reduce the padding or grow the kernel");
  const Tensor grown = grow[0] != 0 || grow[1] != 0 ? pad(b.x, {0, grow[1], 0, grow[0]}) : b.x;
  const Tensor x = raw::contiguous(grown), w = raw::contiguous(weight);
  Tensor y = raw::empty({x.size(0), O, out[0], out[1]}, x.dtype(), x.device());
  const TensorArg ya = y.arg();
  // conv2d's data gradient reads only the weight and the output gradient; y's descriptor gives the shape.
  backend(x.device()).conv2d_backward(ya, w.arg(), x.arg(), &ya, nullptr, nullptr, p);
  if (auto node = autograd::make_node<ConvTranspose2dBackward>(grown, weight)) {
    node->p = p;
    node->x.save(x);
    node->w.save(w);
    autograd::set_history(y, std::move(node));
  }
  if (bias.defined()) y = y + bias.reshape({1, O, 1, 1});
  return b.finish(y);
}

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias, const ConvTranspose1dOptions& o) {
  ConvTranspose2dOptions o2;
  o2.stride({1, o.stride()[0]})
      .padding({0, o.padding()[0]})
      .output_padding({0, o.output_padding()[0]})
      .dilation({1, o.dilation()[0]})
      .groups(o.groups());
  return as_unit_height("conv_transpose1d", "[C_in, C_out/groups, K]", "conv_transpose2d", input, weight,
                        [&](const Tensor& x, const Tensor& w) { return conv_transpose2d(x, w, bias, o2); });
}

namespace {

// The output size of max_unpool along each of the last D dims (PyTorch's _unpool_output_size).
template <size_t D>
std::vector<int64_t> unpool_size(const char* name, const Tensor& x, const MaxUnpoolOptions<D>& o) {
  std::vector<int64_t> def(D), out;
  for (size_t d = 0; d < D; ++d) {
    const int64_t k = o.kernel_size()[d], s = o.stride()[d] == 0 ? k : o.stride()[d], p = o.padding()[d];
    EMBER_CHECK(k > 0 && s > 0 && p >= 0, name, ": kernel_size and stride must be positive, padding non-negative");
    def[d] = (x.size(x.dim() - D + d) - 1) * s + k - 2 * p;
  }
  if (!o.output_size().has_value()) return def;
  out = *o.output_size();
  if (out.size() == D + 2) out.erase(out.begin(), out.begin() + 2);
  EMBER_CHECK(out.size() == D, name, ": output_size must have ", D, " or ", D + 2, " elements, got ", o.output_size()->size());
  for (size_t d = 0; d < D; ++d) {
    const int64_t s = o.stride()[d] == 0 ? o.kernel_size()[d] : o.stride()[d];
    EMBER_CHECK(def[d] - s < out[d] && out[d] < def[d] + s, name, ": output_size[", d, "] = ", out[d],
                " must be between ", def[d] - s, " and ", def[d] + s, " (exclusive; the default is ", def[d],
                " = (in - 1)·stride + kernel - 2·padding, as PyTorch)");
  }
  return out;
}

// x and indices [N, C, S] (S the flattened input plane) → [N, C, out_numel] with x scattered to the indices.
Tensor unpool_flat(const char* name, const Tensor& x, const Tensor& indices, int64_t out_numel) {
  EMBER_CHECK(indices.dtype() == DType::i64, name, ": indices must be i64 (as max_pool's return_indices gives them), got ",
              dtype_name(indices.dtype()));
  EMBER_CHECK(indices.shape() == x.shape(), name, ": indices ", indices.shape(), " must have the input's shape ", x.shape());
  raw::check_same_device(x, indices, name);
  if (indices.numel() > 0) {
    const int64_t lo = raw::reduce(ReduceOp::min, indices, {}, false).item<int64_t>();
    const int64_t hi = raw::reduce(ReduceOp::max, indices, {}, false).item<int64_t>();
    EMBER_CHECK(lo >= 0 && hi < out_numel, name, ": found an invalid max index ", lo < 0 ? lo : hi,
                " (the output planes have ", out_numel, " elements); were the indices made with this kernel and stride?");
  }
  const Tensor zeros_out = zeros({x.size(0), x.size(1), out_numel}, {.dtype = x.dtype(), .device = x.device()});
  return scatter(zeros_out, 2, indices, x);
}

}  // namespace

Tensor max_unpool2d(const Tensor& input, const Tensor& indices, const MaxUnpool2dOptions& o) {
  const Batched b(input, "max_unpool2d");
  EMBER_CHECK(is_floating(input.dtype()), "max_unpool2d: needs a floating input, got ", dtype_name(input.dtype()));
  const std::vector<int64_t> out = unpool_size("max_unpool2d", b.x, o);
  const Tensor idx = indices.dim() == 3 && b.added ? indices.unsqueeze(0) : indices;
  EMBER_CHECK(idx.shape() == b.x.shape(), "max_unpool2d: indices ", indices.shape(), " must have the input's shape ",
              input.shape());
  const int64_t N = b.x.size(0), C = b.x.size(1);
  const Tensor y = unpool_flat("max_unpool2d", b.x.reshape({N, C, -1}), idx.reshape({N, C, -1}), out[0] * out[1]);
  return b.finish(y.reshape({N, C, out[0], out[1]}));
}

Tensor max_unpool1d(const Tensor& input, const Tensor& indices, const MaxUnpool1dOptions& o) {
  EMBER_CHECK(input.dim() == 2 || input.dim() == 3, "max_unpool1d: expected input [N, C, L] or [C, L], got shape ",
              input.shape());
  EMBER_CHECK(is_floating(input.dtype()), "max_unpool1d: needs a floating input, got ", dtype_name(input.dtype()));
  const std::vector<int64_t> out = unpool_size("max_unpool1d", input, o);
  const Tensor x = input.dim() == 2 ? input.unsqueeze(0) : input;
  const Tensor idx = input.dim() == 2 && indices.dim() == 2 ? indices.unsqueeze(0) : indices;
  EMBER_CHECK(idx.shape() == x.shape(), "max_unpool1d: indices ", indices.shape(), " must have the input's shape ",
              input.shape());
  const Tensor y = unpool_flat("max_unpool1d", x, idx, out[0]);
  return input.dim() == 2 ? y.squeeze(0) : y;
}

Tensor max_pool1d(const Tensor& x, const Pool1dOptions& options) {
  return pool1d(PoolOp::max, x, options, "max_pool1d").first;
}
Tensor avg_pool1d(const Tensor& x, const Pool1dOptions& options) {
  return pool1d(PoolOp::avg, x, options, "avg_pool1d").first;
}
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, const Pool1dOptions& options) {
  auto [y, idx] = pool1d(PoolOp::max, x, options, "max_pool1d");
  return {y, idx};
}
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, const Pool2dOptions& options) {
  auto [y, idx] = pool2d(PoolOp::max, x, options, "max_pool2d");
  return {y, idx};
}

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
  int64_t extra[2] = {0, 0};  // padding="same" with an odd total: one more row/column on the bottom/right
  for (int i = 0; i < 2; ++i) {
    p.stride[i] = o.stride()[i];
    p.padding[i] = o.padding()[i];
    p.dilation[i] = o.dilation()[i];
    EMBER_CHECK(p.stride[i] > 0 && p.dilation[i] > 0 && p.padding[i] >= 0,
                "conv2d: stride and dilation must be positive and padding non-negative");
  }
  if (o.padding().is_same()) {
    EMBER_CHECK(p.stride[0] == 1 && p.stride[1] == 1, "conv2d: padding='same' is not supported for strided convolutions",
                " (stride ", pair_str(p.stride), "), as in PyTorch; give the padding as numbers instead");
    for (int i = 0; i < 2; ++i) {
      const int64_t total = p.dilation[i] * (weight.size(2 + i) - 1);
      p.padding[i] = total / 2;
      extra[i] = total - 2 * p.padding[i];
    }
  }
  // PyTorch's _convolution_mode: pad the odd extra explicitly, then convolve with the symmetric part.
  const Tensor padded = extra[0] != 0 || extra[1] != 0 ? pad(b.x, {0, extra[1], 0, extra[0]}) : b.x;
  const Tensor x = raw::contiguous(padded), w = raw::contiguous(weight);
  const int64_t OH = out_size(x.size(2), p.padding[0], p.dilation[0], w.size(2), p.stride[0]);
  const int64_t OW = out_size(x.size(3), p.padding[1], p.dilation[1], w.size(3), p.stride[1]);
  const int64_t kernel[2] = {w.size(2), w.size(3)};
  check_output_size("conv2d", input.shape(), kernel, p.dilation, p.stride, p.padding, OH, OW);
  Tensor y = raw::empty({x.size(0), O, OH, OW}, x.dtype(), x.device());
  const Tensor bc = bias.defined() ? raw::contiguous(bias) : Tensor();
  const TensorArg ba = bc.defined() ? bc.arg() : TensorArg{};
  backend(x.device()).conv2d_forward(x.arg(), w.arg(), bc.defined() ? &ba : nullptr, y.arg(), p);
  auto node = bias.defined() ? autograd::make_node<Conv2dBackward>(padded, weight, bias)
                             : autograd::make_node<Conv2dBackward>(padded, weight);
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
  Conv2dOptions o2;
  o2.stride({1, o.stride()[0]}).padding({0, o.padding()[0]}).dilation({1, o.dilation()[0]}).groups(o.groups());
  if (o.padding().is_same()) o2.padding(nn::kSame);  // the unit height needs none either way
  if (o.padding().is_valid()) o2.padding(nn::kValid);
  return as_unit_height("conv1d", "[O, C/groups, K]", "conv2d", input, weight,
                        [&](const Tensor& x, const Tensor& w) { return conv2d(x, w, bias, o2); });
}

Tensor max_pool2d(const Tensor& x, const Pool2dOptions& options) { return pool2d(PoolOp::max, x, options, "max_pool2d").first; }
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options) { return pool2d(PoolOp::avg, x, options, "avg_pool2d").first; }

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
