// Reductions: sum/mean/max/min/amax/amin/argmax/argmin over dims with keepdim, ties, NaN, integers, and
// inputs big enough to take the multi-threaded paths (checked against double-precision references and
// for bit-identical results whatever EMBER_NUM_THREADS is).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include <ember/ember.h>

#include "test_helpers.h"

using namespace ember;
using ember::test::close_to;
using ember::test::make;
using ember::test::throws_error;

namespace {

// rows [3, -1, 4] and [1, 5, -9]
const std::vector<double> kX = {3, -1, 4, 1, 5, -9};
const Shape k23 = {2, 3};

// op(x) for every float dtype and layout of x equals `expected` with `out_shape` and dtype `out` (the
// input's dtype when not given).
void check_reduce(const char* name, const std::function<Tensor(const Tensor&)>& op, const std::vector<double>& x,
                  const Shape& shape, const std::vector<double>& expected, const Shape& out_shape,
                  std::optional<DType> out = std::nullopt) {
  for (DType dtype : ember::test::kFloatTypes)
    for (const auto& l : ember::test::layouts(x, shape, dtype)) {
      SCOPED_TRACE(std::string(name) + " " + std::string(dtype_name(dtype)) + " " + l.name);
      const Tensor y = op(l.t);
      EXPECT_EQ(y.dtype(), out.value_or(dtype));
      EXPECT_TRUE(close_to(y, expected, out_shape));
    }
}

}  // namespace

TEST(Reduce, SumMean) {
  check_reduce("sum", [](const Tensor& t) { return t.sum(); }, kX, k23, {3}, {});
  check_reduce("sum 0", [](const Tensor& t) { return t.sum({0}); }, kX, k23, {4, 4, -5}, {3});
  check_reduce("sum 0 keep", [](const Tensor& t) { return t.sum({0}, true); }, kX, k23, {4, 4, -5}, {1, 3});
  check_reduce("sum -1", [](const Tensor& t) { return ember::sum(t, {-1}); }, kX, k23, {6, -3}, {2});
  check_reduce("sum 1 keep", [](const Tensor& t) { return t.sum({1}, true); }, kX, k23, {6, -3}, {2, 1});
  check_reduce("sum 0,1", [](const Tensor& t) { return t.sum({0, 1}); }, kX, k23, {3}, {});
  check_reduce("sum -1,0 keep", [](const Tensor& t) { return t.sum({-1, 0}, true); }, kX, k23, {3}, {1, 1});
  check_reduce("mean", [](const Tensor& t) { return t.mean(); }, kX, k23, {0.5}, {});
  check_reduce("mean 0", [](const Tensor& t) { return ember::mean(t, {0}); }, kX, k23, {2, 2, -2.5}, {3});
  check_reduce("mean 1 keep", [](const Tensor& t) { return t.mean({1}, true); }, kX, k23, {2, -1}, {2, 1});
}

TEST(Reduce, MaxMin) {
  check_reduce("max", [](const Tensor& t) { return t.max(); }, kX, k23, {5}, {});
  check_reduce("min", [](const Tensor& t) { return ember::min(t); }, kX, k23, {-9}, {});
  check_reduce("amax 0", [](const Tensor& t) { return amax(t, {0}); }, kX, k23, {3, 5, 4}, {3});
  check_reduce("amax 1 keep", [](const Tensor& t) { return amax(t, {1}, true); }, kX, k23, {4, 5}, {2, 1});
  check_reduce("amin 1", [](const Tensor& t) { return amin(t, {1}); }, kX, k23, {-1, -9}, {2});
  check_reduce("amin 0,1", [](const Tensor& t) { return amin(t, {0, 1}); }, kX, k23, {-9}, {});
  check_reduce("max(x, 1) values", [](const Tensor& t) { return std::get<0>(ember::max(t, 1)); }, kX, k23, {4, 5}, {2});
  check_reduce("max(x, 1) indices", [](const Tensor& t) { return std::get<1>(ember::max(t, 1)); }, kX, k23, {2, 1}, {2},
               DType::i64);
  check_reduce("min(x, 0) values keep", [](const Tensor& t) { return std::get<0>(ember::min(t, 0, true)); }, kX, k23,
               {1, -1, -9}, {1, 3});
  check_reduce("min(x, 0) indices keep", [](const Tensor& t) { return std::get<1>(ember::min(t, 0, true)); }, kX, k23,
               {1, 0, 1}, {1, 3}, DType::i64);
  // Infinities are values like any other (the identity must not leak into the result).
  check_reduce("max -inf", [](const Tensor& t) { return t.max(); }, {-INFINITY, -INFINITY}, {2}, {-INFINITY}, {});
  check_reduce("min inf", [](const Tensor& t) { return t.min(); }, {INFINITY, INFINITY}, {2}, {INFINITY}, {});
  check_reduce("amax -inf rows", [](const Tensor& t) { return amax(t, {1}); }, {-INFINITY, -INFINITY, 1, -INFINITY},
               {2, 2}, {-INFINITY, 1}, {2});
}

