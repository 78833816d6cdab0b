#pragma once
// Element math written once for every backend: the CPU loops call these functors, and the CUDA kernels
// (backends/cuda/) call the very same ones, so the CPU tests exercise the math the GPU runs.
// Only plain C math is used here (expf/exp, ...), which exists in host and device code alike.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/backend.h"
#include "base/dtype.h"
#include "base/error.h"
#include "base/host_device.h"
#include "base/philox.h"

namespace ember::kernels {

// --- float/double overloads of the C math library -------------------------------------------------
EMBER_HOST_DEVICE float m_exp(float x) { return ::expf(x); }
EMBER_HOST_DEVICE double m_exp(double x) { return ::exp(x); }
EMBER_HOST_DEVICE float m_log(float x) { return ::logf(x); }
EMBER_HOST_DEVICE double m_log(double x) { return ::log(x); }
EMBER_HOST_DEVICE float m_sqrt(float x) { return ::sqrtf(x); }
EMBER_HOST_DEVICE double m_sqrt(double x) { return ::sqrt(x); }
EMBER_HOST_DEVICE float m_tanh(float x) { return ::tanhf(x); }
EMBER_HOST_DEVICE double m_tanh(double x) { return ::tanh(x); }
EMBER_HOST_DEVICE float m_erf(float x) { return ::erff(x); }
EMBER_HOST_DEVICE double m_erf(double x) { return ::erf(x); }
EMBER_HOST_DEVICE float m_pow(float x, float y) { return ::powf(x, y); }
EMBER_HOST_DEVICE double m_pow(double x, double y) { return ::pow(x, y); }
EMBER_HOST_DEVICE float m_cos(float x) { return ::cosf(x); }
EMBER_HOST_DEVICE double m_cos(double x) { return ::cos(x); }
EMBER_HOST_DEVICE float m_sin(float x) { return ::sinf(x); }
EMBER_HOST_DEVICE double m_sin(double x) { return ::sin(x); }
EMBER_HOST_DEVICE float m_expm1(float x) { return ::expm1f(x); }
EMBER_HOST_DEVICE double m_expm1(double x) { return ::expm1(x); }
EMBER_HOST_DEVICE float m_log1p(float x) { return ::log1pf(x); }
EMBER_HOST_DEVICE double m_log1p(double x) { return ::log1p(x); }
template <typename T> EMBER_HOST_DEVICE bool m_isnan(T x) { return x != x; }

template <typename T> EMBER_HOST_DEVICE T m_max(T a, T b) { return (a > b || m_isnan(a)) ? a : b; }  // NaN wins
template <typename T> EMBER_HOST_DEVICE T m_min(T a, T b) { return (a < b || m_isnan(a)) ? a : b; }

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

// --- element-wise ops: one functor per line of backends/elementwise_ops.h -----------------------------
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

// --- reductions ---------------------------------------------------------------------------------------
// Accumulator type: sums of f32 accumulate in f64 (cheap where the loop is memory-bound, and it keeps a
// 16M-element sum accurate); everything else in its own type.
template <ReduceOp op, typename T> struct ReduceAcc { using type = T; };
template <> struct ReduceAcc<ReduceOp::sum, float> { using type = double; };
template <> struct ReduceAcc<ReduceOp::mean, float> { using type = double; };

template <ReduceOp op, typename Acc>
struct ReduceFn {
  // NOTE: ∓infinity for floats, not lowest()/max(): the identity must never win against a real value,
  // or the max of [-inf, -inf] would be -3.4e38.
  static EMBER_HOST_DEVICE Acc identity() {
    using L = std::numeric_limits<Acc>;
    if constexpr (op == ReduceOp::max) return L::has_infinity ? -L::infinity() : L::lowest();
    if constexpr (op == ReduceOp::min) return L::has_infinity ? L::infinity() : L::max();
    return Acc(0);
  }
  EMBER_HOST_DEVICE Acc operator()(Acc acc, Acc x) const {
    if constexpr (op == ReduceOp::max) return m_max(x, acc);
    if constexpr (op == ReduceOp::min) return m_min(x, acc);
    return acc + x;
  }
};

// --- optimizer updates (PyTorch 1.13's single-tensor SGD, Adam/AdamW and RMSprop) -----------------------
// Same order of operations, and every derived constant (1 - β, lr / bias correction, 1 - lr·wd) computed
// in double and rounded once to T, as PyTorch's Python scalars are: f32 trajectories then match PyTorch's
// to about an ulp per step.
template <typename T>
struct OptimizerStep {
  T lr, wd, momentum, one_minus_dampening, beta1, one_minus_beta1, beta2, one_minus_beta2, eps, step_size,
      bc2_sqrt, decay;
  bool decoupled, maximize, nesterov, amsgrad, centered, first_step;

