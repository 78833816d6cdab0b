// masked_fill, tril/triu, one_hot, scatter, index_add, repeat, flip, chunk/split/unbind, arange, and the
// sampling ops multinomial/randint/randperm: golden values from PyTorch 1.13 (tools/make_index_golden.py),
// PyTorch's semantics and errors, and the distributions of the samplers (seeded).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "backends/kernels.h"
#include "golden_rows.h"
#include "test_helpers.h"

namespace ember {
namespace {

using test::close_to;
using test::golden;
using test::throws_error;

constexpr const char* kFile = "index_golden.safetensors";

// --- golden values from PyTorch: forward and gradients, f32 and f64 --------------------------------------------
using GoldenCase = test::IndexGoldenCase;

const std::vector<GoldenCase>& golden_cases() {
  static const std::vector<GoldenCase> cases = {
      {"masked_fill", false, [](auto& x, auto&, auto& c) { return x.masked_fill(c("mask"), -1.5); }},
      {"masked_fill_broadcast", false, [](auto& x, auto&, auto& c) { return masked_fill(x, c("mask"), 2.25); }},
      {"masked_fill_tensor", true, [](auto& x, auto& s, auto& c) { return x.masked_fill(c("mask"), s); }},
      {"tril", false, [](auto& x, auto&, auto&) { return tril(x); }},
      {"tril_1", false, [](auto& x, auto&, auto&) { return tril(x, 1); }},
      {"tril_m1", false, [](auto& x, auto&, auto&) { return tril(x, -1); }},
      {"triu", false, [](auto& x, auto&, auto&) { return triu(x); }},
      {"triu_2", false, [](auto& x, auto&, auto&) { return triu(x, 2); }},
      {"triu_m2", false, [](auto& x, auto&, auto&) { return x.triu(-2); }},
      {"scatter", true, [](auto& x, auto& s, auto& c) { return x.scatter(1, c("index"), s); }},
      {"scatter_dim0", true, [](auto& x, auto& s, auto& c) { return scatter(x, 0, c("index"), s); }},
      {"scatter_value", false, [](auto& x, auto&, auto& c) { return x.scatter(-1, c("index"), 2.5); }},
      {"index_add", true, [](auto& x, auto& s, auto& c) { return x.index_add(0, c("index"), s); }},
      {"index_add_alpha", true, [](auto& x, auto& s, auto& c) { return index_add(x, 1, c("index"), s, -0.5); }},
      {"repeat", false, [](auto& x, auto&, auto&) { return x.repeat({2, 1, 3}); }},
      {"repeat_2d", false, [](auto& x, auto&, auto&) { return x.repeat({2, 2}); }},
      {"flip", false, [](auto& x, auto&, auto&) { return flip(x, {0, 2}); }},
      {"flip_last", false, [](auto& x, auto&, auto&) { return x.flip({-1}); }},
  };
  return cases;
}

class IndexGolden : public ::testing::TestWithParam<std::tuple<size_t, DType>> {};

TEST_P(IndexGolden, ForwardAndGradients) {
  const auto [row, dtype] = GetParam();
  // Pure data movement is exact; index_add's repeated indices add in PyTorch's order, up to an ulp.
  test::check_index_golden(kFile, golden_cases()[row], dtype, dtype == DType::f32 ? 1e-6 : 1e-14);
}

INSTANTIATE_TEST_SUITE_P(, IndexGolden, test::golden_rows(golden_cases().size()),
                         test::golden_row_name([](size_t row) { return golden_cases()[row].name; }));

// Same dtype and shape; integers equal, floating values within an ulp or two (PyTorch's vectorised arange
// adds j·step to a per-vector base, Ember start + i·step: the last bit may differ).
void expect_same(const Tensor& got, const Tensor& expected, const std::string& what) {
  EXPECT_EQ(got.dtype(), expected.dtype()) << what;
  ASSERT_EQ(got.shape(), expected.shape()) << what;
  if (!is_floating(got.dtype())) {
    EXPECT_EQ(got.to_vector<double>(), expected.to_vector<double>()) << what;
  } else {
    EXPECT_LE(test::golden_mismatch(got, expected, got.dtype() == DType::f32 ? 2.4e-7 : 4.5e-16, 1e-300), 1.0) << what;
  }
}

TEST(IndexGoldenExact, OneHot) {
  const std::vector<std::pair<const char*, int64_t>> cases = {
      {"one_hot_infer", -1}, {"one_hot_5", 5}, {"one_hot_scalar", 4}, {"one_hot_empty", 3}};
  for (const auto& [name, n] : cases)
    expect_same(one_hot(golden(kFile, std::string(name) + ".x"), n), golden(kFile, std::string(name) + ".y"), name);
}

TEST(IndexGoldenExact, Arange) {
  // The calls PyTorch made (tools/make_index_golden.py), spelt as LibTorch would.
  expect_same(arange(5), golden(kFile, "arange_int.y"), "arange(5)");
  expect_same(arange(5, 0, -2), golden(kFile, "arange_int_step.y"), "arange(5, 0, -2)");
  expect_same(arange(0, 1, 0.3), golden(kFile, "arange_float.y"), "arange(0, 1, 0.3)");
  expect_same(arange(2.5), golden(kFile, "arange_float_end.y"), "arange(2.5)");
  expect_same(arange(1, 2, 0.1, {.dtype = DType::f64}), golden(kFile, "arange_f64.y"), "arange(1, 2, 0.1, f64)");
  expect_same(arange(-1.5, 5, 1.5, {.dtype = DType::i64}), golden(kFile, "arange_i64_trunc.y"), "arange(-1.5, 5, 1.5, i64)");
  expect_same(arange(0.5, 5.0, {.dtype = DType::i64}), golden(kFile, "arange_i64_trunc_start.y"), "arange(0.5, 5, i64)");
  expect_same(arange(3, 3), golden(kFile, "arange_empty.y"), "arange(3, 3)");
  expect_same(arange(1, -1, -0.25), golden(kFile, "arange_neg_float.y"), "arange(1, -1, -0.25)");
}

std::vector<int64_t> sizes_of(const std::vector<Tensor>& pieces) {
  std::vector<int64_t> s;
  for (const Tensor& p : pieces) s.push_back(p.numel());
  return s;
}

TEST(IndexGoldenExact, ChunkSplitUnbindSizes) {
  const auto expected = [](const char* name) { return golden(kFile, std::string(name) + ".sizes").to_vector<int64_t>(); };
  const auto n = [](int64_t k) { return arange(k); };
  EXPECT_EQ(sizes_of(n(10).chunk(4)), expected("chunk_10_4"));
  EXPECT_EQ(sizes_of(n(6).chunk(4)), expected("chunk_6_4"));  // 3 pieces of 2: fewer than asked
  EXPECT_EQ(sizes_of(n(5).chunk(3)), expected("chunk_5_3"));
  EXPECT_EQ(sizes_of(n(0).chunk(3)), expected("chunk_0_3"));
  EXPECT_EQ(sizes_of(chunk(n(3), 5)), expected("chunk_3_5"));
  EXPECT_EQ(sizes_of(n(10).split(4)), expected("split_10_4"));
  EXPECT_EQ(sizes_of(n(10).split({3, 7})), expected("split_10_3_7"));
  EXPECT_EQ(sizes_of(split(n(0), 0)), expected("split_0_0"));
  EXPECT_EQ(sizes_of(n(4).split(6)), expected("split_4_6"));
  const std::vector<int64_t> ones(3, 1);
  EXPECT_EQ(golden(kFile, "unbind_3.sizes").to_vector<int64_t>(), ones);
  EXPECT_EQ(unbind(n(3)).size(), 3u);
}

// --- semantics -----------------------------------------------------------------------------------------------
TEST(Indexing, MaskedFillKeepsDtypeAndBroadcasts) {
  const Tensor mask = from_vector<bool>({true, false, true});
  const Tensor i = arange(6).reshape({2, 3});
  const Tensor filled = i.masked_fill(mask, 2.7);  // an integer tensor truncates the value, as PyTorch
  EXPECT_EQ(filled.dtype(), DType::i64);
  EXPECT_EQ(filled.to_vector<int64_t>(), (std::vector<int64_t>{2, 1, 2, 2, 4, 2}));
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5})) << "masked_fill is out of place";
  // A 0-d f64 value fills an f32 tensor in f32; a mask larger than x broadcasts x.
  const Tensor v = scalar_tensor(0.5, {.dtype = DType::f64});
  const Tensor f = masked_fill(zeros({3}), from_vector<bool>({true, false, false, true, true, true}, {2, 3}), v);
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_TRUE(close_to(f, {0.5, 0, 0, 0.5, 0.5, 0.5}, {2, 3}));
  EXPECT_TRUE(close_to(zeros({2}, {.dtype = DType::b8}).masked_fill(from_vector<bool>({false, true}), 3), {0, 1}, {2}));
}

