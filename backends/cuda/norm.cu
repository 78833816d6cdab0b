// batch_norm over x [N, C, S] (one kBlock-thread block per channel) and layer_norm over x [M, D] (one block
// per row; the weight/bias gradients one block per column), as backends/cpu/norm.cpp: the same formulas in
// the same precisions (statistics accumulated in double, two passes: mean, then squared deviations), the
// formulas backends/nn_math.h's, the sums through block_reduce (a fixed tree order: deterministic, no
// atomics).
#include <algorithm>

#include "backends/cuda/loops.cuh"
#include "backends/nn_math.h"

namespace ember::cuda {
namespace {

using nn_math::SumOp;
using nn_math::SumPair;

unsigned block_grid(int64_t blocks) { return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, 65536)); }

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

template <typename T>
__global__ void __launch_bounds__(kBlock) layer_norm_forward_kernel(LayerNormArgs<T> a) {
  for (int64_t r = blockIdx.x; r < a.M; r += gridDim.x) {
    const T* p = a.x + r * a.D;
    double sum = 0, sq = 0;
    for (int64_t d = threadIdx.x; d < a.D; d += kBlock) sum += p[d];
    const double mean = block_reduce(sum, SumOp{}) / a.D;
    for (int64_t d = threadIdx.x; d < a.D; d += kBlock) sq += nn_math::norm_sq_dev(p[d], mean);
    const double invstd = nn_math::norm_invstd(block_reduce(sq, SumOp{}) / a.D, a.eps);
    if (threadIdx.x == 0) {
      a.mean[r] = static_cast<T>(mean);
      a.invstd[r] = static_cast<T>(invstd);
    }
    T* q = a.y + r * a.D;
    for (int64_t d = threadIdx.x; d < a.D; d += kBlock)
      q[d] = nn_math::layer_norm_value(p[d], mean, invstd, a.w != nullptr ? a.w[d] : T(1),
                                       a.b != nullptr ? a.b[d] : T(0));
  }
}

// grad_x, one block per row.
template <typename T>
__global__ void __launch_bounds__(kBlock) layer_norm_backward_input_kernel(LayerNormArgs<T> a) {
  for (int64_t r = blockIdx.x; r < a.M; r += gridDim.x) {
    const T *g = a.gy + r * a.D, *p = a.x + r * a.D;
    const double m = a.mean[r], is = a.invstd[r];
    SumPair s{0, 0};  // Σg·w, Σg·w·x̂
    for (int64_t d = threadIdx.x; d < a.D; d += kBlock) {
      const double gwd = nn_math::layer_norm_weighted_grad(g[d], a.w != nullptr ? a.w[d] : T(1));
      s.a += gwd;
      s.b += gwd * nn_math::norm_xhat(p[d], m, is);
    }
    s = block_reduce(s, SumOp{});
    const nn_math::NormGrad coef = nn_math::layer_norm_grad(is, s.a, s.b, a.D);
    T* out = a.gx + r * a.D;
    for (int64_t d = threadIdx.x; d < a.D; d += kBlock) {
      const double gwd = nn_math::layer_norm_weighted_grad(g[d], a.w != nullptr ? a.w[d] : T(1));
      out[d] = static_cast<T>(nn_math::norm_grad_input(coef, gwd, nn_math::norm_xhat(p[d], m, is)));
    }
  }
}

// grad_weight / grad_bias: column sums over the rows, one block per column.
template <typename T>
__global__ void __launch_bounds__(kBlock) layer_norm_backward_params_kernel(LayerNormArgs<T> a) {
  for (int64_t d = blockIdx.x; d < a.D; d += gridDim.x) {
    SumPair s{0, 0};  // Σg·x̂ (weight), Σg (bias)
    for (int64_t r = threadIdx.x; r < a.M; r += kBlock) {
      const T g = a.gy[r * a.D + d];
      s.a += g * nn_math::norm_xhat(a.x[r * a.D + d], a.mean[r], a.invstd[r]);
      s.b += g;
    }
    s = block_reduce(s, SumOp{});
    if (threadIdx.x == 0 && a.gw != nullptr) a.gw[d] = static_cast<T>(s.a);
    if (threadIdx.x == 0 && a.gb != nullptr) a.gb[d] = static_cast<T>(s.b);
  }
}

