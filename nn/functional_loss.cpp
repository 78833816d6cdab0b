// Losses. cross_entropy with class indices and no weight is one fused op (log-softmax + NLL, forward and
// backward); with weight or probability targets, and the others, they are compositions of differentiable
// tensor ops (log_softmax, gather, sums), except bce_with_logits whose gradient is given exactly.
// K-dimensional inputs [N, C, d1..dk] are run as [N·d1·…·dk, C] rows.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// Input [N, C] (or [C] with a 0-d target, or [N, C, d1..dk] with [N, d1..dk]) and i64 class targets.
void check_class_target(const Tensor& input, const Tensor& target, const char* op) {
  raw::check_same_device(input, target, op);
  EMBER_CHECK(input.dim() >= 1, op, ": expected input [N, C], [C] or [N, C, d1, ..., dk], got shape ", input.shape());
  EMBER_CHECK(is_floating(input.dtype()), op, ": needs floating input, got ", dtype_name(input.dtype()));
  EMBER_CHECK(target.dtype() == DType::i64, op, ": the target must hold class indices as i64, got ",
              dtype_name(target.dtype()), "; convert with .to(DType::i64) (or pass probabilities of the input's shape",
              " and dtype to cross_entropy)");
  if (input.dim() == 1) {
    EMBER_CHECK(target.dim() == 0, op, ": an unbatched input ", input.shape(), " takes a 0-d target, got shape ",
                target.shape());
    return;
  }
  Shape expected;
  expected.push_back(input.size(0));
  for (int64_t d = 2; d < input.dim(); ++d) expected.push_back(input.size(d));
  EMBER_CHECK(target.shape() == expected, op, ": target shape ", target.shape(), " does not match the input ",
              input.shape(), "; expected ", expected, " (the input's shape without the class dim 1)");
}

// weight [C] of the input's dtype and device, or undefined.
void check_class_weight(const Tensor& weight, const Tensor& input, int64_t C, const char* op) {
  if (!weight.defined()) return;
  raw::check_same_device(input, weight, op);
  EMBER_CHECK(weight.shape() == Shape({C}), op, ": weight must be [C] = [", C, "] (one per class of the input ",
              input.shape(), "), got shape ", weight.shape());
  EMBER_CHECK(weight.dtype() == input.dtype(), op, ": weight (", dtype_name(weight.dtype()), ") must have the input's dtype (",
              dtype_name(input.dtype()), ")");
}

// [N, C, d1..dk] → [N·d1·…·dk, C] (the class dim last, then flattened); [N, d1..dk] → [N·d1·…·dk].
Tensor classes_last(const Tensor& input) {
  std::vector<int64_t> perm{0};
  for (int64_t d = 2; d < input.dim(); ++d) perm.push_back(d);
  perm.push_back(1);
  return input.permute(Shape(perm)).reshape({-1, input.size(1)});
}

