// The index math both backends share (backends/strided.h, backends/nn_math.h), checked on the CPU: the
// CUDA kernels compute every address with StridedOperands::pointers, ReductionPlan::offsets and the pool
// window helpers, so these tests are the GPU's index math tested where no GPU is.
#include <gtest/gtest.h>

#include <cmath>

#include <random>
#include <vector>

#include "backends/cpu/strided_loop.h"
#include "backends/nn_math.h"
#include "backends/strided.h"

using namespace ember;

namespace {

// A view of `shape` into a buffer at `base`, with strides drawn from: contiguous, transposed, every other
// element, broadcast (0).
TensorArg random_view(const std::vector<int64_t>& shape, std::mt19937& rng, char* base, DType dtype) {
  TensorArg a;
  a.data = base;
  a.dtype = dtype;
  a.ndim = static_cast<int>(shape.size());
  int64_t stride = 1;
  for (int d = a.ndim - 1; d >= 0; --d) {
    a.shape[d] = shape[d];
    const int kind = static_cast<int>(rng() % 4);
    a.strides[d] = kind == 3 ? 0 : stride * (kind == 2 ? 2 : 1);
    stride *= shape[d] * 2;
  }
  if (rng() % 3 == 0 && a.ndim >= 2) std::swap(a.strides[0], a.strides[a.ndim - 1]);  // transposed
  return a;
}

}  // namespace

TEST(Strided, PointersMatchTheCpuLoopsForEveryElement) {
  std::mt19937 rng(7);
  alignas(64) static char buffers[3][1 << 16];
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<int64_t> shape(1 + rng() % 5);
    for (int64_t& s : shape) s = 1 + static_cast<int64_t>(rng() % 4);
    const TensorArg out = random_view(shape, rng, buffers[0], DType::f32);
    const TensorArg a = random_view(shape, rng, buffers[1], DType::f64);
    const TensorArg b = random_view(shape, rng, buffers[2], DType::b8);
    const StridedOperands<3> ops({&out, &a, &b});
    std::vector<std::array<char*, 3>> expected;
    cpu::for_each_run(ops, 0, ops.numel(), [&](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) expected.push_back({p[0] + i * s[0], p[1] + i * s[1], p[2] + i * s[2]});
    });
    ASSERT_EQ(static_cast<int64_t>(expected.size()), ops.numel());
    for (int64_t i = 0; i < ops.numel(); ++i) {
      char* p[3];
      ops.pointers(i, p);
      for (int k = 0; k < 3; ++k) ASSERT_EQ(p[k], expected[i][k]) << "trial " << trial << " element " << i << " operand " << k;
    }
  }
}

TEST(Strided, ReductionOffsetsVisitEveryOutputOnce) {
  // in [2, 3, 4] (strides of a transposed buffer), reduced over dim 1 into out [2, 1, 4] (contiguous).
  TensorArg in, out;
  in.ndim = out.ndim = 3;
  const int64_t shape[3] = {2, 3, 4}, in_strides[3] = {1, 8, 2};
  for (int d = 0; d < 3; ++d) {
    in.shape[d] = shape[d];
    in.strides[d] = in_strides[d];
    out.shape[d] = d == 1 ? 1 : shape[d];
  }
  out.strides[0] = 4;
  out.strides[1] = 4;
  out.strides[2] = 1;
  const ReductionPlan plan(in, out);
  ASSERT_EQ(plan.num_outputs, 8);
  ASSERT_EQ(plan.reduced.ndim, 1);
  EXPECT_EQ(plan.reduced.strides[0], 8);
  for (int64_t o = 0; o < 8; ++o) {
    int64_t in_off, out_off;
    plan.offsets(o, in_off, out_off);
    const int64_t i0 = o / 4, i2 = o % 4;  // row-major over the kept dims (0, 2)
    EXPECT_EQ(in_off, i0 * 1 + i2 * 2) << o;
    EXPECT_EQ(out_off, i0 * 4 + i2) << o;
  }
}

// pool_outputs_covering(i) must list exactly the outputs whose pool_window contains input i: the CUDA
// pooling backward gathers each input's gradient from those.
TEST(Strided, PoolOutputsCoveringAnInputAreThoseWhoseWindowHoldsIt) {
  int checked = 0;
  for (int64_t k = 1; k <= 4; ++k)
    for (int64_t stride = 1; stride <= 3; ++stride)
      for (int64_t pad = 0; pad <= k / 2; ++pad)
        for (int64_t H = 1; H <= 7; ++H) {
          const int64_t OH = (H + 2 * pad - k) / stride + 1;
          if (OH <= 0) continue;
          Pool2dParams p;
          p.kernel[0] = p.kernel[1] = k;
          p.stride[0] = p.stride[1] = stride;
          p.padding[0] = p.padding[1] = pad;
          for (int64_t i = 0; i < H; ++i) {
            int64_t lo, hi;
            nn_math::pool_outputs_covering(i, k, stride, pad, OH, lo, hi);
            for (int64_t o = 0; o < OH; ++o) {
              const nn_math::PoolWindow w = nn_math::pool_window(p, H, 1, OH, 1, o, 0);
              EXPECT_EQ(o >= lo && o < hi, i >= w.h0 && i < w.h1) << "k " << k << " stride " << stride << " pad " << pad
                                                                  << " H " << H << " input " << i << " output " << o;
              ++checked;
            }
          }
        }
  EXPECT_GT(checked, 500);
}

// Adaptive pooling: the windows are PyTorch's [⌊i·H/OH⌋, ⌈(i+1)·H/OH⌉) (cover every input, first starts at
// 0, last ends at H), and adaptive_outputs_covering(i) lists exactly the outputs whose window holds input i.
TEST(Strided, AdaptivePoolWindowsAndTheOutputsCoveringAnInput) {
  Pool2dParams p;
  p.adaptive = true;
  int checked = 0;
  for (int64_t H = 1; H <= 12; ++H)
    for (int64_t OH = 1; OH <= 12; ++OH) {
      for (int64_t o = 0; o < OH; ++o) {
        const nn_math::PoolWindow w = nn_math::pool_window(p, H, 1, OH, 1, o, 0);
        // the rule in floating point, as PyTorch writes it (floor and ceil of o·H/OH, (o+1)·H/OH)
        EXPECT_EQ(w.h0, static_cast<int64_t>(std::floor(static_cast<double>(o * H) / static_cast<double>(OH))));
        EXPECT_EQ(w.h1, static_cast<int64_t>(std::ceil(static_cast<double>((o + 1) * H) / static_cast<double>(OH))));
        EXPECT_LT(w.h0, w.h1) << "H " << H << " OH " << OH << " output " << o;
        EXPECT_EQ(w.divisor, w.h1 - w.h0);
      }
      EXPECT_EQ(nn_math::pool_window(p, H, 1, OH, 1, 0, 0).h0, 0);
      EXPECT_EQ(nn_math::pool_window(p, H, 1, OH, 1, OH - 1, 0).h1, H);
      for (int64_t i = 0; i < H; ++i) {
        int64_t lo, hi;
        nn_math::adaptive_outputs_covering(i, H, OH, lo, hi);
        for (int64_t o = 0; o < OH; ++o) {
          const nn_math::PoolWindow w = nn_math::pool_window(p, H, 1, OH, 1, o, 0);
          EXPECT_EQ(o >= lo && o < hi, i >= w.h0 && i < w.h1) << "H " << H << " OH " << OH << " input " << i
                                                              << " output " << o;
          ++checked;
        }
      }
    }
  EXPECT_GT(checked, 500);
}
