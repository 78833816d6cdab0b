// Element-wise ops and their gradients: arithmetic with broadcasting (gradients summed back to each
// input's shape), unary math, where. Comparisons and sign's mask-like outputs carry no gradient.
#include "autograd/node.h"
#include "autograd/ops.h"
#include "core/raw.h"

namespace ember {
namespace {

using autograd::make_node, autograd::SavedTensor, autograd::set_history, autograd::sum_to;

Tensor zero_like_scalar(const Tensor& like) { return scalar_for(like, 0.0, false); }

// mask (bool) as 0/1 in `like`'s dtype.
Tensor as_weights(const Tensor& mask, const Tensor& like) { return mask.to(like.dtype()); }

// --- two inputs ------------------------------------------------------------------------------------------
// out = a ⊕ b (broadcast). Saves only what the needed gradients use.
struct BinaryBackward : autograd::Node {
  BinaryOp op{};
  SavedTensor a, b, out;

  std::string_view name() const override { return op_name(op); }
  void release() override { release_all(a, b, out); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    Tensor ga, gb;  // on the broadcast (output) shape
    switch (op) {
      case BinaryOp::add:
        ga = g, gb = g;
        break;
      case BinaryOp::sub:
        ga = g;
        if (needs_grad(1)) gb = -g;
        break;
      case BinaryOp::mul:
        if (needs_grad(0)) ga = g * b.unpack(*this);
        if (needs_grad(1)) gb = g * a.unpack(*this);
        break;
      case BinaryOp::div: {
        const Tensor y = b.unpack(*this);
        if (needs_grad(0)) ga = g / y;
        if (needs_grad(1)) gb = -(g * a.unpack(*this)) / square(y);
        break;
      }
      case BinaryOp::pow: {  // out = a^b: d/da = b·a^(b-1); d/db = out·log(a), taken as 0 where a = 0
        const Tensor x = a.unpack(*this), p = b.unpack(*this);
        if (needs_grad(0)) ga = g * p * pow(x, p - 1.0);
        if (needs_grad(1)) gb = g * where(x == 0.0, zero_like_scalar(g), out.unpack(*this) * log(x));
        break;
      }
      case BinaryOp::maximum:
      case BinaryOp::minimum: {  // the larger (smaller) input gets the gradient; ties share it evenly
        const Tensor x = a.unpack(*this), y = b.unpack(*this);
        const Tensor wins = op == BinaryOp::maximum ? gt(x, y) : lt(x, y);
        const Tensor wa = as_weights(wins, g) + as_weights(eq(x, y), g) * 0.5;
        if (needs_grad(0)) ga = g * wa;
        if (needs_grad(1)) gb = g * (1.0 - wa);
        break;
      }
      default:
        detail::throw_error(op_name(op), " backward: not differentiable");
    }
    if (needs_grad(0)) grad_inputs[0] = sum_to(ga, next[0].shape);
    if (needs_grad(1)) grad_inputs[1] = sum_to(gb, next[1].shape);
  }
};

Tensor binary_op(BinaryOp op, const Tensor& a, const Tensor& b) {
  Tensor out = raw::binary(op, a, b);
  if (is_comparison(op)) return out;
  if (auto node = make_node<BinaryBackward>(a, b)) {
    node->op = op;
    const bool ga = node->needs_grad(0), gb = node->needs_grad(1);
    switch (op) {
      case BinaryOp::mul: if (ga) node->b.save(b); if (gb) node->a.save(a); break;
      case BinaryOp::div: node->b.save(b); if (gb) node->a.save(a); break;
      case BinaryOp::pow: node->a.save(a); node->b.save(b); if (gb) node->out.save(out, true); break;
      case BinaryOp::maximum: case BinaryOp::minimum: node->a.save(a); node->b.save(b); break;
      default: break;
    }
    set_history(out, std::move(node));
  }
  return out;
}

// --- one input ---------------------------------------------------------------------------------------------
// Every unary op's backward is its functor's derivative (backends/kernels.h), from what its table line
// says it saves (x, y or nothing).
struct UnaryBackward : autograd::Node {
  UnaryOp op{};
  double alpha = 0, beta = 0;
  SavedTensor saved;