TEST(Indexing, MaskedFillErrors) {
  const Tensor x = zeros({2, 3});
  EXPECT_TRUE(throws_error([&] { x.masked_fill(ones({2, 3}), 1.0); }, {"masked_fill: the mask must be a bool tensor", "f32"}));
  EXPECT_TRUE(throws_error([&] { x.masked_fill(from_vector<bool>({true, false}), 1.0); }, {"masked_fill", "[2, 3]", "[2]"}));
  EXPECT_TRUE(throws_error([&] { x.masked_fill(from_vector<bool>({true, false, true}), ones({1})); },
                           {"masked_fill: the value must be a 0-d tensor", "[1]"}));
  EXPECT_TRUE(throws_error([&] { zeros({3}, {.dtype = DType::i64}).masked_fill(from_vector<bool>({true, false, true}), -INFINITY); },
                           {"masked_fill: the value -inf cannot be converted to i64"}));
  EXPECT_TRUE(close_to(x.masked_fill(from_vector<bool>({true, false, true}), -INFINITY), {-INFINITY, 0, -INFINITY, -INFINITY, 0, -INFINITY}, {2, 3}));
}

TEST(Indexing, TriangleErrorsAndBatches) {
  EXPECT_TRUE(throws_error([] { tril(ones({3})); }, {"tril: needs a matrix", "[3]"}));
  EXPECT_TRUE(throws_error([] { ones({}).triu(); }, {"triu: needs a matrix", "[]"}));
  const Tensor b = ones({2, 2, 3}, {.dtype = DType::i64}).triu(1);  // every batch the same triangle; dtype kept
  EXPECT_EQ(b.dtype(), DType::i64);
  EXPECT_EQ(b.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 0, 0, 1, 0, 1, 1, 0, 0, 1}));
  EXPECT_EQ(tril(ones({2, 3}), -5).sum().item<float>(), 0.f);
  EXPECT_EQ(triu(ones({2, 3}), -5).sum().item<float>(), 6.f);
  EXPECT_EQ(tril(ones({0, 3})).shape(), (Shape{0, 3}));
}

