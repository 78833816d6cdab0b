// batch_norm over x [N, C, S] (one channel per task), layer_norm and rms_norm over x [M, D] (one row per task).
// Statistics accumulate in double, two passes (mean, then squared deviations) for accuracy. The formulas
// are backends/nn_math.h's (shared with backends/cuda/norm.cu).
#include <algorithm>
#include <cmath>

#include "backends/checks.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/nn_math.h"
#include "base/parallel.h"

namespace ember::cpu {
namespace {

// Σ term(s) over each (n, c) row of a channel, each row summed in T with a vectorised reduction and the rows
// added in double, in order. Rows go four at a time, so four independent vector additions are in flight
// instead of one chain waiting on the adder's latency; every row's sum is the same as summed alone.
template <typename T, typename Term>
double channel_sum(const T* first_row, int64_t N, int64_t row_stride, int64_t S, Term term) {
  double sum = 0;
  int64_t n = 0;
  for (; n + 4 <= N; n += 4) {
    const T *p0 = first_row + n * row_stride, *p1 = p0 + row_stride, *p2 = p1 + row_stride, *p3 = p2 + row_stride;
    T a0 = 0, a1 = 0, a2 = 0, a3 = 0;
#pragma omp simd reduction(+ : a0, a1, a2, a3)
    for (int64_t s = 0; s < S; ++s) {
      a0 += term(p0[s]);
      a1 += term(p1[s]);
      a2 += term(p2[s]);
      a3 += term(p3[s]);
    }
    sum += a0;
    sum += a1;
    sum += a2;
    sum += a3;
  }
  for (; n < N; ++n) {
    const T* p = first_row + n * row_stride;
    T acc = 0;
#pragma omp simd reduction(+ : acc)
    for (int64_t s = 0; s < S; ++s) acc += term(p[s]);
    sum += acc;
  }
  return sum;
}

template <typename T>
void bn_forward(const checks::BatchNormDims& d, const TensorArg& x, const TensorArg* weight, const TensorArg* bias,
                const TensorArg* running_mean, const TensorArg* running_var, const TensorArg& y,
                const TensorArg& save_mean, const TensorArg& save_invstd, bool training, double momentum, double eps) {
  const int64_t N = d.N, C = d.C, S = d.S, count = N * S;
  const T *w = ptr_or_null<const T>(weight), *b = ptr_or_null<const T>(bias);
  T *rm = ptr_or_null<T>(running_mean), *rv = ptr_or_null<T>(running_var);
  parallel_for(C, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, count)), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      double mean, invstd;
      if (training) {
        // Each (n, c) row summed in T with a vectorised reduction, the rows in double: float rows of a few
        // thousand values keep ~1e-6 relative accuracy (as PyTorch's float accumulation), at twice the
        // speed of converting every element to double.
        const T* rows = x.ptr<T>() + c * S;
        mean = channel_sum(rows, N, C * S, S, [](T v) { return v; }) / count;
        const T mean_t = static_cast<T>(mean);
        const double sq = channel_sum(rows, N, C * S, S, [mean_t](T v) { return (v - mean_t) * (v - mean_t); });
        invstd = nn_math::norm_invstd(sq / count, eps);
        if (rm != nullptr) rm[c] = nn_math::norm_running_update(rm[c], momentum, mean);
        if (rv != nullptr) rv[c] = nn_math::norm_running_update(rv[c], momentum, sq / (count - 1));
      } else {
        mean = rm[c];
        invstd = nn_math::norm_invstd(rv[c], eps);
      }
      save_mean.ptr<T>()[c] = static_cast<T>(mean);
      save_invstd.ptr<T>()[c] = static_cast<T>(invstd);
      const auto affine = nn_math::batch_norm_affine<T>(mean, invstd, w ? w[c] : 1.0, b ? b[c] : 0.0);
      for (int64_t n = 0; n < N; ++n) {
        const T* p = x.ptr<T>() + (n * C + c) * S;
        T* q = y.ptr<T>() + (n * C + c) * S;
#pragma omp simd
        for (int64_t s = 0; s < S; ++s) q[s] = nn_math::batch_norm_value(p[s], affine);
      }
    }
  });
}

