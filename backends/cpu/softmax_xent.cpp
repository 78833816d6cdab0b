// softmax / log_softmax over rows, and cross entropy with class indices, one row per task.
#include <atomic>
#include <cmath>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/parallel.h"
#include "backends/kernels.h"

namespace ember::cpu {
namespace {

int64_t row_grain(int64_t D) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, D)); }

// max and log-sum-exp of one row
template <typename T>
T row_logsumexp(const T* x, int64_t D) {
  T m = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < D; ++j) m = kernels::m_max(m, x[j]);
  if (std::isinf(m)) return m;  // all -inf (or +inf present): lse is m
  double s = 0;
  for (int64_t j = 0; j < D; ++j) s += kernels::m_exp(x[j] - m);
  // s ≥ 1 (the maximum contributes exp(0)) or NaN: never log(0).
  // cppcheck-suppress invalidFunctionArg
  return m + static_cast<T>(std::log(s));
}

template <typename T>
void softmax_rows(const TensorArg& x, const TensorArg& y, bool log) {
  const int64_t D = x.shape[x.ndim - 1], M = D == 0 ? 0 : x.numel() / D;
  parallel_for(M, row_grain(D), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* xr = x.ptr<T>() + r * D;
      T* yr = y.ptr<T>() + r * D;
      const T lse = row_logsumexp(xr, D);
      for (int64_t j = 0; j < D; ++j) yr[j] = log ? xr[j] - lse : kernels::m_exp(xr[j] - lse);
    }
  });
}

template <typename T>
void softmax_rows_backward(const TensorArg& gy, const TensorArg& y, const TensorArg& gx, bool log) {
  const int64_t D = y.shape[y.ndim - 1], M = D == 0 ? 0 : y.numel() / D;
  parallel_for(M, row_grain(D), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* g = gy.ptr<T>() + r * D;
      const T* yr = y.ptr<T>() + r * D;
      T* out = gx.ptr<T>() + r * D;
      double dot = 0;
      if (log) {  // d log_softmax: g - softmax · Σg
        for (int64_t j = 0; j < D; ++j) dot += g[j];
        for (int64_t j = 0; j < D; ++j) out[j] = g[j] - kernels::m_exp(yr[j]) * static_cast<T>(dot);
      } else {  // d softmax: y · (g - Σ g·y)
        for (int64_t j = 0; j < D; ++j) dot += static_cast<double>(g[j]) * yr[j];
        for (int64_t j = 0; j < D; ++j) out[j] = yr[j] * (g[j] - static_cast<T>(dot));
      }
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
    EMBER_CHECK(!found, "cross_entropy: target ", value.load(), " (sample ", row.load(), ") is not a class index in [0, ",
                C, ")", ignore_index < 0 || ignore_index >= C ? "" : " or the ignore_index",
                "; check the labels and the number of model outputs");
  }
};

template <typename T>
void xent_forward(const TensorArg& logits, const TensorArg& target, const TensorArg& loss, const TensorArg& lse,
                  int64_t ignore_index, double eps) {
  const int64_t N = logits.shape[0], C = logits.shape[1];
  BadTarget bad;
  parallel_for(N, row_grain(C), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const T* x = logits.ptr<T>() + n * C;
      const int64_t t = target.ptr<int64_t>()[n];
      const T l = row_logsumexp(x, C);
      lse.ptr<T>()[n] = l;
      if (t == ignore_index) {
        loss.ptr<T>()[n] = 0;
        continue;
      }
      if (t < 0 || t >= C) {
        bad.report(t, n);
        loss.ptr<T>()[n] = 0;
        continue;
      }
      double picked = (1.0 - eps) * x[t];
      if (eps != 0) {
        double s = 0;
        for (int64_t j = 0; j < C; ++j) s += x[j];
        picked += eps / static_cast<double>(C) * s;
      }
      loss.ptr<T>()[n] = static_cast<T>(l - picked);
    }
  });
  bad.check(C, ignore_index);
}

template <typename T>
void xent_backward(const TensorArg& logits, const TensorArg& target, const TensorArg& lse, const TensorArg& grad_loss,
                   const TensorArg& grad_logits, int64_t ignore_index, double eps) {
  const int64_t N = logits.shape[0], C = logits.shape[1];
  const T smooth = static_cast<T>(eps / static_cast<double>(C)), hit = static_cast<T>(1.0 - eps);
  parallel_for(N, row_grain(C), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const T* x = logits.ptr<T>() + n * C;
      T* gx = grad_logits.ptr<T>() + n * C;
      const int64_t t = target.ptr<int64_t>()[n];
      if (t == ignore_index || t < 0 || t >= C) {
        std::fill(gx, gx + C, T(0));
        continue;
      }
      const T g = grad_loss.ptr<T>()[grad_loss.ndim == 0 ? 0 : n], l = lse.ptr<T>()[n];
      for (int64_t j = 0; j < C; ++j) gx[j] = g * (kernels::m_exp(x[j] - l) - smooth);
      gx[t] -= g * hit;
    }
  });
}

}  // namespace

void CpuBackend::softmax_forward(const TensorArg& x, const TensorArg& y, bool log) {
  dispatch_floating(x.dtype, "softmax", [&](auto tag) { softmax_rows<decltype(tag)>(x, y, log); });
}

void CpuBackend::softmax_backward(const TensorArg& grad_y, const TensorArg& y, const TensorArg& grad_x, bool log) {
  dispatch_floating(y.dtype, "softmax_backward",
                    [&](auto tag) { softmax_rows_backward<decltype(tag)>(grad_y, y, grad_x, log); });
}

void CpuBackend::cross_entropy_forward(const TensorArg& logits, const TensorArg& target, const TensorArg& loss,
                                       const TensorArg& lse, int64_t ignore_index, double label_smoothing) {
  dispatch_floating(logits.dtype, "cross_entropy", [&](auto tag) {
    xent_forward<decltype(tag)>(logits, target, loss, lse, ignore_index, label_smoothing);
  });
}

void CpuBackend::cross_entropy_backward(const TensorArg& logits, const TensorArg& target, const TensorArg& lse,
                                        const TensorArg& grad_loss, const TensorArg& grad_logits, int64_t ignore_index,
                                        double label_smoothing) {
  dispatch_floating(logits.dtype, "cross_entropy_backward", [&](auto tag) {
    xent_backward<decltype(tag)>(logits, target, lse, grad_loss, grad_logits, ignore_index, label_smoothing);
  });
}

}  // namespace ember::cpu
