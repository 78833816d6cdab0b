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

#include "golden_rows.h"
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

// --- reductions, round 2: var/std, logsumexp, cumsum, sort/argsort/topk ---------------------------------------

namespace {

// An op's result: values (undefined for argsort) and indices (undefined where the op has none).
using Result = std::pair<Tensor, Tensor>;
Result only(const Tensor& t) { return {t, Tensor()}; }
Result both(const std::tuple<Tensor, Tensor>& t) { return {std::get<0>(t), std::get<1>(t)}; }

// The cases of tools/make_reduce_golden.py, with the same arguments, through both spellings (free function
// and method) and every overload form (Shape, single int dim, the unbiased bool).
const std::vector<std::pair<const char*, std::function<Result(const Tensor&)>>>& golden_reduce_cases() {
  static const std::vector<std::pair<const char*, std::function<Result(const Tensor&)>>> cases = {
      {"var_all", [](const Tensor& x) { return only(var(x)); }},
      {"var_unbiased_false", [](const Tensor& x) { return only(x.var(false)); }},
      {"var_dim1", [](const Tensor& x) { return only(var(x, 1)); }},
      {"var_dims02_keepdim_c0", [](const Tensor& x) { return only(x.var({0, 2}, 0, true)); }},
      {"var_dim0_c2", [](const Tensor& x) { return only(var(x, 0, 2)); }},
      {"var_dim1_c4", [](const Tensor& x) { return only(var(x, {1}, 4)); }},
      {"std_all", [](const Tensor& x) { return only(x.std()); }},
      {"std_unbiased_false", [](const Tensor& x) { return only(ember::std(x, false)); }},
      {"std_dim0_keepdim", [](const Tensor& x) { return only(ember::std(x, 0, 1, true)); }},
      {"std_dim_m1_c0", [](const Tensor& x) { return only(x.std(-1, 0)); }},
      {"std_const_rows", [](const Tensor& x) { return only(ember::std(x, {1})); }},
      {"logsumexp_dim1", [](const Tensor& x) { return only(logsumexp(x, 1)); }},
      {"logsumexp_dims02_keepdim", [](const Tensor& x) { return only(x.logsumexp({0, 2}, true)); }},
      {"logsumexp_big", [](const Tensor& x) { return only(x.logsumexp(-1)); }},
      {"logsumexp_infs", [](const Tensor& x) { return only(logsumexp(x, {1})); }},
      {"cumsum_dim1", [](const Tensor& x) { return only(cumsum(x, 1)); }},
      {"cumsum_dim0", [](const Tensor& x) { return only(x.cumsum(0)); }},
      {"cumsum_dim_m1", [](const Tensor& x) { return only(x.cumsum(-1)); }},
      {"sort", [](const Tensor& x) { return both(sort(x)); }},
      {"sort_descending", [](const Tensor& x) { return both(x.sort(-1, true)); }},
      {"sort_dim0", [](const Tensor& x) { return both(sort(x, 0, false, true)); }},
      {"sort_3d_dim1", [](const Tensor& x) { return both(x.sort(1)); }},
      {"argsort_descending", [](const Tensor& x) { return Result{Tensor(), argsort(x, 1, true, true)}; }},
      {"topk_3", [](const Tensor& x) { return both(topk(x, 3)); }},
      {"topk_2_smallest_dim0", [](const Tensor& x) { return both(x.topk(2, 0, false)); }},
      {"topk_nan", [](const Tensor& x) { return both(topk(x, 2)); }},
      {"topk_nan_smallest", [](const Tensor& x) { return both(topk(x, 3, -1, false)); }},
  };
  return cases;
}

// Largest |a - b| / (atol + rtol·|b|): at most 1 when a matches b (NaN matches NaN, infinities must be equal).
class ReduceGolden : public ::testing::TestWithParam<std::tuple<size_t, DType>> {};

// f64 agrees to ~1e-13; f32 to a few ulp.
TEST_P(ReduceGolden, ForwardIndicesAndGradient) {
  const auto [row, dtype] = GetParam();
  const auto& [name, op] = golden_reduce_cases()[row];
  const std::string key = std::string(name) + (dtype == DType::f32 ? ".f32." : ".f64.");
  const char* file = "reduce_golden.safetensors";
  const bool has_values = test::golden_file(file).find(key + "y") != nullptr;
  Tensor x = test::golden(file, key + "x").clone().requires_grad_(has_values);
  ASSERT_EQ(x.dtype(), dtype);
  const auto [values, indices] = op(x);
  const double rtol = dtype == DType::f32 ? 4e-6 : 1e-12, atol = dtype == DType::f32 ? 1e-6 : 1e-14;
  if (test::golden_file(file).find(key + "i") != nullptr) {
    ASSERT_TRUE(indices.defined()) << name;
    EXPECT_EQ(indices.dtype(), DType::i64);
    EXPECT_EQ(indices.shape(), test::golden(file, key + "i").shape()) << name;
    EXPECT_EQ(indices.to_vector<int64_t>(), test::golden(file, key + "i").to_vector<int64_t>()) << name << " indices";
  }
  if (!has_values) return;
  ASSERT_EQ(values.dtype(), dtype);
  EXPECT_LE(test::golden_mismatch(values, test::golden(file, key + "y"), rtol, atol), 1.0) << name << " forward, " << dtype_name(dtype);
  (values * test::golden(file, key + "r")).sum().backward();
  EXPECT_LE(test::golden_mismatch(x.grad(), test::golden(file, key + "gx"), rtol, atol), 1.0) << name << " gradient, " << dtype_name(dtype);
}

INSTANTIATE_TEST_SUITE_P(, ReduceGolden, test::golden_rows(golden_reduce_cases().size()),
                         test::golden_row_name([](size_t row) { return golden_reduce_cases()[row].first; }));

}  // namespace

