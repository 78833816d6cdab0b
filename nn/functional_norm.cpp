// batch_norm, layer_norm and rms_norm: fused Backend ops with fused backward passes. group_norm and
// instance_norm run on them (layer_norm over the groups, batch_norm over [1, N·C, *]); local_response_norm
// and normalize are compositions of differentiable ops.
#include <cmath>
#include <limits>
#include <vector>

#include "autograd/node.h"
#include "core/raw.h"
#include "nn/functional.h"
#include "nn/functional_internal.h"

namespace ember::nn::functional {
namespace {

using autograd::SavedTensor;

const TensorArg* opt(const Tensor& t, TensorArg& storage) {
  if (!t.defined()) return nullptr;
  storage = t.arg();
  return &storage;
}

enum class NormKind { batch, layer, rms };

// Shared by the three norms: the inputs are x, weight, bias (the latter two possibly undefined; rms_norm has
// no bias and no mean: invstd holds its 1/rms).
struct NormBackward : autograd::Node {
  NormKind kind = NormKind::batch;
  bool training = true, has_weight = false, has_bias = false;
  SavedTensor x, weight, mean, invstd;
  std::string_view name() const override {
    return kind == NormKind::batch ? "batch_norm" : kind == NormKind::layer ? "layer_norm" : "rms_norm";
  }
  void release() override { release_all(x, weight, mean, invstd); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Tensor xv = x.unpack(*this), gy = raw::view(raw::contiguous(g), xv.shape());
    const Tensor w = has_weight ? raw::contiguous(weight.unpack(*this)) : Tensor();  // backends take contiguous
    const int wi = 1, bi = has_weight ? 2 : 1;
    TensorArg gxa, gwa, gba, wa;
    const bool need_x = needs_grad(0), need_w = has_weight && needs_grad(wi), need_b = has_bias && needs_grad(bi);
    Tensor gx = need_x ? raw::empty(xv.shape(), xv.dtype(), xv.device()) : Tensor();
    if (need_x) gxa = gx.arg();
    if (need_w) gwa = (grad_inputs[wi] = raw::empty(next[wi].shape, xv.dtype(), xv.device())).arg();
    if (need_b) gba = (grad_inputs[bi] = raw::empty(next[bi].shape, xv.dtype(), xv.device())).arg();
    Backend& be = backend(xv.device());
    if (kind == NormKind::batch) {
      be.batch_norm_backward(gy.arg(), xv.arg(), opt(w, wa), mean.unpack(*this).arg(), invstd.unpack(*this).arg(),
                             need_x ? &gxa : nullptr, need_w ? &gwa : nullptr, need_b ? &gba : nullptr, training);
    } else if (kind == NormKind::layer) {
      be.layer_norm_backward(gy.arg(), xv.arg(), opt(w, wa), mean.unpack(*this).arg(), invstd.unpack(*this).arg(),
                             need_x ? &gxa : nullptr, need_w ? &gwa : nullptr, need_b ? &gba : nullptr);
    } else {
      be.rms_norm_backward(gy.arg(), xv.arg(), opt(w, wa), invstd.unpack(*this).arg(), need_x ? &gxa : nullptr,
                           need_w ? &gwa : nullptr);
    }
    if (need_x) grad_inputs[0] = raw::view(gx, next[0].shape);
  }
};

std::shared_ptr<NormBackward> norm_inputs_node(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (weight.defined() && bias.defined()) return autograd::make_node<NormBackward>(x, weight, bias);
  if (weight.defined()) return autograd::make_node<NormBackward>(x, weight);
  if (bias.defined()) return autograd::make_node<NormBackward>(x, bias);
  return autograd::make_node<NormBackward>(x);
}

// The node of a norm over `input` (and the weight and bias that are defined), where one is needed; it saves
// the contiguous input x, the weight w and the statistics (rms_norm: no mean).
std::shared_ptr<NormBackward> norm_node(const Tensor& input, const Tensor& weight, const Tensor& bias, NormKind kind,
                                        const Tensor& x, const Tensor& w, const Tensor& mean, const Tensor& invstd) {
  auto node = norm_inputs_node(input, weight, bias);
  if (!node) return nullptr;
  node->kind = kind;
  node->has_weight = weight.defined();
  node->has_bias = bias.defined();
  node->x.save(x);
  if (w.defined()) node->weight.save(w);
  if (mean.defined()) node->mean.save(mean);
  node->invstd.save(invstd);
  return node;
}

void check_param(const Tensor& p, const Tensor& x, const Shape& shape, const char* op, const char* what) {
  if (!p.defined()) return;
  raw::check_same_device(x, p, op);
  EMBER_CHECK(p.shape() == shape && p.dtype() == x.dtype(), op, ": ", what, " must be ", shape, " ",
              dtype_name(x.dtype()), ", got ", p.shape(), " ", dtype_name(p.dtype()));
}

// The per-channel tensors of batch_norm and instance_norm: each undefined or [C] (C = input.size(1)).
void check_channel_params(const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias,
                          const Tensor& running_mean, const Tensor& running_var) {
  const Shape per_channel{input.size(1)};
  check_param(weight, input, per_channel, op, "weight");
  check_param(bias, input, per_channel, op, "bias");
  check_param(running_mean, input, per_channel, op, "running_mean");
  check_param(running_var, input, per_channel, op, "running_var");
}

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  EMBER_CHECK(input.dim() >= 2, "batch_norm: expected input [N, C] or [N, C, *], got shape ", input.shape());
  EMBER_CHECK(is_floating(input.dtype()), "batch_norm: needs a floating input, got ", dtype_name(input.dtype()));
  const int64_t N = input.size(0), C = input.size(1);
  check_channel_params("batch_norm", input, weight, bias, running_mean, running_var);
  EMBER_CHECK(training || (running_mean.defined() && running_var.defined()),
              "batch_norm: eval mode needs running_mean and running_var");
  const Tensor x = raw::contiguous(input).view({N, C, -1});
  // The backends take contiguous operands: strided parameters are copied, strided running statistics
  // updated in a contiguous copy and written back.
  const auto dense = [](const Tensor& t) { return t.defined() ? raw::contiguous(t) : Tensor(); };
  const Tensor w = dense(weight), b = dense(bias), rm = dense(running_mean), rv = dense(running_var);
  Tensor y = raw::empty(x.shape(), x.dtype(), x.device());
  Tensor mean = raw::empty({C}, x.dtype(), x.device()), invstd = raw::empty({C}, x.dtype(), x.device());
  TensorArg wa, ba, rma, rva;
  backend(x.device()).batch_norm_forward(x.arg(), opt(w, wa), opt(b, ba), opt(rm, rma), opt(rv, rva), y.arg(),
                                         mean.arg(), invstd.arg(), training, momentum, eps);
  if (training) {
    for (const auto& [running, updated] : {std::pair{running_mean, rm}, std::pair{running_var, rv}}) {
      if (!running.defined()) continue;
      if (updated.shares_storage(running)) running.impl().storage->bump_version();
      else raw::copy_(running, updated);
    }
  }
  y = raw::view(y, input.shape());
  if (auto node = norm_node(input, weight, bias, NormKind::batch, x, weight, mean, invstd)) {
    node->training = training;
    autograd::set_history(y, std::move(node));
  }
  return y;
}

namespace {

// layer_norm's and rms_norm's input: floating, its trailing dims normalized_shape.
void check_normalized_shape(const char* op, const Tensor& input, const Shape& normalized_shape) {
  const int k = normalized_shape.size();
  EMBER_CHECK(k >= 1 && input.dim() >= k, op, ": normalized_shape ", normalized_shape,
              " must name the trailing dims of the input ", input.shape());
  for (int i = 0; i < k; ++i)
    EMBER_CHECK(input.size(input.dim() - k + i) == normalized_shape[i], op, ": normalized_shape ", normalized_shape,
                " does not match the trailing dims of the input ", input.shape());
  EMBER_CHECK(is_floating(input.dtype()), op, ": needs a floating input, got ", dtype_name(input.dtype()));
}

}  // namespace

Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  check_normalized_shape("layer_norm", input, normalized_shape);
  check_param(weight, input, normalized_shape, "layer_norm", "weight");
  check_param(bias, input, normalized_shape, "layer_norm", "bias");
  const int64_t D = normalized_shape.numel(), M = D == 0 ? 0 : input.numel() / D;
  const Tensor x = raw::contiguous(input).view({M, D});
  const Tensor w = weight.defined() ? raw::contiguous(weight) : Tensor(), b = bias.defined() ? raw::contiguous(bias) : Tensor();
  Tensor y = raw::empty(x.shape(), x.dtype(), x.device());
  Tensor mean = raw::empty({M}, x.dtype(), x.device()), invstd = raw::empty({M}, x.dtype(), x.device());
  TensorArg wa, ba;
  backend(x.device()).layer_norm_forward(x.arg(), opt(w, wa), opt(b, ba), y.arg(), mean.arg(), invstd.arg(), eps);
  y = raw::view(y, input.shape());
  if (auto node = norm_node(input, weight, bias, NormKind::layer, x, w, mean, invstd))
    autograd::set_history(y, std::move(node));
  return y;
}

