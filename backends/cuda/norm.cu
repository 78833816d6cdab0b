// batch_norm over x [N, C, S] (one kBlock-thread block per channel), layer_norm and rms_norm over x [M, D]
// (one block per row; the weight/bias gradients one block per column), as backends/cpu/norm.cpp: the same
// formulas in the same precisions (statistics accumulated in double, two passes: mean, then squared
// deviations), the formulas backends/nn_math.h's, the sums through block_reduce (a fixed tree order:
// deterministic, no atomics).
#include "backends/checks.h"
#include "backends/cuda/loops.cuh"
#include "backends/nn_math.h"

namespace ember::cuda {
namespace {

using nn_math::SumOp;
using nn_math::SumPair;

template <typename T>
struct BatchNormArgs {
  const T *x, *gy, *w, *b;  // gy: backward only; w, b may be null
  T *running_mean, *running_var, *y, *save_mean, *save_invstd;  // forward (running stats may be null)
  T *gx, *gw, *gb;                                              // backward (each may be null)
  int64_t N, C, S;
  bool training;
  double momentum, eps;
  // Element i of channel c (i in [0, N·S)).
  __device__ int64_t at(int64_t c, int64_t i) const {
    const int64_t n = i / S;
    return (n * C + c) * S + (i - n * S);
  }
};

template <typename T>
__global__ void __launch_bounds__(kBlock) batch_norm_forward_kernel(BatchNormArgs<T> a) {
  const int64_t count = a.N * a.S;
  for (int64_t c = blockIdx.x; c < a.C; c += gridDim.x) {
    double mean, invstd;
    if (a.training) {
      double sum = 0, sq = 0;
      for (int64_t i = threadIdx.x; i < count; i += kBlock) sum += a.x[a.at(c, i)];
      mean = block_reduce(sum, SumOp{}) / count;
      for (int64_t i = threadIdx.x; i < count; i += kBlock) sq += nn_math::norm_sq_dev(a.x[a.at(c, i)], mean);
      sq = block_reduce(sq, SumOp{});
      invstd = nn_math::norm_invstd(sq / count, a.eps);
      if (threadIdx.x == 0 && a.running_mean != nullptr)
        a.running_mean[c] = nn_math::norm_running_update(a.running_mean[c], a.momentum, mean);
      if (threadIdx.x == 0 && a.running_var != nullptr)
        a.running_var[c] = nn_math::norm_running_update(a.running_var[c], a.momentum, sq / (count - 1));
    } else {
      mean = a.running_mean[c];
      invstd = nn_math::norm_invstd(a.running_var[c], a.eps);
    }
    if (threadIdx.x == 0) {
      a.save_mean[c] = static_cast<T>(mean);
      a.save_invstd[c] = static_cast<T>(invstd);
    }
    const auto affine = nn_math::batch_norm_affine<T>(mean, invstd, a.w != nullptr ? a.w[c] : 1.0,
                                                      a.b != nullptr ? a.b[c] : 0.0);
    for (int64_t i = threadIdx.x; i < count; i += kBlock) {
      const int64_t k = a.at(c, i);
      a.y[k] = nn_math::batch_norm_value(a.x[k], affine);
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlock) batch_norm_backward_kernel(BatchNormArgs<T> a) {
  const int64_t count = a.N * a.S;
  for (int64_t c = blockIdx.x; c < a.C; c += gridDim.x) {
    const double mean = a.save_mean[c], invstd = a.save_invstd[c];
    SumPair s{0, 0};  // Σg, Σg·x̂
    for (int64_t i = threadIdx.x; i < count; i += kBlock) {
      const int64_t k = a.at(c, i);
      s.a += a.gy[k];
      s.b += a.gy[k] * nn_math::norm_xhat(a.x[k], mean, invstd);
    }
    s = block_reduce(s, SumOp{});
    if (threadIdx.x == 0 && a.gw != nullptr) a.gw[c] = static_cast<T>(s.b);
    if (threadIdx.x == 0 && a.gb != nullptr) a.gb[c] = static_cast<T>(s.a);
    if (a.gx == nullptr) continue;
    const nn_math::NormGrad coef =
        nn_math::batch_norm_grad(invstd, a.w != nullptr ? a.w[c] : 1.0, s.a, s.b, count, a.training);
    for (int64_t i = threadIdx.x; i < count; i += kBlock) {
      const int64_t e = a.at(c, i);
      a.gx[e] = static_cast<T>(nn_math::norm_grad_input(coef, a.gy[e], nn_math::norm_xhat(a.x[e], mean, invstd)));
    }
  }
}

template <typename T>
struct LayerNormArgs {
  const T *x, *gy, *w, *b;  // gy: backward only; w, b may be null
  T *y, *mean, *invstd;     // forward writes mean/invstd [M]; backward reads them
  T *gx, *gw, *gb;          // backward (each may be null)
  int64_t M, D;
  double eps;
};

// One block per row, running nn_math's row bodies (the CPU's) with BlockRow.
template <typename T>
__global__ void __launch_bounds__(kBlock) layer_norm_forward_kernel(LayerNormArgs<T> a) {
  for (int64_t r = blockIdx.x; r < a.M; r += gridDim.x) {
    double mean, invstd;
    nn_math::layer_norm_row(BlockRow{}, a.x + r * a.D, a.w, a.b, a.y + r * a.D, a.D, a.eps, mean, invstd);
    if (threadIdx.x == 0) {
      a.mean[r] = static_cast<T>(mean);
      a.invstd[r] = static_cast<T>(invstd);
    }
  }
}

// grad_x.
template <typename T>
__global__ void __launch_bounds__(kBlock) layer_norm_backward_input_kernel(LayerNormArgs<T> a) {
  for (int64_t r = blockIdx.x; r < a.M; r += gridDim.x)
    nn_math::layer_norm_backward_row(BlockRow{}, a.gy + r * a.D, a.x + r * a.D, a.w, a.gx + r * a.D, a.D, a.mean[r],
                                     a.invstd[r]);
}

// grad_weight / grad_bias: column sums over the rows, one block per column (RMS norm's too: mean null, taken
// as 0).
template <typename T>
__global__ void __launch_bounds__(kBlock) layer_norm_backward_params_kernel(LayerNormArgs<T> a) {
  for (int64_t d = blockIdx.x; d < a.D; d += gridDim.x) {
    SumPair s{0, 0};  // Σg·x̂ (weight), Σg (bias)
    for (int64_t r = threadIdx.x; r < a.M; r += kBlock) {
      const T g = a.gy[r * a.D + d];
      s.a += g * nn_math::norm_xhat(a.x[r * a.D + d], a.mean != nullptr ? a.mean[r] : T(0), a.invstd[r]);
      s.b += g;
    }
    s = block_reduce(s, SumOp{});
    if (threadIdx.x == 0 && a.gw != nullptr) a.gw[d] = static_cast<T>(s.a);
    if (threadIdx.x == 0 && a.gb != nullptr) a.gb[d] = static_cast<T>(s.b);
  }
}

// RMS norm, with LayerNormArgs (no bias, no mean; invstd holds invrms): one block per row, as layer norm.
template <typename T>
__global__ void __launch_bounds__(kBlock) rms_norm_forward_kernel(LayerNormArgs<T> a) {
  for (int64_t r = blockIdx.x; r < a.M; r += gridDim.x) {
    double invrms;
    nn_math::rms_norm_row(BlockRow{}, a.x + r * a.D, a.w, a.y + r * a.D, a.D, a.eps, invrms);
    if (threadIdx.x == 0) a.invstd[r] = static_cast<T>(invrms);
  }
}

template <typename T>
__global__ void __launch_bounds__(kBlock) rms_norm_backward_input_kernel(LayerNormArgs<T> a) {
  for (int64_t r = blockIdx.x; r < a.M; r += gridDim.x)
    nn_math::rms_norm_backward_row(BlockRow{}, a.gy + r * a.D, a.x + r * a.D, a.w, a.gx + r * a.D, a.D, a.invstd[r]);
}

}  // namespace

void CudaBackend::batch_norm_forward(const TensorArg& x, const TensorArg* weight, const TensorArg* bias,
                                     const TensorArg* running_mean, const TensorArg* running_var, const TensorArg& y,
                                     const TensorArg& save_mean, const TensorArg& save_invstd, bool training,
                                     double momentum, double eps) {
  const checks::BatchNormDims d = checks::check_batch_norm_forward(x, weight, bias, running_mean, running_var, y,
                                                                   save_mean, save_invstd, training);
  DeviceContext& ctx = context(x.device_index);
  dispatch_floating(x.dtype, "batch_norm", [&](auto tag) {
    using T = decltype(tag);
    const BatchNormArgs<T> a{x.ptr<T>(), nullptr, ptr_or_null<const T>(weight), ptr_or_null<const T>(bias),
                             ptr_or_null<T>(running_mean), ptr_or_null<T>(running_var), y.ptr<T>(), save_mean.ptr<T>(),
                             save_invstd.ptr<T>(), nullptr, nullptr, nullptr, d.N, d.C, d.S, training, momentum, eps};
    launch_rows(ctx.stream, d.C, batch_norm_forward_kernel<T>, a);
  });
}

void CudaBackend::batch_norm_backward(const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight,
                                      const TensorArg& save_mean, const TensorArg& save_invstd, const TensorArg* grad_x,
                                      const TensorArg* grad_weight, const TensorArg* grad_bias, bool training) {
  const checks::BatchNormDims d = checks::check_batch_norm_backward(grad_y, x, weight, save_mean, save_invstd, grad_x,
                                                                    grad_weight, grad_bias);
  DeviceContext& ctx = context(x.device_index);
  dispatch_floating(x.dtype, "batch_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    const BatchNormArgs<T> a{x.ptr<T>(), grad_y.ptr<T>(), ptr_or_null<const T>(weight), nullptr, nullptr, nullptr,
                             nullptr, save_mean.ptr<T>(), save_invstd.ptr<T>(), ptr_or_null<T>(grad_x),
                             ptr_or_null<T>(grad_weight), ptr_or_null<T>(grad_bias), d.N, d.C, d.S, training, 0.0, 0.0};
    launch_rows(ctx.stream, d.C, batch_norm_backward_kernel<T>, a);
  });
}

void CudaBackend::layer_norm_forward(const TensorArg& x, const TensorArg* weight, const TensorArg* bias,
                                     const TensorArg& y, const TensorArg& save_mean, const TensorArg& save_invstd,
                                     double eps) {
  const checks::RowDims d = checks::check_layer_norm_forward(x, weight, bias, y, save_mean, save_invstd);
  DeviceContext& ctx = context(x.device_index);
  dispatch_floating(x.dtype, "layer_norm", [&](auto tag) {
    using T = decltype(tag);
    const LayerNormArgs<T> a{x.ptr<T>(), nullptr, ptr_or_null<const T>(weight), ptr_or_null<const T>(bias), y.ptr<T>(),
                             save_mean.ptr<T>(), save_invstd.ptr<T>(), nullptr, nullptr, nullptr, d.M, d.D, eps};
    launch_rows(ctx.stream, d.M, layer_norm_forward_kernel<T>, a);
  });
}

void CudaBackend::layer_norm_backward(const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight,
                                      const TensorArg& save_mean, const TensorArg& save_invstd, const TensorArg* grad_x,
                                      const TensorArg* grad_weight, const TensorArg* grad_bias) {
  const checks::RowDims d =
      checks::check_layer_norm_backward(grad_y, x, weight, save_mean, save_invstd, grad_x, grad_weight, grad_bias);
  DeviceContext& ctx = context(x.device_index);
  dispatch_floating(x.dtype, "layer_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    const LayerNormArgs<T> a{x.ptr<T>(), grad_y.ptr<T>(), ptr_or_null<const T>(weight), nullptr, nullptr,
                             save_mean.ptr<T>(), save_invstd.ptr<T>(), ptr_or_null<T>(grad_x),
                             ptr_or_null<T>(grad_weight), ptr_or_null<T>(grad_bias), d.M, d.D, 0.0};
    if (grad_x != nullptr) launch_rows(ctx.stream, d.M, layer_norm_backward_input_kernel<T>, a);
    // one block per column; M == 0: zero sums
    if (grad_weight != nullptr || grad_bias != nullptr) launch_rows(ctx.stream, d.D, layer_norm_backward_params_kernel<T>, a);
  });
}