// Integer and bool inputs against PyTorch: cumsum counts in i64, sort orders them stably, logsumexp gives f32.
TEST(ReduceGoldenInt, IntegerAndBool) {
  const char* file = "reduce_golden.safetensors";
  const auto g = [&](const std::string& k) { return test::golden(file, k); };
  for (const char* name : {"cumsum_i64", "cumsum_bool"}) {
    const Tensor y = cumsum(g(std::string(name) + ".x"), 1);
    EXPECT_EQ(y.dtype(), DType::i64) << name;
    EXPECT_EQ(y.to_vector<int64_t>(), g(std::string(name) + ".y").to_vector<int64_t>()) << name;
  }
  for (auto [name, descending] : {std::pair{"sort_i64", false}, {"sort_i64_descending", true}}) {
    const auto [v, i] = g(std::string(name) + ".x").sort(1, descending, true);
    EXPECT_EQ(v.to_vector<int64_t>(), g(std::string(name) + ".y").to_vector<int64_t>()) << name;
    EXPECT_EQ(i.to_vector<int64_t>(), g(std::string(name) + ".i").to_vector<int64_t>()) << name;
  }
  const auto [bv, bi] = sort(g("sort_bool.x"), 1);
  EXPECT_EQ(bv.dtype(), DType::b8);
  EXPECT_EQ(bv.to_vector<bool>(), g("sort_bool.y").to_vector<bool>());
  EXPECT_EQ(bi.to_vector<int64_t>(), g("sort_bool.i").to_vector<int64_t>());
  const Tensor lse = logsumexp(g("logsumexp_i64.x"), 1);
  EXPECT_EQ(lse.dtype(), DType::f32);
  EXPECT_TRUE(close_to(lse, g("logsumexp_i64.y").to_vector<double>(), {2}));
}

// A single integer dim is a dim, never keepdim; the unbiased bool of var/std is not a dim either.
template <typename A>
concept SumTakes = requires(Tensor t, A a) { ember::sum(t, a); };
template <typename A>
concept SumMethodTakes = requires(Tensor t, A a) { t.sum(a); };
static_assert(SumTakes<int> && SumTakes<int64_t> && SumTakes<Shape> && !SumTakes<bool>);
static_assert(SumMethodTakes<int> && SumMethodTakes<long> && !SumMethodTakes<bool>);