TEST(Indexing, OneHotErrors) {
  EXPECT_TRUE(throws_error([] { one_hot(from_vector<int64_t>({0, 2}), 2); }, {"one_hot: class value 2", "num_classes = 2"}));
  EXPECT_TRUE(throws_error([] { one_hot(from_vector<int64_t>({0, -1}), 3); }, {"one_hot: class values must be non-negative", "-1"}));
  EXPECT_TRUE(throws_error([] { one_hot(zeros({0}, {.dtype = DType::i64})); }, {"one_hot: cannot infer", "num_classes"}));
  EXPECT_TRUE(throws_error([] { one_hot(from_vector<float>({1})); }, {"one_hot: the indices must be i64", "f32"}));
  EXPECT_TRUE(throws_error([] { one_hot(from_vector<int64_t>({1}), -2); }, {"one_hot: num_classes", "-2"}));
}

TEST(Indexing, ScatterLargerSourceAndItsGradient) {
  // src [2, 4] with a [1, 2] index: only src's corner is read; src's gradient is 0 outside it (PyTorch 1.13
  // refuses this backward with a shape error).
  Tensor x = zeros({3, 3}, {.dtype = DType::f64}).requires_grad_();
  Tensor src = arange(8, {.dtype = DType::f64}).reshape({2, 4}).requires_grad_();
  const Tensor index = from_vector<int64_t>({2, 0}, {1, 2});
  const Tensor y = scatter(x, 0, index, src);
  EXPECT_TRUE(close_to(y, {0, 1, 0, 0, 0, 0, 0, 0, 0}, {3, 3}));  // y[2][0] = src[0][0] = 0, y[0][1] = src[0][1]
  (y * arange(1, 10, {.dtype = DType::f64}).reshape({3, 3})).sum().backward();
  EXPECT_TRUE(close_to(src.grad(), {7, 2, 0, 0, 0, 0, 0, 0}, {2, 4}));
  EXPECT_TRUE(close_to(x.grad(), {1, 0, 3, 4, 5, 6, 0, 8, 9}, {3, 3}));
}

