// softmax / log_softmax over rows, and cross entropy with class indices, one row per task: the row bodies
// of backends/nn_math.h, which backends/cuda/softmax_xent.cu runs on a thread block; sums accumulate in
// double.
#include <algorithm>
#include <atomic>

#include "backends/checks.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/nn_math.h"
#include "base/parallel.h"

namespace ember::cpu {
namespace {

int64_t row_grain(int64_t D) { return std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, D)); }

template <typename T>
void softmax_rows(const checks::RowDims& rows, const TensorArg& x, const TensorArg& y, bool log) {
  const int64_t D = rows.D;
  parallel_for(rows.M, row_grain(D), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) nn_math::softmax_row(nn_math::SerialRow{}, x.ptr<T>() + r * D, y.ptr<T>() + r * D, D, log);
  });
}

template <typename T>
void softmax_rows_backward(const checks::RowDims& rows, const TensorArg& gy, const TensorArg& y, const TensorArg& gx,
                           bool log) {
  const int64_t D = rows.D;
  parallel_for(rows.M, row_grain(D), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r)
      nn_math::softmax_backward_row(nn_math::SerialRow{}, gy.ptr<T>() + r * D, y.ptr<T>() + r * D, gx.ptr<T>() + r * D,
                                    D, log);
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
  const int64_t C = d.C;
  BadTarget bad;
  parallel_for(d.N, row_grain(C), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const int64_t t = target.ptr<int64_t>()[n];
      if (!nn_math::xent_row(nn_math::SerialRow{}, logits.ptr<T>() + n * C, t, C, ignore_index, eps, loss.ptr<T>()[n],
                             lse.ptr<T>()[n]))
        bad.report(t, n);
    }
  });
  bad.check(C, ignore_index);
}

template <typename T>
void xent_backward(const checks::XentDims& d, const TensorArg& logits, const TensorArg& target, const TensorArg& lse,
                   const TensorArg& grad_loss, const TensorArg& grad_logits, int64_t ignore_index, double eps) {
  const int64_t C = d.C;
  const T smooth = static_cast<T>(eps / static_cast<double>(C)), hit = static_cast<T>(1.0 - eps);
  parallel_for(d.N, row_grain(C), [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n)
      nn_math::xent_backward_row(nn_math::SerialRow{}, logits.ptr<T>() + n * C, target.ptr<int64_t>()[n], C,
                                 ignore_index, grad_loss.ptr<T>()[grad_loss.ndim == 0 ? 0 : n], lse.ptr<T>()[n], smooth,
                                 hit, grad_logits.ptr<T>() + n * C);
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