  explicit OptimizerStep(const OptimizerParams& p)
      : lr(T(p.lr)), wd(T(p.weight_decay)), momentum(T(p.momentum)), one_minus_dampening(T(1.0 - p.dampening)),
        beta1(T(p.beta1)), one_minus_beta1(T(1.0 - p.beta1)), beta2(T(p.beta2)), one_minus_beta2(T(1.0 - p.beta2)),
        eps(T(p.eps)), step_size(T(p.lr / (1.0 - ::pow(p.beta1, static_cast<double>(p.step))))),
        bc2_sqrt(T(::sqrt(1.0 - ::pow(p.beta2, static_cast<double>(p.step))))), decay(T(1.0 - p.lr * p.weight_decay)),
        decoupled(p.decoupled_weight_decay), maximize(p.maximize), nesterov(p.nesterov), amsgrad(p.amsgrad),
        centered(p.centered), first_step(p.step == 1) {}

  // Updates element i. `op` is a template parameter (one straight-line loop body per optimizer, which the
  // compiler vectorises); s0..s2 are only read where the configuration has that buffer.
  template <OptimizerOp kOp>
  EMBER_HOST_DEVICE void apply(int64_t i, T* param, const T* grad, T* s0, T* s1, T* s2) const {
    T g = maximize ? -grad[i] : grad[i];
    T p = param[i];
    if constexpr (kOp == OptimizerOp::sgd) {
      if (wd != T(0)) g = g + wd * p;
      if (momentum != T(0)) {
        const T buf = first_step ? g : s0[i] * momentum + one_minus_dampening * g;
        s0[i] = buf;
        g = nesterov ? g + momentum * buf : buf;
      }
      p = p + (-lr) * g;
    } else if constexpr (kOp == OptimizerOp::adam) {
      if (decoupled) p = p * decay;
      else if (wd != T(0)) g = g + wd * p;
      const T m = s0[i] * beta1 + one_minus_beta1 * g;
      const T v = s1[i] * beta2 + one_minus_beta2 * g * g;
      s0[i] = m;
      s1[i] = v;
      T denom_src = v;
      if (amsgrad) {
        denom_src = m_max(s2[i], v);
        s2[i] = denom_src;
      }
      const T denom = m_sqrt(denom_src) / bc2_sqrt + eps;
      p = p + (-step_size) * (m / denom);
    } else {  // rmsprop: alpha is beta2
      if (wd != T(0)) g = g + wd * p;
      const T square_avg = s0[i] * beta2 + one_minus_beta2 * g * g;
      s0[i] = square_avg;
      T avg;
      if (centered) {
        const T grad_avg = s2[i] * beta2 + one_minus_beta2 * g;
        s2[i] = grad_avg;
        avg = m_sqrt(square_avg + T(-1) * grad_avg * grad_avg) + eps;
      } else {
        avg = m_sqrt(square_avg) + eps;
      }
      if (momentum > T(0)) {
        const T buf = s1[i] * momentum + g / avg;
        s1[i] = buf;
        p = p + (-lr) * buf;
      } else {
        p = p + (-lr) * (g / avg);
      }
    }
    param[i] = p;
  }
};

// Element `index` of a draw: one Philox block per element, so the value depends on nothing else.
template <RandomOp op, typename T>
EMBER_HOST_DEVICE T random_element(uint64_t seed, uint64_t index, double a, double b) {
  const Philox4 r = philox4x32_10(seed, index);
  if constexpr (op == RandomOp::uniform) return static_cast<T>(a + (b - a) * uniform01<T>(r));
  if constexpr (op == RandomOp::bernoulli) return uniform01<T>(r) < static_cast<T>(a) ? T(1) : T(0);
  if constexpr (op == RandomOp::normal) {
    // Box–Muller on words 2 and 3 (u1 in (0, 1], so the log is finite).
    const T u1 = (static_cast<T>(r.v[2]) + T(1)) * static_cast<T>(1.0 / 4294967296.0);
    const T u2 = static_cast<T>(r.v[3]) * static_cast<T>(1.0 / 4294967296.0);
    const T z = m_sqrt(T(-2) * m_log(u1)) * m_cos(static_cast<T>(6.283185307179586476925) * u2);
    return static_cast<T>(a + b * z);
    // cppcheck-suppress missingReturn ; every RandomOp has a branch (if constexpr)
  }
}

// --- host-side dispatch: runtime enum → template argument ---------------------------------------------
template <auto V> using constant = std::integral_constant<decltype(V), V>;

// Calls fn(constant<op>{}) — turns a runtime enum into a template argument; the cases come from the tables.
template <typename Fn>
void dispatch_unary_op(UnaryOp op, Fn&& fn) {
  switch (op) {
#define EMBER_X(name, ...) case UnaryOp::name: return fn(constant<UnaryOp::name>{});
    EMBER_UNARY_OPS(EMBER_X)
#undef EMBER_X
  }
}

template <typename Fn>
void dispatch_binary_op(BinaryOp op, Fn&& fn) {
  switch (op) {
#define EMBER_X(name, ...) case BinaryOp::name: return fn(constant<BinaryOp::name>{});
    EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X
  }
}


template <typename T>
inline constexpr bool is_float_v = std::is_floating_point_v<T>;

// The (op, dtype) pairs each backend runs, checked once for both: fn(constant<op>{}, T{}) for the pairs the
// tables allow, an error naming the op otherwise. Unary forward: any dtype but bool, floats only where the
// table says float_only; unary backward: f32/f64; binary: comparisons on any dtype, the rest not on bool,
// floats only where float_only. `fn` is instantiated only for allowed pairs.
template <typename Fn>
void dispatch_unary(UnaryOp op, DType dtype, Fn&& fn) {
  dispatch_unary_op(op, [&](auto op_c) {
    constexpr UnaryOp kOp = decltype(op_c)::value;
    dispatch_dtype(dtype, op_name(kOp), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool> || (unary_needs_float(kOp) && !is_float_v<T>))
        detail::throw_error(op_name(kOp), ": not defined for dtype ", dtype_name(dtype), "; convert with .to(DType::f32)");
      else
        fn(op_c, tag);
    });
  });
}

