// CPU-vs-CUDA parity, part 2 (part 1, the op tables, is tests/test_cuda_parity.cpp):
//   (c) the backend entries autograd does not reach: copies between every pair of dtypes on strided views,
//       fill, the random draws, arg reductions, comparisons and logical ops, i64 math, long reductions,
//       matmul layouts, the fused optimizer steps;
//   (d) errors and memory: kernel-detected bad indices, the allocator's statistics, out of memory;
//   (e) a short training run of configs/fashion_mlp.yaml's model on both devices.
// Every test skips itself where no usable GPU is present, saying why. Tolerances: tests/cuda_parity.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <iomanip>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <ember/ember.h>

#include "core/raw.h"  // bernoulli draws and the logical ops have no user-facing function
#include "nn/init.h"
#include "cuda_parity.h"
#include "op_table.h"
#include "test_helpers.h"

namespace ember {
namespace {

using namespace optable;  // op_table(), In/N/P, Domain, Layout, make_leaf, random_values
using namespace parity;   // Cuda, CudaWithParam, Kind, tolerance, matches, same, both, kGpu
namespace F = nn::functional;
using Outs = std::vector<Tensor>;

// =====================================================================================================
// (c) backend entries autograd does not reach
// =====================================================================================================

constexpr DType kAllTypes[] = {DType::b8, DType::i64, DType::f32, DType::f64};
constexpr DType kFloats[] = {DType::f64, DType::f32};

// 30 values that every dtype can hold after conversion (no NaN, no value beyond i64): negatives, -0,
// fractions (truncated by i64, true for bool), values f32 rounds.
const std::vector<double>& values30() {
  static const std::vector<double> v = {-3.75, -1,    -0.0, 0,     0.25,   1,      2.5,      7,  1000000.5, 123456.789,
                                        -25000, 3,    0.5,  -0.5,  1e-3,   16777217, -16777219, 42, 0.1,       -7.25,
                                        9,      -9.5, 1e9,  -1e9,  2,      -2,     0.75,     64, -64.5,     1};
  return v;
}

TEST_F(Cuda, CopyAndConvertBetweenEveryDtypePairOnStridedViews) {
  // Conversions are exact functions (round to nearest, truncation toward zero, nonzero → true): bits equal.
  const auto strided = [](const Tensor& t) { return t.t().slice(1, 1, 6, 2); };  // [5, 3], offset 1, strides (1, 10)
  for (DType src : kAllTypes)
    for (DType dst : kAllTypes) {
      SCOPED_TRACE(std::string(dtype_name(src)) + " -> " + std::string(dtype_name(dst)));
      const Both x = both(from_vector<double>(values30(), {6, 5}, {.dtype = src}), strided);
      EXPECT_TRUE(same(x.cpu.to(dst).clone(), x.gpu.to(dst).clone()));  // strided source, contiguous destination
      // strided destinations: every other column of a zero buffer, and a transposed buffer
      Tensor c1 = zeros({5, 7}, {.dtype = dst}), g1 = zeros({5, 7}, {.dtype = dst, .device = kGpu});
      c1.slice(1, 0, 6, 2).copy_(x.cpu);
      g1.slice(1, 0, 6, 2).copy_(x.gpu);
      EXPECT_TRUE(same(c1, g1));
      Tensor c2 = zeros({3, 5}, {.dtype = dst}), g2 = zeros({3, 5}, {.dtype = dst, .device = kGpu});
      c2.t().copy_(x.cpu);
      g2.t().copy_(x.gpu);
      EXPECT_TRUE(same(c2, g2));
      // a broadcast source (stride 0) into a strided destination
      c2.t().copy_(x.cpu.narrow(0, 2, 1));
      g2.t().copy_(x.gpu.narrow(0, 2, 1));
      EXPECT_TRUE(same(c2, g2));
    }
}

TEST_F(Cuda, FillOnStridedViews) {
  for (DType dtype : kAllTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    const double value = dtype == DType::b8 ? 1 : dtype == DType::i64 ? -3 : -2.75;
    Tensor c = zeros({6, 7}, {.dtype = dtype}), g = zeros({6, 7}, {.dtype = dtype, .device = kGpu});
    c.t().slice(0, 1, 7, 3).fill_(value);
    g.t().slice(0, 1, 7, 3).fill_(value);
    c.select(0, 4).slice(0, 0, 7, 2).fill_(value / 2);
    g.select(0, 4).slice(0, 0, 7, 2).fill_(value / 2);
    EXPECT_TRUE(same(c, g));
    EXPECT_TRUE(same(full({3, 4}, value, {.dtype = dtype}), full({3, 4}, value, {.dtype = dtype, .device = kGpu})));
    EXPECT_TRUE(same(ones({0, 4}, {.dtype = dtype}), ones({0, 4}, {.dtype = dtype, .device = kGpu})));
  }
}

TEST_F(Cuda, RandomDrawsMatchTheCpuForTheSameSeed) {
  for (DType dtype : kFloats) {
    SCOPED_TRACE(dtype_name(dtype));
    const TensorOptions host{.dtype = dtype}, dev{.dtype = dtype, .device = kGpu};
    Generator gc(123), gg(123);
    for (int draw = 0; draw < 2; ++draw) {  // the second draw starts at the advanced offset
      // uniform and bernoulli: integer Philox words scaled by powers of two and compared: bit-identical.
      EXPECT_TRUE(same(rand({1000, 37}, host, &gc), rand({1000, 37}, dev, &gg)));
      Tensor bc = empty({1000, 37}, host), bg = empty({1000, 37}, dev);
      raw::random_(bc, RandomOp::bernoulli, 0.3, 0, &gc);
      raw::random_(bg, RandomOp::bernoulli, 0.3, 0, &gg);
      EXPECT_TRUE(same(bc, bg));
      // uniform in [-3, 5) into a strided view: b - a is a power of two, so a + (b - a)·u is exact in double
      // whether or not a compiler fuses it into an FMA: bit-identical too.
      Tensor uc = zeros({40, 61}, host), ug = zeros({40, 61}, dev);
      Tensor uc_view = uc.t().slice(0, 1, 61, 2), ug_view = ug.t().slice(0, 1, 61, 2);
      nn::init::uniform_(uc_view, -3, 5, &gc);
      nn::init::uniform_(ug_view, -3, 5, &gg);
      EXPECT_TRUE(same(uc, ug));
      // normal: Box–Muller's log and cos come from glibc on the CPU and from CUDA's libdevice on the GPU,
      // which differ by an ulp or two: 1e-6 relative in f32, 1e-12 in f64 (the atol term, relative to the
      // largest |z| ~ 5, matters only for draws within ~1e-7 of zero).
      const Tol normal_tol = dtype == DType::f32 ? Tol{1e-6, 1e-7} : Tol{1e-12, 1e-15};
      EXPECT_TRUE(matches(randn({1000, 37}, host, &gc), randn({1000, 37}, dev, &gg), normal_tol));
    }
    EXPECT_EQ(gc.state(), gg.state());
    Generator dc(7), dg(7);
    EXPECT_TRUE(same(F::dropout(ones({300, 7}, host), 0.25, true, &dc), F::dropout(ones({300, 7}, dev), 0.25, true, &dg)));
  }
}

TEST_F(Cuda, ArgMaxAndArgMinTakeTheFirstIndexOnTiesAndHandleNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<double> v = {1,    3,   3,   0,    3,   2,     // ties of the max (index 1) and a unique min
                                 2,    nan, 5,   nan,  -1,  7,     // NaNs
                                 -inf, 4,   inf, inf,  -inf, 0,    // infinities, tied
                                 5,    5,   5,   5,    5,   5};    // all equal
  for (DType dtype : kFloats) {
    SCOPED_TRACE(dtype_name(dtype));
    for (const auto& view : std::vector<std::function<Tensor(const Tensor&)>>{
             [](const Tensor& t) { return t; }, [](const Tensor& t) { return t.t().contiguous().t(); }}) {
      const Both x = both(from_vector<double>(v, {4, 6}, {.dtype = dtype}), view);
      for (int64_t dim : {0, 1})
        for (bool keepdim : {false, true}) {
          EXPECT_TRUE(same(argmax(x.cpu, dim, keepdim), argmax(x.gpu, dim, keepdim))) << "argmax dim " << dim;
          EXPECT_TRUE(same(argmin(x.cpu, dim, keepdim), argmin(x.gpu, dim, keepdim))) << "argmin dim " << dim;
          EXPECT_TRUE(same(std::get<1>(max(x.cpu, dim)), std::get<1>(max(x.gpu, dim)))) << "max indices dim " << dim;
        }
      EXPECT_TRUE(same(argmax(x.cpu), argmax(x.gpu)));
      EXPECT_TRUE(same(argmin(x.cpu.narrow(0, 0, 1)), argmin(x.gpu.narrow(0, 0, 1))));
    }
  }
  // Long rows of four distinct values: thousands of ties across the GPU's threads and blocks.
  for (DType dtype : {DType::f64, DType::f32, DType::i64}) {
    SCOPED_TRACE(dtype_name(dtype));
    Generator gen(5);
    const Both x = both((rand({3, 100000}, {}, &gen) * 4.0).to(DType::i64).to(dtype));
    for (int64_t dim : {0, 1}) {
      EXPECT_TRUE(same(argmax(x.cpu, dim), argmax(x.gpu, dim))) << "dim " << dim;
      EXPECT_TRUE(same(argmin(x.cpu, dim), argmin(x.gpu, dim))) << "dim " << dim;
    }
    EXPECT_TRUE(same(argmax(x.cpu), argmax(x.gpu)));
    EXPECT_TRUE(same(argmax(x.cpu.t(), 0), argmax(x.gpu.t(), 0)));
  }
}

TEST_F(Cuda, ComparisonsAndLogicalOpsGiveTheSameMasks) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const std::vector<double> fa = {1, 2, nan, -0.0, 3, inf, -inf, 5, 0.5, 2}, fb = {1, 3, nan, 0.0, 2, inf, 1, nan, 0.5, -2};
  const std::vector<double> ia = {1, 2, -7, 0, 3, 1000000, -5, 5, 4, 2}, ib = {1, 3, -7, 0, 2, 999999, 1, 6, 4, -2};
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, const Tensor&)>>> ops = {
      {"eq", [](const Tensor& a, const Tensor& b) { return eq(a, b); }},
      {"ne", [](const Tensor& a, const Tensor& b) { return ne(a, b); }},
      {"lt", [](const Tensor& a, const Tensor& b) { return lt(a, b); }},
      {"le", [](const Tensor& a, const Tensor& b) { return le(a, b); }},
      {"gt", [](const Tensor& a, const Tensor& b) { return gt(a, b); }},
      {"ge", [](const Tensor& a, const Tensor& b) { return ge(a, b); }},
      {"logical_and", [](const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::logical_and, a > 0.0, b < 2.0); }},
      {"logical_or", [](const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::logical_or, a > 0.0, b < 2.0); }},
      {"where", [](const Tensor& a, const Tensor& b) { return where(a >= b, a, b); }},
  };
  for (DType dtype : {DType::f64, DType::f32, DType::i64}) {
    const bool integral = dtype == DType::i64;
    const Both a = both(from_vector<double>(integral ? ia : fa, {2, 5}, {.dtype = dtype}));
    const Both b = both(from_vector<double>(integral ? ib : fb, {2, 5}, {.dtype = dtype}));
    for (const auto& [name, op] : ops) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + name);
      EXPECT_TRUE(same(op(a.cpu, b.cpu), op(a.gpu, b.gpu)));
      EXPECT_TRUE(same(op(a.cpu.t(), b.cpu.t()), op(a.gpu.t(), b.gpu.t())));                          // strided
      EXPECT_TRUE(same(op(a.cpu, b.cpu.narrow(0, 1, 1)), op(a.gpu, b.gpu.narrow(0, 1, 1))));          // broadcast
      EXPECT_TRUE(same(op(a.cpu, scalar_for(a.cpu, 2)), op(a.gpu, scalar_for(a.gpu, 2))));           // a scalar
    }
    // Masks from bool tensors directly.
    const Both m = both(from_vector<bool>({true, false, true, true, false, false, true, false, false, true}, {2, 5}));
    const Both n = both(from_vector<bool>({true, true, false, true, false, true, false, false, true, true}, {2, 5}));
    EXPECT_TRUE(same(raw::binary(BinaryOp::logical_and, m.cpu, n.cpu.t().contiguous().t()),
                     raw::binary(BinaryOp::logical_and, m.gpu, n.gpu.t().contiguous().t())));
    EXPECT_TRUE(same(raw::binary(BinaryOp::logical_or, m.cpu, n.cpu), raw::binary(BinaryOp::logical_or, m.gpu, n.gpu)));
    EXPECT_TRUE(same(eq(m.cpu, n.cpu), eq(m.gpu, n.gpu)));
  }
}

