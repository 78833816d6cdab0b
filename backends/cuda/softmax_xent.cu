// softmax / log_softmax over the rows of [M, D] and cross entropy with class indices: the row bodies of
// backends/cpu/softmax_xent.cpp (backends/nn_math.h), one kBlock-thread block per row, the row's max and
// sums through block_reduce (fixed tree order: deterministic), sums of exponentials accumulated in double.
// A target outside [0, C) other than ignore_index is reported through ctx.error (the backend raises it at
// its next call) and its row's loss is 0, where the CPU throws at once.
#include "backends/checks.h"
#include "backends/cuda/loops.cuh"
#include "backends/nn_math.h"

namespace ember::cuda {
namespace {

// One block per row, each running nn_math's row body (the CPU's) with BlockRow.
template <typename T>
__global__ void __launch_bounds__(kBlock) softmax_kernel(const T* x, T* y, int64_t M, int64_t D, bool log) {
  for (int64_t r = blockIdx.x; r < M; r += gridDim.x) nn_math::softmax_row(BlockRow{}, x + r * D, y + r * D, D, log);
}

template <typename T>
__global__ void __launch_bounds__(kBlock)
    softmax_backward_kernel(const T* gy, const T* y, T* gx, int64_t M, int64_t D, bool log) {
  for (int64_t r = blockIdx.x; r < M; r += gridDim.x)
    nn_math::softmax_backward_row(BlockRow{}, gy + r * D, y + r * D, gx + r * D, D, log);
}

template <typename T>
__global__ void __launch_bounds__(kBlock)
    xent_forward_kernel(const T* logits, const int64_t* target, T* loss, T* lse, int64_t N, int64_t C,
                        int64_t ignore_index, double eps, KernelError* error) {
  for (int64_t n = blockIdx.x; n < N; n += gridDim.x) {
    T row_loss, row_lse;
    const bool ok = nn_math::xent_row(BlockRow{}, logits + n * C, target[n], C, ignore_index, eps, row_loss, row_lse);
    if (threadIdx.x != 0) continue;
    lse[n] = row_lse;
    loss[n] = row_loss;
    if (!ok) report_kernel_error(error, KernelErrorCode::target_index, /*dim: the sample*/ static_cast<int>(n), target[n], C);
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlock)
    xent_backward_kernel(const T* logits, const int64_t* target, const T* lse, const T* grad_loss, T* gx, int64_t N,
                         int64_t C, int64_t ignore_index, bool scalar_grad, T smooth, T hit) {
  for (int64_t n = blockIdx.x; n < N; n += gridDim.x)
    nn_math::xent_backward_row(BlockRow{}, logits + n * C, target[n], C, ignore_index, grad_loss[scalar_grad ? 0 : n],
                               lse[n], smooth, hit, gx + n * C);
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