double rms_norm_default_eps(DType dtype) {
  return dtype == DType::f32 ? std::numeric_limits<float>::epsilon() : std::numeric_limits<double>::epsilon();
}

Tensor rms_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight, std::optional<double> eps) {
  check_normalized_shape("rms_norm", input, normalized_shape);
  check_param(weight, input, normalized_shape, "rms_norm", "weight");
  const double e = eps.value_or(rms_norm_default_eps(input.dtype()));
  const int64_t D = normalized_shape.numel(), M = D == 0 ? 0 : input.numel() / D;
  const Tensor x = raw::contiguous(input).view({M, D});
  const Tensor w = weight.defined() ? raw::contiguous(weight) : Tensor();
  Tensor y = raw::empty(x.shape(), x.dtype(), x.device()), invrms = raw::empty({M}, x.dtype(), x.device());
  TensorArg wa;
  backend(x.device()).rms_norm_forward(x.arg(), opt(w, wa), y.arg(), invrms.arg(), e);
  y = raw::view(y, input.shape());
  if (auto node = norm_node(input, weight, Tensor(), NormKind::rms, x, w, Tensor(), invrms))
    autograd::set_history(y, std::move(node));
  return y;
}

namespace {

// [1, C, 1, ..., 1] of x's rank: a per-channel parameter broadcast over [N, C, *].
Shape channel_shape(const Tensor& x) {
  std::vector<int64_t> s(static_cast<size_t>(x.dim()), 1);
  s[1] = x.size(1);
  return Shape(s);
}

Tensor affine(const Tensor& y, const Tensor& weight, const Tensor& bias) {
  Tensor out = y;
  if (weight.defined()) out = out * weight.reshape(channel_shape(y));
  if (bias.defined()) out = out + bias.reshape(channel_shape(y));
  return out;
}

}  // namespace