TEST_F(Cuda, IntegerArithmeticAndMatmulAreExact) {
  Generator gen(6);
  const auto ints = [&](const Shape& shape, double lo, double hi) {
    return (rand(shape, {.dtype = DType::f64}, &gen) * (hi - lo) + lo).to(DType::i64);
  };
  const Both a = both(ints({4, 6}, -1e6, 1e6)), b = both(ints({4, 6}, -1e6, 1e6));
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&, const Tensor&)>>> ops = {
      {"add", [](const Tensor& x, const Tensor& y) { return x + y; }},
      {"sub", [](const Tensor& x, const Tensor& y) { return x - y.narrow(0, 1, 1); }},
      {"mul", [](const Tensor& x, const Tensor& y) { return x * y.t().contiguous().t(); }},
      {"mul_scalar", [](const Tensor& x, const Tensor&) { return x * 3; }},
      {"maximum", [](const Tensor& x, const Tensor& y) { return maximum(x, y); }},
      {"minimum", [](const Tensor& x, const Tensor& y) { return minimum(x.t(), y.t()); }},
      {"neg", [](const Tensor& x, const Tensor&) { return -x; }},
      {"abs", [](const Tensor& x, const Tensor&) { return abs(x.slice(1, 0, 6, 2)); }},
      {"sum", [](const Tensor& x, const Tensor&) { return sum(x); }},
      {"sum_dim0", [](const Tensor& x, const Tensor&) { return sum(x, {0}); }},
      {"sum_dim1_keepdim", [](const Tensor& x, const Tensor&) { return sum(x.t(), {1}, true); }},
      {"amax", [](const Tensor& x, const Tensor&) { return amax(x, {1}); }},
      {"amin", [](const Tensor& x, const Tensor&) { return amin(x, {0}); }},
      {"cat", [](const Tensor& x, const Tensor& y) { return cat({x, y.narrow(0, 0, 2)}, 0); }},
      {"index_select", [](const Tensor& x, const Tensor&) { return index_select(x, 1, kSelectIndex.to(x.device())); }},
      {"gather", [](const Tensor& x, const Tensor&) { return gather(x.narrow(0, 0, 3), 1, kGatherIndex.to(x.device())); }},
  };
  for (const auto& [name, op] : ops) EXPECT_TRUE(same(op(a.cpu, b.cpu), op(a.gpu, b.gpu))) << name;
  // True division gives f32: one correctly rounded division per element, on values converted exactly.
  EXPECT_TRUE(matches(a.cpu / (b.cpu.abs() + 1), a.gpu / (b.gpu.abs() + 1), tolerance(Kind::elementwise, DType::f32)));

  // i64 matmul: |products| ≤ 1e6 and sums of at most 70 of them stay exact in any order.
  const Both ma = both(ints({5, 70}, -1000, 1000)), mb = both(ints({70, 3}, -1000, 1000));
  const Both batch = both(ints({2, 5, 70}, -1000, 1000));
  EXPECT_TRUE(same(matmul(ma.cpu, mb.cpu), matmul(ma.gpu, mb.gpu)));
  EXPECT_TRUE(same(matmul(ma.cpu.t().contiguous().t(), mb.cpu), matmul(ma.gpu.t().contiguous().t(), mb.gpu)));
  EXPECT_TRUE(same(matmul(batch.cpu, mb.cpu), matmul(batch.gpu, mb.gpu)));
  EXPECT_TRUE(same(matmul(mb.cpu.t(), batch.cpu.transpose(1, 2)), matmul(mb.gpu.t(), batch.gpu.transpose(1, 2))));
}

