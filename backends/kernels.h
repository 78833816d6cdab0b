#pragma once
// Element math written once for every backend: the CPU loops call these functors, and the CUDA kernels
// (backends/cuda/) call the very same ones, so the CPU tests exercise the math the GPU runs.
// Only plain C math is used here (expf/exp, ...), which exists in host and device code alike.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "backends/backend.h"
#include "backends/host_device.h"

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

// --- unary ------------------------------------------------------------------------------------------
// `op` is a template parameter so each instantiation is a straight-line loop body the compiler can
// vectorise. alpha/beta are the op's parameters (pow exponent, clamp bounds).
template <UnaryOp op, typename T>
struct UnaryFn {
  T alpha, beta;
  EMBER_HOST_DEVICE T operator()(T x) const {
    if constexpr (op == UnaryOp::neg) return -x;
    if constexpr (op == UnaryOp::abs) return x < T(0) ? T(-x) : x;
    if constexpr (op == UnaryOp::sign) return T((T(0) < x) - (x < T(0)));
    if constexpr (op == UnaryOp::square) return x * x;
    if constexpr (op == UnaryOp::relu) return x < T(0) ? T(0) : x;  // NaN stays NaN, as in PyTorch
    if constexpr (op == UnaryOp::clamp) return m_min(m_max(x, alpha), beta);
    if constexpr (op == UnaryOp::exp) return m_exp(x);
    if constexpr (op == UnaryOp::log) return m_log(x);
    if constexpr (op == UnaryOp::sqrt) return m_sqrt(x);
    if constexpr (op == UnaryOp::rsqrt) return T(1) / m_sqrt(x);
    if constexpr (op == UnaryOp::tanh) return m_tanh(x);
    if constexpr (op == UnaryOp::sigmoid) return sigmoid(x);
    if constexpr (op == UnaryOp::gelu) return gelu(x);
    if constexpr (op == UnaryOp::reciprocal) return T(1) / x;
    if constexpr (op == UnaryOp::pow_scalar) return m_pow(x, alpha);
  }
};

constexpr bool unary_needs_float(UnaryOp op) {
  switch (op) {
    case UnaryOp::neg: case UnaryOp::abs: case UnaryOp::sign: case UnaryOp::square: case UnaryOp::relu:
    case UnaryOp::clamp:
      return false;
    default:
      return true;
  }
}

// --- binary -------------------------------------------------------------------------------------------
template <BinaryOp op, typename T>
struct BinaryFn {
  // Comparisons and logical ops return bool; the others T.
  EMBER_HOST_DEVICE auto operator()(T a, T b) const {
    if constexpr (op == BinaryOp::add) return T(a + b);
    if constexpr (op == BinaryOp::sub) return T(a - b);
    if constexpr (op == BinaryOp::mul) return T(a * b);
    if constexpr (op == BinaryOp::div) return T(a / b);
    if constexpr (op == BinaryOp::maximum) return m_max(a, b);
    if constexpr (op == BinaryOp::minimum) return m_min(a, b);
    if constexpr (op == BinaryOp::eq) return a == b;
    if constexpr (op == BinaryOp::ne) return a != b;
    if constexpr (op == BinaryOp::lt) return a < b;
    if constexpr (op == BinaryOp::le) return a <= b;
    if constexpr (op == BinaryOp::gt) return a > b;
    if constexpr (op == BinaryOp::ge) return a >= b;
    if constexpr (op == BinaryOp::logical_and) return a != T(0) && b != T(0);
    if constexpr (op == BinaryOp::logical_or) return a != T(0) || b != T(0);
    if constexpr (op == BinaryOp::pow) return m_pow(a, b);
    // a = incoming gradient, b = x or y as stated in backend.h
    if constexpr (op == BinaryOp::relu_backward) return b > T(0) ? a : T(0);
    if constexpr (op == BinaryOp::gelu_backward) return T(a * gelu_derivative(b));
    if constexpr (op == BinaryOp::tanh_backward) return T(a * (T(1) - b * b));
    if constexpr (op == BinaryOp::sigmoid_backward) return T(a * b * (T(1) - b));
  }
};

constexpr bool binary_needs_float(BinaryOp op) {
  return op == BinaryOp::pow || op == BinaryOp::gelu_backward || op == BinaryOp::tanh_backward ||
         op == BinaryOp::sigmoid_backward;
}

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

// --- Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11) -----------
struct Philox4 {
  uint32_t v[4];
};

EMBER_HOST_DEVICE void mulhilo32(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

// Four random 32-bit words for (key = seed, counter = index); every call is independent.
EMBER_HOST_DEVICE Philox4 philox4x32_10(uint64_t seed, uint64_t index) {
  uint32_t c0 = static_cast<uint32_t>(index), c1 = static_cast<uint32_t>(index >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo32(0xD2511F53u, c0, hi0, lo0);
    mulhilo32(0xCD9E8D57u, c2, hi1, lo1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

// Uniform in [0, 1): 24 random bits for float, 53 for double.
template <typename T> EMBER_HOST_DEVICE T uniform01(const Philox4& r);
template <> EMBER_HOST_DEVICE float uniform01<float>(const Philox4& r) {
  return static_cast<float>(r.v[0] >> 8) * (1.0f / 16777216.0f);
}
template <> EMBER_HOST_DEVICE double uniform01<double>(const Philox4& r) {
  const uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 21) ^ (r.v[1] >> 11);
  return static_cast<double>(bits & ((1ULL << 53) - 1)) * (1.0 / 9007199254740992.0);
}

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
  }
}

// --- host-side dispatch: runtime enum → template argument ---------------------------------------------
template <auto V> using constant = std::integral_constant<decltype(V), V>;

// Calls fn(constant<op>) — turns a runtime enum into a template argument.
template <typename Fn>
void dispatch_unary_op(UnaryOp op, Fn&& fn) {
  switch (op) {
#define EMBER_CASE(name) case UnaryOp::name: return fn(constant<UnaryOp::name>{});
    EMBER_CASE(neg) EMBER_CASE(abs) EMBER_CASE(sign) EMBER_CASE(exp) EMBER_CASE(log) EMBER_CASE(sqrt)
    EMBER_CASE(rsqrt) EMBER_CASE(tanh) EMBER_CASE(sigmoid) EMBER_CASE(relu) EMBER_CASE(gelu)
    EMBER_CASE(square) EMBER_CASE(reciprocal) EMBER_CASE(pow_scalar) EMBER_CASE(clamp)
#undef EMBER_CASE
  }
}

template <typename Fn>
void dispatch_binary_op(BinaryOp op, Fn&& fn) {
  switch (op) {
#define EMBER_CASE(name) case BinaryOp::name: return fn(constant<BinaryOp::name>{});
    EMBER_CASE(add) EMBER_CASE(sub) EMBER_CASE(mul) EMBER_CASE(div) EMBER_CASE(pow) EMBER_CASE(maximum)
    EMBER_CASE(minimum) EMBER_CASE(eq) EMBER_CASE(ne) EMBER_CASE(lt) EMBER_CASE(le) EMBER_CASE(gt)
    EMBER_CASE(ge) EMBER_CASE(logical_and) EMBER_CASE(logical_or) EMBER_CASE(relu_backward)
    EMBER_CASE(gelu_backward) EMBER_CASE(tanh_backward) EMBER_CASE(sigmoid_backward)
#undef EMBER_CASE
  }
}

template <typename T>
inline constexpr bool is_float_v = std::is_floating_point_v<T>;

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

}  // namespace ember::kernels