Tensor group_norm(const Tensor& input, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  EMBER_CHECK(input.dim() >= 2, "group_norm: expected input [N, C, *] (at least 2 dims), got shape ", input.shape());
  EMBER_CHECK(is_floating(input.dtype()), "group_norm: needs a floating input, got ", dtype_name(input.dtype()));
  const int64_t N = input.size(0), C = input.size(1);
  EMBER_CHECK(num_groups > 0 && C % num_groups == 0, "group_norm: the input's ", C,
              " channels must split into num_groups = ", num_groups, " equal groups (choose a divisor of ", C, ")");
  check_param(weight, input, Shape{C}, "group_norm", "weight");
  check_param(bias, input, Shape{C}, "group_norm", "bias");
  int64_t D = C / num_groups;  // the elements of one group of one sample: C/G·(product of *)
  for (int64_t d = 2; d < input.dim(); ++d) D *= input.size(d);
  const Tensor y = layer_norm(input.reshape({N, num_groups, D}), Shape{D}, {}, {}, eps).reshape(input.shape());
  return affine(y, weight, bias);
}

Tensor instance_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                     const Tensor& bias, bool use_input_stats, double momentum, double eps) {
  EMBER_CHECK(input.dim() >= 2, "instance_norm: expected input [N, C, *], got shape ", input.shape());
  EMBER_CHECK(is_floating(input.dtype()), "instance_norm: needs a floating input, got ", dtype_name(input.dtype()));
  EMBER_CHECK(use_input_stats || (running_mean.defined() && running_var.defined()),
              "instance_norm: use_input_stats = false (eval) needs running_mean and running_var");
  const int64_t N = input.size(0), C = input.size(1);
  check_channel_params("instance_norm", input, weight, bias, running_mean, running_var);
  if (use_input_stats) {
    int64_t spatial = 1;
    for (int64_t d = 2; d < input.dim(); ++d) spatial *= input.size(d);
    EMBER_CHECK(spatial > 1, "instance_norm: expected more than 1 spatial element per channel when using the input's ",
                "statistics, got input shape ", input.shape());
  }
  // PyTorch's formulation: batch_norm of [1, N·C, *] with the per-channel tensors repeated N times; the
  // running statistics are then the mean over N of their N updated copies.
  const Shape rep{N};
  const Tensor rm = running_mean.defined() ? raw::contiguous(running_mean).repeat(rep) : Tensor();
  const Tensor rv = running_var.defined() ? raw::contiguous(running_var).repeat(rep) : Tensor();
  const Tensor w = weight.defined() ? weight.repeat(rep) : Tensor(), b = bias.defined() ? bias.repeat(rep) : Tensor();
  const Tensor y = batch_norm(input.reshape({1, N * C, -1}), rm, rv, w, b, use_input_stats, momentum, eps);
  if (use_input_stats) {
    NoGradGuard no_grad;
    for (const auto& [running, copies] : {std::pair{running_mean, rm}, std::pair{running_var, rv}})
      if (running.defined()) raw::copy_(running, mean(copies.view({N, C}), Shape{0}));
  }
  return y.reshape(input.shape());
}