TEST_F(Cuda, LongReductions) {
  // f32 sums and means accumulate in f64 on both devices (backends/kernels.h ReduceAcc): only the final
  // rounding to f32 can differ, by an ulp (6e-8): rtol 1e-6. f64: the reduce tolerance (chunks of 64k on the
  // CPU, thread-block trees on the GPU).
  const auto sum_tol = [](DType dtype) { return dtype == DType::f32 ? Tol{1e-6, 1e-6} : tolerance(Kind::reduce, dtype); };
  for (DType dtype : kFloats) {
    SCOPED_TRACE(dtype_name(dtype));
    Generator gen(7);
    const Both flat = both(rand({3000000}, {.dtype = dtype}, &gen));  // the chunked path: one output, 3M inputs
    EXPECT_TRUE(matches(sum(flat.cpu), sum(flat.gpu), sum_tol(dtype))) << "sum";
    EXPECT_TRUE(matches(mean(flat.cpu), mean(flat.gpu), sum_tol(dtype))) << "mean";
    EXPECT_TRUE(same(max(flat.cpu), max(flat.gpu))) << "max";
    EXPECT_TRUE(same(min(flat.cpu), min(flat.gpu))) << "min";
    EXPECT_TRUE(same(argmax(flat.cpu), argmax(flat.gpu))) << "argmax";
    const Both wide = both(random_values({3, 100000}, Domain::normal, gen, dtype));
    for (const auto& [dims, keepdim] : std::vector<std::pair<Shape, bool>>{{{1}, false}, {{0}, false}, {{1}, true}, {{0, 1}, false}}) {
      SCOPED_TRACE("dims " + dims.str());
      EXPECT_TRUE(matches(sum(wide.cpu, dims, keepdim), sum(wide.gpu, dims, keepdim), sum_tol(dtype)));
      EXPECT_TRUE(matches(mean(wide.cpu, dims, keepdim), mean(wide.gpu, dims, keepdim), sum_tol(dtype)));
      EXPECT_TRUE(same(amax(wide.cpu, dims, keepdim), amax(wide.gpu, dims, keepdim)));
      EXPECT_TRUE(same(amin(wide.cpu, dims, keepdim), amin(wide.gpu, dims, keepdim)));
    }
    // The same reductions on the transposed view [100000, 3] (strided input).
    EXPECT_TRUE(matches(sum(wide.cpu.t(), {0}), sum(wide.gpu.t(), {0}), sum_tol(dtype)));
    EXPECT_TRUE(matches(sum(wide.cpu.t(), {1}), sum(wide.gpu.t(), {1}), sum_tol(dtype)));
    EXPECT_TRUE(same(argmax(wide.cpu, 1), argmax(wide.gpu, 1)));
    EXPECT_TRUE(same(argmin(wide.cpu.t(), 0), argmin(wide.gpu.t(), 0)));
  }
  Generator gen(8);
  const Both ints = both((rand({3000000}, {}, &gen) * 1000.0).to(DType::i64));
  EXPECT_TRUE(same(sum(ints.cpu), sum(ints.gpu))) << "i64 sum";
  EXPECT_TRUE(same(sum(ints.cpu.view({3, 1000000}), {1}), sum(ints.gpu.view({3, 1000000}), {1}))) << "i64 rows";
  const Both mask = both(rand({3000000}, {}, &gen) > 0.5);
  EXPECT_TRUE(same(sum(mask.cpu), sum(mask.gpu))) << "bool sum (counts in i64)";
}

