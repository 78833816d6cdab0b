#pragma once
// The element-wise ops' math, one functor per line of the op tables (backends/elementwise_ops.h): the CPU
// loops (backends/cpu/elementwise.cpp) and the CUDA kernels (backends/cuda/elementwise.cu) call the very
// same functors, so the CPU tests exercise the math the GPU runs.
#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/elementwise_ops.h"
#include "backends/scalar_math.h"
#include "base/host_device.h"

namespace ember::kernels {

template <typename T> EMBER_HOST_DEVICE T sigmoid(T x) { return T(1) / (T(1) + m_exp(-x)); }
// Exact GELU: x * Φ(x), as torch.nn.functional.gelu(approximate='none').
template <typename T> EMBER_HOST_DEVICE T gelu(T x) {
  return T(0.5) * x * (T(1) + m_erf(x * T(0.70710678118654752440)));
}
template <typename T> EMBER_HOST_DEVICE T gelu_derivative(T x) {
  const T cdf = T(0.5) * (T(1) + m_erf(x * T(0.70710678118654752440)));
  const T pdf = m_exp(T(-0.5) * x * x) * T(0.39894228040143267794);  // 1/sqrt(2π)
  return cdf + x * pdf;
}
// GELU's tanh approximation, as torch.nn.functional.gelu(approximate='tanh'):
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), and its derivative in PyTorch's order of operations.
template <typename T> EMBER_HOST_DEVICE T gelu_tanh(T x) {
  const T inner = T(0.79788456080286535588) * (x + T(0.044715) * x * x * x);
  return T(0.5) * x * (T(1) + m_tanh(inner));
}
template <typename T> EMBER_HOST_DEVICE T gelu_tanh_derivative(T x) {
  const T k_beta = T(0.79788456080286535588), k_kappa = T(0.044715);
  const T x_sq = x * x, x_cube = x_sq * x;
  const T inner = k_beta * (x + k_kappa * x_cube);
  const T tanh_inner = m_tanh(inner);
  const T left = T(0.5) * x, right = T(1) + tanh_inner;
  const T left_derivative = T(0.5) * right;
  const T right_derivative = left * (T(1) - tanh_inner * tanh_inner);
  const T inner_derivative = k_beta * (T(1) + T(3) * k_kappa * x_sq);
  return left_derivative + right_derivative * inner_derivative;
}

// --- one functor per line of backends/elementwise_ops.h ----------------------------------------------
// `forward(x, alpha, beta)` is the op (alpha/beta: its parameters, see the table); `backward(g, s, alpha,
// beta)` is g·f'(x), where s is what the table says the op saves: the input x, the output y, or nothing (s
// is then unspecified and unused). Backward runs on f32/f64 only; forward also on integers where the table
// allows them.
#define EMBER_FORWARD(expr) \
  template <typename T> EMBER_HOST_DEVICE static T forward(T x, T alpha, T beta) { (void)alpha, (void)beta; return expr; }
#define EMBER_BACKWARD(expr) \
  template <typename T> EMBER_HOST_DEVICE static T backward(T g, T s, T alpha, T beta) { (void)g, (void)s, (void)alpha, (void)beta; return expr; }

