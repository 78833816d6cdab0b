// Losses (round 3 at the end: smooth L1, Huber, KL divergence, the distance-based losses, Poisson and
// Gaussian NLL, BCE on probabilities, multilabel soft margin; ctc_loss is functional_ctc.cpp). cross_entropy with class indices and no weight is one fused op (log-softmax + NLL, forward and
// backward); with weight or probability targets, and the others, they are compositions of differentiable
// tensor ops (log_softmax, gather, sums), except bce_with_logits whose gradient is given exactly.
// K-dimensional inputs [N, C, d1..dk] are run as [N·d1·…·dk, C] rows.
#include <cmath>
#include <numbers>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autograd/node.h"
#include "core/raw.h"
#include "nn/functional.h"
#include "nn/functional_internal.h"

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
  void release() override { release_all(logits, target, lse, count); }
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

// --- round 3 ----------------------------------------------------------------------------------------------
namespace {

void check_floating_input(const Tensor& input, const char* op) {
  EMBER_CHECK(input.defined(), op, ": the input is an undefined tensor");
  EMBER_CHECK(is_floating(input.dtype()), op, ": needs a floating input, got ", dtype_name(input.dtype()));
}

// Where PyTorch refuses (or warns about) a target of another shape.
void check_same_shape(const Tensor& input, const Tensor& target, const char* op) {
  check_floating_input(input, op);
  EMBER_CHECK(target.defined(), op, ": the target is an undefined tensor");
  raw::check_same_device(input, target, op);
  EMBER_CHECK(input.shape() == target.shape(), op, ": input ", input.shape(), " and target ", target.shape(),
              " must have the same shape");
}

// Operands that broadcast (the error names the loss, not the element-wise op inside it).
void check_broadcast(const Tensor& a, const Tensor& b, const char* op) {
  EMBER_CHECK(a.defined() && b.defined(), op, ": an operand is an undefined tensor");
  raw::check_same_device(a, b, op);
  (void)raw::broadcast_shapes(a.shape(), b.shape(), op);
}

// log σ(x) = min(x, 0) - log(1 + e^-|x|): no overflow, and the gradient at 0 is ½ (minimum splits the tie).
Tensor log_sigmoid(const Tensor& x) { return minimum(x, 0.0) - log1p(exp(-abs(x))); }

Tensor clamp_min0(const Tensor& x) { return clamp(x, 0.0, INFINITY); }  // PyTorch's clamp_min: gradient at 0 passes

}  // namespace

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossOptions& o) {
  check_same_shape(input, target, "smooth_l1_loss");
  EMBER_CHECK(o.beta >= 0, "smooth_l1_loss: beta must be >= 0 (0 is l1_loss), got ", o.beta);
  if (o.beta == 0) return l1_loss(input, target, {.reduction = o.reduction});
  const Tensor z = abs(input - target);
  return reduce(where(lt(z, o.beta), square(z) * (0.5 / o.beta), z - 0.5 * o.beta), o.reduction);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossOptions& o) {
  check_same_shape(input, target, "huber_loss");
  EMBER_CHECK(o.delta > 0, "huber_loss: delta must be positive, got ", o.delta);
  const Tensor z = abs(input - target);
  return reduce(where(lt(z, o.delta), square(z) * 0.5, (z - 0.5 * o.delta) * o.delta), o.reduction);
}

Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivOptions& o) {
  check_floating_input(input, "kl_div");
  check_broadcast(input, target, "kl_div");
  Tensor per;
  if (o.log_target) {
    per = exp(target) * (target - input);
  } else {  // xlogy(t, t) - t·input: 0 where t = 0 (and no NaN in the gradient there)
    const Tensor zero = eq(target, 0.0);
    const Tensor safe = where(zero, ones_like(target), target);
    per = where(zero, zeros_like(target), target * log(safe)) - target * input;
  }
  switch (o.reduction.kind) {
    case KLDivReduction::none: return per;
    case KLDivReduction::sum: return sum(per);
    case KLDivReduction::mean: return mean(per);
    case KLDivReduction::batchmean:
      return input.dim() == 0 ? sum(per) : sum(per) / static_cast<double>(input.size(0));
  }
  return per;
}

Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityOptions& o) {
  check_floating_input(x1, "cosine_similarity");
  check_broadcast(x1, x2, "cosine_similarity");
  const Shape shape = raw::broadcast_shapes(x1.shape(), x2.shape(), "cosine_similarity");
  const int64_t rank = shape.size();
  EMBER_CHECK(rank >= 1 && o.dim >= -rank && o.dim < rank, "cosine_similarity: dim ", o.dim,
              " is out of range for the inputs' broadcast shape ", shape);
  const Tensor a = x1.expand(shape), b = x2.expand(shape);
  // PyTorch 1.13: each squared norm clamped to at least eps² (in value only: its gradient passes), then each
  // input divided by the root of its own before the dot product.
  const double eps2 = o.eps * o.eps;
  const Tensor na = sqrt(detail::clamp_value_min(sum(square(a), Shape{o.dim}, true), eps2));
  const Tensor nb = sqrt(detail::clamp_value_min(sum(square(b), Shape{o.dim}, true), eps2));
  return sum((a / na) * (b / nb), Shape{o.dim});
}

Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, const PairwiseDistanceOptions& o) {
  check_floating_input(x1, "pairwise_distance");
  check_broadcast(x1, x2, "pairwise_distance");
  const int64_t last = std::max(x1.dim(), x2.dim()) - 1;
  EMBER_CHECK(last >= 0, "pairwise_distance: needs inputs of at least 1 dim, got 0-d tensors");
  return detail::vector_norm(x1 - x2 + o.eps, o.p, last, o.keepdim);
}

