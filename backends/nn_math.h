#pragma once
// Index math of the fused NN ops as EMBER_HOST_DEVICE helpers: the CPU's pooling loops and the CUDA
// kernels use the same windows.
// Plain ternaries, no std::min/max: those are host-only constexpr functions under nvcc.
#include <cstdint>

#include "backends/backend.h"
#include "backends/host_device.h"
#include "backends/kernels.h"

namespace ember::nn_math {

// Combiners for block_reduce (backends/cuda/loops.cuh) and any host loop that wants the same rule.
struct SumOp {
  template <typename A> EMBER_HOST_DEVICE A operator()(A a, A b) const { return a + b; }
};
struct MaxOp {  // NaN wins, as kernels::m_max (the CPU's row max)
  template <typename A> EMBER_HOST_DEVICE A operator()(A a, A b) const { return kernels::m_max(a, b); }
};

// Two sums reduced together (batch/layer norm backward: Σg and Σg·x̂ in one pass).
struct SumPair {
  double a, b;
  EMBER_HOST_DEVICE SumPair operator+(const SumPair& o) const { return {a + o.a, b + o.b}; }
};

struct PoolWindow {
  int64_t h0, h1, w0, w1;  // clipped to the input: rows [h0, h1), columns [w0, w1)
  int64_t divisor;         // avg: the count PyTorch divides by (count_include_pad or the clipped window)
};

// The input window of output (oh, ow): the padded window stops at
// H + pad (PyTorch's avg_pool2d divisor), then is clipped to [0, H) × [0, W).
EMBER_HOST_DEVICE PoolWindow pool_window(const Pool2dParams& p, int64_t H, int64_t W, int64_t oh, int64_t ow) {
  int64_t h0 = oh * p.stride[0] - p.padding[0], w0 = ow * p.stride[1] - p.padding[1];
  int64_t h1 = h0 + p.kernel[0] < H + p.padding[0] ? h0 + p.kernel[0] : H + p.padding[0];
  int64_t w1 = w0 + p.kernel[1] < W + p.padding[1] ? w0 + p.kernel[1] : W + p.padding[1];
  const int64_t padded = (h1 - h0) * (w1 - w0);
  h0 = h0 < 0 ? 0 : h0;
  w0 = w0 < 0 ? 0 : w0;
  h1 = h1 < H ? h1 : H;
  w1 = w1 < W ? w1 : W;
  return {h0, h1, w0, w1, p.count_include_pad ? padded : (h1 - h0) * (w1 - w0)};
}

// The outputs along one dim whose window [o·stride - pad, o·stride - pad + kernel) contains input i:
// o in [lo, hi) (empty when hi <= lo). For the gradient of pooling, gathered per input element.
EMBER_HOST_DEVICE void pool_outputs_covering(int64_t i, int64_t kernel, int64_t stride, int64_t pad, int64_t out,
                                             int64_t& lo, int64_t& hi) {
  const int64_t first = i + pad - kernel + 1;  // smallest o·stride whose window reaches i
  lo = first <= 0 ? 0 : (first + stride - 1) / stride;
  hi = (i + pad) / stride + 1;  // i + pad >= 0
  hi = hi < out ? hi : out;
}

}  // namespace ember::nn_math
