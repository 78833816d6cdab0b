// max/avg pool2d over NCHW with own kernels: the checks (backends/checks.h), windows and window bodies
// (backends/nn_math.h) of backends/cpu/pool.cpp, so the same scan order and NaN rule. Forward: one thread
// per output element. Backward: one thread per grad_x element, which gathers from the output windows
// covering it in (oh, ow) order — the CPU's order of accumulation (the CPU scatters instead, which is faster
// on one core), with no atomics, so the result is deterministic (and matches the CPU's bit for bit).
#include "backends/checks.h"
#include "backends/cuda/loops.cuh"
#include "backends/nn_math.h"

namespace ember::cuda {
namespace {

struct PoolShape {
  int64_t H, W, OH, OW;
};

// Output o of the forward: its window's max (and position) or average, nn_math's bodies (the CPU's).
template <typename T, bool kMax>
struct PoolForward {
  const T* x;
  T* y;
  int64_t* indices;  // max only; may be null
  PoolShape s;
  Pool2dParams p;
  __device__ void operator()(int64_t o) const {
    const int64_t plane = o / (s.OH * s.OW), ohw = o - plane * s.OH * s.OW, oh = ohw / s.OW, ow = ohw - oh * s.OW;
    const T* xp = x + plane * s.H * s.W;
    const nn_math::PoolWindow win = nn_math::pool_window(p, s.H, s.W, s.OH, s.OW, oh, ow);
    if constexpr (kMax) {
      int64_t at;
      nn_math::max_pool_window(xp, s.W, win, y[o], at);
      if (indices != nullptr) indices[o] = at;
    } else {
      y[o] = nn_math::avg_pool_window(xp, s.W, win);
    }
  }
};

// grad_x[plane, h, w] = Σ over the windows covering (h, w), in (oh, ow) order, of
//   max: grad_y where indices == h·W + w;  avg: grad_y / divisor.
template <typename T, bool kMax>
struct PoolBackward {
  const T* gy;
  const int64_t* indices;  // max only
  T* gx;
  PoolShape s;
  Pool2dParams p;
  __device__ void operator()(int64_t i) const {
    const int64_t plane = i / (s.H * s.W), hw = i - plane * s.H * s.W, h = hw / s.W, w = hw - h * s.W;
    int64_t oh0, oh1, ow0, ow1;
    if (p.adaptive) {
      nn_math::adaptive_outputs_covering(h, s.H, s.OH, oh0, oh1);
      nn_math::adaptive_outputs_covering(w, s.W, s.OW, ow0, ow1);
    } else {
      nn_math::pool_outputs_covering(h, p.kernel[0], p.stride[0], p.padding[0], s.OH, oh0, oh1);
      nn_math::pool_outputs_covering(w, p.kernel[1], p.stride[1], p.padding[1], s.OW, ow0, ow1);
    }
    const int64_t base = plane * s.OH * s.OW;
    T acc = 0;
    for (int64_t oh = oh0; oh < oh1; ++oh)
      for (int64_t ow = ow0; ow < ow1; ++ow) {
        const int64_t o = base + oh * s.OW + ow;
        if constexpr (kMax) {
          if (indices[o] == hw) acc += gy[o];
        } else {
          const nn_math::PoolWindow win = nn_math::pool_window(p, s.H, s.W, s.OH, s.OW, oh, ow);
          acc += gy[o] / static_cast<T>(win.divisor);
        }
      }
    gx[i] = acc;
  }
};

}  // namespace

void CudaBackend::pool2d_forward(PoolOp op, const TensorArg& x, const TensorArg& y, const TensorArg* indices,
                                 const Pool2dParams& p) {
  const checks::PoolDims d = checks::check_pool2d_forward(op, x, y, indices, p);
  DeviceContext& ctx = context(x.device_index);
  const PoolShape s{d.H, d.W, d.OH, d.OW};
  if (x.numel() == 0) return;  // then y is empty too (the check)
  dispatch_floating(x.dtype, "pool2d", [&](auto tag) {
    using T = decltype(tag);
    if (op == PoolOp::max)
      launch_index(ctx.stream, y.numel(), PoolForward<T, true>{x.ptr<T>(), y.ptr<T>(), ptr_or_null<int64_t>(indices), s, p});
    else
      launch_index(ctx.stream, y.numel(), PoolForward<T, false>{x.ptr<T>(), y.ptr<T>(), nullptr, s, p});
  });
}

void CudaBackend::pool2d_backward(PoolOp op, const TensorArg& grad_y, const TensorArg* indices, const TensorArg& grad_x,
                                  const Pool2dParams& p) {
  const checks::PoolDims d = checks::check_pool2d_backward(op, grad_y, indices, grad_x, p);
  DeviceContext& ctx = context(grad_x.device_index);
  const PoolShape s{d.H, d.W, d.OH, d.OW};
  dispatch_floating(grad_x.dtype, "pool2d_backward", [&](auto tag) {
    using T = decltype(tag);
    if (op == PoolOp::max)
      launch_index(ctx.stream, grad_x.numel(),
                   PoolBackward<T, true>{grad_y.ptr<T>(), indices->ptr<int64_t>(), grad_x.ptr<T>(), s, p});
    else
      launch_index(ctx.stream, grad_x.numel(), PoolBackward<T, false>{grad_y.ptr<T>(), nullptr, grad_x.ptr<T>(), s, p});
  });
}

}  // namespace ember::cuda