Tensor cosine_embedding_loss(const Tensor& x1, const Tensor& x2, const Tensor& target,
                             const CosineEmbeddingLossOptions& o) {
  check_floating_input(x1, "cosine_embedding_loss");
  EMBER_CHECK(target.defined() && x2.defined(), "cosine_embedding_loss: an operand is an undefined tensor");
  const int64_t td = target.dim();
  EMBER_CHECK(td == 0 || td == 1, "cosine_embedding_loss: expected a 0-d or 1-D target (one ±1 per pair), got shape ",
              target.shape());
  EMBER_CHECK(x1.dim() == td + 1 && x2.dim() == td + 1, "cosine_embedding_loss: a ", td == 1 ? "1-D" : "0-d",
              " target expects ", td == 1 ? "2-D [N, D]" : "1-D [D]", " inputs, got ", x1.shape(), " and ", x2.shape());
  check_broadcast(x1, x2, "cosine_embedding_loss");
  const double kEps = 1e-12;  // PyTorch's EPSILON
  const Tensor prod = sum(x1 * x2, Shape{td});
  const Tensor mag1 = sum(x1 * x1, Shape{td}) + kEps, mag2 = sum(x2 * x2, Shape{td}) + kEps;
  const Tensor cos = prod / sqrt(mag1 * mag2);
  check_broadcast(cos, target, "cosine_embedding_loss");
  const Tensor zero = zeros_like(cos);
  const Tensor per = where(eq(target, 1), 1.0 - cos, zero) + where(eq(target, -1), clamp_min0(cos - o.margin), zero);
  return reduce(per, o.reduction);
}

Tensor margin_ranking_loss(const Tensor& x1, const Tensor& x2, const Tensor& target, const MarginRankingLossOptions& o) {
  check_floating_input(x1, "margin_ranking_loss");
  EMBER_CHECK(x2.defined() && target.defined(), "margin_ranking_loss: an operand is an undefined tensor");
  EMBER_CHECK(x1.dim() == x2.dim() && x1.dim() == target.dim(),
              "margin_ranking_loss: input1, input2 and target must have the same number of dims, got ", x1.shape(),
              ", ", x2.shape(), " and ", target.shape());
  check_broadcast(x1, x2, "margin_ranking_loss");
  check_broadcast(x1 - x2, target, "margin_ranking_loss");
  return reduce(clamp_min0(-target * (x1 - x2) + o.margin), o.reduction);
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           const TripletMarginLossOptions& o) {
  check_floating_input(anchor, "triplet_margin_loss");
  EMBER_CHECK(positive.defined() && negative.defined(), "triplet_margin_loss: an operand is an undefined tensor");
  EMBER_CHECK(anchor.dim() == positive.dim() && anchor.dim() == negative.dim(),
              "triplet_margin_loss: anchor, positive and negative must have the same number of dims, got ",
              anchor.shape(), ", ", positive.shape(), " and ", negative.shape());
  check_broadcast(anchor, positive, "triplet_margin_loss");
  check_broadcast(anchor, negative, "triplet_margin_loss");
  const PairwiseDistanceOptions d{.p = o.p, .eps = o.eps};
  const Tensor dist_pos = pairwise_distance(anchor, positive, d);
  Tensor dist_neg = pairwise_distance(anchor, negative, d);
  if (o.swap) dist_neg = minimum(dist_neg, pairwise_distance(positive, negative, d));
  return reduce(clamp_min0(dist_pos - dist_neg + o.margin), o.reduction);
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, const PoissonNLLLossOptions& o) {
  check_floating_input(input, "poisson_nll_loss");
  check_broadcast(input, target, "poisson_nll_loss");
  Tensor loss = o.log_input ? exp(input) - target * input : input - target * log(input + o.eps);
  if (o.full) {  // Stirling's approximation of log(target!), where target > 1 (0 elsewhere)
    const Tensor big = gt(target, 1.0);
    const Tensor t = where(big, target, ones_like(target));
    const Tensor stirling = t * log(t) - t + log(t * (2 * std::numbers::pi)) * 0.5;
    loss = loss + where(big, stirling, zeros_like(stirling));
  }
  return reduce(loss, o.reduction);
}

Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var, const GaussianNLLLossOptions& o) {
  check_floating_input(input, "gaussian_nll_loss");
  EMBER_CHECK(var.defined(), "gaussian_nll_loss: var is an undefined tensor");
  check_broadcast(input, target, "gaussian_nll_loss");
  raw::check_same_device(input, var, "gaussian_nll_loss");
  Tensor v = var;
  if (var.shape() != input.shape()) {
    const auto leading = [](const Shape& s) {
      return s.size() == 0 ? Shape{} : Shape(std::vector<int64_t>(s.begin(), s.end() - 1));
    };
    const Shape in_lead = leading(input.shape());
    if (input.dim() >= 1 && var.shape() == in_lead) {
      v = var.unsqueeze(-1);  // one variance per sample: homoscedastic
    } else if (!(input.dim() >= 1 && var.dim() == input.dim() && leading(var.shape()) == in_lead && var.size(-1) == 1)) {
      ember::detail::throw_error("gaussian_nll_loss: var of shape ", var.shape(), " does not fit the input ", input.shape(),
                          ": give it the input's shape, the input's shape without the last dim, or with the last dim 1");
    }
  }
  if (v.numel() > 0)
    EMBER_CHECK(!(min(v.detach()).item<double>() < 0), "gaussian_nll_loss: var has negative entries");
  const Tensor vc = detail::clamp_value_min(v, o.eps);
  Tensor loss = (log(vc) + square(input - target) / vc) * 0.5;
  if (o.full) loss = loss + 0.5 * std::log(2 * std::numbers::pi);
  return reduce(loss, o.reduction);
}