TEST(Indexing, ScatterRepeatedIndexKeepsTheLastWriteOnTheCpu) {
  const Tensor y = scatter(zeros({3}), 0, from_vector<int64_t>({1, 1, 1}), from_vector<float>({5, 6, 7}));
  EXPECT_TRUE(close_to(y, {0, 7, 0}, {3}));
  const Tensor v = zeros({2, 2}, {.dtype = DType::i64}).scatter(1, from_vector<int64_t>({1, 0}, {2, 1}), 9.0);
  EXPECT_EQ(v.to_vector<int64_t>(), (std::vector<int64_t>{0, 9, 9, 0}));
  EXPECT_TRUE(close_to(scatter(scalar_tensor(1), 0, zeros({}, {.dtype = DType::i64}), scalar_tensor(4)), {4}, {}));
}

TEST(Indexing, ScatterErrors) {
  const Tensor x = zeros({3, 4});
  EXPECT_TRUE(throws_error([&] { scatter(x, 0, from_vector<int64_t>({0}, {1, 1}), zeros({1, 1}, {.dtype = DType::f64})); },
                           {"scatter: the source is f64 but the input is f32"}));
  EXPECT_TRUE(throws_error([&] { scatter(x, 0, from_vector<int64_t>({0}), zeros({1, 4})); },
                           {"scatter: the index", "as many dims"}));
  EXPECT_TRUE(throws_error([&] { scatter(x, 0, zeros({1, 5}, {.dtype = DType::i64}), zeros({1, 5})); },
                           {"scatter: the index shape [1, 5]", "input shape [3, 4]"}));
  EXPECT_TRUE(throws_error([&] { scatter(x, 0, zeros({1, 4}, {.dtype = DType::i64}), zeros({1, 3})); },
                           {"scatter: the index shape [1, 4]", "source shape [1, 3]"}));
  EXPECT_TRUE(throws_error([&] { scatter(x, 0, from_vector<int64_t>({3}, {1, 1}), 1.0); },
                           {"scatter", "index 3 is out of range for dim 0 of size 3"}));
  EXPECT_TRUE(throws_error([&] { scatter(x, 2, zeros({1, 1}, {.dtype = DType::i64}), 1.0); }, {"scatter: dim 2 is out of range"}));
}

TEST(Indexing, IndexAddSemantics) {
  // Integer tensors truncate alpha (PyTorch gives 1 + 1 · trunc(1.5) = 2).
  const Tensor i = ones({2, 2}, {.dtype = DType::i64}).index_add(0, from_vector<int64_t>({0}), ones({1, 2}, {.dtype = DType::i64}), 1.5);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{2, 2, 1, 1}));
  // A 0-d index with a 0-d source on a 1-D tensor.
  EXPECT_TRUE(close_to(index_add(ones({3}), 0, scalar_tensor(1, {.dtype = DType::i64}), scalar_tensor(5)), {1, 6, 1}, {3}));
  const Tensor x = ones({3, 4});
  EXPECT_TRUE(throws_error([&] { index_add(x, 0, from_vector<int64_t>({0, 0}), ones({2, 3})); },
                           {"index_add: the source shape [2, 3] must equal the input shape [3, 4] except in dim 0"}));
  EXPECT_TRUE(throws_error([&] { index_add(x, 0, from_vector<int64_t>({0, 1}, {1, 2}), ones({2, 4})); },
                           {"index_add: the index must be 0-d or 1-D"}));
  EXPECT_TRUE(throws_error([&] { index_add(x, 0, from_vector<int64_t>({0}), ones({1, 4}, {.dtype = DType::f64})); },
                           {"index_add: the source is f64 but the input is f32"}));
  EXPECT_TRUE(throws_error([&] { index_add(x, 0, from_vector<int64_t>({3}), ones({1, 4})); },
                           {"index_add", "index 3 is out of range for dim 0 of size 3"}));
}

TEST(Indexing, IndexSelectRefusesAnNdIndexAsPyTorch) {
  EXPECT_TRUE(throws_error([] { index_select(ones({3, 4}), 0, zeros({2, 2}, {.dtype = DType::i64})); },
                           {"index_select: the index must be 0-d or 1-D", "[2, 2]", "index.flatten()"}));
  // The alternative the message gives: select with the flattened index, then restore the index's shape.
  const Tensor x = arange(12, {.dtype = DType::f32}).reshape({3, 4});
  const Tensor idx = from_vector<int64_t>({2, 0, 1, 2}, {2, 2});
  const Tensor y = index_select(x, 0, idx.flatten()).reshape({2, 2, 4});
  EXPECT_TRUE(close_to(y.select(0, 1).select(0, 1), {8, 9, 10, 11}, {4}));
}