struct neg_fn { EMBER_FORWARD(T(-x)) EMBER_BACKWARD(T(-g)) };
struct abs_fn { EMBER_FORWARD(x < T(0) ? T(-x) : x) EMBER_BACKWARD(s > T(0) ? g : s < T(0) ? T(-g) : T(0)) };
struct sign_fn { EMBER_FORWARD(T((T(0) < x) - (x < T(0)))) EMBER_BACKWARD(T(0)) };  // piecewise constant, as PyTorch
struct square_fn { EMBER_FORWARD(T(x * x)) EMBER_BACKWARD(g * s * T(2)) };
// NaN stays NaN, as in PyTorch; the gradient passes where y > 0 (⇔ x > 0).
struct relu_fn { EMBER_FORWARD(x < T(0) ? T(0) : x) EMBER_BACKWARD(s > T(0) ? g : T(0)) };
struct exp_fn { EMBER_FORWARD(m_exp(x)) EMBER_BACKWARD(g * s) };
struct expm1_fn { EMBER_FORWARD(m_expm1(x)) EMBER_BACKWARD(g * (s + T(1))) };
struct log_fn { EMBER_FORWARD(m_log(x)) EMBER_BACKWARD(g / s) };
struct log1p_fn { EMBER_FORWARD(m_log1p(x)) EMBER_BACKWARD(g / (s + T(1))) };
struct sqrt_fn { EMBER_FORWARD(m_sqrt(x)) EMBER_BACKWARD(g / (s * T(2))) };                   // 1 / (2·√x)
struct rsqrt_fn { EMBER_FORWARD(T(1) / m_sqrt(x)) EMBER_BACKWARD(g * (s * s * s) * T(-0.5)) };  // -x^(-3/2) / 2
struct reciprocal_fn { EMBER_FORWARD(T(1) / x) EMBER_BACKWARD(-(g * (s * s))) };               // -1 / x²
struct sin_fn { EMBER_FORWARD(m_sin(x)) EMBER_BACKWARD(g * m_cos(s)) };
struct cos_fn { EMBER_FORWARD(m_cos(x)) EMBER_BACKWARD(g * -m_sin(s)) };
struct tanh_fn { EMBER_FORWARD(m_tanh(x)) EMBER_BACKWARD(g * (T(1) - s * s)) };
struct sigmoid_fn { EMBER_FORWARD(sigmoid(x)) EMBER_BACKWARD(g * s * (T(1) - s)) };
// x·σ(x); f' = σ(x)·(1 + x·(1 - σ(x))), as PyTorch's silu_backward.
struct silu_fn {
  EMBER_FORWARD(x / (T(1) + m_exp(-x)))
  EMBER_BACKWARD(g * sigmoid(s) * (T(1) + s * (T(1) - sigmoid(s))))
};
struct pow_scalar_fn {
  EMBER_FORWARD(m_pow(x, alpha))
  EMBER_BACKWARD(alpha == T(0) ? T(0) : g * m_pow(s, alpha - T(1)) * alpha)
};
// The gradient passes where min <= x <= max (bounds included, as PyTorch's clamp).
struct clamp_fn { EMBER_FORWARD(m_min(m_max(x, alpha), beta)) EMBER_BACKWARD(s >= alpha && s <= beta ? g : T(0)) };
struct gelu_fn { EMBER_FORWARD(gelu(x)) EMBER_BACKWARD(g * gelu_derivative(s)) };
struct gelu_tanh_fn { EMBER_FORWARD(gelu_tanh(x)) EMBER_BACKWARD(g * gelu_tanh_derivative(s)) };
// alpha: the negative slope. The gradient of x = 0 is alpha, as PyTorch's (x > 0 ? g : g·slope).
struct leaky_relu_fn { EMBER_FORWARD(x > T(0) ? x : x * alpha) EMBER_BACKWARD(s > T(0) ? g : g * alpha) };
// PyTorch's elu (scale = input_scale = 1): x <= 0 ? alpha·(e^x - 1) : x.
struct elu_fn {
  EMBER_FORWARD(x <= T(0) ? alpha * (m_exp(x) - T(1)) : x)
  EMBER_BACKWARD(s <= T(0) ? g * alpha * m_exp(s) : g)
};
// alpha = beta of torch.nn.functional.softplus, beta = its threshold.
struct softplus_fn {
  EMBER_FORWARD(x * alpha > beta ? x : m_log1p(m_exp(x * alpha)) / alpha)
  EMBER_BACKWARD(s * alpha > beta ? g : g * (m_exp(s * alpha) / (m_exp(s * alpha) + T(1))))
};
// No gradient at or beyond the bounds (PyTorch's hardtanh_backward: x <= min || x >= max → 0).
struct hardtanh_fn { EMBER_FORWARD(m_min(m_max(x, alpha), beta)) EMBER_BACKWARD(s <= alpha || s >= beta ? T(0) : g) };

