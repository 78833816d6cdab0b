// Element-wise ops and their gradients: arithmetic with broadcasting (gradients summed back to each
// input's shape), unary math, where. Comparisons and sign's mask-like outputs carry no gradient.
#include "autograd/node.h"
#include "autograd/ops.h"
#include "core/raw.h"

namespace ember {
namespace {

using autograd::make_node;
using autograd::SavedTensor;
using autograd::set_history;
using autograd::sum_to;

Tensor zero_like_scalar(const Tensor& like) { return scalar_for(like, 0.0, false); }

// mask (bool) as 0/1 in `like`'s dtype.
Tensor as_weights(const Tensor& mask, const Tensor& like) { return mask.to(like.dtype()); }

// --- two inputs ------------------------------------------------------------------------------------------
// out = a ⊕ b (broadcast). Saves only what the needed gradients use.
struct BinaryBackward : autograd::Node {
  BinaryOp op{};
  SavedTensor a, b, out;

  std::string_view name() const override { return op_name(op); }
  void release() override {
    a.release();
    b.release();
    out.release();
  }
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
// Ops whose derivative is cheapest from the output save y; the rest save x.
constexpr bool saves_output(UnaryOp op) {
  return op == UnaryOp::exp || op == UnaryOp::sqrt || op == UnaryOp::rsqrt || op == UnaryOp::tanh ||
         op == UnaryOp::sigmoid || op == UnaryOp::relu || op == UnaryOp::reciprocal;
}
constexpr bool saves_nothing(UnaryOp op) { return op == UnaryOp::neg || op == UnaryOp::sign; }

struct UnaryBackward : autograd::Node {
  UnaryOp op{};
  double alpha = 0, beta = 0;
  SavedTensor saved;  // x, or y when saves_output(op)

  std::string_view name() const override { return op_name(op); }
  void release() override { saved.release(); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    if (op == UnaryOp::neg) {
      grad_inputs[0] = -g;
      return;
    }
    if (op == UnaryOp::sign) {  // piecewise constant: zero gradient (as PyTorch)
      grad_inputs[0] = zeros_like(g);
      return;
    }
    const Tensor s = saved.unpack(*this);
    switch (op) {
      case UnaryOp::abs: grad_inputs[0] = g * sign(s); break;
      case UnaryOp::exp: grad_inputs[0] = g * s; break;
      case UnaryOp::log: grad_inputs[0] = g / s; break;
      case UnaryOp::sqrt: grad_inputs[0] = g / (s * 2.0); break;                 // 1 / (2·√x)
      case UnaryOp::rsqrt: grad_inputs[0] = g * (s * s * s) * -0.5; break;       // -x^(-3/2) / 2
      case UnaryOp::reciprocal: grad_inputs[0] = -(g * square(s)); break;        // -1 / x²
      case UnaryOp::square: grad_inputs[0] = g * s * 2.0; break;
      case UnaryOp::tanh: grad_inputs[0] = raw::binary(BinaryOp::tanh_backward, g, s); break;
      case UnaryOp::sigmoid: grad_inputs[0] = raw::binary(BinaryOp::sigmoid_backward, g, s); break;
      case UnaryOp::relu: grad_inputs[0] = raw::binary(BinaryOp::relu_backward, g, s); break;  // y > 0 ⇔ x > 0
      case UnaryOp::gelu: grad_inputs[0] = raw::binary(BinaryOp::gelu_backward, g, s); break;
      case UnaryOp::pow_scalar:
        grad_inputs[0] = alpha == 0 ? zeros_like(g) : g * pow(s, alpha - 1) * alpha;
        break;
      case UnaryOp::clamp: {  // passes the gradient where min <= x <= max (bounds included, as PyTorch)
        const Tensor inside = raw::binary(BinaryOp::logical_and, s >= alpha, s <= beta);
        grad_inputs[0] = where(inside, g, zero_like_scalar(g));
        break;
      }
      default: detail::throw_error(op_name(op), " backward: not differentiable");
    }
  }
};

Tensor unary_op(UnaryOp op, const Tensor& x, double alpha = 0, double beta = 0) {
  Tensor y = raw::unary(op, x, alpha, beta);
  if (auto node = make_node<UnaryBackward>(x)) {
    node->op = op;
    node->alpha = alpha;
    node->beta = beta;
    if (!saves_nothing(op)) node->saved.save(saves_output(op) ? y : x, saves_output(op));
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

Tensor add(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::div, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::pow, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary_op(BinaryOp::minimum, a, b); }
Tensor eq(const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::ge, a, b); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  Tensor out = raw::where(cond, a, b);
  if (auto node = make_node<WhereBackward>(cond, a, b)) {
    node->cond.save(cond);
    set_history(out, std::move(node));
  }
  return out;
}

Tensor neg(const Tensor& x) { return unary_op(UnaryOp::neg, x); }
Tensor abs(const Tensor& x) { return unary_op(UnaryOp::abs, x); }
Tensor sign(const Tensor& x) { return unary_op(UnaryOp::sign, x); }
Tensor exp(const Tensor& x) { return unary_op(UnaryOp::exp, x); }
Tensor log(const Tensor& x) { return unary_op(UnaryOp::log, x); }
Tensor sqrt(const Tensor& x) { return unary_op(UnaryOp::sqrt, x); }
Tensor rsqrt(const Tensor& x) { return unary_op(UnaryOp::rsqrt, x); }
Tensor square(const Tensor& x) { return unary_op(UnaryOp::square, x); }
Tensor tanh(const Tensor& x) { return unary_op(UnaryOp::tanh, x); }
Tensor sigmoid(const Tensor& x) { return unary_op(UnaryOp::sigmoid, x); }
Tensor relu(const Tensor& x) { return unary_op(UnaryOp::relu, x); }
Tensor gelu(const Tensor& x) { return unary_op(UnaryOp::gelu, x); }
Tensor pow(const Tensor& x, double exponent) { return unary_op(UnaryOp::pow_scalar, x, exponent); }
Tensor clamp(const Tensor& x, double min, double max) {
  EMBER_CHECK(!(min > max), "clamp: min ", min, " is greater than max ", max);
  return unary_op(UnaryOp::clamp, x, min, max);
}

}  // namespace ember