TEST(Reduce, ArgmaxArgmin) {
  const DType i64 = DType::i64;
  check_reduce("argmax 0", [](const Tensor& t) { return t.argmax(0); }, kX, k23, {0, 1, 0}, {3}, i64);
  check_reduce("argmax 1", [](const Tensor& t) { return t.argmax(1); }, kX, k23, {2, 1}, {2}, i64);
  check_reduce("argmax -1 keep", [](const Tensor& t) { return t.argmax(-1, true); }, kX, k23, {2, 1}, {2, 1}, i64);
  check_reduce("argmin 1", [](const Tensor& t) { return t.argmin(1); }, kX, k23, {1, 2}, {2}, i64);
  check_reduce("argmax flat", [](const Tensor& t) { return ember::argmax(t); }, kX, k23, {4}, {}, i64);
  check_reduce("argmin flat", [](const Tensor& t) { return ember::argmin(t); }, kX, k23, {5}, {}, i64);
  // Ties: the first index wins, in logical order whatever the layout.
  const std::vector<double> ties = {1, 3, 3, 2, 2, 1};
  check_reduce("argmax ties", [](const Tensor& t) { return t.argmax(1); }, ties, k23, {1, 0}, {2}, i64);
  check_reduce("argmin ties", [](const Tensor& t) { return t.argmin(1); }, ties, k23, {0, 2}, {2}, i64);
  check_reduce("argmax ties dim 0", [](const Tensor& t) { return t.argmax(0); }, {2, 2, 2, 2}, {2, 2}, {0, 0}, {2}, i64);
  check_reduce("argmin ties flat", [](const Tensor& t) { return ember::argmin(t); }, ties, k23, {0}, {}, i64);
  check_reduce("max ties", [](const Tensor& t) { return std::get<1>(ember::max(t, 1)); }, ties, k23, {1, 0}, {2}, i64);
  // Integer and bool inputs.
  const Tensor i = make({4, 9, 9, -1}, {2, 2}, DType::i64);
  EXPECT_EQ(i.argmax(1).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(ember::argmax(from_vector<bool>({false, true, true})).item<int64_t>(), 1);
}

TEST(Reduce, NaNPropagates) {
  const std::vector<double> x = {1, NAN, 3, 4, 5, 6};
  check_reduce("sum", [](const Tensor& t) { return t.sum({1}); }, x, k23, {NAN, 15}, {2});
  check_reduce("mean", [](const Tensor& t) { return t.mean(); }, x, k23, {NAN}, {});
  check_reduce("max", [](const Tensor& t) { return t.max(); }, x, k23, {NAN}, {});
  check_reduce("min", [](const Tensor& t) { return t.min(); }, x, k23, {NAN}, {});
  check_reduce("amax 1", [](const Tensor& t) { return amax(t, {1}); }, x, k23, {NAN, 6}, {2});
  check_reduce("amin 0", [](const Tensor& t) { return amin(t, {0}); }, x, k23, {1, NAN, 3}, {3});
  check_reduce("argmax 1", [](const Tensor& t) { return t.argmax(1); }, x, k23, {1, 2}, {2}, DType::i64);
  check_reduce("argmin 1", [](const Tensor& t) { return t.argmin(1); }, x, k23, {1, 0}, {2}, DType::i64);
  check_reduce("argmax first NaN", [](const Tensor& t) { return t.argmax(0); }, {NAN, 1, 2, NAN}, {4}, {0}, {},
               DType::i64);
  check_reduce("argmin later NaN", [](const Tensor& t) { return t.argmin(0); }, {1, 0, NAN, NAN}, {4}, {2}, {},
               DType::i64);
  check_reduce("max(x,1)", [](const Tensor& t) { return std::get<0>(ember::max(t, 1)); }, x, k23, {NAN, 6}, {2});
}

TEST(Reduce, ThreeDims) {
  for (DType dtype : ember::test::kFloatTypes) {
    const Tensor t = arange(24, {.dtype = dtype}).reshape({2, 3, 4});  // t[i][j][k] = 12 i + 4 j + k
    EXPECT_TRUE(close_to(t.sum({0, 2}), {60, 92, 124}, {3}));
    EXPECT_TRUE(close_to(t.sum({1}), {12, 15, 18, 21, 48, 51, 54, 57}, {2, 4}));
    EXPECT_TRUE(close_to(t.mean({-1}, true), {1.5, 5.5, 9.5, 13.5, 17.5, 21.5}, {2, 3, 1}));
    EXPECT_TRUE(close_to(amax(t, {0, 1}), {20, 21, 22, 23}, {4}));
    EXPECT_TRUE(close_to(t.permute({2, 0, 1}).sum({2}), {12, 48, 15, 51, 18, 54, 21, 57}, {4, 2}));
    EXPECT_TRUE(close_to(t.permute({2, 0, 1}).argmax(1), std::vector<double>(12, 1.0), {4, 3}));
    // Reducing an expanded (stride-0) tensor counts each repeated element.
    EXPECT_TRUE(close_to(make({1, 2}, {2, 1}, dtype).expand({2, 5}).sum({1}), {5, 10}, {2}));
    EXPECT_TRUE(close_to(make({1, 2}, {2, 1}, dtype).expand({2, 5}).sum(), {15}, {}));
    // Size-1 dims and 0-d tensors.
    EXPECT_TRUE(close_to(make({7}, {1, 1}, dtype).sum({1}), {7}, {1}));
    EXPECT_TRUE(close_to(scalar_tensor(7, {.dtype = dtype}).sum(), {7}, {}));
    EXPECT_TRUE(close_to(scalar_tensor(7, {.dtype = dtype}).argmax(0), {0}, {}));
  }
}

TEST(Reduce, IntegerBoolAndEmpty) {
  const Tensor i = from_vector<int64_t>({int64_t{1} << 40, 1, -3});
  EXPECT_EQ(i.sum().dtype(), DType::i64);
  EXPECT_EQ(i.sum().item<int64_t>(), (int64_t{1} << 40) - 2);
  EXPECT_EQ(i.max().item<int64_t>(), int64_t{1} << 40);
  EXPECT_EQ(i.min().item<int64_t>(), -3);
  EXPECT_EQ(i.mean().dtype(), DType::f32);
  EXPECT_TRUE(close_to(make({1, 2, 4}, {3}, DType::i64).mean(), {7.0 / 3}, {}));
  const Tensor m = from_vector<bool>({true, false, true, true}, {2, 2});
  EXPECT_EQ(m.sum().dtype(), DType::i64);  // a mask sum counts
  EXPECT_EQ(m.sum().item<int64_t>(), 3);
  EXPECT_EQ(m.sum({0}).to_vector<int64_t>(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(m.max().item<int64_t>(), 1);
  EXPECT_EQ((make({1, 5, 3}, {3}) > 2).sum().item<int64_t>(), 2);
  // Empty reductions: sum is 0, mean is NaN, max has no identity (test_errors checks the message).
  EXPECT_TRUE(close_to(zeros({0}).sum(), {0}, {}));
  EXPECT_TRUE(close_to(zeros({2, 0}).sum({1}), {0, 0}, {2}));
  EXPECT_TRUE(close_to(zeros({0}, {.dtype = DType::f64}).mean(), {NAN}, {}));
}

// --- big inputs: the multi-threaded paths -----------------------------------------------------------------

namespace {

constexpr int64_t kBig = 3'000'000;

double reference_sum(const std::vector<double>& v, int64_t begin = 0, int64_t end = -1, int64_t step = 1) {
  long double s = 0;
  if (end < 0) end = static_cast<int64_t>(v.size());
  for (int64_t i = begin; i < end; i += step) s += v[i];
  return static_cast<double>(s);
}

}  // namespace

TEST(ReduceBig, SumAgainstDoubleReference) {
  Generator g(11);
  for (DType dtype : ember::test::kFloatTypes) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    // Values around 0.1 (not exactly representable): an f32 accumulator would drift by ~1e-3 here.
    const Tensor x = rand({kBig}, {.dtype = dtype}, &g) * 0.1 + 0.05;
    const std::vector<double> v = x.to_vector<double>();
    const double rtol = dtype == DType::f32 ? 1.2e-7 : 1e-11;  // f32: the double sum rounded once
    EXPECT_TRUE(close_to(x.sum(), {reference_sum(v)}, {}, rtol, 0));
    EXPECT_TRUE(close_to(x.mean(), {reference_sum(v) / kBig}, {}, rtol, 0));
    // Few long rows (threads split each row) and many rows (threads split the rows).
    const Tensor rows = x.view({3, kBig / 3});
    EXPECT_TRUE(close_to(rows.sum({1}), {reference_sum(v, 0, kBig / 3), reference_sum(v, kBig / 3, 2 * kBig / 3),
                                         reference_sum(v, 2 * kBig / 3, kBig)}, {3}, rtol, 0));
    const Tensor many = x.view({1000, 3000});
    const Tensor col_sums = many.sum({0});  // strided reduction over rows
    const std::vector<double> cs = col_sums.to_vector<double>();
    for (int64_t j : {0, 1, 1234, 2999}) {
      const double ref = reference_sum(v, j, kBig, 3000);
      EXPECT_NEAR(cs[j], ref, rtol * ref) << j;
    }
    // The same on a transposed view: sums over the contiguous dim of the storage.
    const std::vector<double> rs = many.t().sum({1}).to_vector<double>();
    for (int64_t j : {0, 2999}) {
      const double ref = reference_sum(v, j, kBig, 3000);
      EXPECT_NEAR(rs[j], ref, rtol * ref) << j;
    }
    const std::vector<double> row_sums = many.t().sum({0}).to_vector<double>();
    const double last_row = reference_sum(v, 999 * 3000, kBig);
    EXPECT_NEAR(row_sums[999], last_row, rtol * last_row);
  }
}

TEST(ReduceBig, MaxArgmaxAndNaN) {
  Generator g(12);
  for (DType dtype : ember::test::kFloatTypes) {
    Tensor x = rand({kBig}, {.dtype = dtype}, &g);
    x.narrow(0, 2'345'678, 1).fill_(3);
    x.narrow(0, 7, 1).fill_(-3);
    EXPECT_TRUE(close_to(x.max(), {3}, {}));
    EXPECT_TRUE(close_to(x.min(), {-3}, {}));
    EXPECT_EQ(ember::argmax(x).item<int64_t>(), 2'345'678);
    EXPECT_EQ(ember::argmin(x).item<int64_t>(), 7);
    const Tensor rows = x.view({2, kBig / 2});
    const std::vector<double> v = x.to_vector<double>();
    const double first_half_max = *std::max_element(v.begin(), v.begin() + kBig / 2);
    EXPECT_LT(first_half_max, 1.0);
    EXPECT_TRUE(close_to(amax(rows, {1}), {first_half_max, 3}, {2}));
    EXPECT_EQ(rows.argmax(1).to_vector<int64_t>()[1], 2'345'678 - kBig / 2);
    x.narrow(0, 2'999'999, 1).fill_(NAN);
    EXPECT_TRUE(close_to(x.max(), {NAN}, {}));
    EXPECT_TRUE(close_to(x.sum(), {NAN}, {}));
    EXPECT_EQ(ember::argmax(x).item<int64_t>(), 2'999'999);
  }
}

// Runs this test in child processes with EMBER_NUM_THREADS = 1, 2, 3: the bits of every result must be
// the same (the full sum, a few long rows, many rows). The child prints its results and returns.
TEST(ReduceBig, ResultsDoNotDependOnThreadCount) {
  if (std::getenv("EMBER_TEST_DUMP_REDUCTIONS") != nullptr) {
    Generator g(13);
    for (DType dtype : ember::test::kFloatTypes) {
      const Tensor x = randn({kBig}, {.dtype = dtype}, &g);
      for (const Tensor& r : {x.sum(), x.mean(), x.view({2, kBig / 2}).sum({1}), x.view({3, kBig / 3}).sum({1}),
                              x.view({6, kBig / 6}).mean({1}), x.view({3000, 1000}).sum({0})}) {
        for (double v : r.to_vector<double>()) {
          uint64_t bits;
          std::memcpy(&bits, &v, sizeof bits);
          std::printf("RESULT %016llx\n", static_cast<unsigned long long>(bits));
        }
      }
    }
    return;
  }
  const std::string name = std::string(::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name()) +
                           "." + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  // Resolved here: inside popen's shell, /proc/self/exe would be the shell.
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<std::string> outputs;
  for (int threads : {1, 2, 3}) {
    const std::string cmd = "EMBER_TEST_DUMP_REDUCTIONS=1 EMBER_NUM_THREADS=" + std::to_string(threads) +
                            " '" + self + "' --gtest_filter=" + name + " 2>/dev/null";
    FILE* pipe = popen(cmd.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string results;
    char line[256];
    while (std::fgets(line, sizeof line, pipe) != nullptr)
      if (std::strncmp(line, "RESULT ", 7) == 0) results += line;
    ASSERT_EQ(pclose(pipe), 0) << cmd;
    ASSERT_FALSE(results.empty()) << cmd;
    outputs.push_back(results);
  }
  EXPECT_EQ(outputs[0], outputs[1]) << "EMBER_NUM_THREADS=1 vs 2";
  EXPECT_EQ(outputs[0], outputs[2]) << "EMBER_NUM_THREADS=1 vs 3";
}