TEST(Indexing, RepeatAndFlipCopy) {
  const Tensor x = arange(6, {.dtype = DType::f32}).reshape({2, 3});
  EXPECT_FALSE(x.repeat({1, 1}).shares_storage(x));
  EXPECT_EQ(x.repeat({0, 2}).shape(), (Shape{0, 6}));
  EXPECT_EQ(scalar_tensor(3).repeat({2, 2}).shape(), (Shape{2, 2}));
  EXPECT_TRUE(throws_error([&] { x.repeat({2}); }, {"repeat: 1 repeat sizes", "2 dims"}));
  EXPECT_TRUE(throws_error([&] { x.repeat({-1, 2}); }, {"repeat: the repeat sizes must be non-negative"}));
  const Tensor f = x.t().flip({0});  // a flip of a non-contiguous view
  EXPECT_TRUE(close_to(f, {2, 5, 1, 4, 0, 3}, {3, 2}));
  EXPECT_FALSE(x.flip({}).shares_storage(x));
  EXPECT_TRUE(throws_error([&] { x.flip({0, -2}); }, {"flip: dim 0 appears more than once"}));
  EXPECT_TRUE(throws_error([&] { x.flip({2}); }, {"flip: dim 2 is out of range"}));
}

TEST(Indexing, ChunkSplitUnbindAreViewsWithGradients) {
  Tensor x = arange(12, {.dtype = DType::f64}).reshape({3, 4}).requires_grad_();
  const std::vector<Tensor> parts = x.chunk(2, 1);
  ASSERT_EQ(parts.size(), 2u);
  for (const Tensor& p : parts) EXPECT_TRUE(p.shares_storage(x));
  EXPECT_TRUE(close_to(parts[1], {2, 3, 6, 7, 10, 11}, {3, 2}));
  const std::vector<Tensor> rows = x.unbind(0);
  EXPECT_TRUE(close_to(rows[2], {8, 9, 10, 11}, {4}));
  const std::vector<Tensor> cols = split(x, {1, 3}, -1);
  EXPECT_EQ(cols[1].shape(), (Shape{3, 3}));
  (parts[0].sum() * 2.0 + rows[1].sum() + cols[1].select(1, 2).sum() * 10.0).backward();
  EXPECT_TRUE(close_to(x.grad(), {2, 2, 0, 10, 3, 3, 1, 11, 2, 2, 0, 10}, {3, 4}));
  EXPECT_TRUE(throws_error([&] { x.chunk(0); }, {"chunk: chunks must be positive, got 0"}));
  EXPECT_TRUE(throws_error([&] { x.split({3, 6}, 1); }, {"split: the split sizes [3, 6] sum to 9, not to 4"}));
  EXPECT_TRUE(throws_error([&] { x.split(0); }, {"split: split_size can be 0 only when"}));
  EXPECT_TRUE(throws_error([&] { x.split({2, -1, 3}, 0); }, {"split: the split sizes must be non-negative"}));
  EXPECT_TRUE(throws_error([] { scalar_tensor(1).unbind(); }, {"unbind: needs a tensor with at least 1 dim"}));
}

TEST(Indexing, ArangeDtypesAndErrors) {
  EXPECT_EQ(arange(5).dtype(), DType::i64);  // LibTorch: integer Scalars give kLong
  EXPECT_EQ(arange(int64_t{2}, int64_t{7}).to_vector<int64_t>(), (std::vector<int64_t>{2, 3, 4, 5, 6}));
  EXPECT_EQ(arange(5.0).dtype(), DType::f32);
  EXPECT_EQ(arange(2.0, 4.0).to_vector<float>(), (std::vector<float>{2, 3}));
  EXPECT_EQ(arange(5, {.dtype = DType::f64}).dtype(), DType::f64);
  EXPECT_EQ(arange(0, 1, 0.3).numel(), 4);  // ceil(1 / 0.3)
  EXPECT_TRUE(throws_error([] { arange(0, 1, 0.3, {.dtype = DType::i64}); }, {"arange: step must be nonzero"}));
  EXPECT_TRUE(throws_error([] { arange(0, 5, -1); }, {"arange", "empty or reversed for step -1"}));
  EXPECT_TRUE(throws_error([] { arange(0, 2, 1, {.dtype = DType::b8}); }, {"arange: not defined for bool"}));
  EXPECT_TRUE(throws_error([] { arange(0.0, NAN, 1.0); }, {"arange", "finite"}));
}