// Every target that is not ignore_index in [0, C): else the error names the first bad one and its sample.
void check_class_range(const Tensor& target, const Tensor& valid, int64_t C, const char* op) {
  if (target.numel() == 0) return;
  const Tensor t = raw::where(valid, target, raw::scalar_like(target, 0.0, true));
  const int64_t lo = raw::reduce(ReduceOp::min, t, {}, false).item<int64_t>();
  const int64_t hi = raw::reduce(ReduceOp::max, t, {}, false).item<int64_t>();
  if (lo >= 0 && hi < C) return;
  const std::vector<int64_t> v = raw::contiguous(t).to_vector<int64_t>();
  for (size_t i = 0; i < v.size(); ++i)
    EMBER_CHECK(v[i] >= 0 && v[i] < C, op, ": target ", v[i], " of sample ", i, " is out of range [0, ", C,
                ") (and is not ignore_index)");
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

// nll of [M, C] log-probabilities with i64 [M] targets: the per-sample losses -w[t]·x[t] (0 where ignored)
// and the weights w[t] (1 without weight; 0 where ignored) that mean divides by.
std::pair<Tensor, Tensor> nll_rows(const Tensor& log_probs, const Tensor& target, const Tensor& weight,
                                   int64_t ignore_index, const char* op) {
  const Tensor valid = ne(target, scalar_for(target, ignore_index));
  check_class_range(target, valid, log_probs.size(1), op);
  const Tensor safe_target = where(valid, target, zeros_like(target));  // ignored rows gather class 0, then masked
  const Tensor picked = gather(log_probs, 1, safe_target.unsqueeze(1)).squeeze(1);
  Tensor w = valid.to(log_probs.dtype());
  if (weight.defined()) w = index_select(weight.detach(), 0, safe_target) * w;
  return {-(picked * w), w};
}

Tensor cross_entropy_fused(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& o);

// Class-index cross entropy of [M, C] logits and [M] targets.
Tensor cross_entropy_rows(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& o) {
  if (!o.weight.defined()) return cross_entropy_fused(logits, target, o);
  // PyTorch 1.13 with weight (cross_entropy_loss_label_smoothing): (1-ε)·nll(w) + ε/C·smooth, where
  // smooth = -Σ_c w_c·logp_c per row (0 where ignored), reduced as nll (mean: over Σ w[t]).
  const Tensor logp = log_softmax(logits, 1);
  const auto [losses, w] = nll_rows(logp, target, o.weight, o.ignore_index, "cross_entropy");
  const Tensor nll = o.reduction == Reduction::mean ? sum(losses) / sum(w) : reduce(losses, o.reduction);
  if (o.label_smoothing == 0) return nll;
  const int64_t C = logits.size(1);
  const Tensor ignored = eq(target, scalar_for(target, o.ignore_index));
  Tensor smooth = -sum(logp * o.weight.detach().reshape({1, C}), {1});
  smooth = where(ignored, zeros_like(smooth), smooth);
  Tensor ret = o.reduction == Reduction::mean ? sum(smooth) / sum(w) : reduce(smooth, o.reduction);
  return nll * (1.0 - o.label_smoothing) + ret * (o.label_smoothing / static_cast<double>(C));
}

// Probability targets (PyTorch 1.13's cross_entropy_loss_prob_target): -Σ_c w_c·t_c·logp_c per row, with
// t smoothed to (1-ε)·t + ε/C; mean divides by the number of rows.
Tensor cross_entropy_probs(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& o) {
  EMBER_CHECK(target.shape() == logits.shape(), "cross_entropy: probability targets must have the input's shape ",
              logits.shape(), ", got ", target.shape(), " (class indices: an i64 target without the class dim)");
  EMBER_CHECK(target.dtype() == logits.dtype(), "cross_entropy: probability targets (", dtype_name(target.dtype()),
              ") must have the input's dtype (", dtype_name(logits.dtype()), ")");
  EMBER_CHECK(logits.dim() >= 1, "cross_entropy: expected input [N, C], [C] or [N, C, d1, ..., dk], got a 0-d tensor");
  const int64_t class_dim = logits.dim() == 1 ? 0 : 1, C = logits.size(class_dim);
  check_class_weight(o.weight, logits, C, "cross_entropy");
  const Tensor logp = log_softmax(logits, class_dim);
  const Tensor t = o.label_smoothing > 0
                       ? target * (1.0 - o.label_smoothing) + o.label_smoothing / static_cast<double>(C)
                       : target;
  Tensor prod = logp * t;
  if (o.weight.defined()) {
    Shape ws(std::vector<int64_t>(static_cast<size_t>(logits.dim()), 1));
    ws[static_cast<int>(class_dim)] = C;
    prod = prod * o.weight.detach().reshape(ws);
  }
  switch (o.reduction) {
    case Reduction::none: return -sum(prod, {class_dim});
    case Reduction::sum: return -sum(prod);
    case Reduction::mean: return -sum(prod) / static_cast<double>(logits.numel() / C);
  }
  return prod;
}

// The fused class-index path: [N, C] logits, i64 [N] target, no weight.
Tensor cross_entropy_fused(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& o) {
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

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& o) {
  EMBER_CHECK(o.label_smoothing >= 0 && o.label_smoothing <= 1, "cross_entropy: label_smoothing must be in [0, 1], got ",
              o.label_smoothing);
  EMBER_CHECK(logits.defined() && target.defined(), "cross_entropy: input and target must be defined tensors");
  raw::check_same_device(logits, target, "cross_entropy");
  EMBER_CHECK(is_floating(logits.dtype()), "cross_entropy: needs floating logits, got ", dtype_name(logits.dtype()));
  if (is_floating(target.dtype())) return cross_entropy_probs(logits, target, o);
  check_class_target(logits, target, "cross_entropy");
  check_class_weight(o.weight, logits, logits.size(logits.dim() == 1 ? 0 : 1), "cross_entropy");
  if (logits.dim() == 1)  // one unbatched sample
    return cross_entropy_rows(logits.unsqueeze(0), target.unsqueeze(0), o).squeeze(0);
  if (logits.dim() == 2) return cross_entropy_rows(logits, target, o);
  const Tensor loss = cross_entropy_rows(classes_last(logits), target.reshape({-1}), o);
  return o.reduction == Reduction::none ? loss.reshape(target.shape()) : loss;
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const NLLLossOptions& o) {
  check_class_target(log_probs, target, "nll_loss");
  check_class_weight(o.weight, log_probs, log_probs.size(log_probs.dim() == 1 ? 0 : 1), "nll_loss");
  if (log_probs.dim() == 1) return nll_loss(log_probs.unsqueeze(0), target.unsqueeze(0), o).squeeze(0);
  const bool kdim = log_probs.dim() > 2;
  const Tensor x = kdim ? classes_last(log_probs) : log_probs, t = kdim ? target.reshape({-1}) : target;
  const auto [losses, w] = nll_rows(x, t, o.weight, o.ignore_index, "nll_loss");
  if (o.reduction == Reduction::mean) return sum(losses) / sum(w);
  const Tensor out = reduce(losses, o.reduction);
  return kdim && o.reduction == Reduction::none ? out.reshape(target.shape()) : out;
}

Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossOptions& o) {
  EMBER_CHECK(input.shape() == target.shape(), "mse_loss: input ", input.shape(), " and target ", target.shape(),
              " must have the same shape");
  return reduce(square(input - target), o.reduction);
}

Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossOptions& o) {
  EMBER_CHECK(input.shape() == target.shape(), "l1_loss: input ", input.shape(), " and target ", target.shape(),
              " must have the same shape");
  return reduce(abs(input - target), o.reduction);
}