Tensor local_response_norm(const Tensor& input, int64_t size, double alpha, double beta, double k) {
  EMBER_CHECK(input.dim() >= 3, "local_response_norm: expected input [N, C, *] of at least 3 dims, got shape ",
              input.shape());
  EMBER_CHECK(size > 0, "local_response_norm: size must be positive, got ", size);
  EMBER_CHECK(is_floating(input.dtype()), "local_response_norm: needs a floating input, got ",
              dtype_name(input.dtype()));
  if (input.numel() == 0) return input;
  // PyTorch pads x² with size/2 zero channels before and (size-1)/2 after, then averages windows of `size`.
  const int64_t C = input.size(1), before = size / 2, after = (size - 1) / 2;
  const Tensor sq = square(input);
  std::vector<Tensor> parts;
  const auto zero_channels = [&](int64_t n) {
    Shape s = input.shape();
    s[1] = n;
    return zeros(s, {.dtype = input.dtype(), .device = input.device()});
  };
  if (before > 0) parts.push_back(zero_channels(before));
  parts.push_back(sq);
  if (after > 0) parts.push_back(zero_channels(after));
  const Tensor padded = parts.size() == 1 ? sq : cat(parts, 1);
  Tensor window = padded.narrow(1, 0, C);
  for (int64_t j = 1; j < size; ++j) window = window + padded.narrow(1, j, C);
  const Tensor div = pow((window / static_cast<double>(size)) * alpha + k, beta);
  return input / div;
}

Tensor normalize(const Tensor& input, double p, int64_t dim, double eps) {
  EMBER_CHECK(is_floating(input.dtype()), "normalize: needs a floating input, got ", dtype_name(input.dtype()));
  EMBER_CHECK(input.dim() >= 1, "normalize: needs at least 1 dim, got a 0-d tensor");
  return input / clamp(detail::vector_norm(input, p, dim, true), eps, INFINITY);
}

namespace detail {

Tensor vector_norm(const Tensor& x, double p, int64_t dim, bool keepdim) {
  EMBER_CHECK(p >= 0 || p == -INFINITY, "vector_norm: p must be >= 0 or ±infinity, got ", p);
  const Shape dims{dim};
  if (p == 1) return sum(abs(x), dims, keepdim);
  if (p == INFINITY) return amax(abs(x), dims, keepdim);
  if (p == -INFINITY) return amin(abs(x), dims, keepdim);
  if (p == 0) return sum(ne(x, 0.0).to(x.dtype()), dims, keepdim);
  // (Σ|x|^p)^(1/p), its gradient masked to 0 where the sum is 0 (the root's derivative there is infinite).
  const Tensor s = p == 2 ? sum(square(x), dims, keepdim) : sum(pow(abs(x), p), dims, keepdim);
  const Tensor zero = eq(s, 0.0);
  const Tensor safe = where(zero, ones_like(s), s);
  const Tensor root = p == 2 ? sqrt(safe) : pow(safe, 1.0 / p);
  return where(zero, zeros_like(s), root);
}

Tensor clamp_value_min(const Tensor& t, double min) {
  const Tensor v = t.detach();
  return t + (clamp(v, min, INFINITY) - v);
}

}  // namespace detail

}  // namespace ember::nn::functional