// --- sampling ------------------------------------------------------------------------------------------------
// Chi-square statistic of observed counts against expected probabilities.
double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& p, int64_t n) {
  double chi = 0;
  for (size_t k = 0; k < p.size(); ++k) {
    if (p[k] == 0) continue;
    const double e = p[k] * static_cast<double>(n);
    chi += (static_cast<double>(counts[k]) - e) * (static_cast<double>(counts[k]) - e) / e;
  }
  return chi;
}

TEST(Sampling, MultinomialWithReplacementFollowsTheWeights) {
  Generator gen(7);
  const std::vector<double> w = {1, 0, 3, 0.5, 0, 5.5};  // unnormalised; zeros never drawn
  const int64_t n = 40000;
  const Tensor s = multinomial(from_vector(w), n, true, &gen);
  EXPECT_EQ(s.dtype(), DType::i64);
  EXPECT_EQ(s.shape(), (Shape{n}));
  std::vector<int64_t> counts(w.size(), 0);
  for (const int64_t k : s.to_vector<int64_t>()) ++counts.at(static_cast<size_t>(k));
  EXPECT_EQ(counts[1], 0);
  EXPECT_EQ(counts[4], 0);
  std::vector<double> p;
  for (const double v : w) p.push_back(v / 10.0);
  EXPECT_LT(chi_square(counts, p, n), 20.5) << "3 degrees of freedom: p < 0.0002";  // 4 positive categories
}

TEST(Sampling, MultinomialWithoutReplacement) {
  Generator gen(11);
  // 2-D: each row its own distribution; samples of a row distinct; zero categories not drawn while positive
  // ones remain.
  const Tensor probs = from_vector<double>({0, 2, 0, 1, 1, 0, 4, 4, 0.5, 1, 1, 1}, {3, 4});
  for (int trial = 0; trial < 200; ++trial) {
    const Tensor s = multinomial(probs.to(DType::f32), 2, false, &gen);
    ASSERT_EQ(s.shape(), (Shape{3, 2}));
    const std::vector<int64_t> v = s.to_vector<int64_t>();
    for (int r = 0; r < 3; ++r) EXPECT_NE(v[r * 2], v[r * 2 + 1]);
    EXPECT_EQ(std::set<int64_t>(v.begin(), v.begin() + 2), (std::set<int64_t>{1, 3}));  // row 0: the only two
    EXPECT_NE(v[2], 1);  // row 1 = [1, 0, 4, 4]
    EXPECT_NE(v[3], 1);
  }
  // All categories, once each, is a permutation; beyond the positive ones come the zeros (PyTorch gives
  // [1, 0] for multinomial([0, 1, 0], 2)).
  EXPECT_EQ(multinomial(from_vector<float>({0, 1, 0}), 3, false, &gen).to_vector<int64_t>()[0], 1);
  // The first draw follows the weights; the second, given the first, the renormalised rest (first draws of
  // category 0 then 1 vs 1 then 0).
  const std::vector<double> w = {0.6, 0.3, 0.1};
  const int64_t n = 20000;
  std::vector<int64_t> first(3, 0);
  int64_t zero_then_one = 0, one_then_zero = 0;
  const Tensor s = multinomial(from_vector(w).unsqueeze(0).expand({n, 3}), 2, false, &gen);
  const std::vector<int64_t> v = s.to_vector<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    ++first[v[2 * i]];
    zero_then_one += v[2 * i] == 0 && v[2 * i + 1] == 1;
    one_then_zero += v[2 * i] == 1 && v[2 * i + 1] == 0;
  }
  EXPECT_LT(chi_square(first, w, n), 17.0) << "2 degrees of freedom";
  // P(0 then 1) = 0.6 · 0.3/0.4 = 0.45; P(1 then 0) = 0.3 · 0.6/0.7 ≈ 0.2571.
  EXPECT_NEAR(static_cast<double>(zero_then_one) / n, 0.45, 0.015);
  EXPECT_NEAR(static_cast<double>(one_then_zero) / n, 0.3 * 0.6 / 0.7, 0.015);
}