TEST(ReduceRound2, SingleIntDims) {
  const Tensor x = make(kX, k23, DType::f64);
  EXPECT_TRUE(close_to(sum(x, 1), {6, -3}, {2}));
  EXPECT_TRUE(close_to(x.sum(1), {6, -3}, {2}));
  EXPECT_TRUE(close_to(x.sum(-1, true), {6, -3}, {2, 1}));
  EXPECT_TRUE(close_to(sum(x, {1}), {6, -3}, {2}));
  EXPECT_TRUE(close_to(mean(x, 0), {2, 2, -2.5}, {3}));
  EXPECT_TRUE(close_to(x.mean(0, true), {2, 2, -2.5}, {1, 3}));
  EXPECT_TRUE(close_to(amax(x, 1), {4, 5}, {2}));
  EXPECT_TRUE(close_to(x.amax(0), {3, 5, 4}, {3}));
  EXPECT_TRUE(close_to(amin(x, -1, true), {-1, -9}, {2, 1}));
  EXPECT_TRUE(close_to(x.amin({0, 1}), {-9}, {}));
  const int64_t d = 1;
  EXPECT_TRUE(close_to(x.sum(d), {6, -3}, {2}));
  // var(x, 1) reduces dim 1; var(x, true) is the unbiased variance of all elements; var(x, {1}) is dim 1.
  EXPECT_TRUE(close_to(var(x, 1), {7, 52}, {2}));
  EXPECT_TRUE(close_to(x.var({1}), {7, 52}, {2}));
  EXPECT_TRUE(close_to(var(x, true), {26.3}, {}));
  EXPECT_TRUE(close_to(x.var(false), {131.5 / 6}, {}));
  EXPECT_TRUE(close_to(var(x, {1}, false), {14.0 / 3, 104.0 / 3}, {2}));  // a bool as correction: unbiased
  EXPECT_TRUE(close_to(ember::std(x, 1), {std::sqrt(7.0), std::sqrt(52.0)}, {2}));
  EXPECT_TRUE(close_to(x.std(true), {std::sqrt(26.3)}, {}));
  EXPECT_TRUE(close_to(logsumexp(x, 0), {std::log(std::exp(3) + std::exp(1)), std::log(std::exp(-1) + std::exp(5)),
                                          std::log(std::exp(4) + std::exp(-9))}, {3}));
}

TEST(ReduceRound2, Methods) {
  const Tensor x = make(kX, k23);
  const auto [v, i] = x.max(1);
  EXPECT_TRUE(close_to(v, {4, 5}, {2}));
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{2, 1}));
  const auto [mv, mi] = x.min(0, true);
  EXPECT_TRUE(close_to(mv, {1, -1, -9}, {1, 3}));
  EXPECT_EQ(mi.to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(x.argmax().item<int64_t>(), 4);  // flattened
  EXPECT_EQ(x.argmin().item<int64_t>(), 5);
  EXPECT_TRUE(close_to(x.softmax(1), softmax(x, 1).to_vector<double>(), k23));
  EXPECT_TRUE(close_to(x.log_softmax(0), log_softmax(x, 0).to_vector<double>(), k23));
  EXPECT_EQ(x.argsort(1).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 2, 2, 0, 1}));
  EXPECT_EQ(x.argsort(0, true).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 0, 1, 0, 1}));
  const auto [tv, ti] = x.topk(1);
  EXPECT_TRUE(close_to(tv, {4, 5}, {2, 1}));
  EXPECT_EQ(ti.to_vector<int64_t>(), (std::vector<int64_t>{2, 1}));
}

// Every layout (contiguous, transposed, strided slice) gives the same answers.
TEST(ReduceRound2, Layouts) {
  const DType i64 = DType::i64;
  check_reduce("cumsum 1", [](const Tensor& t) { return t.cumsum(1); }, kX, k23, {3, 2, 6, 1, 6, -3}, k23);
  check_reduce("cumsum 0", [](const Tensor& t) { return cumsum(t, 0); }, kX, k23, {3, -1, 4, 4, 4, -5}, k23);
  check_reduce("sort 1", [](const Tensor& t) { return std::get<0>(t.sort(1)); }, kX, k23, {-1, 3, 4, -9, 1, 5}, k23);
  check_reduce("sort 1 idx", [](const Tensor& t) { return std::get<1>(t.sort(1)); }, kX, k23, {1, 0, 2, 2, 0, 1}, k23, i64);
  check_reduce("sort 0 desc", [](const Tensor& t) { return std::get<0>(t.sort(0, true)); }, kX, k23, {3, 5, 4, 1, -1, -9}, k23);
  check_reduce("topk 2", [](const Tensor& t) { return std::get<0>(topk(t, 2)); }, kX, k23, {4, 3, 5, 1}, {2, 2});
  check_reduce("topk 2 idx", [](const Tensor& t) { return std::get<1>(topk(t, 2)); }, kX, k23, {2, 0, 1, 0}, {2, 2}, i64);
  check_reduce("var 1", [](const Tensor& t) { return t.var(1); }, kX, k23, {7, 52}, {2});
  check_reduce("var 0 c0 keep", [](const Tensor& t) { return var(t, 0, 0, true); }, kX, k23, {1, 9, 42.25}, {1, 3});
  check_reduce("lse all", [](const Tensor& t) { return logsumexp(t, {}); }, kX, k23,
               {std::log(std::exp(3) + std::exp(-1) + std::exp(4) + std::exp(1) + std::exp(5) + std::exp(-9))}, {});
}