template <typename Fn>
void dispatch_unary_backward(UnaryOp op, DType dtype, Fn&& fn) {
  dispatch_unary_op(op, [&](auto op_c) {
    dispatch_floating(dtype, op_name(decltype(op_c)::value), [&](auto tag) { fn(op_c, tag); });
  });
}

template <typename Fn>
void dispatch_binary(BinaryOp op, DType dtype, Fn&& fn) {
  dispatch_binary_op(op, [&](auto op_c) {
    constexpr BinaryOp kOp = decltype(op_c)::value;
    dispatch_dtype(dtype, op_name(kOp), [&](auto tag) {
      using T = decltype(tag);
      constexpr bool arithmetic_on_bool = std::is_same_v<T, bool> && !is_comparison(kOp);
      if constexpr (arithmetic_on_bool || (binary_needs_float(kOp) && !is_float_v<T>))
        detail::throw_error(op_name(kOp), ": not defined for dtype ", dtype_name(dtype));
      else
        fn(op_c, tag);
    });
  });
}

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

template <typename Fn>
void dispatch_optimizer_op(OptimizerOp op, Fn&& fn) {
  switch (op) {
    case OptimizerOp::sgd: return fn(constant<OptimizerOp::sgd>{});
    case OptimizerOp::adam: return fn(constant<OptimizerOp::adam>{});
    case OptimizerOp::rmsprop: return fn(constant<OptimizerOp::rmsprop>{});
  }
}

template <typename Fn>
void dispatch_random_op(RandomOp op, Fn&& fn) {
  switch (op) {
    case RandomOp::uniform: return fn(constant<RandomOp::uniform>{});
    case RandomOp::normal: return fn(constant<RandomOp::normal>{});
    case RandomOp::bernoulli: return fn(constant<RandomOp::bernoulli>{});
  }
}

template <typename Fn>
void dispatch_reduce_op(ReduceOp op, Fn&& fn) {
  switch (op) {
    case ReduceOp::sum: return fn(constant<ReduceOp::sum>{});
    case ReduceOp::mean: return fn(constant<ReduceOp::mean>{});
    case ReduceOp::max: return fn(constant<ReduceOp::max>{});
    case ReduceOp::min: return fn(constant<ReduceOp::min>{});
  }
}

// --- scans and sorts (cumsum, sort): shared by the CPU and CUDA loops ------------------------------------
// Whether a sorts before b: ascending or descending, NaN as the largest value (PyTorch's order: last when
// ascending, first when descending). A strict weak order, so a stable sort keeps equal elements (and NaNs)
// in input order.
template <typename T>
EMBER_HOST_DEVICE bool sort_before(T a, T b, bool descending) {
  if (descending) return a > b || (m_isnan(a) && !m_isnan(b));
  return a < b || (!m_isnan(a) && m_isnan(b));
}

// cumsum's accumulator: double for f32 (as PyTorch's CPU kernel), the type itself otherwise.
template <typename T> using ScanAcc = typename ReduceAcc<ReduceOp::sum, T>::type;

}  // namespace ember::kernels