namespace {

// softplus(-x) = log(1 + e^-x) = max(-x, 0) + log(1 + e^-|x|), without overflow.
Tensor softplus_neg(const Tensor& x) { return relu(-x) + log1p(exp(-abs(x))); }

struct BceWithLogitsBackward : autograd::Node {
  SavedTensor x, y;
  Tensor weight, pos_weight;  // constants (no gradient), possibly undefined
  std::string_view name() const override { return "binary_cross_entropy_with_logits"; }
  void release() override {
    x.release();
    y.release();
    weight = pos_weight = Tensor();
  }
  // PyTorch 1.13's gradients, with p = pos_weight (1 without) and w = weight (1 without):
  //   d/dx = w·((p·y + 1 - y)·σ(x) - p·y)        (σ(x) - y without pos_weight)
  //   d/dy = w·((p - 1)·softplus(-x) - x)        (-x without pos_weight)
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Tensor xv = x.unpack(*this), yv = y.unpack(*this);
    const Tensor gw = weight.defined() ? g * weight : g;
    if (needs_grad(0)) {
      if (pos_weight.defined()) {
        const Tensor py = pos_weight * yv;
        grad_inputs[0] = gw * ((py + 1.0 - yv) * sigmoid(xv) - py);
      } else {
        grad_inputs[0] = gw * (sigmoid(xv) - yv);
      }
    }
    if (needs_grad(1)) {
      if (pos_weight.defined())
        grad_inputs[1] = gw * ((pos_weight - 1.0) * softplus_neg(xv) - xv);
      else
        grad_inputs[1] = -(gw * xv);
    }
  }
};

// `t` (weight or pos_weight) must broadcast to `shape` without growing it.
void check_broadcasts_into(const Tensor& t, const Tensor& input, const char* what) {
  if (!t.defined()) return;
  raw::check_same_device(input, t, "binary_cross_entropy_with_logits");
  EMBER_CHECK(t.dtype() == input.dtype(), "binary_cross_entropy_with_logits: ", what, " (", dtype_name(t.dtype()),
              ") must have the input's dtype (", dtype_name(input.dtype()), ")");
  bool ok = t.dim() <= input.dim();
  for (int64_t i = 1; ok && i <= t.dim(); ++i) ok = t.size(-i) == 1 || t.size(-i) == input.size(-i);
  EMBER_CHECK(ok, "binary_cross_entropy_with_logits: ", what, " of shape ", t.shape(),
              " does not broadcast to the input's shape ", input.shape(),
              std::string_view(what) == "pos_weight" ? " (pos_weight is one weight per class of the last dim: [C])" : "");
}

}  // namespace

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target, const BCEWithLogitsOptions& o) {
  EMBER_CHECK(logits.shape() == target.shape(), "binary_cross_entropy_with_logits: logits ", logits.shape(),
              " and target ", target.shape(), " must have the same shape");
  EMBER_CHECK(is_floating(logits.dtype()), "binary_cross_entropy_with_logits: needs floating logits, got ",
              dtype_name(logits.dtype()));
  EMBER_CHECK(target.dtype() == logits.dtype(), "binary_cross_entropy_with_logits: target (", dtype_name(target.dtype()),
              ") must have the logits' dtype (", dtype_name(logits.dtype()), ")");
  raw::check_same_device(logits, target, "binary_cross_entropy_with_logits");
  check_broadcasts_into(o.weight, logits, "weight");
  check_broadcasts_into(o.pos_weight, logits, "pos_weight");
  const Tensor w = o.weight.defined() ? o.weight.detach() : Tensor();
  const Tensor pw = o.pos_weight.defined() ? o.pos_weight.detach() : Tensor();
  Tensor per;
  {
    // PyTorch 1.13: m = max(-x, 0); (1 - y)·x + l·(m + log(e^-m + e^(-x-m))), l = 1 + (p - 1)·y (1 without
    // pos_weight); then times weight.
    NoGradGuard no_grad;
    const Tensor m = relu(-logits);
    const Tensor sp = m + log(exp(-m) + exp(-logits - m));
    per = (1.0 - target) * logits + (pw.defined() ? ((pw - 1.0) * target + 1.0) * sp : sp);
    if (w.defined()) per = per * w;
  }
  if (auto node = autograd::make_node<BceWithLogitsBackward>(logits, target)) {
    node->x.save(logits);
    node->y.save(target);
    node->weight = w;
    node->pos_weight = pw;
    autograd::set_history(per, std::move(node));
  }
  return reduce(per, o.reduction);
}

}  // namespace ember::nn::functional
