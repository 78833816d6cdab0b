// max/avg pool2d over NCHW with own kernels; same windows, scan order and NaN rule as backends/cpu/pool.cpp.
// Forward: one thread per output element. Backward: one thread per grad_x element, which gathers from the
// output windows covering it in (oh, ow) order — the CPU's order of accumulation, with no atomics, so the
// result is deterministic (and matches the CPU's bit for bit).
#include "backends/cuda/loops.cuh"
#include "backends/nn_math.h"

namespace ember::cuda {
namespace {

struct PoolShape {
  int64_t H, W, OH, OW;
};

template <typename T>
struct MaxPoolForward {
  const T* x;
  T* y;
  int64_t* indices;  // may be null
  PoolShape s;
  Pool2dParams p;
  __device__ void operator()(int64_t o) const {
    const int64_t plane = o / (s.OH * s.OW), ohw = o - plane * s.OH * s.OW, oh = ohw / s.OW, ow = ohw - oh * s.OW;
    const T* xp = x + plane * s.H * s.W;
    const nn_math::PoolWindow win = nn_math::pool_window(p, s.H, s.W, s.OH, s.OW, oh, ow);
    int64_t best_i = win.h0 * s.W + win.w0;
    T best = xp[best_i];
    for (int64_t h = win.h0; h < win.h1; ++h)
      for (int64_t w = win.w0; w < win.w1; ++w) {
        const T v = xp[h * s.W + w];
        if (v > best || v != v) best = v, best_i = h * s.W + w;  // first maximum; a NaN wins
      }
    y[o] = best;
    if (indices != nullptr) indices[o] = best_i;
  }
};

template <typename T>
struct AvgPoolForward {
  const T* x;
  T* y;
  PoolShape s;
  Pool2dParams p;
  __device__ void operator()(int64_t o) const {
    const int64_t plane = o / (s.OH * s.OW), ohw = o - plane * s.OH * s.OW, oh = ohw / s.OW, ow = ohw - oh * s.OW;
    const T* xp = x + plane * s.H * s.W;
    const nn_math::PoolWindow win = nn_math::pool_window(p, s.H, s.W, s.OH, s.OW, oh, ow);
    T acc = 0;
    for (int64_t h = win.h0; h < win.h1; ++h)
      for (int64_t w = win.w0; w < win.w1; ++w) acc += xp[h * s.W + w];
    y[o] = acc / static_cast<T>(win.divisor);
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

void check_pool_operands(const char* op, const TensorArg& x, const TensorArg& y) {
  EMBER_CHECK(x.ndim == 4 && y.ndim == 4, op, ": expected 4-d [N, C, H, W] operands, got ", x.ndim, "-d and ", y.ndim,
              "-d");
  EMBER_CHECK(x.is_contiguous() && y.is_contiguous(), op, ": operands must be contiguous");
  EMBER_CHECK(x.dtype == y.dtype, op, ": input and output dtypes differ (", dtype_name(x.dtype), ", ",
              dtype_name(y.dtype), ")");
  EMBER_CHECK(x.shape[0] == y.shape[0] && x.shape[1] == y.shape[1], op, ": input [", x.shape[0], ", ", x.shape[1],
              ", ...] and output [", y.shape[0], ", ", y.shape[1], ", ...] differ in N or C");
}

void check_indices(const char* op, const TensorArg* indices, const TensorArg& y) {
  if (indices == nullptr) return;
  EMBER_CHECK(indices->dtype == DType::i64 && indices->is_contiguous() && indices->numel() == y.numel(), op,
              ": indices must be a contiguous i64 tensor of the output's shape");
}

}  // namespace

void CudaBackend::pool2d_forward(PoolOp op, const TensorArg& x, const TensorArg& y, const TensorArg* indices,
                                 const Pool2dParams& p) {
  DeviceContext& ctx = context(x.device_index);
  check_pool_operands("pool2d", x, y);
  check_indices("pool2d", indices, y);
  const PoolShape s{x.shape[2], x.shape[3], y.shape[2], y.shape[3]};
  if (x.numel() == 0) return;  // then y is empty too (same N, C; core keeps OH, OW > 0)
  dispatch_floating(x.dtype, "pool2d", [&](auto tag) {
    using T = decltype(tag);
    if (op == PoolOp::max)
      launch_index(ctx.stream, y.numel(),
                   MaxPoolForward<T>{x.ptr<T>(), y.ptr<T>(), ptr_or_null<int64_t>(indices), s, p});
    else
      launch_index(ctx.stream, y.numel(), AvgPoolForward<T>{x.ptr<T>(), y.ptr<T>(), s, p});
  });
}

void CudaBackend::pool2d_backward(PoolOp op, const TensorArg& grad_y, const TensorArg* indices, const TensorArg& grad_x,
                                  const Pool2dParams& p) {
  DeviceContext& ctx = context(grad_x.device_index);
  EMBER_CHECK(op != PoolOp::max || indices != nullptr, "max_pool2d backward: needs the forward's indices");
  check_pool_operands("pool2d_backward", grad_x, grad_y);
  check_indices("pool2d_backward", indices, grad_y);
  const PoolShape s{grad_x.shape[2], grad_x.shape[3], grad_y.shape[2], grad_y.shape[3]};
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
