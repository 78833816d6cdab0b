#pragma once
// The math of the fused NN ops, written once as EMBER_HOST_DEVICE helpers that backends/cpu/*.cpp and
// backends/cuda/*.cu both call (as backends/elementwise_math.h shares the element functors): the per-element
// and per-row formulas of softmax / log_softmax / cross entropy and batch / layer / RMS norm, the whole row
// bodies of softmax, cross entropy, layer norm and RMS norm (run by one CPU thread or one CUDA block: see
// SerialRow), and the pooling windows. What a sum's terms are and what is done with the sum is here; each
// backend keeps its own order of summation (in order on the CPU, a fixed tree on the GPU).
// Plain ternaries, no std::min/max: those are host-only constexpr functions under nvcc.
#include <cmath>
#include <cstdint>
#include <limits>

#include "backends/backend.h"
#include "backends/scalar_math.h"
#include "base/host_device.h"

namespace ember::nn_math {

// Combiners for block_reduce (backends/cuda/loops.cuh) and any host loop that wants the same rule.
struct SumOp {
  template <typename A> EMBER_HOST_DEVICE A operator()(A a, A b) const { return a + b; }
};
struct MaxOp {  // NaN wins, as kernels::m_max (the CPU's row max)
  template <typename A> EMBER_HOST_DEVICE A operator()(A a, A b) const { return kernels::m_max(a, b); }
};

// Two sums reduced together (batch/layer norm backward: Σg and Σg·x̂ in one pass).
struct SumPair {
  double a, b;
  EMBER_HOST_DEVICE SumPair operator+(const SumPair& o) const { return {a + o.a, b + o.b}; }
};

// --- softmax, log_softmax, cross entropy ----------------------------------------------------------------
// A row x[0..D) is summarised by its max m (NaN wins) and s = Σ exp(x_j - m), accumulated in double:
//   softmax_j     = exp(x_j - m) / s
//   log_softmax_j = (x_j - m) - log(s)          (PyTorch's order: the difference first, then the log)
// The log-sum-exp m + log(s) rounded to the input dtype is NOT a usable shift for exp(x - lse): at |x| ~ 1e3
// in f32 its spacing (6e-5) is larger than log(s) can be resolved to, a row would sum to 1 ± 3e-5 and the
// softmax backward magnifies that. A row whose max is ±inf or NaN gives NaN throughout, as in PyTorch.

// The term exp(x - shift) of a row's sum (and the numerator of its softmax); shift is the row max, or any
// value at most a few ulp above it (the cross-entropy backward passes the forward's rounded lse).
template <typename T>
EMBER_HOST_DEVICE T softmax_term(T x, T shift) {
  return kernels::m_exp(x - shift);
}
// softmax_j from its term and 1/s (s accumulated in double over the same shift).
template <typename T>
EMBER_HOST_DEVICE T softmax_value(T term, double inv_sum) {
  return static_cast<T>(static_cast<double>(term) * inv_sum);
}
// log(s) in the input dtype: what log_softmax subtracts after the max.
template <typename T>
EMBER_HOST_DEVICE T softmax_log_sum(double sum) {
  return static_cast<T>(::log(sum));  // s >= 1 (the max contributes exp(0)) or NaN: never log(0)
}
template <typename T>
EMBER_HOST_DEVICE T log_softmax_value(T x, T max, T log_sum) {
  return (x - max) - log_sum;
}
// The log-sum-exp m + log(s), where it is an output (cross entropy's, for its backward).
template <typename T>
EMBER_HOST_DEVICE T logsumexp(T max, double sum) {
  return static_cast<T>(static_cast<double>(max) + ::log(sum));
}

// Backward from the forward's output y and the row sum `dot` (double):
//   softmax:     gx = y · (g - Σ g·y)      term g·y
//   log_softmax: gx = g - exp(y) · Σ g     term g
template <typename T>
EMBER_HOST_DEVICE double softmax_backward_term(T g, T y, bool log) {
  return log ? static_cast<double>(g) : static_cast<double>(g) * static_cast<double>(y);
}
template <typename T>
EMBER_HOST_DEVICE T softmax_backward_value(T g, T y, double dot, bool log) {
  return log ? g - kernels::m_exp(y) * static_cast<T>(dot) : y * (g - static_cast<T>(dot));
}

// Whether row target t is a class the loss counts (ignore_index and targets outside [0, C) are not; the
// latter are errors the backend reports).
EMBER_HOST_DEVICE bool xent_target_valid(int64_t t, int64_t C, int64_t ignore_index) {
  return t != ignore_index && t >= 0 && t < C;
}
// Cross entropy of one row with target t and label smoothing ε (target distribution (1-ε)·onehot + ε/C):
//   loss = lse - (1-ε)·x_t - ε/C · Σ x_j = log(s) - (1-ε)·(x_t - m) - ε/C · Σ (x_j - m)
// in double from the row's m, s and (for ε > 0) Σ (x_j - m): no cancellation of two rounded lse-sized
// numbers. xent_smooth_term is the term of that last sum.
template <typename T>
EMBER_HOST_DEVICE double xent_smooth_term(T x, T max) {
  return static_cast<double>(x) - static_cast<double>(max);
}
template <typename T>
EMBER_HOST_DEVICE T xent_loss(T x_target, T max, double sum, double smooth_sum, double eps, int64_t C) {
  double loss = ::log(sum) - (1.0 - eps) * (static_cast<double>(x_target) - static_cast<double>(max));
  if (eps != 0) loss -= eps / static_cast<double>(C) * smooth_sum;
  return static_cast<T>(loss);
}
// Backward: gx_j = g·(softmax_j - ε/C) - g·(1-ε)·[j == t]. The softmax is recomputed with the forward's
// rounded lse as the shift: term_j = softmax_term(x_j, lse) and the row's own sum s' = Σ term_j (≈ 1), so
// term_j/s' is the softmax whatever lse's rounding (shift invariance), where exp(x_j - lse) alone would be
// off by lse's error.
template <typename T>
EMBER_HOST_DEVICE T xent_grad(T term, double inv_sum, T g, T smooth, T hit, bool is_target) {
  T v = g * (softmax_value(term, inv_sum) - smooth);
  if (is_target) v -= g * hit;
  return v;
}

// --- batch norm, layer norm ------------------------------------------------------------------------------
// Statistics in double, two passes: mean = Σx / n, then var = Σ (x - mean)² / n (biased; the running
// variance takes the unbiased Σ/(n-1)).
template <typename T>
EMBER_HOST_DEVICE double norm_sq_dev(T x, double mean) {
  const double d = static_cast<double>(x) - mean;
  return d * d;
}
EMBER_HOST_DEVICE double norm_invstd(double var, double eps) { return 1.0 / ::sqrt(var + eps); }
// running = (1 - momentum)·running + momentum·batch
template <typename T>
EMBER_HOST_DEVICE T norm_running_update(T running, double momentum, double batch) {
  return static_cast<T>((1 - momentum) * static_cast<double>(running) + momentum * batch);
}
// x̂ = (x - mean)·invstd, in double
template <typename T>
EMBER_HOST_DEVICE double norm_xhat(T x, double mean, double invstd) {
  return (static_cast<double>(x) - mean) * invstd;
}
// Batch norm's output per channel is one FMA-able y = x·scale + shift with scale = invstd·w,
// shift = b - mean·invstd·w (w = 1, b = 0 without affine parameters).
template <typename T>
struct NormAffine {
  T scale, shift;
};
template <typename T>
EMBER_HOST_DEVICE NormAffine<T> batch_norm_affine(double mean, double invstd, double w, double b) {
  return {static_cast<T>(invstd * w), static_cast<T>(b - mean * invstd * w)};
}
template <typename T>
EMBER_HOST_DEVICE T batch_norm_value(T x, NormAffine<T> a) {
  return x * a.scale + a.shift;
}
// Layer norm's output: x̂ (rounded to T) · w + b, per element (w, b per column).
template <typename T>
EMBER_HOST_DEVICE T layer_norm_value(T x, double mean, double invstd, T w, T b) {
  return static_cast<T>(norm_xhat(x, mean, invstd)) * w + b;
}
// Layer norm backward: the upstream gradient times the element's weight (in T, as PyTorch), then summed in
// double.
template <typename T>
EMBER_HOST_DEVICE double layer_norm_weighted_grad(T g, T w) {
  return static_cast<double>(g * w);
}
// Gradient of the input through normalisation with the statistics of the same values (training batch
// norm, layer norm), from Σg and Σg·x̂ over the n normalised values (g already times the weight for layer
// norm; k = invstd·w for batch norm, invstd for layer norm):
//   gx = k·(g - Σg/n - x̂·Σ(g·x̂)/n)
// Eval-mode batch norm (fixed statistics): gx = k·g.
struct NormGrad {
  double k, mean_g, mean_gxhat;
};
EMBER_HOST_DEVICE NormGrad batch_norm_grad(double invstd, double w, double sum_g, double sum_gxhat, int64_t count,
                                           bool training) {
  const double n = static_cast<double>(count);
  return {invstd * w, training ? sum_g / n : 0.0, training ? sum_gxhat / n : 0.0};
}
EMBER_HOST_DEVICE NormGrad layer_norm_grad(double invstd, double sum_gw, double sum_gw_xhat, int64_t D) {
  const double n = static_cast<double>(D);
  return {invstd, sum_gw / n, sum_gw_xhat / n};
}
EMBER_HOST_DEVICE double norm_grad_input(const NormGrad& c, double g, double xhat) {
  return c.k * (g - c.mean_g - xhat * c.mean_gxhat);
}
// RMS norm: layer norm without the centring. invrms = 1/sqrt(Σx²/D + eps) (norm_invstd of the mean square),
// x̂ = x·invrms (norm_xhat with mean 0), y = x̂ (rounded to T)·w. Its input gradient with gw = g·w is
//   gx = invrms·(gw - x̂·Σ(gw·x̂)/D)
// (norm_grad_input without the Σg term: the mean is not subtracted).
template <typename T>
EMBER_HOST_DEVICE T rms_norm_value(T x, double invrms, T w) {
  return static_cast<T>(norm_xhat(x, 0.0, invrms)) * w;
}
EMBER_HOST_DEVICE NormGrad rms_norm_grad(double invrms, double sum_gw_xhat, int64_t D) {
  return {invrms, 0.0, sum_gw_xhat / static_cast<double>(D)};
}

// --- row bodies: one row of softmax, cross entropy, layer norm, for both backends -----------------------------
// `row` says how the row's elements are shared out and how partial results combine:
//   row.each(n, f)                f(j) for this worker's j in [0, n)
//   row.reduce(n, init, f, op)    op over init and f(j) for every j of the row (every worker gets the result)
// The CPU runs a row on one thread with SerialRow (every j in order), CUDA on a kBlock-thread block with
// BlockRow (backends/cuda/loops.cuh: strided j, then block_reduce's fixed tree). So the CPU tests run the
// GPU's row kernels; only the order of summation differs. The bodies copy what they read in the loops into
// const locals: a store to the row may not then alias them (the loops keep them in registers).
struct SerialRow {
  template <typename F>
  EMBER_HOST_DEVICE void each(int64_t n, F&& f) const {
    for (int64_t j = 0; j < n; ++j) f(j);
  }
  template <typename A, typename F, typename Op>
  EMBER_HOST_DEVICE A reduce(int64_t n, A init, F&& f, Op op) const {
    A acc = init;
    for (int64_t j = 0; j < n; ++j) acc = op(acc, f(j));
    return acc;
  }
};

template <typename T> EMBER_HOST_DEVICE T row_max_identity() { return -std::numeric_limits<T>::infinity(); }

// softmax / log_softmax of x[0..D) into y.
template <typename T, typename Row>
EMBER_HOST_DEVICE void softmax_row(const Row& row, const T* x, T* y, int64_t D, bool log) {
  const T m = row.reduce(D, row_max_identity<T>(), [=](int64_t j) { return x[j]; }, MaxOp{});
  if (log) {
    const double s = row.reduce(D, 0.0, [=](int64_t j) { return static_cast<double>(softmax_term(x[j], m)); }, SumOp{});
    const T log_sum = softmax_log_sum<T>(s);
    row.each(D, [=](int64_t j) { y[j] = log_softmax_value(x[j], m, log_sum); });
  } else {  // the terms go to y, then are scaled by 1/s
    const double s = row.reduce(D, 0.0, [=](int64_t j) { return static_cast<double>(y[j] = softmax_term(x[j], m)); },
                                SumOp{});
    const double inv = 1.0 / s;
    row.each(D, [=](int64_t j) { y[j] = softmax_value(y[j], inv); });
  }
}

// The gradient of one row of softmax / log_softmax from its output y and upstream gradient g.
template <typename T, typename Row>
EMBER_HOST_DEVICE void softmax_backward_row(const Row& row, const T* g, const T* y, T* gx, int64_t D, bool log) {
  // log: Σg; softmax: Σg·y
  const double dot = row.reduce(D, 0.0, [=](int64_t j) { return softmax_backward_term(g[j], y[j], log); }, SumOp{});
  row.each(D, [=](int64_t j) { gx[j] = softmax_backward_value(g[j], y[j], dot, log); });
}

// Cross entropy of one row x[0..C) with target t: its loss and log-sum-exp (for the backward). Returns
// false when t is neither a class nor ignore_index (the backend reports it; the loss is then 0).
template <typename T, typename Row>
EMBER_HOST_DEVICE bool xent_row(const Row& row, const T* x, int64_t t, int64_t C, int64_t ignore_index, double eps,
                                T& loss, T& lse) {
  const T m = row.reduce(C, row_max_identity<T>(), [=](int64_t j) { return x[j]; }, MaxOp{});
  const bool valid = xent_target_valid(t, C, ignore_index), smoothing = valid && eps != 0;
  // Σ exp(x - m); Σ (x - m) for label smoothing
  const SumPair s = row.reduce(C, SumPair{0, 0}, [=](int64_t j) {
    return SumPair{static_cast<double>(softmax_term(x[j], m)), smoothing ? xent_smooth_term(x[j], m) : 0.0};
  }, SumOp{});
  lse = logsumexp(m, s.a);
  loss = valid ? xent_loss(x[t], m, s.a, s.b, eps, C) : T(0);
  return valid || t == ignore_index;
}

// The gradient of one row's cross entropy (g: the row's upstream gradient, l: its forward lse): zero where the
// target is ignored or invalid, else xent_grad of each element.
template <typename T, typename Row>
EMBER_HOST_DEVICE void xent_backward_row(const Row& row, const T* x, int64_t t, int64_t C, int64_t ignore_index, T g,
                                         T l, T smooth, T hit, T* gx) {
  if (!xent_target_valid(t, C, ignore_index)) {  // uniform across a CUDA block: nobody skips a reduce
    row.each(C, [=](int64_t j) { gx[j] = T(0); });
    return;
  }
  // the terms go to gx, then become the gradient
  const double s = row.reduce(C, 0.0, [=](int64_t j) { return static_cast<double>(gx[j] = softmax_term(x[j], l)); },
                              SumOp{});
  const double inv = 1.0 / s;
  row.each(C, [=](int64_t j) { gx[j] = xent_grad(gx[j], inv, g, smooth, hit, j == t); });
}

// Layer norm of one row x[0..D) into y (w, b: [D] or null), with its statistics into mean and invstd.
template <typename T, typename Row>
EMBER_HOST_DEVICE void layer_norm_row(const Row& row, const T* x, const T* w, const T* b, T* y, int64_t D, double eps,
                                      double& mean, double& invstd) {
  const double m = row.reduce(D, 0.0, [=](int64_t d) { return static_cast<double>(x[d]); }, SumOp{}) / D;
  const double sq = row.reduce(D, 0.0, [=](int64_t d) { return norm_sq_dev(x[d], m); }, SumOp{});
  const double is = norm_invstd(sq / D, eps);
  row.each(D, [=](int64_t d) {
    y[d] = layer_norm_value(x[d], m, is, w != nullptr ? w[d] : T(1), b != nullptr ? b[d] : T(0));
  });
  mean = m;
  invstd = is;
}

// The input gradient of one layer-norm row from the forward's statistics (mean, invstd).
template <typename T, typename Row>
EMBER_HOST_DEVICE void layer_norm_backward_row(const Row& row, const T* g, const T* x, const T* w, T* gx, int64_t D,
                                               double mean, double invstd) {
  const auto weighted = [=](int64_t d) { return layer_norm_weighted_grad(g[d], w != nullptr ? w[d] : T(1)); };
  const SumPair s = row.reduce(D, SumPair{0, 0}, [=](int64_t d) {  // Σg·w, Σg·w·x̂
    const double gwd = weighted(d);
    return SumPair{gwd, gwd * norm_xhat(x[d], mean, invstd)};
  }, SumOp{});
  const NormGrad coef = layer_norm_grad(invstd, s.a, s.b, D);
  row.each(D, [=](int64_t d) { gx[d] = static_cast<T>(norm_grad_input(coef, weighted(d), norm_xhat(x[d], mean, invstd))); });
}

// RMS norm of one row x[0..D) into y (w: [D] or null), with its 1/rms into invrms.
template <typename T, typename Row>
EMBER_HOST_DEVICE void rms_norm_row(const Row& row, const T* x, const T* w, T* y, int64_t D, double eps,
                                    double& invrms) {
  const double sq = row.reduce(D, 0.0, [=](int64_t d) { return norm_sq_dev(x[d], 0.0); }, SumOp{});
  const double r = norm_invstd(sq / D, eps);
  row.each(D, [=](int64_t d) { y[d] = rms_norm_value(x[d], r, w != nullptr ? w[d] : T(1)); });
  invrms = r;
}

// The input gradient of one RMS-norm row from the forward's invrms.
template <typename T, typename Row>
EMBER_HOST_DEVICE void rms_norm_backward_row(const Row& row, const T* g, const T* x, const T* w, T* gx, int64_t D,
                                             double invrms) {
  const auto weighted = [=](int64_t d) { return layer_norm_weighted_grad(g[d], w != nullptr ? w[d] : T(1)); };
  const double s =  // Σg·w·x̂
      row.reduce(D, 0.0, [=](int64_t d) { return weighted(d) * norm_xhat(x[d], 0.0, invrms); }, SumOp{});
  const NormGrad coef = rms_norm_grad(invrms, s, D);
  row.each(D, [=](int64_t d) { gx[d] = static_cast<T>(norm_grad_input(coef, weighted(d), norm_xhat(x[d], 0.0, invrms))); });
}

// --- pooling ---------------------------------------------------------------------------------------------
struct PoolWindow {
  int64_t h0, h1, w0, w1;  // clipped to the input: rows [h0, h1), columns [w0, w1)
  int64_t divisor;         // avg: the count PyTorch divides by (count_include_pad or the clipped window)
};

// Adaptive pooling (PyTorch's rule): output i of `out` along a dim of length `in` pools the inputs
// [⌊i·in/out⌋, ⌈(i+1)·in/out⌉). Windows may overlap by one and differ in size when out does not divide in.
EMBER_HOST_DEVICE int64_t adaptive_start(int64_t i, int64_t in, int64_t out) { return (i * in) / out; }
EMBER_HOST_DEVICE int64_t adaptive_end(int64_t i, int64_t in, int64_t out) { return ((i + 1) * in + out - 1) / out; }
// The outputs whose adaptive window contains input i: o in [lo, hi) = [⌊i·out/in⌋, ⌈(i+1)·out/in⌉), the same
// rule with in and out swapped (start(o) <= i  ⟺  o < ⌈(i+1)·out/in⌉; end(o) > i  ⟺  o >= ⌊i·out/in⌋).
EMBER_HOST_DEVICE void adaptive_outputs_covering(int64_t i, int64_t in, int64_t out, int64_t& lo, int64_t& hi) {
  lo = adaptive_start(i, out, in);
  hi = adaptive_end(i, out, in);
}

// The input window of output (oh, ow) of an OH×OW output. Adaptive: nn_math::adaptive_start/end, divided by
// its size. Otherwise the padded window stops at H + pad (PyTorch's avg_pool2d divisor), then is clipped to
// [0, H) × [0, W).
EMBER_HOST_DEVICE PoolWindow pool_window(const Pool2dParams& p, int64_t H, int64_t W, int64_t OH, int64_t OW,
                                         int64_t oh, int64_t ow) {
  if (p.adaptive) {
    const int64_t h0 = adaptive_start(oh, H, OH), h1 = adaptive_end(oh, H, OH);
    const int64_t w0 = adaptive_start(ow, W, OW), w1 = adaptive_end(ow, W, OW);
    return {h0, h1, w0, w1, (h1 - h0) * (w1 - w0)};
  }
  int64_t h0 = oh * p.stride[0] - p.padding[0], w0 = ow * p.stride[1] - p.padding[1];
  int64_t h1 = h0 + p.kernel[0] < H + p.padding[0] ? h0 + p.kernel[0] : H + p.padding[0];
  int64_t w1 = w0 + p.kernel[1] < W + p.padding[1] ? w0 + p.kernel[1] : W + p.padding[1];
  const int64_t padded = (h1 - h0) * (w1 - w0);
  h0 = h0 < 0 ? 0 : h0;
  w0 = w0 < 0 ? 0 : w0;
  h1 = h1 < H ? h1 : H;
  w1 = w1 < W ? w1 : W;
  return {h0, h1, w0, w1, p.count_include_pad ? padded : (h1 - h0) * (w1 - w0)};
}

// The forward of one output of a plane xp (rows of W elements) over its window: the max (its first maximum
// in row-major order, a NaN winning: value into `best`, position h·W + w into `at`) or the average (the sum
// over the window divided by win.divisor). The CPU's general path and CUDA's kernel compute every window
// with these.
template <typename T>
EMBER_HOST_DEVICE void max_pool_window(const T* xp, int64_t W, const PoolWindow& win, T& best, int64_t& at) {
  at = win.h0 * W + win.w0;
  best = xp[at];
  for (int64_t h = win.h0; h < win.h1; ++h)
    for (int64_t w = win.w0; w < win.w1; ++w) {
      const T v = xp[h * W + w];
      if (v > best || v != v) best = v, at = h * W + w;
    }
}
template <typename T>
EMBER_HOST_DEVICE T avg_pool_window(const T* xp, int64_t W, const PoolWindow& win) {
  T acc = 0;
  for (int64_t h = win.h0; h < win.h1; ++h)
    for (int64_t w = win.w0; w < win.w1; ++w) acc += xp[h * W + w];
  return acc / static_cast<T>(win.divisor);
}

// The outputs along one dim whose window [o·stride - pad, o·stride - pad + kernel) contains input i:
// o in [lo, hi) (empty when hi <= lo). For the gradient of pooling, gathered per input element.
EMBER_HOST_DEVICE void pool_outputs_covering(int64_t i, int64_t kernel, int64_t stride, int64_t pad, int64_t out,
                                             int64_t& lo, int64_t& hi) {
  const int64_t first = i + pad - kernel + 1;  // smallest o·stride whose window reaches i
  lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  hi = (i + pad) / stride + 1;  // i + pad >= 0
  hi = hi < out ? hi : out;
}

}  // namespace ember::nn_math