TEST(Sampling, MultinomialErrors) {
  const auto draw = [](std::vector<double> p, int64_t n, bool r = false) { multinomial(from_vector(p), n, r); };
  EXPECT_TRUE(throws_error([&] { draw({0.1, -0.1}, 1); }, {"multinomial: the probabilities must be finite and non-negative", "-0.1"}));
  EXPECT_TRUE(throws_error([&] { draw({0.1, INFINITY}, 1); }, {"multinomial", "inf"}));
  EXPECT_TRUE(throws_error([&] { draw({0.1, NAN}, 1); }, {"multinomial", "nan"}));
  EXPECT_TRUE(throws_error([&] { draw({0, 0}, 1, true); }, {"multinomial: row 0 of the probabilities sums to 0"}));
  // (Rows built with stack: GCC 12.2 with -march=native has been seen to miscompile the literal {1, 1, 0, 0}
  // in this file into {1, 1, 1, 1}.)
  EXPECT_TRUE(throws_error([&] { multinomial(stack({ones({2}), zeros({2})}), 1, true); },
                           {"multinomial: row 1 of the probabilities sums to 0"}));
  EXPECT_TRUE(throws_error([&] { draw({0, 1, 0}, 4); }, {"multinomial: cannot draw 4 samples without replacement from 3 categories"}));
  EXPECT_TRUE(throws_error([&] { draw({1}, 0); }, {"multinomial: cannot draw 0 samples"}));
  EXPECT_TRUE(throws_error([] { multinomial(ones({2, 2, 2}), 1); }, {"multinomial: the probabilities must be 1-D or 2-D", "[2, 2, 2]"}));
  EXPECT_TRUE(throws_error([] { multinomial(ones({2}, {.dtype = DType::i64}), 1); }, {"multinomial: the probabilities must be floating", "i64"}));
  EXPECT_EQ(multinomial(ones({0, 3}), 2).shape(), (Shape{0, 2}));
  EXPECT_EQ(multinomial(from_vector<float>({1, 2}), 5, true).shape(), (Shape{5}));  // more than C, replacing
}

TEST(Sampling, RandintRangeDtypeAndUniformity) {
  Generator gen(3);
  const int64_t n = 60000;
  const Tensor r = randint(-3, 4, {n}, {.dtype = DType::i64}, &gen);
  EXPECT_EQ(r.dtype(), DType::i64);
  std::vector<int64_t> counts(7, 0);
  for (const int64_t v : r.to_vector<int64_t>()) {
    ASSERT_GE(v, -3);
    ASSERT_LT(v, 4);
    ++counts[v + 3];
  }
  EXPECT_LT(chi_square(counts, std::vector<double>(7, 1.0 / 7), n), 27.0) << "6 degrees of freedom";
  EXPECT_EQ(randint(10, {2, 3}).dtype(), DType::i64);  // the default options, as torch.randint
  EXPECT_EQ(randint(10, {2, 3}).shape(), (Shape{2, 3}));
  const Tensor f = randint(0, 5, {100}, {.dtype = DType::f32}, &gen);
  EXPECT_EQ(f.dtype(), DType::f32);
  for (const float v : f.to_vector<float>()) EXPECT_EQ(v, std::floor(v));
  EXPECT_TRUE(throws_error([] { randint(5, 5, {3}); }, {"randint: low must be less than high, got low = 5, high = 5"}));
  EXPECT_TRUE(throws_error([] { randint(0, 5, {3}, {.dtype = DType::b8}); }, {"randint: the range [0, 5) does not fit bool"}));
  EXPECT_TRUE(throws_error([] { randint(0, int64_t{1} << 25, {3}, {.dtype = DType::f32}); }, {"randint", "does not fit f32"}));
}

// The formula randint promises (element i from Philox counter offset + i): checks that the parallel draw
// (60000 elements is above the CPU's grain) matches a serial one, whatever EMBER_NUM_THREADS is.
TEST(Sampling, RandintIsThePhiloxStream) {
  Generator gen(99);
  gen.advance(5);
  const Generator::State before = gen.state();
  const int64_t n = 60000, low = 10, range = 1000;
  const std::vector<int64_t> got = randint(low, low + range, {n}, {.dtype = DType::i64}, &gen).to_vector<int64_t>();
  EXPECT_EQ(gen.state().offset, before.offset + n);
  for (int64_t i = 0; i < n; ++i) {
    const double u = kernels::random_element<RandomOp::uniform, double>(before.seed, before.offset + i, 0.0, range);
    ASSERT_EQ(got[i], low + std::min<int64_t>(static_cast<int64_t>(u), range - 1)) << "element " << i;
  }
}