template <typename T>
void bn_backward(const checks::BatchNormDims& d, const TensorArg& gy, const TensorArg& x, const TensorArg* weight,
                 const TensorArg& save_mean, const TensorArg& save_invstd, const TensorArg* gx, const TensorArg* gw,
                 const TensorArg* gb, bool training) {
  const int64_t N = d.N, C = d.C, S = d.S, count = N * S;
  const T* w = ptr_or_null<const T>(weight);
  parallel_for(C, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, count)), [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      const double mean = save_mean.ptr<T>()[c], invstd = save_invstd.ptr<T>()[c];
      const T mean_t = static_cast<T>(mean);
      // Σg and Σg·(x - mean) per row in T (vectorised), the rows in double, as in the forward.
      // Two rows at a time: four independent additions in flight (as channel_sum), each row's sums unchanged.
      double sum_g = 0, sum_g_dev = 0;
      int64_t n = 0;
      for (; n + 2 <= N; n += 2) {
        const T *g0 = gy.ptr<T>() + (n * C + c) * S, *g1 = g0 + C * S;
        const T *p0 = x.ptr<T>() + (n * C + c) * S, *p1 = p0 + C * S;
        T ag0 = 0, agd0 = 0, ag1 = 0, agd1 = 0;
#pragma omp simd reduction(+ : ag0, agd0, ag1, agd1)
        for (int64_t s = 0; s < S; ++s) {
          ag0 += g0[s];
          agd0 += g0[s] * (p0[s] - mean_t);
          ag1 += g1[s];
          agd1 += g1[s] * (p1[s] - mean_t);
        }
        sum_g += ag0;
        sum_g_dev += agd0;
        sum_g += ag1;
        sum_g_dev += agd1;
      }
      for (; n < N; ++n) {
        const T* g = gy.ptr<T>() + (n * C + c) * S;
        const T* p = x.ptr<T>() + (n * C + c) * S;
        T acc_g = 0, acc_gd = 0;
#pragma omp simd reduction(+ : acc_g, acc_gd)
        for (int64_t s = 0; s < S; ++s) {
          acc_g += g[s];
          acc_gd += g[s] * (p[s] - mean_t);
        }
        sum_g += acc_g;
        sum_g_dev += acc_gd;
      }
      const double sum_g_xhat = sum_g_dev * invstd;
      if (gw != nullptr) gw->ptr<T>()[c] = static_cast<T>(sum_g_xhat);
      if (gb != nullptr) gb->ptr<T>()[c] = static_cast<T>(sum_g);
      if (gx == nullptr) continue;
      const nn_math::NormGrad coef =
          nn_math::batch_norm_grad(invstd, w ? w[c] : 1.0, sum_g, sum_g_xhat, count, training);
      // gx = k·(g - mean_g - x̂·mean_gx̂) = k·g + (-k·invstd·mean_gx̂)·(x - mean) - k·mean_g, per element in T.
      const T a = static_cast<T>(coef.k), b = static_cast<T>(-coef.k * invstd * coef.mean_gxhat),
              shift = static_cast<T>(-coef.k * coef.mean_g);
      for (int64_t n = 0; n < N; ++n) {
        const T* g = gy.ptr<T>() + (n * C + c) * S;
        const T* p = x.ptr<T>() + (n * C + c) * S;
        T* out = gx->ptr<T>() + (n * C + c) * S;
#pragma omp simd
        for (int64_t s = 0; s < S; ++s) out[s] = a * g[s] + b * (p[s] - mean_t) + shift;
      }
    }
  });
}

