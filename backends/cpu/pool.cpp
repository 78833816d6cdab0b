// max/avg pool2d over NCHW, one (n, c) plane per task. The output size is the caller's (nn computes
// OH = ⌊(H + 2·pad - kernel) / stride⌋ + 1, or ⌈⌉ in ceil_mode, whose last window may reach past the
// padding: nn_math::pool_window clips it; adaptive pooling takes any OH, OW and PyTorch's adaptive windows).
#include <algorithm>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/parallel.h"
#include "backends/kernels.h"
#include "backends/nn_math.h"

namespace ember::cpu {
namespace {

using Window = nn_math::PoolWindow;
constexpr auto window = nn_math::pool_window;

// The common 2×2, stride 2, unpadded max pool, vectorised over the outputs of a plane: `offsets` holds each
// output's window corner in the plane (the same for every plane), so the loop is one flat run of OH·OW
// gathers instead of OH rows of OW outputs (OW = 14 or 7 in a Fashion-MNIST CNN: too short for a vector, and
// the scalar remainder compiled to branches on unpredictable comparisons took 12% of a CNN step).
// Selects, not jumps; scan order and NaN rule as the general path.
template <bool kIndices, typename T>
void max_pool_2x2(const T* __restrict xp, T* __restrict out, int64_t* __restrict idx, int64_t W, int64_t count,
                  const int32_t* __restrict offsets) {
  const auto w = static_cast<int32_t>(W);
  for (int64_t o = 0; o < count; ++o) {
    const int32_t base = offsets[o];
    const T a = xp[base], b = xp[base + 1], c = xp[base + w], d = xp[base + w + 1];
    // Later elements win only when strictly greater (first maximum), or when NaN (NaN propagates).
    T best = a;
    int32_t k = base;
    bool take = (b > best) | (b != b);
    best = take ? b : best;
    k = take ? base + 1 : k;
    take = (c > best) | (c != c);
    best = take ? c : best;
    k = take ? base + w : k;
    take = (d > best) | (d != d);
    best = take ? d : best;
    k = take ? base + w + 1 : k;
    out[o] = best;
    if constexpr (kIndices) idx[o] = k;
  }
}

template <typename T>
void pool_forward(PoolOp op, const TensorArg& x, const TensorArg& y, int64_t* indices, const Pool2dParams& p) {
  const int64_t planes = x.shape[0] * x.shape[1], H = x.shape[2], W = x.shape[3], OH = y.shape[2], OW = y.shape[3];
  const T* in = x.ptr<T>();
  T* out = y.ptr<T>();
  // (not in ceil_mode over an odd size: its last window is partial)
  const bool fast_2x2 = op == PoolOp::max && !p.adaptive && p.kernel[0] == 2 && p.kernel[1] == 2 && p.stride[0] == 2 &&
                        p.stride[1] == 2 && p.padding[0] == 0 && p.padding[1] == 0 && 2 * OH <= H && 2 * OW <= W;
  thread_local std::vector<int32_t> table;  // the windows' corners, for max_pool_2x2
  const int32_t* offsets = nullptr;
  if (fast_2x2 && H * W < (int64_t{1} << 31)) {
    table.resize(static_cast<size_t>(OH * OW));
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) table[oh * OW + ow] = static_cast<int32_t>(2 * oh * W + 2 * ow);
    offsets = table.data();  // (the thread_local itself, named in the lambda, would be each thread's own)
  }
  parallel_for(planes, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, H * W)), [&](int64_t begin, int64_t end) {
    for (int64_t pl = begin; pl < end; ++pl) {
      const T* xp = in + pl * H * W;
      if (offsets != nullptr) {
        if (indices != nullptr) max_pool_2x2<true>(xp, out + pl * OH * OW, indices + pl * OH * OW, W, OH * OW, offsets);
        else max_pool_2x2<false>(xp, out + pl * OH * OW, nullptr, W, OH * OW, offsets);
        continue;
      }
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const Window win = window(p, H, W, OH, OW, oh, ow);
          const int64_t o = pl * OH * OW + oh * OW + ow;
          if (op == PoolOp::max) {
            int64_t best_i = win.h0 * W + win.w0;
            T best = xp[best_i];
            for (int64_t h = win.h0; h < win.h1; ++h)
              for (int64_t w = win.w0; w < win.w1; ++w) {
                const T v = xp[h * W + w];
                if (v > best || v != v) best = v, best_i = h * W + w;
              }
            out[o] = best;
            if (indices != nullptr) indices[o] = best_i;
          } else {
            T acc = 0;
            for (int64_t h = win.h0; h < win.h1; ++h)
              for (int64_t w = win.w0; w < win.w1; ++w) acc += xp[h * W + w];
            out[o] = acc / static_cast<T>(win.divisor);
          }
        }
    }
  });
}

template <typename T>
void pool_backward(PoolOp op, const TensorArg& gy, const int64_t* indices, const TensorArg& gx, const Pool2dParams& p) {
  const int64_t planes = gx.shape[0] * gx.shape[1], H = gx.shape[2], W = gx.shape[3], OH = gy.shape[2],
                OW = gy.shape[3];
  const T* g = gy.ptr<T>();
  T* out = gx.ptr<T>();
  parallel_for(planes, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, H * W)), [&](int64_t begin, int64_t end) {
    for (int64_t pl = begin; pl < end; ++pl) {
      T* gp = out + pl * H * W;
      std::fill(gp, gp + H * W, T(0));
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t o = pl * OH * OW + oh * OW + ow;
          if (op == PoolOp::max) {
            gp[indices[o]] += g[o];
          } else {
            const Window win = window(p, H, W, OH, OW, oh, ow);
            const T share = g[o] / static_cast<T>(win.divisor);
            for (int64_t h = win.h0; h < win.h1; ++h)
              for (int64_t w = win.w0; w < win.w1; ++w) gp[h * W + w] += share;
          }
        }
    }
  });
}

}  // namespace

void CpuBackend::pool2d_forward(PoolOp op, const TensorArg& x, const TensorArg& y, const TensorArg* indices,
                                const Pool2dParams& p) {
  dispatch_floating(x.dtype, "pool2d", [&](auto tag) {
    pool_forward<decltype(tag)>(op, x, y, ptr_or_null<int64_t>(indices), p);
  });
}

void CpuBackend::pool2d_backward(PoolOp op, const TensorArg& grad_y, const TensorArg* indices, const TensorArg& grad_x,
                                 const Pool2dParams& p) {
  EMBER_CHECK(op != PoolOp::max || indices != nullptr, "max_pool2d backward: needs the forward's indices");
  dispatch_floating(grad_x.dtype, "pool2d_backward", [&](auto tag) {
    pool_backward<decltype(tag)>(op, grad_y, ptr_or_null<int64_t>(indices), grad_x, p);
  });
}

}  // namespace ember::cpu