TEST(Sampling, RandpermIsAUniformPermutation) {
  Generator gen(5);
  const Tensor p = randperm(1000, {.dtype = DType::i64}, &gen);
  EXPECT_EQ(p.dtype(), DType::i64);
  std::vector<int64_t> v = p.to_vector<int64_t>();
  std::sort(v.begin(), v.end());
  std::vector<int64_t> all(1000);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(v, all);
  // Where element 0 lands, over many permutations of 5: uniform over the 5 positions.
  const int64_t trials = 20000;
  std::vector<int64_t> where0(5, 0);
  for (int64_t t = 0; t < trials; ++t) {
    const std::vector<int64_t> q = randperm(5, {.dtype = DType::i64}, &gen).to_vector<int64_t>();
    ++where0[std::find(q.begin(), q.end(), 0) - q.begin()];
  }
  EXPECT_LT(chi_square(where0, std::vector<double>(5, 0.2), trials), 18.5) << "4 degrees of freedom";
  EXPECT_EQ(randperm(0).numel(), 0);
  EXPECT_EQ(randperm(4, {.dtype = DType::f32}).dtype(), DType::f32);
  EXPECT_TRUE(throws_error([] { randperm(-1); }, {"randperm: n must be non-negative, got -1"}));
  EXPECT_TRUE(throws_error([] { randperm(3, {.dtype = DType::b8}); }, {"randperm: not defined for bool"}));
}

TEST(Sampling, SeededDrawsRepeatAndAdvanceTheGenerator) {
  Generator a(123), b(123);
  const Tensor probs = from_vector<float>({0.2f, 0.5f, 0.3f, 1, 1, 1}, {2, 3});
  EXPECT_EQ(multinomial(probs, 3, false, &a).to_vector<int64_t>(), multinomial(probs, 3, false, &b).to_vector<int64_t>());
  EXPECT_EQ(multinomial(probs, 8, true, &a).to_vector<int64_t>(), multinomial(probs, 8, true, &b).to_vector<int64_t>());
  EXPECT_EQ(randperm(50, {.dtype = DType::i64}, &a).to_vector<int64_t>(), randperm(50, {.dtype = DType::i64}, &b).to_vector<int64_t>());
  EXPECT_EQ(a.state(), b.state());
  EXPECT_EQ(a.state().offset, 2u * 3 + 2u * 8 + 50);  // rows × categories, rows × samples, n
  // A second draw from the advanced generator differs from the first.
  Generator c(123);
  const std::vector<int64_t> first = randperm(50, {.dtype = DType::i64}, &c).to_vector<int64_t>();
  EXPECT_NE(first, randperm(50, {.dtype = DType::i64}, &c).to_vector<int64_t>());
}

// Run twice by CTest (tests/CMakeLists.txt): with EMBER_NUM_THREADS=1 it writes the draws to
// EMBER_INDEXING_DRAWS_WRITE; with EMBER_NUM_THREADS=2 it compares its own draws to that file. Skipped when
// neither variable is set (a plain run of the test program).
TEST(Sampling, SameDrawsForAnyThreadCount) {
  const char* write = std::getenv("EMBER_INDEXING_DRAWS_WRITE");
  const char* read = std::getenv("EMBER_INDEXING_DRAWS_READ");
  if (write == nullptr && read == nullptr) GTEST_SKIP() << "run by CTest as test_indexing_threads_{1,2}";
  Generator gen(2024);
  const std::vector<std::pair<std::string, Tensor>> draws = {
      {"randint", randint(-50, 50, {100000}, {.dtype = DType::i64}, &gen)},
      {"randperm", randperm(70000, {.dtype = DType::i64}, &gen)},
      {"multinomial", multinomial(rand({64, 100}, {}, &gen), 30, false, &gen)},
      {"multinomial_replacement", multinomial(rand({64, 100}, {}, &gen), 300, true, &gen)},
      {"rand", rand({100000}, {.dtype = DType::f64}, &gen)},
  };
  if (write != nullptr) {
    safetensors::save(write, draws);
    return;
  }
  const safetensors::Contents saved = safetensors::load(read);
  for (const auto& [name, t] : draws) {
    const Tensor* other = saved.find(name);
    ASSERT_NE(other, nullptr) << name;
    EXPECT_EQ(t.to_vector<double>(), other->to_vector<double>()) << name << " differs between thread counts";
  }
}

}  // namespace
}  // namespace ember