TEST_F(Cuda, MatmulWithTransposedAndBroadcastOperands) {
  const auto col_major = [](const Tensor& t) { return t.transpose(-1, -2).contiguous().transpose(-1, -2); };
  for (DType dtype : kFloats) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tol tol = tolerance(Kind::reduce, dtype);
    Generator gen(9);
    const Both a = both(random_values({64, 96}, Domain::normal, gen, dtype));
    const Both b = both(random_values({96, 80}, Domain::normal, gen, dtype));
    const Both at = both(random_values({96, 64}, Domain::normal, gen, dtype));  // used as at.t(): [64, 96]
    const Both bt = both(random_values({80, 96}, Domain::normal, gen, dtype));
    EXPECT_TRUE(matches(matmul(a.cpu, b.cpu), matmul(a.gpu, b.gpu), tol)) << "plain";
    EXPECT_TRUE(matches(matmul(at.cpu.t(), b.cpu), matmul(at.gpu.t(), b.gpu), tol)) << "a transposed";
    EXPECT_TRUE(matches(matmul(a.cpu, bt.cpu.t()), matmul(a.gpu, bt.gpu.t()), tol)) << "b transposed";
    EXPECT_TRUE(matches(matmul(at.cpu.t(), bt.cpu.t()), matmul(at.gpu.t(), bt.gpu.t()), tol)) << "both transposed";
    EXPECT_TRUE(matches(matmul(col_major(a.cpu), b.cpu), matmul(col_major(a.gpu), b.gpu), tol)) << "column-major a";
    EXPECT_TRUE(matches(matmul(a.cpu.slice(1, 0, 96, 2), b.cpu.slice(0, 1, 96, 2)),
                        matmul(a.gpu.slice(1, 0, 96, 2), b.gpu.slice(0, 1, 96, 2)), tol))
        << "strided (copied to a GEMM layout first)";
    // batches: a broadcast batch operand, a stride-0 (expanded) batch, transposed matrices in a batch
    const Both ba = both(random_values({4, 1, 16, 24}, Domain::normal, gen, dtype));
    const Both bb = both(random_values({3, 24, 8}, Domain::normal, gen, dtype));
    EXPECT_TRUE(matches(matmul(ba.cpu, bb.cpu), matmul(ba.gpu, bb.gpu), tol)) << "[4, 1, 16, 24] @ [3, 24, 8]";
    const Both one = both(random_values({16, 24}, Domain::normal, gen, dtype));
    EXPECT_TRUE(matches(matmul(one.cpu.expand({3, 16, 24}), bb.cpu), matmul(one.gpu.expand({3, 16, 24}), bb.gpu), tol))
        << "expanded batch";
    const Both tb = both(random_values({3, 8, 24}, Domain::normal, gen, dtype));
    EXPECT_TRUE(matches(matmul(bb.cpu.transpose(1, 2), tb.cpu.transpose(1, 2)),
                        matmul(bb.gpu.transpose(1, 2), tb.gpu.transpose(1, 2)), tol))
        << "transposed matrices in a batch";
    const Both v = both(random_values({96}, Domain::normal, gen, dtype));
    EXPECT_TRUE(matches(matmul(v.cpu, b.cpu), matmul(v.gpu, b.gpu), tol)) << "vector @ matrix";
    EXPECT_TRUE(matches(matmul(a.cpu, v.cpu), matmul(a.gpu, v.gpu), tol)) << "matrix @ vector";
    EXPECT_TRUE(matches(matmul(v.cpu, v.cpu), matmul(v.gpu, v.gpu), tol)) << "dot";
    // K = 0 gives zeros; M = 0 an empty result.
    EXPECT_TRUE(same(matmul(zeros({4, 0}, {.dtype = dtype}), zeros({0, 3}, {.dtype = dtype})),
                     matmul(zeros({4, 0}, {.dtype = dtype, .device = kGpu}), zeros({0, 3}, {.dtype = dtype, .device = kGpu}))));
    EXPECT_TRUE(same(matmul(a.cpu.narrow(0, 0, 0), b.cpu), matmul(a.gpu.narrow(0, 0, 0), b.gpu)));
  }
}