#undef EMBER_FORWARD
#undef EMBER_BACKWARD

// The functor of each UnaryOp (unary_fn_t<UnaryOp::exp> is exp_fn), from the table.
template <UnaryOp op> struct unary_fn;
#define EMBER_X(name, ...) template <> struct unary_fn<UnaryOp::name> { using type = name##_fn; };
EMBER_UNARY_OPS(EMBER_X)
#undef EMBER_X
template <UnaryOp op> using unary_fn_t = typename unary_fn<op>::type;

// What the backends' loops call.
template <UnaryOp op, typename T>
struct UnaryFn {
  T alpha, beta;
  EMBER_HOST_DEVICE T operator()(T x) const { return unary_fn_t<op>::forward(x, alpha, beta); }
};
template <UnaryOp op, typename T>
struct UnaryBackwardFn {
  T alpha, beta;
  EMBER_HOST_DEVICE T operator()(T g, T s) const { return unary_fn_t<op>::backward(g, s, alpha, beta); }
};

// Comparisons and logical ops return bool; the others T.
struct add_fn { template <typename T> EMBER_HOST_DEVICE static T apply(T a, T b) { return T(a + b); } };
struct sub_fn { template <typename T> EMBER_HOST_DEVICE static T apply(T a, T b) { return T(a - b); } };
struct mul_fn { template <typename T> EMBER_HOST_DEVICE static T apply(T a, T b) { return T(a * b); } };
struct div_fn { template <typename T> EMBER_HOST_DEVICE static T apply(T a, T b) { return T(a / b); } };
struct pow_fn { template <typename T> EMBER_HOST_DEVICE static T apply(T a, T b) { return m_pow(a, b); } };
struct maximum_fn { template <typename T> EMBER_HOST_DEVICE static T apply(T a, T b) { return m_max(a, b); } };
struct minimum_fn { template <typename T> EMBER_HOST_DEVICE static T apply(T a, T b) { return m_min(a, b); } };
struct eq_fn { template <typename T> EMBER_HOST_DEVICE static bool apply(T a, T b) { return a == b; } };
struct ne_fn { template <typename T> EMBER_HOST_DEVICE static bool apply(T a, T b) { return a != b; } };
struct lt_fn { template <typename T> EMBER_HOST_DEVICE static bool apply(T a, T b) { return a < b; } };
struct le_fn { template <typename T> EMBER_HOST_DEVICE static bool apply(T a, T b) { return a <= b; } };
struct gt_fn { template <typename T> EMBER_HOST_DEVICE static bool apply(T a, T b) { return a > b; } };
struct ge_fn { template <typename T> EMBER_HOST_DEVICE static bool apply(T a, T b) { return a >= b; } };
struct logical_and_fn { template <typename T> EMBER_HOST_DEVICE static bool apply(T a, T b) { return a != T(0) && b != T(0); } };
struct logical_or_fn { template <typename T> EMBER_HOST_DEVICE static bool apply(T a, T b) { return a != T(0) || b != T(0); } };

template <BinaryOp op> struct binary_fn;
#define EMBER_X(name, ...) template <> struct binary_fn<BinaryOp::name> { using type = name##_fn; };
EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X

template <BinaryOp op, typename T>
struct BinaryFn {
  EMBER_HOST_DEVICE auto operator()(T a, T b) const { return binary_fn<op>::type::apply(a, b); }
};

// An op parameter (clamp bound, pow exponent) in the element type. NOTE: casting ±inf (an absent clamp
// bound) or any out-of-range double to an integer is undefined behaviour: saturate instead.
template <typename T>
T param_cast(double v) {
  if constexpr (std::is_integral_v<T>) {
    using L = std::numeric_limits<T>;
    if (v != v) return T(0);
    if (v <= static_cast<double>(L::lowest())) return L::lowest();
    if (v >= static_cast<double>(L::max())) return L::max();
  }
  return static_cast<T>(v);
}

}  // namespace ember::kernels
