// Losses. cross_entropy is one fused op (log-softmax + NLL, forward and backward); the others are
// compositions of differentiable tensor ops, except bce_with_logits whose gradient is given exactly.
#include "autograd/node.h"
#include "core/raw.h"
#include "nn/functional.h"

namespace ember::nn::functional {
namespace {

using autograd::SavedTensor;

Tensor reduce(const Tensor& per_element, Reduction r) {
  switch (r) {
    case Reduction::none: return per_element;
    case Reduction::sum: return sum(per_element);
    case Reduction::mean: return mean(per_element);
  }
  return per_element;
}

void check_class_target(const Tensor& input, const Tensor& target, const char* op) {
  raw::check_same_device(input, target, op);
  EMBER_CHECK(input.dim() == 2, op, ": expected input [N, C], got shape ", input.shape());
  EMBER_CHECK(is_floating(input.dtype()), op, ": needs floating logits, got ", dtype_name(input.dtype()));
  EMBER_CHECK(target.dtype() == DType::i64, op, ": the target must hold class indices as i64, got ",
              dtype_name(target.dtype()), "; convert with .to(DType::i64)");
  EMBER_CHECK(target.dim() == 1 && target.size(0) == input.size(0), op, ": target shape ", target.shape(),
              " does not match the batch of the input ", input.shape(), "; expected [", input.size(0), "]");
}

struct CrossEntropyBackward : autograd::Node {
  CrossEntropyOptions o;
  SavedTensor logits, target, lse, count;  // count: non-ignored targets (mean only)
  std::string_view name() const override { return "cross_entropy"; }
  void release() override {
    logits.release();
    target.release();
    lse.release();
    count.release();
  }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Tensor x = logits.unpack(*this);
    // Per-sample gradient of the loss: [N] for none, 0-d (the same for every sample) otherwise.
    Tensor grad_loss = raw::contiguous(g);
    if (o.reduction == Reduction::mean) grad_loss = raw::binary(BinaryOp::div, g, count.unpack(*this));
    grad_loss = raw::to(grad_loss, x.dtype());
    Tensor gx = raw::empty(x.shape(), x.dtype(), x.device());
    backend(x.device()).cross_entropy_backward(x.arg(), target.unpack(*this).arg(), lse.unpack(*this).arg(),
                                               grad_loss.arg(), gx.arg(), o.ignore_index, o.label_smoothing);
    grad_inputs[0] = gx;
  }
};

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& o) {
  if (logits.dim() == 1 && target.dim() == 0) {  // one unbatched sample
    return cross_entropy(logits.unsqueeze(0), target.unsqueeze(0), o).squeeze(0);
  }
  check_class_target(logits, target, "cross_entropy");
  EMBER_CHECK(o.label_smoothing >= 0 && o.label_smoothing <= 1, "cross_entropy: label_smoothing must be in [0, 1], got ",
              o.label_smoothing);
  const Tensor x = raw::contiguous(logits), t = raw::contiguous(target);
  const int64_t N = x.size(0);
  Tensor loss = raw::empty({N}, x.dtype(), x.device()), lse = raw::empty({N}, x.dtype(), x.device());
  backend(x.device()).cross_entropy_forward(x.arg(), t.arg(), loss.arg(), lse.arg(), o.ignore_index, o.label_smoothing);
  Tensor count;
  Tensor out = loss;
  if (o.reduction == Reduction::sum) {
    out = raw::reduce(ReduceOp::sum, loss, {}, false);
  } else if (o.reduction == Reduction::mean) {  // over the non-ignored targets (0/0 = NaN when all are)
    count = raw::to(raw::reduce(ReduceOp::sum, raw::binary(BinaryOp::ne, t, raw::scalar_like(t, static_cast<double>(o.ignore_index), true)), {}, false), x.dtype());
    out = raw::binary(BinaryOp::div, raw::reduce(ReduceOp::sum, loss, {}, false), count);
  }
  if (auto node = autograd::make_node<CrossEntropyBackward>(logits)) {
    node->o = o;
    node->logits.save(x);
    node->target.save(t);
    node->lse.save(lse);
    if (count.defined()) node->count.save(count);
    autograd::set_history(out, std::move(node));
  }
  return out;
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, int64_t ignore_index, Reduction reduction) {
  check_class_target(log_probs, target, "nll_loss");
  const Tensor valid = ne(target, scalar_for(target, ignore_index));
  const Tensor safe_target = where(valid, target, zeros_like(target));  // ignored rows gather class 0, then masked
  Tensor picked = gather(log_probs, 1, safe_target.unsqueeze(1)).squeeze(1);
  Tensor losses = -(picked * valid.to(log_probs.dtype()));
  if (reduction == Reduction::mean) return sum(losses) / sum(valid).to(log_probs.dtype());
  return reduce(losses, reduction);
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  EMBER_CHECK(input.shape() == target.shape(), "mse_loss: input ", input.shape(), " and target ", target.shape(),
              " must have the same shape");
  return reduce(square(input - target), reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  EMBER_CHECK(input.shape() == target.shape(), "l1_loss: input ", input.shape(), " and target ", target.shape(),
              " must have the same shape");
  return reduce(abs(input - target), reduction);
}

namespace {
struct BceWithLogitsBackward : autograd::Node {
  SavedTensor x, y;
  std::string_view name() const override { return "binary_cross_entropy_with_logits"; }
  void release() override {
    x.release();
    y.release();
  }
  void backward(const Tensor& g, Tensor* grad_inputs) override {  // d/dx = σ(x) - y; d/dy = -x
    const Tensor xv = x.unpack(*this), yv = y.unpack(*this);
    if (needs_grad(0)) grad_inputs[0] = g * (sigmoid(xv) - yv);
    if (needs_grad(1)) grad_inputs[1] = -(g * xv);
  }
};
}  // namespace

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target, Reduction reduction) {
  EMBER_CHECK(logits.shape() == target.shape(), "binary_cross_entropy_with_logits: logits ", logits.shape(),
              " and target ", target.shape(), " must have the same shape");
  EMBER_CHECK(is_floating(logits.dtype()), "binary_cross_entropy_with_logits: needs floating logits");
  Tensor per;
  {
    NoGradGuard no_grad;
    per = relu(logits) - logits * target + log(exp(-abs(logits)) + 1.0);
  }
  if (auto node = autograd::make_node<BceWithLogitsBackward>(logits, target)) {
    node->x.save(logits);
    node->y.save(target);
    autograd::set_history(per, std::move(node));
  }
  return reduce(per, reduction);
}

}  // namespace ember::nn::functional
