// softmax / log_softmax over the rows of [M, D] and cross entropy with class indices, as
// backends/cpu/softmax_xent.cpp with the same formulas (backends/nn_math.h): one kBlock-thread block per
// row, the row's max and sums through block_reduce (fixed tree order: deterministic), sums of exponentials
// accumulated in double.
// A target outside [0, C) other than ignore_index is reported through ctx.error (the backend raises it at
// its next call) and its row's loss is 0, where the CPU throws at once.
#include "backends/checks.h"
#include "backends/cuda/loops.cuh"
#include "backends/nn_math.h"
#include "backends/scalar_math.h"

namespace ember::cuda {
namespace {

// The row's max, computed by the whole block (every thread gets it).
template <typename T>
__device__ T block_max(const T* x, int64_t D) {
  T m = T(-INFINITY);
  for (int64_t j = threadIdx.x; j < D; j += kBlock) m = kernels::m_max(m, x[j]);
  return block_reduce(m, nn_math::MaxOp{});
}

// Σ softmax_term(x_j, shift) in double, computed by the whole block (every thread gets it).
template <typename T>
__device__ double block_sum_exp(const T* x, int64_t D, T shift) {
  double s = 0;
  for (int64_t j = threadIdx.x; j < D; j += kBlock) s += nn_math::softmax_term(x[j], shift);
  return block_reduce(s, nn_math::SumOp{});
}

template <typename T>
__global__ void __launch_bounds__(kBlock) softmax_kernel(const T* x, T* y, int64_t M, int64_t D, bool log) {
  for (int64_t r = blockIdx.x; r < M; r += gridDim.x) {
    const T* xr = x + r * D;
    T* yr = y + r * D;
    const T m = block_max(xr, D);
    if (log) {
      const T log_sum = nn_math::softmax_log_sum<T>(block_sum_exp(xr, D, m));
      for (int64_t j = threadIdx.x; j < D; j += kBlock) yr[j] = nn_math::log_softmax_value(xr[j], m, log_sum);
    } else {  // each thread writes its terms to y, then scales the same elements by 1/s
      double s = 0;
      for (int64_t j = threadIdx.x; j < D; j += kBlock) s += (yr[j] = nn_math::softmax_term(xr[j], m));
      const double inv = 1.0 / block_reduce(s, nn_math::SumOp{});
      for (int64_t j = threadIdx.x; j < D; j += kBlock) yr[j] = nn_math::softmax_value(yr[j], inv);
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlock)
    softmax_backward_kernel(const T* gy, const T* y, T* gx, int64_t M, int64_t D, bool log) {
  for (int64_t r = blockIdx.x; r < M; r += gridDim.x) {
    const T *g = gy + r * D, *yr = y + r * D;
    T* out = gx + r * D;
    double dot = 0;  // log: Σg; softmax: Σg·y
    for (int64_t j = threadIdx.x; j < D; j += kBlock) dot += nn_math::softmax_backward_term(g[j], yr[j], log);
    dot = block_reduce(dot, nn_math::SumOp{});
    for (int64_t j = threadIdx.x; j < D; j += kBlock) out[j] = nn_math::softmax_backward_value(g[j], yr[j], dot, log);
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlock)
    xent_forward_kernel(const T* logits, const int64_t* target, T* loss, T* lse, int64_t N, int64_t C,
                        int64_t ignore_index, double eps, KernelError* error) {
  for (int64_t n = blockIdx.x; n < N; n += gridDim.x) {
    const T* x = logits + n * C;
    const int64_t t = target[n];
    const T m = block_max(x, C);
    const bool valid = nn_math::xent_target_valid(t, C, ignore_index);
    nn_math::SumPair s{0, 0};  // Σ exp(x - m); Σ (x - m) for label smoothing
    for (int64_t j = threadIdx.x; j < C; j += kBlock) {
      s.a += nn_math::softmax_term(x[j], m);
      if (valid && eps != 0) s.b += nn_math::xent_smooth_term(x[j], m);
    }
    s = block_reduce(s, nn_math::SumOp{});
    if (threadIdx.x != 0) continue;
    lse[n] = nn_math::logsumexp(m, s.a);
    if (!valid && t != ignore_index)
      report_kernel_error(error, KernelErrorCode::target_index, /*dim: the sample*/ static_cast<int>(n), t, C);
    loss[n] = valid ? nn_math::xent_loss(x[t], m, s.a, s.b, eps, C) : T(0);
  }
}

// grad_logits[n, j] = g·(softmax - smooth) - g·hit at the target; 0 on ignored (or invalid) rows. One block
// per row: the row's sum of exp(x - lse), then nn_math::xent_grad per element.
template <typename T>
__global__ void __launch_bounds__(kBlock)
    xent_backward_kernel(const T* logits, const int64_t* target, const T* lse, const T* grad_loss, T* gx, int64_t N,
                         int64_t C, int64_t ignore_index, bool scalar_grad, T smooth, T hit) {
  for (int64_t n = blockIdx.x; n < N; n += gridDim.x) {
    const T* x = logits + n * C;
    T* out = gx + n * C;
    const int64_t t = target[n];
    if (!nn_math::xent_target_valid(t, C, ignore_index)) {  // uniform across the block: no thread skips a block_reduce
      for (int64_t j = threadIdx.x; j < C; j += kBlock) out[j] = T(0);
      continue;
    }
    const T g = grad_loss[scalar_grad ? 0 : n], l = lse[n];
    double s = 0;  // each thread writes its terms to gx, then turns the same elements into the gradient
    for (int64_t j = threadIdx.x; j < C; j += kBlock) s += (out[j] = nn_math::softmax_term(x[j], l));
    const double inv = 1.0 / block_reduce(s, nn_math::SumOp{});
    for (int64_t j = threadIdx.x; j < C; j += kBlock) out[j] = nn_math::xent_grad(out[j], inv, g, smooth, hit, j == t);
  }
}

}  // namespace

void CudaBackend::softmax_forward(const TensorArg& x, const TensorArg& y, bool log) {
  const checks::RowDims d = checks::check_softmax_forward(x, y);
  DeviceContext& ctx = context(x.device_index);
  dispatch_floating(x.dtype, "softmax", [&](auto tag) {
    using T = decltype(tag);
    launch_rows(ctx.stream, d.M, softmax_kernel<T>, x.ptr<T>(), y.ptr<T>(), d.M, d.D, log);
  });
}

void CudaBackend::softmax_backward(const TensorArg& grad_y, const TensorArg& y, const TensorArg& grad_x, bool log) {
  const checks::RowDims d = checks::check_softmax_backward(grad_y, y, grad_x);
  DeviceContext& ctx = context(y.device_index);
  dispatch_floating(y.dtype, "softmax_backward", [&](auto tag) {
    using T = decltype(tag);
    launch_rows(ctx.stream, d.M, softmax_backward_kernel<T>, grad_y.ptr<T>(), y.ptr<T>(), grad_x.ptr<T>(), d.M, d.D,
                log);
  });
}

void CudaBackend::cross_entropy_forward(const TensorArg& logits, const TensorArg& target, const TensorArg& loss,
                                        const TensorArg& lse, int64_t ignore_index, double label_smoothing) {
  const checks::XentDims d = checks::check_cross_entropy_forward(logits, target, loss, lse, label_smoothing);
  DeviceContext& ctx = context(logits.device_index);
  dispatch_floating(logits.dtype, "cross_entropy", [&](auto tag) {
    using T = decltype(tag);
    launch_rows(ctx.stream, d.N, xent_forward_kernel<T>, logits.ptr<T>(), target.ptr<int64_t>(), loss.ptr<T>(),
                lse.ptr<T>(), d.N, d.C, ignore_index, label_smoothing, ctx.error);
  });
}

void CudaBackend::cross_entropy_backward(const TensorArg& logits, const TensorArg& target, const TensorArg& lse,
                                         const TensorArg& grad_loss, const TensorArg& grad_logits,
                                         int64_t ignore_index, double label_smoothing) {
  const checks::XentDims d =
      checks::check_cross_entropy_backward(logits, target, lse, grad_loss, grad_logits, label_smoothing);
  DeviceContext& ctx = context(logits.device_index);
  dispatch_floating(logits.dtype, "cross_entropy_backward", [&](auto tag) {
    using T = decltype(tag);
    const T smooth = static_cast<T>(label_smoothing / static_cast<double>(d.C));
    const T hit = static_cast<T>(1.0 - label_smoothing);
    launch_rows(ctx.stream, d.N, xent_backward_kernel<T>, logits.ptr<T>(), target.ptr<int64_t>(), lse.ptr<T>(),
                grad_loss.ptr<T>(), grad_logits.ptr<T>(), d.N, d.C, ignore_index, grad_loss.ndim == 0, smooth, hit);
  });
}

}  // namespace ember::cuda