// The weight/bias gradients of layer norm (and RMS norm: mean null, taken as 0; no bias): the column sums
// Σg·x̂ and Σg over the rows, a tile of columns at a time with the rows streaming through the cache (not one
// strided column at a time); each column adds its rows in order.
template <typename T>
void norm_param_grads(const checks::RowDims& rows, const TensorArg& gy, const TensorArg& x, const T* mean,
                      const T* invstd, const TensorArg* gw, const TensorArg* gb) {
  const int64_t D = rows.D, M = rows.M;
  constexpr int64_t kTile = 256;
  parallel_for(D, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, M)), [&](int64_t begin, int64_t end) {
    double sw[kTile], sb[kTile];
    for (int64_t d0 = begin; d0 < end; d0 += kTile) {
      const int64_t nd = std::min(kTile, end - d0);
      std::fill(sw, sw + nd, 0.0);
      std::fill(sb, sb + nd, 0.0);
      for (int64_t r = 0; r < M; ++r) {
        const T *g = gy.ptr<T>() + r * D + d0, *p = x.ptr<T>() + r * D + d0;
        const T m = mean != nullptr ? mean[r] : T(0), is = invstd[r];
#pragma omp simd
        for (int64_t k = 0; k < nd; ++k) {
          sb[k] += g[k];
          sw[k] += g[k] * nn_math::norm_xhat(p[k], m, is);
        }
      }
      for (int64_t k = 0; k < nd; ++k) {
        if (gw != nullptr) gw->ptr<T>()[d0 + k] = static_cast<T>(sw[k]);
        if (gb != nullptr) gb->ptr<T>()[d0 + k] = static_cast<T>(sb[k]);
      }
    }
  });
}

template <typename T>
void ln_forward(const checks::RowDims& rows, const TensorArg& x, const TensorArg* weight, const TensorArg* bias,
                const TensorArg& y, const TensorArg& save_mean, const TensorArg& save_invstd, double eps) {
  const int64_t D = rows.D, M = rows.M;
  const T *w = ptr_or_null<const T>(weight), *b = ptr_or_null<const T>(bias);
  parallel_for(M, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, D)), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      double mean, invstd;
      nn_math::layer_norm_row(nn_math::SerialRow{}, x.ptr<T>() + r * D, w, b, y.ptr<T>() + r * D, D, eps, mean, invstd);
      save_mean.ptr<T>()[r] = static_cast<T>(mean);
      save_invstd.ptr<T>()[r] = static_cast<T>(invstd);
    }
  });
}

template <typename T>
void ln_backward(const checks::RowDims& rows, const TensorArg& gy, const TensorArg& x, const TensorArg* weight,
                 const TensorArg& save_mean, const TensorArg& save_invstd, const TensorArg* gx, const TensorArg* gw,
                 const TensorArg* gb) {
  const int64_t D = rows.D, M = rows.M;
  const T* w = ptr_or_null<const T>(weight);
  const T *mean = save_mean.ptr<T>(), *invstd = save_invstd.ptr<T>();
  if (gx != nullptr) {
    parallel_for(M, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, D)), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        nn_math::layer_norm_backward_row(nn_math::SerialRow{}, gy.ptr<T>() + r * D, x.ptr<T>() + r * D, w,
                                         gx->ptr<T>() + r * D, D, mean[r], invstd[r]);
    });
  }
  if (gw != nullptr || gb != nullptr) norm_param_grads(rows, gy, x, mean, invstd, gw, gb);
}

template <typename T>
void rms_forward(const checks::RowDims& rows, const TensorArg& x, const TensorArg* weight, const TensorArg& y,
                 const TensorArg& save_invrms, double eps) {
  const int64_t D = rows.D, M = rows.M;
  const T* w = ptr_or_null<const T>(weight);
  parallel_for(M, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, D)), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      double invrms;
      nn_math::rms_norm_row(nn_math::SerialRow{}, x.ptr<T>() + r * D, w, y.ptr<T>() + r * D, D, eps, invrms);
      save_invrms.ptr<T>()[r] = static_cast<T>(invrms);
    }
  });
}