namespace {

struct BceBackward : autograd::Node {
  SavedTensor x, y;
  Tensor weight;  // a constant, possibly undefined
  std::string_view name() const override { return "binary_cross_entropy"; }
  void release() override {
    x.release();
    y.release();
    weight = Tensor();
  }
  // PyTorch's (binary_cross_entropy_backward / _target_backward):
  //   d/dx = w·(x - y) / max(x·(1 - x), 1e-12)        d/dy = w·(log(1 - x) - log x)
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Tensor xv = x.unpack(*this), yv = y.unpack(*this);
    const Tensor gw = weight.defined() ? g * weight : g;
    // NOTE: PyTorch's EPSILON is the f32 1e-12 (9.9999999600e-13), in f64 too.
    if (needs_grad(0)) grad_inputs[0] = gw * (xv - yv) / maximum((1.0 - xv) * xv, static_cast<double>(1e-12f));
    if (needs_grad(1)) grad_inputs[1] = gw * (log1p(-xv) - log(xv));
  }
};

}  // namespace

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyOptions& o) {
  check_same_shape(input, target, "binary_cross_entropy");
  if (o.weight.defined()) {
    raw::check_same_device(input, o.weight, "binary_cross_entropy");
    const Shape s = raw::broadcast_shapes(input.shape(), o.weight.shape(), "binary_cross_entropy");
    EMBER_CHECK(s == input.shape(), "binary_cross_entropy: weight of shape ", o.weight.shape(),
                " does not broadcast to the input's shape ", input.shape());
  }
  if (input.numel() > 0) {
    const Tensor x = input.detach();
    const double lo = min(x).item<double>(), hi = max(x).item<double>();
    EMBER_CHECK(lo >= 0 && hi <= 1, "binary_cross_entropy: all elements of input should be between 0 and 1 (got [", lo,
                ", ", hi, "]); pass probabilities (sigmoid outputs), or logits to binary_cross_entropy_with_logits");
  }
  const Tensor w = o.weight.defined() ? o.weight.detach() : Tensor();
  Tensor per;
  {
    NoGradGuard no_grad;  // -w·(t·max(log x, -100) + (1 - t)·max(log(1 - x), -100))
    per = (target - 1.0) * maximum(log1p(-input), -100.0) - target * maximum(log(input), -100.0);
    if (w.defined()) per = per * w;
  }
  if (auto node = autograd::make_node<BceBackward>(input, target)) {
    node->x.save(input);
    node->y.save(target);
    node->weight = w;
    autograd::set_history(per, std::move(node));
  }
  return reduce(per, o.reduction);
}

Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target, const MultiLabelSoftMarginLossOptions& o) {
  check_floating_input(input, "multilabel_soft_margin_loss");
  EMBER_CHECK(input.dim() >= 1, "multilabel_soft_margin_loss: expected input [N, C] or [C], got a 0-d tensor");
  check_broadcast(input, target, "multilabel_soft_margin_loss");
  Tensor loss = -(target * log_sigmoid(input) + (1.0 - target) * log_sigmoid(-input));
  if (o.weight.defined()) {
    check_broadcast(loss, o.weight, "multilabel_soft_margin_loss");
    loss = loss * o.weight.detach();
  }
  const int64_t class_dim = input.dim() - 1;
  loss = sum(loss, Shape{class_dim}) / static_cast<double>(input.size(class_dim));
  return reduce(loss, o.reduction);
}

}  // namespace ember::nn::functional
