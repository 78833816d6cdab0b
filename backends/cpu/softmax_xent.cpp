// softmax / log_softmax over rows, and cross entropy with class indices, one row per task. The formulas
// are backends/nn_math.h's (shared with backends/cuda/softmax_xent.cu); sums accumulate in double.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>

#include "backends/checks.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/nn_math.h"
#include "backends/scalar_math.h"
#include "base/parallel.h"

namespace ember::cpu {
namespace {

int64_t row_grain(int64_t D) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, D)); }

// The row's max (NaN wins).
template <typename T>
T row_max(const T* x, int64_t D) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < D; ++j) m = kernels::m_max(m, x[j]);
  return m;
}

// Σ softmax_term(x_j, shift) in double.
template <typename T>
double row_sum_exp(const T* x, int64_t D, T shift) {
  double s = 0;
  for (int64_t j = 0; j < D; ++j) s += nn_math::softmax_term(x[j], shift);
  return s;
}

template <typename T>
void softmax_rows(const checks::RowDims& rows, const TensorArg& x, const TensorArg& y, bool log) {
  const int64_t D = rows.D, M = rows.M;
  parallel_for(M, row_grain(D), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* xr = x.ptr<T>() + r * D;
      T* yr = y.ptr<T>() + r * D;
      const T m = row_max(xr, D);
      if (log) {
        const T log_sum = nn_math::softmax_log_sum<T>(row_sum_exp(xr, D, m));
        for (int64_t j = 0; j < D; ++j) yr[j] = nn_math::log_softmax_value(xr[j], m, log_sum);
      } else {  // the terms go to y, then are scaled by 1/s
        double s = 0;
        for (int64_t j = 0; j < D; ++j) s += (yr[j] = nn_math::softmax_term(xr[j], m));
        const double inv = 1.0 / s;
        for (int64_t j = 0; j < D; ++j) yr[j] = nn_math::softmax_value(yr[j], inv);
      }
    }
  });
}

template <typename T>
void softmax_rows_backward(const checks::RowDims& rows, const TensorArg& gy, const TensorArg& y, const TensorArg& gx,
                           bool log) {
  const int64_t D = rows.D, M = rows.M;
  parallel_for(M, row_grain(D), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* g = gy.ptr<T>() + r * D;
      const T* yr = y.ptr<T>() + r * D;
      T* out = gx.ptr<T>() + r * D;
      double dot = 0;
      for (int64_t j = 0; j < D; ++j) dot += nn_math::softmax_backward_term(g[j], yr[j], log);
      for (int64_t j = 0; j < D; ++j) out[j] = nn_math::softmax_backward_value(g[j], yr[j], dot, log);
    }
  });
}

struct BadTarget {
  std::atomic<bool> found{false};
  std::atomic<int64_t> value{0}, row{0};
  void report(int64_t v, int64_t r) {
    if (!found.exchange(true)) {
      value = v;
      row = r;
    }
  }
  void check(int64_t C, int64_t ignore_index) const {
    if (found) checks::throw_bad_target(value.load(), row.load(), C, ignore_index >= 0 && ignore_index < C);
  }
};

template <typename T>
void xent_forward(const checks::XentDims& d, const TensorArg& logits, const TensorArg& target, const TensorArg& loss,
                  const TensorArg& lse, int64_t ignore_index, double eps) {
  const int64_t N = d.N, C = d.C;
  BadTarget bad;
  parallel_for(N, row_grain(C), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const T* x = logits.ptr<T>() + n * C;
      const int64_t t = target.ptr<int64_t>()[n];
      const T m = row_max(x, C);
      const bool valid = nn_math::xent_target_valid(t, C, ignore_index);
      double s = 0, smooth = 0;  // Σ exp(x - m); Σ (x - m) for label smoothing
      for (int64_t j = 0; j < C; ++j) {
        s += nn_math::softmax_term(x[j], m);
        if (valid && eps != 0) smooth += nn_math::xent_smooth_term(x[j], m);
      }
      lse.ptr<T>()[n] = nn_math::logsumexp(m, s);
      if (!valid && t != ignore_index) bad.report(t, n);
      loss.ptr<T>()[n] = valid ? nn_math::xent_loss(x[t], m, s, smooth, eps, C) : T(0);
    }
  });
  bad.check(C, ignore_index);
}

template <typename T>
void xent_backward(const checks::XentDims& d, const TensorArg& logits, const TensorArg& target, const TensorArg& lse,
                   const TensorArg& grad_loss, const TensorArg& grad_logits, int64_t ignore_index, double eps) {
  const int64_t N = d.N, C = d.C;
  const T smooth = static_cast<T>(eps / static_cast<double>(C)), hit = static_cast<T>(1.0 - eps);
  parallel_for(N, row_grain(C), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const T* x = logits.ptr<T>() + n * C;
      T* gx = grad_logits.ptr<T>() + n * C;
      const int64_t t = target.ptr<int64_t>()[n];
      if (!nn_math::xent_target_valid(t, C, ignore_index)) {
        std::fill(gx, gx + C, T(0));
        continue;
      }
      const T g = grad_loss.ptr<T>()[grad_loss.ndim == 0 ? 0 : n], l = lse.ptr<T>()[n];
      double s = 0;  // the terms go to gx, then become the gradient
      for (int64_t j = 0; j < C; ++j) s += (gx[j] = nn_math::softmax_term(x[j], l));
      const double inv = 1.0 / s;
      for (int64_t j = 0; j < C; ++j) gx[j] = nn_math::xent_grad(gx[j], inv, g, smooth, hit, j == t);
    }
  });
}

}  // namespace

void CpuBackend::softmax_forward(const TensorArg& x, const TensorArg& y, bool log) {
  const checks::RowDims d = checks::check_softmax_forward(x, y);
  dispatch_floating(x.dtype, "softmax", [&](auto tag) { softmax_rows<decltype(tag)>(d, x, y, log); });
}

void CpuBackend::softmax_backward(const TensorArg& grad_y, const TensorArg& y, const TensorArg& grad_x, bool log) {
  const checks::RowDims d = checks::check_softmax_backward(grad_y, y, grad_x);
  dispatch_floating(y.dtype, "softmax_backward",
                    [&](auto tag) { softmax_rows_backward<decltype(tag)>(d, grad_y, y, grad_x, log); });
}

void CpuBackend::cross_entropy_forward(const TensorArg& logits, const TensorArg& target, const TensorArg& loss,
                                       const TensorArg& lse, int64_t ignore_index, double label_smoothing) {
  const checks::XentDims d = checks::check_cross_entropy_forward(logits, target, loss, lse, label_smoothing);
  dispatch_floating(logits.dtype, "cross_entropy", [&](auto tag) {
    xent_forward<decltype(tag)>(d, logits, target, loss, lse, ignore_index, label_smoothing);
  });
}

void CpuBackend::cross_entropy_backward(const TensorArg& logits, const TensorArg& target, const TensorArg& lse,
                                        const TensorArg& grad_loss, const TensorArg& grad_logits, int64_t ignore_index,
                                        double label_smoothing) {
  const checks::XentDims d =
      checks::check_cross_entropy_backward(logits, target, lse, grad_loss, grad_logits, label_smoothing);
  dispatch_floating(logits.dtype, "cross_entropy_backward", [&](auto tag) {
    xent_backward<decltype(tag)>(d, logits, target, lse, grad_loss, grad_logits, ignore_index, label_smoothing);
  });
}

}  // namespace ember::cpu