TEST_F(Cuda, EmptyTensors) {
  for (DType dtype : kFloats) {
    const Both e = both(zeros({0, 3}, {.dtype = dtype}));
    EXPECT_TRUE(same(e.cpu + 1.0, e.gpu + 1.0));
    EXPECT_TRUE(same(exp(e.cpu), exp(e.gpu)));
    EXPECT_TRUE(same(sum(e.cpu), sum(e.gpu)));  // 0
    EXPECT_TRUE(same(sum(e.cpu, {0}), sum(e.gpu, {0})));  // zeros [3]
    EXPECT_TRUE(same(cat({e.cpu, ones({1, 3}, {.dtype = dtype})}), cat({e.gpu, ones({1, 3}, {.dtype = dtype, .device = kGpu})})));
    EXPECT_TRUE(same(e.cpu.t().contiguous(), e.gpu.t().contiguous()));
  }
}

// --- the fused optimizer steps ----------------------------------------------------------------------------

struct OptimizerCase {
  std::string name;
  std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)> make;
};

template <typename O, typename Options>
std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)> make_optimizer(Options o) {
  return [o](std::vector<Tensor> params) { return std::make_unique<O>(std::move(params), o); };
}

const std::vector<OptimizerCase>& optimizer_table() {
  using optim::SGD, optim::Adam, optim::AdamW, optim::RMSprop;
  using SO = optim::SGDOptions;
  using AO = optim::AdamOptions;
  using WO = optim::AdamWOptions;
  using RO = optim::RMSpropOptions;
  static const std::vector<OptimizerCase> table = {
      {"sgd", make_optimizer<SGD>(SO{.lr = 0.1})},
      {"sgd_momentum", make_optimizer<SGD>(SO{.lr = 0.05, .momentum = 0.9})},
      {"sgd_momentum_dampening_weight_decay", make_optimizer<SGD>(SO{.lr = 0.05, .momentum = 0.8, .dampening = 0.3, .weight_decay = 1e-2})},
      {"sgd_nesterov_weight_decay", make_optimizer<SGD>(SO{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-2, .nesterov = true})},
      {"sgd_maximize", make_optimizer<SGD>(SO{.lr = 0.05, .momentum = 0.5, .maximize = true})},
      {"adam", make_optimizer<Adam>(AO{.lr = 1e-2})},
      {"adam_weight_decay", make_optimizer<Adam>(AO{.lr = 1e-2, .weight_decay = 1e-2})},
      {"adam_amsgrad", make_optimizer<Adam>(AO{.lr = 1e-2, .beta1 = 0.8, .beta2 = 0.99, .amsgrad = true})},
      {"adamw", make_optimizer<AdamW>(WO{.lr = 1e-2, .weight_decay = 0.1})},
      {"adamw_amsgrad", make_optimizer<AdamW>(WO{.lr = 1e-2, .amsgrad = true})},
      {"rmsprop", make_optimizer<RMSprop>(RO{.lr = 1e-2})},
      {"rmsprop_weight_decay", make_optimizer<RMSprop>(RO{.lr = 1e-2, .weight_decay = 1e-2})},
      {"rmsprop_centered", make_optimizer<RMSprop>(RO{.lr = 1e-2, .centered = true})},
      {"rmsprop_momentum", make_optimizer<RMSprop>(RO{.lr = 1e-2, .momentum = 0.9})},
      {"rmsprop_centered_momentum", make_optimizer<RMSprop>(RO{.lr = 1e-2, .alpha = 0.9, .momentum = 0.5, .centered = true})},
  };
  return table;
}