// Checks for an operand of `numel` elements and x's dtype (optional ones may be null).
void check_operand(const char* op, const char* name, const TensorArg* t, const TensorArg& x, int64_t numel) {
  if (t == nullptr) return;
  EMBER_CHECK(t->dtype == x.dtype && t->is_contiguous() && t->numel() == numel, op, ": ", name,
              " must be a contiguous ", dtype_name(x.dtype), " tensor of ", numel, " elements, got ",
              dtype_name(t->dtype), " × ", t->numel(), t->is_contiguous() ? "" : " (not contiguous)");
}

}  // namespace

void CudaBackend::batch_norm_forward(const TensorArg& x, const TensorArg* weight, const TensorArg* bias,
                                     const TensorArg* running_mean, const TensorArg* running_var, const TensorArg& y,
                                     const TensorArg& save_mean, const TensorArg& save_invstd, bool training,
                                     double momentum, double eps) {
  DeviceContext& ctx = context(x.device_index);
  const char* op = "batch_norm";
  EMBER_CHECK(x.ndim >= 2 && x.is_contiguous(), op, ": input must be a contiguous [N, C, ...] tensor");
  const int64_t N = x.shape[0], C = x.shape[1], S = x.numel() / std::max<int64_t>(1, N * C), count = N * S;
  check_operand(op, "output", &y, x, x.numel());
  check_operand(op, "weight", weight, x, C);
  check_operand(op, "bias", bias, x, C);
  check_operand(op, "running_mean", running_mean, x, C);
  check_operand(op, "running_var", running_var, x, C);
  check_operand(op, "save_mean", &save_mean, x, C);
  check_operand(op, "save_invstd", &save_invstd, x, C);
  EMBER_CHECK(training || (running_mean != nullptr && running_var != nullptr),
              "batch_norm: eval mode needs running statistics");
  EMBER_CHECK(!training || count > 1, "batch_norm: training needs more than one value per channel, got input shape [",
              N, ", ", C, ", ...] with ", count, " value(s) per channel; use a larger batch or eval()");
  if (C == 0) return;
  dispatch_floating(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const BatchNormArgs<T> a{x.ptr<T>(), nullptr, ptr_or_null<const T>(weight), ptr_or_null<const T>(bias),
                             ptr_or_null<T>(running_mean), ptr_or_null<T>(running_var), y.ptr<T>(), save_mean.ptr<T>(),
                             save_invstd.ptr<T>(), nullptr, nullptr, nullptr, N, C, S, training, momentum, eps};
    batch_norm_forward_kernel<T><<<block_grid(C), kBlock, 0, ctx.stream>>>(a);
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

void CudaBackend::batch_norm_backward(const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight,
                                      const TensorArg& save_mean, const TensorArg& save_invstd, const TensorArg* grad_x,
                                      const TensorArg* grad_weight, const TensorArg* grad_bias, bool training) {
  DeviceContext& ctx = context(x.device_index);
  const char* op = "batch_norm_backward";
  EMBER_CHECK(x.ndim >= 2 && x.is_contiguous(), op, ": input must be a contiguous [N, C, ...] tensor");
  const int64_t N = x.shape[0], C = x.shape[1], S = x.numel() / std::max<int64_t>(1, N * C);
  check_operand(op, "grad_y", &grad_y, x, x.numel());
  check_operand(op, "grad_x", grad_x, x, x.numel());
  check_operand(op, "weight", weight, x, C);
  check_operand(op, "save_mean", &save_mean, x, C);
  check_operand(op, "save_invstd", &save_invstd, x, C);
  check_operand(op, "grad_weight", grad_weight, x, C);
  check_operand(op, "grad_bias", grad_bias, x, C);
  if (C == 0) return;
  dispatch_floating(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const BatchNormArgs<T> a{x.ptr<T>(), grad_y.ptr<T>(), ptr_or_null<const T>(weight), nullptr, nullptr, nullptr,
                             nullptr, save_mean.ptr<T>(), save_invstd.ptr<T>(), ptr_or_null<T>(grad_x),
                             ptr_or_null<T>(grad_weight), ptr_or_null<T>(grad_bias), N, C, S, training, 0.0, 0.0};
    batch_norm_backward_kernel<T><<<block_grid(C), kBlock, 0, ctx.stream>>>(a);
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

void CudaBackend::layer_norm_forward(const TensorArg& x, const TensorArg* weight, const TensorArg* bias,
                                     const TensorArg& y, const TensorArg& save_mean, const TensorArg& save_invstd,
                                     double eps) {
  DeviceContext& ctx = context(x.device_index);
  const char* op = "layer_norm";
  EMBER_CHECK(x.ndim >= 1 && x.is_contiguous(), op, ": input must be a contiguous tensor of at least 1 dim");
  const int64_t D = x.shape[x.ndim - 1], M = D == 0 ? 0 : x.numel() / D;
  check_operand(op, "output", &y, x, x.numel());
  check_operand(op, "weight", weight, x, D);
  check_operand(op, "bias", bias, x, D);
  check_operand(op, "save_mean", &save_mean, x, M);
  check_operand(op, "save_invstd", &save_invstd, x, M);
  if (M == 0) return;
  dispatch_floating(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const LayerNormArgs<T> a{x.ptr<T>(), nullptr, ptr_or_null<const T>(weight), ptr_or_null<const T>(bias), y.ptr<T>(),
                             save_mean.ptr<T>(), save_invstd.ptr<T>(), nullptr, nullptr, nullptr, M, D, eps};
    layer_norm_forward_kernel<T><<<block_grid(M), kBlock, 0, ctx.stream>>>(a);
    EMBER_CUDA_CHECK_LAUNCH();
  });
}

void CudaBackend::layer_norm_backward(const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight,
                                      const TensorArg& save_mean, const TensorArg& save_invstd, const TensorArg* grad_x,
                                      const TensorArg* grad_weight, const TensorArg* grad_bias) {
  DeviceContext& ctx = context(x.device_index);
  const char* op = "layer_norm_backward";
  EMBER_CHECK(x.ndim >= 1 && x.is_contiguous(), op, ": input must be a contiguous tensor of at least 1 dim");
  const int64_t D = x.shape[x.ndim - 1], M = D == 0 ? 0 : x.numel() / D;
  check_operand(op, "grad_y", &grad_y, x, x.numel());
  check_operand(op, "grad_x", grad_x, x, x.numel());
  check_operand(op, "weight", weight, x, D);
  check_operand(op, "grad_weight", grad_weight, x, D);
  check_operand(op, "grad_bias", grad_bias, x, D);
  check_operand(op, "save_mean", &save_mean, x, M);
  check_operand(op, "save_invstd", &save_invstd, x, M);
  dispatch_floating(x.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    const LayerNormArgs<T> a{x.ptr<T>(), grad_y.ptr<T>(), ptr_or_null<const T>(weight), nullptr, nullptr,
                             save_mean.ptr<T>(), save_invstd.ptr<T>(), ptr_or_null<T>(grad_x),
                             ptr_or_null<T>(grad_weight), ptr_or_null<T>(grad_bias), M, D, 0.0};
    if (grad_x != nullptr && M > 0) {
      layer_norm_backward_input_kernel<T><<<block_grid(M), kBlock, 0, ctx.stream>>>(a);
      EMBER_CUDA_CHECK_LAUNCH();
    }
    if ((grad_weight != nullptr || grad_bias != nullptr) && D > 0) {  // M == 0: zero sums
      layer_norm_backward_params_kernel<T><<<block_grid(D), kBlock, 0, ctx.stream>>>(a);
      EMBER_CUDA_CHECK_LAUNCH();
    }
  });
}

}  // namespace ember::cuda