TEST(ReduceRound2, EdgeCases) {
  // 0-d: a row of one element.
  const Tensor s = scalar_tensor(2.5);
  EXPECT_TRUE(close_to(s.cumsum(0), {2.5}, {}));
  EXPECT_TRUE(close_to(std::get<0>(s.sort()), {2.5}, {}));
  EXPECT_EQ(std::get<1>(s.sort()).item<int64_t>(), 0);
  EXPECT_TRUE(close_to(std::get<0>(topk(s, 1)), {2.5}, {}));
  EXPECT_TRUE(close_to(std::get<0>(topk(s, 0)), {2.5}, {}));  // as PyTorch 1.13
  EXPECT_TRUE(close_to(s.var(), {NAN}, {}));
  EXPECT_TRUE(close_to(logsumexp(s, 0), {2.5}, {}));
  // Empty: sort and cumsum keep the shape; var is NaN; logsumexp is -inf; topk 0.
  const Tensor e = zeros({2, 0});
  EXPECT_EQ(std::get<0>(e.sort(1)).shape(), (Shape{2, 0}));
  EXPECT_EQ(std::get<1>(e.sort(1)).shape(), (Shape{2, 0}));
  EXPECT_EQ(e.cumsum(1).shape(), (Shape{2, 0}));
  EXPECT_TRUE(close_to(e.var(1), {NAN, NAN}, {2}));
  EXPECT_TRUE(close_to(zeros({0}).var(), {NAN}, {}));
  EXPECT_TRUE(close_to(logsumexp(e, 1), {-INFINITY, -INFINITY}, {2}));
  EXPECT_EQ(std::get<0>(topk(e, 0, 1)).shape(), (Shape{2, 0}));
  EXPECT_EQ(std::get<0>(topk(make(kX, k23), 0)).shape(), (Shape{2, 0}));
  // N = 1: var divides by 0.
  EXPECT_TRUE(close_to(make({1, 2}, {2, 1}).var(1), {NAN, NAN}, {2}));
  // std's gradient is 0 where std is 0 (not NaN).
  Tensor c = full({3}, 1.5).requires_grad_();
  c.std().backward();
  EXPECT_TRUE(close_to(c.grad(), {0, 0, 0}, {3}));
  // cumsum's gradient is the reversed running sum: d(Σ_k w_k cumsum_k)/dx_i = Σ_{k≥i} w_k.
  Tensor x = make({1, 2, 3, 4}, {4}, DType::f64).requires_grad_();
  (x.cumsum(0) * make({1, 10, 100, 1000}, {4}, DType::f64)).sum().backward();
  EXPECT_TRUE(close_to(x.grad(), {1111, 1110, 1100, 1000}, {4}));
  // topk's gradient reaches only the selected elements.
  Tensor t = make({5, 1, 4, 2}, {4}, DType::f64).requires_grad_();
  (std::get<0>(t.topk(2)) * make({10, 20}, {2}, DType::f64)).sum().backward();
  EXPECT_TRUE(close_to(t.grad(), {10, 0, 20, 0}, {4}));
  // argsort and the indices carry no gradient.
  EXPECT_FALSE(std::get<1>(t.sort()).requires_grad());
  EXPECT_FALSE(t.argsort().requires_grad());
}

TEST(ReduceRound2, Errors) {
  const Tensor x = make(kX, k23);
  const Tensor i = from_vector<int64_t>({1, 2, 3});
  EXPECT_TRUE(throws_error([&] { var(i); }, {"var: needs a floating tensor", "i64", ".to(DType::f32)"}));
  EXPECT_TRUE(throws_error([&] { ember::std(i, 0); }, {"std: needs a floating tensor"}));
  EXPECT_TRUE(throws_error([&] { x.var(2); }, {"var: dim 2 is out of range for a tensor with 2 dims"}));
  EXPECT_TRUE(throws_error([&] { logsumexp(x, -3); }, {"logsumexp: dim -3 is out of range"}));
  EXPECT_TRUE(throws_error([&] { logsumexp(x, {0, -2}); }, {"logsumexp: dim 0 appears twice"}));
  EXPECT_TRUE(throws_error([&] { x.cumsum(2); }, {"cumsum: dim 2 is out of range"}));
  EXPECT_TRUE(throws_error([&] { x.sort(5); }, {"sort: dim 5 is out of range"}));
  EXPECT_TRUE(throws_error([&] { x.topk(4); }, {"topk: k = 4 is out of range for dim 1 of size 3", "[0, 3]"}));
  EXPECT_TRUE(throws_error([&] { topk(x, -1, 0); }, {"topk: k = -1 is out of range for dim 0 of size 2"}));
  EXPECT_TRUE(throws_error([&] { var(x, {1, 1}); }, {"var: dim 1 appears twice"}));
  EXPECT_TRUE(throws_error([&] { ember::std(x, {-1, 1}, 0); }, {"std: dim 1 appears twice"}));
}