struct OptimizerRun {
  std::vector<Tensor> params;
  optim::NamedTensors state;
};

// Five steps on three parameters with seeded gradients, on `device`.
OptimizerRun run_optimizer(const OptimizerCase& c, DType dtype, Device device) {
  Generator gen(10);
  OptimizerRun r;
  for (const Shape& s : {Shape{5, 7}, Shape{13}, Shape{2, 3, 4}})
    r.params.push_back(random_values(s, Domain::normal, gen, dtype, device).requires_grad_());
  const std::unique_ptr<optim::Optimizer> opt = c.make(r.params);
  for (int step = 0; step < 5; ++step) {
    Generator grads(600 + step);
    for (Tensor& p : r.params) p.set_grad(random_values(p.shape(), Domain::normal, grads, dtype, device));
    opt->step();
  }
  r.state = opt->state_dict();
  return r;
}

using OptimizerParam = std::tuple<size_t, DType>;
class CudaOptimizerParity : public CudaWithParam<OptimizerParam> {};

// The update is element-wise (kernels.h OptimizerStep, shared by both backends): the elementwise tolerance
// (sqrt and division round identically; FMA contraction may differ by an ulp per step).
TEST_P(CudaOptimizerParity, FiveSteps) {
  const auto [row, dtype] = GetParam();
  const OptimizerCase& c = optimizer_table()[row];
  const OptimizerRun cpu = run_optimizer(c, dtype, kCPU), gpu = run_optimizer(c, dtype, kGpu);
  for (size_t i = 0; i < cpu.params.size(); ++i)
    EXPECT_TRUE(matches(cpu.params[i], gpu.params[i], tolerance(Kind::elementwise, dtype))) << c.name << " parameter " << i;
  ASSERT_EQ(cpu.state.size(), gpu.state.size());
  for (size_t i = 0; i < cpu.state.size(); ++i) {
    const auto& [key, value] = cpu.state[i];
    ASSERT_EQ(gpu.state[i].first, key);
    if (value.device() == gpu.state[i].second.device()) {  // host scalars (step counts, rates): equal
      EXPECT_EQ(value.to_vector<double>(), gpu.state[i].second.to_vector<double>()) << key;
      continue;
    }
    EXPECT_TRUE(matches(value, gpu.state[i].second, tolerance(Kind::elementwise, dtype))) << c.name << " " << key;
  }
}