void CudaBackend::rms_norm_forward(const TensorArg& x, const TensorArg* weight, const TensorArg& y,
                                   const TensorArg& save_invrms, double eps) {
  const checks::RowDims d = checks::check_rms_norm_forward(x, weight, y, save_invrms);
  DeviceContext& ctx = context(x.device_index);
  dispatch_floating(x.dtype, "rms_norm", [&](auto tag) {
    using T = decltype(tag);
    const LayerNormArgs<T> a{x.ptr<T>(), nullptr, ptr_or_null<const T>(weight), nullptr, y.ptr<T>(), nullptr,
                             save_invrms.ptr<T>(), nullptr, nullptr, nullptr, d.M, d.D, eps};
    launch_rows(ctx.stream, d.M, rms_norm_forward_kernel<T>, a);
  });
}

void CudaBackend::rms_norm_backward(const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight,
                                    const TensorArg& save_invrms, const TensorArg* grad_x,
                                    const TensorArg* grad_weight) {
  const checks::RowDims d = checks::check_rms_norm_backward(grad_y, x, weight, save_invrms, grad_x, grad_weight);
  DeviceContext& ctx = context(x.device_index);
  dispatch_floating(x.dtype, "rms_norm_backward", [&](auto tag) {
    using T = decltype(tag);
    const LayerNormArgs<T> a{x.ptr<T>(), grad_y.ptr<T>(), ptr_or_null<const T>(weight), nullptr, nullptr, nullptr,
                             save_invrms.ptr<T>(), ptr_or_null<T>(grad_x), ptr_or_null<T>(grad_weight), nullptr, d.M,
                             d.D, 0.0};
    if (grad_x != nullptr) launch_rows(ctx.stream, d.M, rms_norm_backward_input_kernel<T>, a);
    if (grad_weight != nullptr) launch_rows(ctx.stream, d.D, layer_norm_backward_params_kernel<T>, a);
  });
}

}  // namespace ember::cuda
