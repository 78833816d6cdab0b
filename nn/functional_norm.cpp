// batch_norm and layer_norm: fused Backend ops with fused backward passes.
#include "autograd/node.h"
#include "core/raw.h"
#include "nn/functional.h"

namespace ember::nn::functional {
namespace {

using autograd::SavedTensor;

const TensorArg* opt(const Tensor& t, TensorArg& storage) {
  if (!t.defined()) return nullptr;
  storage = t.arg();
  return &storage;
}

// Shared by both norms: the inputs are x, weight, bias (the latter two possibly undefined).
struct NormBackward : autograd::Node {
  bool batch = true, training = true, has_weight = false, has_bias = false;
  SavedTensor x, weight, mean, invstd;
  std::string_view name() const override { return batch ? "batch_norm" : "layer_norm"; }
  void release() override {
    x.release();
    weight.release();
    mean.release();
    invstd.release();
  }
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
    if (batch) {
      be.batch_norm_backward(gy.arg(), xv.arg(), opt(w, wa), mean.unpack(*this).arg(), invstd.unpack(*this).arg(),
                             need_x ? &gxa : nullptr, need_w ? &gwa : nullptr, need_b ? &gba : nullptr, training);
    } else {
      be.layer_norm_backward(gy.arg(), xv.arg(), opt(w, wa), mean.unpack(*this).arg(), invstd.unpack(*this).arg(),
                             need_x ? &gxa : nullptr, need_w ? &gwa : nullptr, need_b ? &gba : nullptr);
    }
    if (need_x) grad_inputs[0] = raw::view(gx, next[0].shape);
  }
};

std::shared_ptr<NormBackward> norm_node(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (weight.defined() && bias.defined()) return autograd::make_node<NormBackward>(x, weight, bias);
  if (weight.defined()) return autograd::make_node<NormBackward>(x, weight);
  if (bias.defined()) return autograd::make_node<NormBackward>(x, bias);
  return autograd::make_node<NormBackward>(x);
}

void check_param(const Tensor& p, const Tensor& x, const Shape& shape, const char* op, const char* what) {
  if (!p.defined()) return;
  raw::check_same_device(x, p, op);
  EMBER_CHECK(p.shape() == shape && p.dtype() == x.dtype(), op, ": ", what, " must be ", shape, " ",
              dtype_name(x.dtype()), ", got ", p.shape(), " ", dtype_name(p.dtype()));
}

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  EMBER_CHECK(input.dim() >= 2, "batch_norm: expected input [N, C] or [N, C, *], got shape ", input.shape());
  EMBER_CHECK(is_floating(input.dtype()), "batch_norm: needs a floating input, got ", dtype_name(input.dtype()));
  const int64_t N = input.size(0), C = input.size(1);
  const Shape per_channel{C};
  check_param(weight, input, per_channel, "batch_norm", "weight");
  check_param(bias, input, per_channel, "batch_norm", "bias");
  check_param(running_mean, input, per_channel, "batch_norm", "running_mean");
  check_param(running_var, input, per_channel, "batch_norm", "running_var");
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
  if (auto node = norm_node(input, weight, bias)) {
    node->batch = true;
    node->training = training;
    node->has_weight = weight.defined();
    node->has_bias = bias.defined();
    node->x.save(x);
    if (weight.defined()) node->weight.save(weight);
    node->mean.save(mean);
    node->invstd.save(invstd);
    autograd::set_history(y, std::move(node));
  }
  return y;
}

Tensor layer_norm(const Tensor& input, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  const int k = normalized_shape.size();
  EMBER_CHECK(k >= 1 && input.dim() >= k, "layer_norm: normalized_shape ", normalized_shape,
              " must name the trailing dims of the input ", input.shape());
  for (int i = 0; i < k; ++i)
    EMBER_CHECK(input.size(input.dim() - k + i) == normalized_shape[i], "layer_norm: normalized_shape ",
                normalized_shape, " does not match the trailing dims of the input ", input.shape());
  EMBER_CHECK(is_floating(input.dtype()), "layer_norm: needs a floating input, got ", dtype_name(input.dtype()));
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
  if (auto node = norm_node(input, weight, bias)) {
    node->batch = false;
    node->has_weight = weight.defined();
    node->has_bias = bias.defined();
    node->x.save(x);
    if (w.defined()) node->weight.save(w);
    node->mean.save(mean);
    node->invstd.save(invstd);
    autograd::set_history(y, std::move(node));
  }
  return y;
}

}  // namespace ember::nn::functional