std::string optimizer_case_name(const ::testing::TestParamInfo<OptimizerParam>& info) {
  return optimizer_table()[std::get<0>(info.param)].name + "_" + std::string(dtype_name(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(Optimizers, CudaOptimizerParity,
                         ::testing::Combine(::testing::Range<size_t>(0, optimizer_table().size()),
                                            ::testing::Values(DType::f64, DType::f32)),
                         optimizer_case_name);

// =====================================================================================================
// (d) errors and memory
// =====================================================================================================

// Kernels find bad indices asynchronously; the error surfaces at the next call that checks the device,
// cuda::synchronize() at the latest, and is reported once: the device stays usable.
TEST_F(Cuda, OutOfRangeIndicesAreReportedBySynchronizeAtTheLatest) {
  Generator gen(11);
  const Tensor x = randn({3, 4}, {}, &gen).to(kGpu);
  const Tensor bad_gather = from_vector<int64_t>({0, 3, 1, 7, 2, 0}, {3, 2}).to(kGpu);  // 7 in a dim of size 4
  EXPECT_TRUE(test::throws_error(
      [&] {
        const Tensor y = gather(x, 1, bad_gather);
        cuda::synchronize(0);
      },
      {"out of range"}));
  EXPECT_NO_THROW(cuda::synchronize(0));
  EXPECT_TRUE(same(gather(x.to(kCPU), 1, kGatherIndex), gather(x, 1, kGatherIndex.to(kGpu))));

  EXPECT_TRUE(test::throws_error(
      [&] {
        const Tensor y = index_select(x, 0, from_vector<int64_t>({0, 5}).to(kGpu));  // 5 in a dim of size 3
        cuda::synchronize(0);
      },
      {"out of range"}));
  EXPECT_NO_THROW(cuda::synchronize(0));
  EXPECT_TRUE(test::throws_error(
      [&] {
        const Tensor loss = F::cross_entropy(x, from_vector<int64_t>({1, 4, 0}).to(kGpu));  // class 4 of 4
        cuda::synchronize(0);
      },
      {"cross_entropy", "target 4"}));
  EXPECT_NO_THROW(cuda::synchronize(0));
  EXPECT_TRUE(same(x.to(kCPU) * 2.0, x * 2.0));
}

TEST_F(Cuda, MemoryAllocatedFollowsTheTensors) {
  cuda::synchronize(0);
  const size_t before = cuda::memory_allocated(0);
  constexpr int64_t kFloats = int64_t{1} << 22;  // 16 MiB
  {
    const Tensor t = empty({kFloats}, {.device = kGpu});
    EXPECT_GE(cuda::memory_allocated(0), before + kFloats * 4);
    EXPECT_GE(cuda::memory_reserved(0), cuda::memory_allocated(0));
    EXPECT_EQ(memory_stats(kGpu).allocated, cuda::memory_allocated(0));
  }
  EXPECT_EQ(cuda::memory_allocated(0), before);
}

TEST_F(Cuda, PeakMemoryStaysUntilReset) {
  cuda::reset_peak_memory_stats(0);
  const size_t before = cuda::memory_allocated(0);
  EXPECT_EQ(cuda::max_memory_allocated(0), before);
  constexpr size_t kBytes = size_t{1} << 26;  // 64 MiB, freed at once
  { const Tensor t = empty({static_cast<int64_t>(kBytes / 4)}, {.device = kGpu}); }
  EXPECT_EQ(cuda::memory_allocated(0), before);
  EXPECT_GE(cuda::max_memory_allocated(0), before + kBytes);
  cuda::reset_peak_memory_stats(0);
  EXPECT_EQ(cuda::max_memory_allocated(0), cuda::memory_allocated(0));
}

TEST_F(Cuda, EmptyCacheReturnsTheCachedBlocks) {
  constexpr size_t kBytes = size_t{1} << 27;  // 128 MiB: cached once freed
  { const Tensor t = empty({static_cast<int64_t>(kBytes / 4)}, {.device = kGpu}); }
  const size_t reserved = cuda::memory_reserved(0);
  EXPECT_GE(reserved, cuda::memory_allocated(0) + kBytes);
  cuda::empty_cache(0);
  EXPECT_LE(cuda::memory_reserved(0), reserved - kBytes);
  EXPECT_GE(cuda::memory_reserved(0), cuda::memory_allocated(0));
}

TEST_F(Cuda, OutOfMemoryNamesTheDeviceTheSizesAndTheAdvice) {
  const size_t before = cuda::memory_allocated(0);
  EXPECT_TRUE(test::throws_error([] { empty({int64_t{1} << 48}, {.device = kGpu}); },  // 2^50 bytes: 1 PiB
                                 {"cuda:0", "out of memory", "device total", "lower the batch size"}));
  EXPECT_EQ(cuda::memory_allocated(0), before);
  EXPECT_NO_THROW(cuda::synchronize(0));
  EXPECT_EQ(ones({1024}, {.device = kGpu}).sum().item<float>(), 1024.0f);  // and it still serves normal requests
}

// =====================================================================================================
// (e) training: configs/fashion_mlp.yaml's model on both devices
// =====================================================================================================

nn::LayerSpec spec(const std::string& type, std::vector<std::pair<std::string, nn::SpecValue>> args = {}) {
  return {type, std::move(args), "fashion_mlp.yaml"};
}

// The model is built on the CPU on both sides (init draws from the CPU generator), then one copy moves:
// the initial weights are bit-equal. Dropout draws its masks on each model's device from a generator with
// the same seed; Philox gives the same masks there. The batches are synthetic (Fashion-MNIST's shape,
// labels from a fixed random linear "teacher", so the loss falls) and identical on both devices.
//
// Tolerance: the first loss within 1e-5 relative (one forward: only the matmuls' summation order differs,
// ~1e-6). After 200 AdamW steps within 1e-3 relative: each step re-injects f32 rounding differences of
// ~1e-6 and Adam's normalised update carries them on (in coordinates whose gradient is near zero it
// amplifies them), so the trajectories drift apart slowly; the expected drift after a few hundred steps is
// ~1e-5 to 1e-4 relative in the loss (an estimate: the test records the largest difference it saw as the
// property largest_relative_loss_difference, to tighten the bound after the first GPU run). 1e-3 leaves a
// margin yet catches a wrong kernel, which moves the loss by 1e-2 or more within a few steps.
TEST_F(Cuda, FashionMlpTrainsLikeTheCpuFor200Steps) {
  const std::vector<nn::LayerSpec> specs = {
      spec("flatten"),
      spec("linear", {{"out_features", int64_t{512}}}), spec("relu"), spec("dropout", {{"p", 0.2}}),
      spec("linear", {{"out_features", int64_t{256}}}), spec("relu"), spec("dropout", {{"p", 0.2}}),
      spec("linear", {{"out_features", int64_t{10}}})};
  Generator gen_cpu(0), gen_gpu(0);  // the config's seed; the generators outlive the models (dropout uses them)
  const auto model_cpu = nn::build_sequential(specs, {1, 28, 28}, &gen_cpu);
  const auto model_gpu = nn::build_sequential(specs, {1, 28, 28}, &gen_gpu);
  model_gpu->to(kGpu);
  const nn::NamedTensors pc = model_cpu->named_parameters(), pg = model_gpu->named_parameters();
  ASSERT_EQ(pc.size(), pg.size());
  for (size_t i = 0; i < pc.size(); ++i) EXPECT_TRUE(same(pc[i].second, pg[i].second)) << "initial " << pc[i].first;

  optim::AdamW opt_cpu(model_cpu->parameters(), {.lr = 1e-3, .weight_decay = 0.01});
  optim::AdamW opt_gpu(model_gpu->parameters(), {.lr = 1e-3, .weight_decay = 0.01});
  Generator teacher_gen(99);
  const Tensor teacher = randn({784, 10}, {}, &teacher_gen);
  const auto train_step = [](nn::Module& model, optim::Optimizer& opt, const Tensor& x, const Tensor& y) {
    opt.zero_grad();
    const Tensor loss = F::cross_entropy(model.forward(x), y);
    loss.backward();
    opt.step();
    return loss.item<double>();
  };
  std::vector<double> loss_cpu, loss_gpu;
  double worst = 0;
  for (int step = 0; step < 200; ++step) {
    Generator data(1000 + step);
    const Tensor x = randn({128, 1, 28, 28}, {}, &data);
    const Tensor y = argmax(matmul(x.flatten(1), teacher), 1);
    loss_cpu.push_back(train_step(*model_cpu, opt_cpu, x, y));
    loss_gpu.push_back(train_step(*model_gpu, opt_gpu, x.to(kGpu), y.to(kGpu)));
    worst = std::max(worst, std::abs(loss_gpu.back() - loss_cpu.back()) / loss_cpu.back());
  }
  RecordProperty("largest_relative_loss_difference", number(worst));
  EXPECT_NEAR(loss_gpu.front(), loss_cpu.front(), 1e-5 * loss_cpu.front());
  EXPECT_LT(loss_cpu.back(), 0.7 * loss_cpu.front()) << "the model did not learn: the comparison would say little";
  EXPECT_NEAR(loss_gpu.back(), loss_cpu.back(), 1e-3 * loss_cpu.back())
      << "step 200; largest relative difference over the run " << worst;
  for (const Tensor& p : model_gpu->parameters()) EXPECT_EQ(p.device(), kGpu);
}

}  // namespace
}  // namespace ember