// Many rows (threads split them) and long rows: sorted, a permutation of the input, the same values as the
// indices name; cumsum against a double reference.
TEST(ReduceRound2, BigSortAndCumsum) {
  Generator g(21);
  for (DType dtype : ember::test::kFloatTypes) {
    const Tensor x = randn({3000, 257}, {.dtype = dtype}, &g).t();  // [257, 3000], strided rows
    const auto [v, idx] = x.sort(0, true);
    const std::vector<double> xv = x.contiguous().to_vector<double>(), vv = v.to_vector<double>();
    const std::vector<int64_t> iv = idx.to_vector<int64_t>();
    for (int64_t col : {0, 1, 1234, 2999}) {
      std::vector<double> ref;
      for (int64_t r = 0; r < 257; ++r) ref.push_back(xv[r * 3000 + col]);
      std::vector<double> sorted_ref = ref;
      std::sort(sorted_ref.begin(), sorted_ref.end(), std::greater<>());
      for (int64_t r = 0; r < 257; ++r) {
        EXPECT_EQ(vv[r * 3000 + col], sorted_ref[r]) << col << " " << r;
        EXPECT_EQ(ref[iv[r * 3000 + col]], vv[r * 3000 + col]) << col << " " << r;
      }
    }
    const Tensor y = randn({4, 100000}, {.dtype = dtype}, &g);
    const std::vector<double> yv = y.to_vector<double>(), cv = y.cumsum(1).to_vector<double>();
    long double acc = 0;
    for (int64_t k = 0; k < 100000; ++k) {
      acc += yv[100000 + k];
      if (k % 9999 == 0) {  // f32: the double running sum rounded once
        const double tol = dtype == DType::f32 ? 6e-8 * std::abs(static_cast<double>(acc)) : 1e-12 * (1 + k);
        EXPECT_NEAR(cv[100000 + k], static_cast<double>(acc), tol) << k;
      }
    }
    const Tensor one_row = y.narrow(0, 2, 1).reshape({-1});
    const auto [sv, si] = one_row.sort();
    const std::vector<double> s = sv.to_vector<double>();
    EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
    EXPECT_TRUE(close_to(std::get<0>(sort(si)), arange(100000, {.dtype = DType::f64}).to_vector<double>(), {100000}));
  }
}

namespace {

// Sum and mean over leading dims of a contiguous tensor (a bias gradient's column sums) take a row-streaming
// path; a strided view of the same values (last dim narrowed from 6 to 5) takes the general one. Both add each
// output's elements in one order: bit-identical, across kChunk (65536) boundaries that are not run boundaries
// (70000 rows per run), with more columns than one tile (1100), and equal to a double-precision reference.
TEST(Reduce, LeadingDimsOfAContiguousTensorMatchTheGeneralPath) {
  Generator gen(4);
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{70000, 5}, std::pair<int64_t, int64_t>{40, 1100}}) {
    const Tensor wide = randn({3, rows, cols + 1}, {}, &gen);
    const Tensor strided = wide.narrow(2, 0, cols), contiguous = strided.contiguous();
    ASSERT_TRUE(contiguous.is_contiguous());
    ASSERT_FALSE(strided.is_contiguous());
    const Tensor sum_fast = contiguous.sum({0, 1}), sum_general = strided.sum({0, 1});
    EXPECT_EQ(sum_fast.to_vector<float>(), sum_general.to_vector<float>()) << rows << " rows";
    EXPECT_EQ(contiguous.mean({0, 1}).to_vector<float>(), strided.mean({0, 1}).to_vector<float>()) << rows << " rows";
    EXPECT_EQ(contiguous.sum({0}).to_vector<float>(), strided.sum({0}).to_vector<float>()) << rows << " rows";
    const auto fast = sum_fast.to_vector<double>(),
               reference = contiguous.to(DType::f64).sum({0, 1}).to_vector<double>();
    for (size_t k = 0; k < fast.size(); ++k)
      EXPECT_NEAR(fast[k], reference[k], 1e-6 * (1 + std::abs(reference[k]))) << "column " << k;
  }
}

}  // namespace