template <typename T>
void rms_backward(const checks::RowDims& rows, const TensorArg& gy, const TensorArg& x, const TensorArg* weight,
                  const TensorArg& save_invrms, const TensorArg* gx, const TensorArg* gw) {
  const int64_t D = rows.D, M = rows.M;
  const T *w = ptr_or_null<const T>(weight), *invrms = save_invrms.ptr<T>();
  if (gx != nullptr) {
    parallel_for(M, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, D)), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        nn_math::rms_norm_backward_row(nn_math::SerialRow{}, gy.ptr<T>() + r * D, x.ptr<T>() + r * D, w,
                                       gx->ptr<T>() + r * D, D, invrms[r]);
    });
  }
  if (gw != nullptr) norm_param_grads<T>(rows, gy, x, nullptr, invrms, gw, nullptr);
}

}  // namespace

void CpuBackend::batch_norm_forward(const TensorArg& x, const TensorArg* weight, const TensorArg* bias,
                                    const TensorArg* running_mean, const TensorArg* running_var, const TensorArg& y,
                                    const TensorArg& save_mean, const TensorArg& save_invstd, bool training,
                                    double momentum, double eps) {
  const checks::BatchNormDims d = checks::check_batch_norm_forward(x, weight, bias, running_mean, running_var, y,
                                                                   save_mean, save_invstd, training);
  dispatch_floating(x.dtype, "batch_norm", [&](auto tag) {
    bn_forward<decltype(tag)>(d, x, weight, bias, running_mean, running_var, y, save_mean, save_invstd, training,
                              momentum, eps);
  });
}

void CpuBackend::batch_norm_backward(const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight,
                                     const TensorArg& save_mean, const TensorArg& save_invstd, const TensorArg* grad_x,
                                     const TensorArg* grad_weight, const TensorArg* grad_bias, bool training) {
  const checks::BatchNormDims d = checks::check_batch_norm_backward(grad_y, x, weight, save_mean, save_invstd, grad_x,
                                                                    grad_weight, grad_bias);
  dispatch_floating(x.dtype, "batch_norm_backward", [&](auto tag) {
    bn_backward<decltype(tag)>(d, grad_y, x, weight, save_mean, save_invstd, grad_x, grad_weight, grad_bias, training);
  });
}

void CpuBackend::layer_norm_forward(const TensorArg& x, const TensorArg* weight, const TensorArg* bias,
                                    const TensorArg& y, const TensorArg& save_mean, const TensorArg& save_invstd,
                                    double eps) {
  const checks::RowDims d = checks::check_layer_norm_forward(x, weight, bias, y, save_mean, save_invstd);
  dispatch_floating(x.dtype, "layer_norm",
                    [&](auto tag) { ln_forward<decltype(tag)>(d, x, weight, bias, y, save_mean, save_invstd, eps); });
}

void CpuBackend::layer_norm_backward(const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight,
                                     const TensorArg& save_mean, const TensorArg& save_invstd, const TensorArg* grad_x,
                                     const TensorArg* grad_weight, const TensorArg* grad_bias) {
  const checks::RowDims d =
      checks::check_layer_norm_backward(grad_y, x, weight, save_mean, save_invstd, grad_x, grad_weight, grad_bias);
  dispatch_floating(x.dtype, "layer_norm_backward", [&](auto tag) {
    ln_backward<decltype(tag)>(d, grad_y, x, weight, save_mean, save_invstd, grad_x, grad_weight, grad_bias);
  });
}

void CpuBackend::rms_norm_forward(const TensorArg& x, const TensorArg* weight, const TensorArg& y,
                                  const TensorArg& save_invrms, double eps) {
  const checks::RowDims d = checks::check_rms_norm_forward(x, weight, y, save_invrms);
  dispatch_floating(x.dtype, "rms_norm",
                    [&](auto tag) { rms_forward<decltype(tag)>(d, x, weight, y, save_invrms, eps); });
}

void CpuBackend::rms_norm_backward(const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight,
                                   const TensorArg& save_invrms, const TensorArg* grad_x, const TensorArg* grad_weight) {
  const checks::RowDims d = checks::check_rms_norm_backward(grad_y, x, weight, save_invrms, grad_x, grad_weight);
  dispatch_floating(x.dtype, "rms_norm_backward", [&](auto tag) {
    rms_backward<decltype(tag)>(d, grad_y, x, weight, save_invrms, grad_x, grad_weight);
  });
}

}  // namespace ember::cpu