  std::string_view name() const override { return op_name(op); }
  void release() override { saved.release(); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    grad_inputs[0] = raw::unary_backward(op, g, saved.defined() ? saved.unpack(*this) : Tensor(), alpha, beta);
  }
};

Tensor unary_op(UnaryOp op, const Tensor& x, double alpha = 0, double beta = 0) {
  Tensor y = raw::unary(op, x, alpha, beta);
  if (auto node = make_node<UnaryBackward>(x)) {
    node->op = op;
    node->alpha = alpha;
    node->beta = beta;
    switch (op_info(op).saves) {
      case UnarySaves::input: node->saved.save(x); break;
      case UnarySaves::output: node->saved.save(y, true); break;
      case UnarySaves::none: break;
    }
    set_history(y, std::move(node));
  }
  return y;
}

// --- where ----------------------------------------------------------------------------------------------------
struct WhereBackward : autograd::Node {
  SavedTensor cond;
  std::string_view name() const override { return "where"; }
  void release() override { cond.release(); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Tensor c = cond.unpack(*this), zero = zero_like_scalar(g);
    // next[0] is the condition (never differentiable); a and b are inputs 1 and 2.
    if (needs_grad(1)) grad_inputs[1] = sum_to(where(c, g, zero), next[1].shape);
    if (needs_grad(2)) grad_inputs[2] = sum_to(where(c, zero, g), next[2].shape);
  }
};

}  // namespace

// The ops of the tables (backends/elementwise_ops.h): ember::add ... ember::silu.
#define EMBER_X(name, ...) \
  Tensor name(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::name, a, b); }
EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X
#define EMBER_X(name, ...) \
  Tensor name(const Tensor& x) { return unary_op(UnaryOp::name, x); }
EMBER_UNARY_OPS_PUBLIC(EMBER_X)
#undef EMBER_X

Tensor binary_with_scalar(BinaryOp op, const Tensor& a, double value, bool integral) {
  if (op == BinaryOp::pow) return pow(a, value);
  return binary_op(op, a, scalar_for(a, value, integral));
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  Tensor out = raw::where(cond, a, b);
  if (auto node = make_node<WhereBackward>(cond, a, b)) {
    node->cond.save(cond);
    set_history(out, std::move(node));
  }
  return out;
}

// The ops with parameters (EMBER_UNARY_OPS_PARAM).
Tensor pow(const Tensor& x, double exponent) { return unary_op(UnaryOp::pow_scalar, x, exponent); }
Tensor clamp(const Tensor& x, double min, double max) {
  EMBER_CHECK(!(min > max), "clamp: min ", min, " is greater than max ", max);
  return unary_op(UnaryOp::clamp, x, min, max);
}
Tensor gelu(const Tensor& x, std::string_view approximate) {
  EMBER_CHECK(approximate == "none" || approximate == "tanh", "gelu: approximate must be 'none' or 'tanh', got '",
              approximate, "'");
  return unary_op(approximate == "tanh" ? UnaryOp::gelu_tanh : UnaryOp::gelu, x);
}
Tensor leaky_relu(const Tensor& x, double negative_slope) { return unary_op(UnaryOp::leaky_relu, x, negative_slope); }
Tensor elu(const Tensor& x, double alpha) { return unary_op(UnaryOp::elu, x, alpha); }
Tensor softplus(const Tensor& x, double beta, double threshold) {
  EMBER_CHECK(beta != 0, "softplus: beta must not be 0");
  return unary_op(UnaryOp::softplus, x, beta, threshold);
}
Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  EMBER_CHECK(!(min_val > max_val), "hardtanh: min_val ", min_val, " is greater than max_val ", max_val);
  return unary_op(UnaryOp::hardtanh, x, min_val, max_val);
}

}  // namespace ember
