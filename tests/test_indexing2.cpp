// scatter_add/scatter_reduce, take_along_dim, masked_select, nonzero/where(cond), advanced indexing
// (Tensor::index / index_put_ with ember::indexing::TensorIndex), embedding's max_norm/scale_grad_by_freq and
// embedding_bag / nn::EmbeddingBag: golden values from PyTorch 1.13 (tools/make_index_golden.py, round 3),
// gradcheck in f64, PyTorch's errors and in-place semantics.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "autograd/gradcheck.h"
#include "backends/cpu/cpu_backend.h"
#include "golden_rows.h"
#include "test_helpers.h"

namespace ember {
namespace {

using indexing::Ellipsis;
using indexing::None;
using indexing::Slice;
using test::close_to;
using test::golden;
using test::throws_error;
namespace F = nn::functional;

constexpr const char* kFile = "index_golden.safetensors";

using Const = test::GoldenConst;
using GoldenCase = test::IndexGoldenCase;

Tensor reduce_case(Tensor& x, const Tensor& s, const Const& c, const char* reduce, bool include_self) {
  return x.scatter_reduce(1, c("index"), s, reduce, include_self);
}

const std::vector<GoldenCase>& golden_cases() {
  static const std::vector<GoldenCase> cases = {
      {"scatter_add", true, [](auto& x, auto& s, auto& c) { return x.scatter_add(1, c("index"), s); }},
      {"scatter_add_dim0", true, [](auto& x, auto& s, auto& c) { return scatter_add(x, 0, c("index"), s); }},
      {"take_along_dim", false, [](auto& x, auto&, auto& c) { return take_along_dim(x, c("index"), 1); }},
      {"take_along_dim_broadcast", false, [](auto& x, auto&, auto& c) { return x.take_along_dim(c("index"), 0); }},
      {"take_along_dim_flat", false, [](auto& x, auto&, auto& c) { return take_along_dim(x, c("index")); }},
      {"masked_select", false, [](auto& x, auto&, auto& c) { return x.masked_select(c("mask")); }},
      {"masked_select_broadcast", false, [](auto& x, auto&, auto& c) { return masked_select(x, c("mask")); }},
      {"index_int", false, [](auto& x, auto&, auto& c) { return x.index({c("index")}); }},
      {"index_mask", false, [](auto& x, auto&, auto& c) { return x.index({c("mask")}); }},
      {"index_mask_rows", false, [](auto& x, auto&, auto& c) { return x.index({c("mask")}); }},
      {"index_separated", false, [](auto& x, auto&, auto& c) { return x.index({c("index"), Slice(), c("index2")}); }},
      {"index_adjacent", false, [](auto& x, auto&, auto& c) { return x.index({Slice(), c("index"), c("index2")}); }},
      {"index_slices_none", false,
       [](auto& x, auto&, auto& c) { return x.index({Slice(1), None, c("index"), Slice(None, None, 2)}); }},
      {"index_ellipsis", false, [](auto& x, auto&, auto& c) { return x.index({Ellipsis, c("index")}); }},
      {"index_int_between", false, [](auto& x, auto&, auto& c) { return x.index({c("index"), 1, c("index")}); }},
      {"index_put", true, [](auto& x, auto& s, auto& c) { return x.index_put({c("index")}, s); }},
      {"index_put_accumulate", true,
       [](auto& x, auto& s, auto& c) { return index_put(x, {c("index"), c("index2")}, s, true); }},
      {"index_put_mask", true, [](auto& x, auto& s, auto& c) { return x.index_put({c("mask")}, s); }},
      {"index_put_broadcast", true, [](auto& x, auto& s, auto& c) { return x.index_put({c("index")}, s, true); }},
      {"scatter_reduce_sum", true, [](auto& x, auto& s, auto& c) { return reduce_case(x, s, c, "sum", true); }},
      {"scatter_reduce_sum_noself", true, [](auto& x, auto& s, auto& c) { return reduce_case(x, s, c, "sum", false); }},
      {"scatter_reduce_prod", true, [](auto& x, auto& s, auto& c) { return reduce_case(x, s, c, "prod", true); }},
      {"scatter_reduce_prod_noself", true, [](auto& x, auto& s, auto& c) { return reduce_case(x, s, c, "prod", false); }},
      {"scatter_reduce_mean", true, [](auto& x, auto& s, auto& c) { return reduce_case(x, s, c, "mean", true); }},
      {"scatter_reduce_mean_noself", true, [](auto& x, auto& s, auto& c) { return reduce_case(x, s, c, "mean", false); }},
      {"scatter_reduce_amax", true, [](auto& x, auto& s, auto& c) { return reduce_case(x, s, c, "amax", true); }},
      {"scatter_reduce_amax_noself", true, [](auto& x, auto& s, auto& c) { return reduce_case(x, s, c, "amax", false); }},
      {"scatter_reduce_amin", true, [](auto& x, auto& s, auto& c) { return reduce_case(x, s, c, "amin", true); }},
      {"scatter_reduce_amin_noself", true, [](auto& x, auto& s, auto& c) { return reduce_case(x, s, c, "amin", false); }},
      {"scatter_reduce_prod_zeros", true,
       [](auto& x, auto& s, auto& c) { return scatter_reduce(x, 1, c("index"), s, "prod", true); }},
      {"scatter_reduce_prod_zeros_noself", true,
       [](auto& x, auto& s, auto& c) { return scatter_reduce(x, 1, c("index"), s, "prod", false); }},
      {"scatter_reduce_amax_ties", true, [](auto& x, auto& s, auto& c) { return reduce_case(x, s, c, "amax", true); }},
      {"scatter_reduce_amin_ties", true, [](auto& x, auto& s, auto& c) { return reduce_case(x, s, c, "amin", true); }},
      // embedding: x is the weight
      {"embedding_scale_grad", false,
       [](auto& w, auto&, auto& c) { return F::embedding(c("index"), w, {.padding_idx = 1, .scale_grad_by_freq = true}); }},
      {"embedding_max_norm", false, [](auto& w, auto&, auto& c) { return F::embedding(c("index"), w, {.max_norm = 1.5}); }},
      {"embedding_max_norm_p1", false,
       [](auto& w, auto&, auto& c) { return F::embedding(c("index"), w, {.max_norm = 2.0, .norm_type = 1.0}); }},
      {"embedding_bag_sum", false,
       [](auto& w, auto&, auto& c) { return F::embedding_bag(c("index"), w, {.offsets = c("offsets"), .mode = "sum"}); }},
      {"embedding_bag_mean", false,
       [](auto& w, auto&, auto& c) {
         return F::embedding_bag(c("index"), w, {.offsets = c("offsets"), .mode = "mean", .padding_idx = 4});
       }},
      {"embedding_bag_max", false,
       [](auto& w, auto&, auto& c) { return F::embedding_bag(c("index"), w, {.offsets = c("offsets"), .mode = "max"}); }},
      {"embedding_bag_max_padding", false,
       [](auto& w, auto&, auto& c) {
         return F::embedding_bag(c("index"), w, {.offsets = c("offsets"), .mode = "max", .padding_idx = 2});
       }},
      {"embedding_bag_weights", true,
       [](auto& w, auto& s, auto& c) {
         return F::embedding_bag(c("index"), w, {.offsets = c("offsets"), .mode = "sum", .per_sample_weights = s,
                                                 .include_last_offset = true});
       }},
      {"embedding_bag_2d", false,
       [](auto& w, auto&, auto& c) { return F::embedding_bag(c("index"), w, {.scale_grad_by_freq = true, .mode = "mean"}); }},
      {"embedding_bag_max_norm", false,
       [](auto& w, auto&, auto& c) {
         return F::embedding_bag(c("index"), w, {.offsets = c("offsets"), .max_norm = 1.0, .mode = "sum"});
       }},
  };
  return cases;
}

class Index2Golden : public ::testing::TestWithParam<std::tuple<size_t, DType>> {};

TEST_P(Index2Golden, ForwardAndGradients) {
  const auto [row, dtype] = GetParam();
  // Data movement is exact; sums, products, means and norms may round in another order.
  test::check_index_golden(kFile, golden_cases()[row], dtype, dtype == DType::f32 ? 2e-6 : 1e-13);
}

INSTANTIATE_TEST_SUITE_P(, Index2Golden, test::golden_rows(golden_cases().size()),
                         test::golden_row_name([](size_t row) { return golden_cases()[row].name; }));

TEST(Index2GoldenExact, IntegerScatterReduce) {
  const Tensor x = golden(kFile, "scatter_reduce_int.x"), s = golden(kFile, "scatter_reduce_int.s");
  const Tensor index = golden(kFile, "scatter_reduce_int.index");
  for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"}) {
    for (const bool include_self : {true, false}) {
      const std::string key = std::string("scatter_reduce_int.") + reduce + (include_self ? "" : "_noself");
      const Tensor y = x.scatter_reduce(1, index, s, reduce, include_self);
      EXPECT_EQ(y.dtype(), DType::i64) << key;
      EXPECT_EQ(y.to_vector<int64_t>(), golden(kFile, key).to_vector<int64_t>()) << key;
    }
  }
}

TEST(Index2GoldenExact, Nonzero) {
  const Tensor x = golden(kFile, "nonzero.x");
  const Tensor nz = nonzero(x);
  EXPECT_EQ(nz.dtype(), DType::i64);
  ASSERT_EQ(nz.shape(), golden(kFile, "nonzero.y").shape());
  EXPECT_EQ(nz.to_vector<int64_t>(), golden(kFile, "nonzero.y").to_vector<int64_t>());
  // as_tuple: the columns; where(cond) is the same
  const std::vector<Tensor> columns = x.nonzero_numpy(), w = where(x != 0.0);
  ASSERT_EQ(columns.size(), 3u);
  ASSERT_EQ(w.size(), 3u);
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(columns[d].to_vector<int64_t>(), nz.select(1, d).to_vector<int64_t>());
    EXPECT_EQ(w[d].to_vector<int64_t>(), nz.select(1, d).to_vector<int64_t>());
  }
}

// --- gradcheck in f64 ------------------------------------------------------------------------------------------
void expect_gradcheck(const autograd::GradcheckFn& fn, const std::vector<Tensor>& inputs, const char* what) {
  const auto r = autograd::gradcheck(fn, inputs);
  EXPECT_TRUE(r.ok) << what << ": " << r.message;
}

Tensor leaf(const Shape& shape, uint64_t seed) {
  Generator gen(seed);
  return randn(shape, {.dtype = DType::f64}, &gen).requires_grad_();
}

TEST(Index2Gradcheck, ScatterReductions) {
  const Tensor index = from_vector<int64_t>({0, 2, 0, 3, 1, 1, 1, 3}, {2, 4});
  for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"}) {
    for (const bool include_self : {true, false}) {
      const std::string what = std::string("scatter_reduce ") + reduce + (include_self ? "" : " (no self)");
      expect_gradcheck([&](const std::vector<Tensor>& in) { return in[0].scatter_reduce(1, index, in[1], reduce, include_self); },
                       {leaf({2, 4}, 1), leaf({2, 5}, 2)}, what.c_str());  // src larger than the index: a corner read
    }
  }
  expect_gradcheck([&](const std::vector<Tensor>& in) { return scatter_add(in[0], 1, index, in[1]); },
                   {leaf({2, 4}, 3), leaf({2, 4}, 4)}, "scatter_add");
  // prod with zeros in self and in src (one and two per position)
  const Tensor x = from_vector<double>({0, 1.5, -2, 0.5}, {1, 4}).requires_grad_();
  const Tensor s = from_vector<double>({0, 2, 0, 0, 1.25}, {1, 5}).requires_grad_();
  const Tensor idx = from_vector<int64_t>({1, 1, 2, 2, 0}, {1, 5});
  for (const bool include_self : {true, false})
    expect_gradcheck([&](const std::vector<Tensor>& in) { return scatter_reduce(in[0], 1, idx, in[1], "prod", include_self); },
                     {x, s}, "scatter_reduce prod with zeros");
}

TEST(Index2Gradcheck, GathersAndSelections) {
  const Tensor i = from_vector<int64_t>({2, 0, 1, 1}, {2, 2});
  expect_gradcheck([&](const std::vector<Tensor>& in) { return take_along_dim(in[0], i, 1); }, {leaf({2, 3}, 5)},
                   "take_along_dim");
  expect_gradcheck([&](const std::vector<Tensor>& in) { return take_along_dim(in[0], i); }, {leaf({2, 3}, 6)},
                   "take_along_dim (flat)");
  const Tensor mask = from_vector<bool>({true, false, true, true, false, true}, {2, 3});
  expect_gradcheck([&](const std::vector<Tensor>& in) { return masked_select(in[0], mask); }, {leaf({3}, 7)},
                   "masked_select (broadcast)");
}

TEST(Index2Gradcheck, AdvancedIndexing) {
  const Tensor i = from_vector<int64_t>({2, 0, -1, 2}, {2, 2});
  const Tensor j = from_vector<int64_t>({1, 3});
  const Tensor mask = from_vector<bool>({true, false, true});
  expect_gradcheck([&](const std::vector<Tensor>& in) { return in[0].index({i}); }, {leaf({3, 4}, 8)}, "x[i]");
  expect_gradcheck([&](const std::vector<Tensor>& in) { return in[0].index({Slice(), j, None}); }, {leaf({3, 4}, 9)},
                   "x[:, j, None]");
  expect_gradcheck([&](const std::vector<Tensor>& in) { return in[0].index({mask, Slice(1)}); }, {leaf({3, 4}, 10)},
                   "x[mask, 1:]");
  expect_gradcheck([&](const std::vector<Tensor>& in) { return in[0].t().index({j, 0}); }, {leaf({2, 4}, 11)},
                   "x.t()[j, 0] (a non-contiguous input)");
  for (const bool accumulate : {false, true}) {
    expect_gradcheck([&](const std::vector<Tensor>& in) { return in[0].index_put({Slice(), j}, in[1], accumulate); },
                     {leaf({3, 4}, 12), leaf({3, 1}, 13)}, "index_put (broadcast values)");
    // Repeated rows only when accumulating: written, one write wins, and PyTorch's backward (followed here)
    // still gives every repeat the gradient of the position, which is not the derivative.
    const Tensor rows = accumulate ? i : from_vector<int64_t>({2, 0, -1, 3}, {2, 2});
    expect_gradcheck([&](const std::vector<Tensor>& in) { return index_put(in[0], {rows}, in[1], accumulate); },
                     {leaf({5, 4}, 14), leaf({2, 2, 4}, 15)}, "index_put (2-D index)");
  }
}

TEST(Index2Gradcheck, EmbeddingBag) {
  const Tensor input = from_vector<int64_t>({1, 3, 3, 0, 2, 1, 4});
  const Tensor offsets = from_vector<int64_t>({0, 2, 2, 5});
  for (const char* mode : {"sum", "mean", "max"})
    expect_gradcheck(
        [&](const std::vector<Tensor>& in) {
          return F::embedding_bag(input, in[0], {.offsets = offsets, .mode = mode, .padding_idx = 2});
        },
        {leaf({5, 3}, 16)}, mode);
  expect_gradcheck(
      [&](const std::vector<Tensor>& in) {
        return F::embedding_bag(input, in[0], {.offsets = offsets, .mode = "sum", .per_sample_weights = in[1]});
      },
      {leaf({5, 3}, 17), leaf({7}, 18)}, "per_sample_weights");
}

// scale_grad_by_freq is not a derivative (gradcheck cannot check it): each occurrence's gradient is divided by
// its index's count in the batch.
TEST(Embedding, ScaleGradByFreqDividesByTheCount) {
  Tensor w = zeros({4, 2}, {.dtype = DType::f64}).requires_grad_();
  const Tensor input = from_vector<int64_t>({1, 3, 3, 3, 0, 1, 1});
  F::embedding(input, w, {.scale_grad_by_freq = true}).sum().backward();
  EXPECT_TRUE(close_to(w.grad(), {1, 1, 1, 1, 0, 0, 1, 1}, {4, 2}));
  // embedding_bag: the same counts over the whole input (PyTorch 1.13's CPU kernel pairs each index with
  // another index's count there; Ember divides by its own, as the docs and PyTorch's embedding do)
  Tensor v = zeros({4, 2}, {.dtype = DType::f64}).requires_grad_();
  F::embedding_bag(input, v, {.offsets = from_vector<int64_t>({0, 4}), .scale_grad_by_freq = true, .mode = "sum"})
      .sum().backward();
  EXPECT_TRUE(close_to(v.grad(), {1, 1, 1, 1, 0, 0, 1, 1}, {4, 2}));
}

// --- semantics and errors --------------------------------------------------------------------------------------
TEST(AdvancedIndexing, BasicIndicesGiveViews) {
  const Tensor x = arange(24, {.dtype = DType::f32}).reshape({2, 3, 4});
  const Tensor v = x.index({1, Slice(None, None, 2), Ellipsis});
  EXPECT_TRUE(v.shares_storage(x));
  EXPECT_EQ(v.shape(), (Shape{2, 4}));
  EXPECT_TRUE(close_to(v, {12, 13, 14, 15, 20, 21, 22, 23}, {2, 4}));
  EXPECT_EQ(x.index({None, "...", None}).shape(), (Shape{1, 2, 3, 4, 1}));
  EXPECT_EQ(x.index({true}).shape(), (Shape{1, 2, 3, 4}));
  EXPECT_EQ(x.index({false}).shape(), (Shape{0, 2, 3, 4}));
  EXPECT_EQ(x.index({-1, -1, -1}).item<float>(), 23.f);
  EXPECT_EQ(x.index({scalar_tensor(1, {.dtype = DType::i64})}).shape(), (Shape{3, 4}));  // a 0-d index: an integer
  const Tensor copy = x.index({from_vector<int64_t>({1})});
  EXPECT_FALSE(copy.shares_storage(x));
  EXPECT_EQ(copy.shape(), (Shape{1, 3, 4}));
}

TEST(AdvancedIndexing, Errors) {
  const Tensor x = zeros({2, 3});
  EXPECT_TRUE(throws_error([&] { x.index({from_vector<int64_t>({2})}); },
                           {"index: index 2 is out of bounds for dimension 0 with size 2"}));
  EXPECT_TRUE(throws_error([&] { x.index({Slice(), from_vector<int64_t>({-4})}); },
                           {"index -4 is out of bounds for dimension 1 with size 3"}));
  EXPECT_TRUE(throws_error([&] { x.index({from_vector<bool>({true, false, true})}); },
                           {"the shape of the mask [3] at index 0 does not match the shape of the indexed tensor [2, 3]"}));
  EXPECT_TRUE(throws_error([&] { x.index({from_vector<int64_t>({0, 1}), from_vector<int64_t>({0, 1, 2})}); },
                           {"index", "[2]", "[3]"}));
  EXPECT_TRUE(throws_error([&] { x.index({0, 0, 0}); }, {"too many indices for a tensor of dimension 2"}));
  EXPECT_TRUE(throws_error([&] { x.index({ones({1})}); }, {"tensors used as indices must be i64 or bool, got f32"}));
  EXPECT_TRUE(throws_error([&] { x.index({Ellipsis, 0, Ellipsis}); }, {"only one Ellipsis"}));
  EXPECT_TRUE(throws_error([&] { x.index({Slice(None, None, -1)}); }, {"slice steps must be positive"}));
  EXPECT_TRUE(throws_error([&] { x.index({".."}); }, {"TensorIndex", "\"...\""}));
  Tensor y = zeros({2, 3});
  EXPECT_TRUE(throws_error([&] { y.index_put_({0}, ones({3}, {.dtype = DType::f64})); },
                           {"index_put_: the values are f64 but the tensor is f32"}));
  EXPECT_TRUE(throws_error([&] { y.index_put_({from_vector<int64_t>({0, 1})}, ones({3, 3})); },
                           {"index_put_: values of shape [3, 3] cannot be broadcast to the indexed shape [2, 3]"}));
  Tensor expanded = zeros({3}).expand({2, 3});
  EXPECT_TRUE(throws_error([&] { expanded.index_put_({0}, 1.0); }, {"index_put_", "sharing memory", "clone()"}));
  Tensor leaf = zeros({2, 3}).requires_grad_();
  EXPECT_TRUE(throws_error([&] { leaf.index_put_({0}, 1.0); }, {"index_put_: a leaf tensor that requires grad"}));
}

TEST(AdvancedIndexing, IndexPutInPlace) {
  Tensor x = zeros({3, 4});
  const Tensor alias = x;
  x.index_put_({from_vector<int64_t>({0, 2}), Slice(1, 3)}, from_vector<float>({1, 2}, {2, 1}));
  EXPECT_TRUE(close_to(alias, {0, 1, 1, 0, 0, 0, 0, 0, 0, 2, 2, 0}, {3, 4}));
  x.index_put_({x > 1.5}, -1.0);  // x[x > 1.5] = -1
  EXPECT_TRUE(close_to(alias, {0, 1, 1, 0, 0, 0, 0, 0, 0, -1, -1, 0}, {3, 4}));
  // accumulate adds repeats; a strided view is written through
  Tensor t = zeros({4, 4}, {.dtype = DType::i64});
  Tensor column = t.t().select(0, 1);  // t[:, 1]
  column.index_put_({from_vector<int64_t>({3, 3, 0})}, from_vector<int64_t>({5, 6, 7}), true);
  EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{0, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 11, 0, 0}));
  // duplicates without accumulate: one write wins (the last on the CPU)
  Tensor d = zeros({3});
  d.index_put_({from_vector<int64_t>({1, 1})}, from_vector<float>({4, 9}));
  EXPECT_TRUE(close_to(d, {0, 9, 0}, {3}));
}

TEST(AdvancedIndexing, IndexPutInPlaceRecordsItsGradient) {
  Tensor x = arange(6, {.dtype = DType::f64}).reshape({2, 3}).requires_grad_();
  Tensor v = from_vector<double>({10, 20}).requires_grad_();
  Tensor y = x * 2.0;
  y.index_put_({Slice(), 1}, v);  // y[:, 1] = v
  EXPECT_TRUE(close_to(y, {0, 10, 4, 6, 20, 10}, {2, 3}));
  (y * arange(1, 7, {.dtype = DType::f64}).reshape({2, 3})).sum().backward();
  EXPECT_TRUE(close_to(x.grad(), {2, 0, 6, 8, 0, 12}, {2, 3}));
  EXPECT_TRUE(close_to(v.grad(), {2, 5}, {2}));
}

TEST(ScatterReduce, ErrorsAndEdges) {
  const Tensor x = zeros({2, 3}), index = zeros({2, 2}, {.dtype = DType::i64});
  EXPECT_TRUE(throws_error([&] { x.scatter_reduce(1, index, ones({2, 2}), "max"); },
                           {"scatter_reduce: reduce must be \"sum\", \"prod\", \"mean\", \"amax\" or \"amin\", got \"max\""}));
  EXPECT_TRUE(throws_error([&] { zeros({2}, {.dtype = DType::b8}).scatter_reduce(0, zeros({1}, {.dtype = DType::i64}),
                                                                                 zeros({1}, {.dtype = DType::b8}), "sum"); },
                           {"scatter_reduce: not defined for bool"}));
  EXPECT_TRUE(throws_error([&] { x.scatter_reduce(1, from_vector<int64_t>({3}, {1, 1}), ones({1, 1}), "amax"); },
                           {"scatter_reduce: index 3 is out of range for dim 1 of size 3"}));
  EXPECT_TRUE(throws_error([&] { x.scatter_add(1, index, ones({2, 2}, {.dtype = DType::f64})); },
                           {"scatter_add: the source is f64 but the input is f32"}));
  // amax propagates NaN; an empty index changes nothing
  const Tensor nan = scatter_reduce(zeros({2}), 0, from_vector<int64_t>({0, 0}), from_vector<float>({NAN, 1}), "amax");
  EXPECT_TRUE(std::isnan(nan.to_vector<float>()[0]));
  EXPECT_TRUE(close_to(x.scatter_reduce(1, zeros({2, 0}, {.dtype = DType::i64}), ones({2, 0}), "prod"), {0, 0, 0, 0, 0, 0}, {2, 3}));
  // i64 amax/amin without self start from the integer limits
  const Tensor i = zeros({2}, {.dtype = DType::i64});
  EXPECT_EQ(i.scatter_reduce(0, from_vector<int64_t>({1}), from_vector<int64_t>({-5}), "amax", false).to_vector<int64_t>(),
            (std::vector<int64_t>{0, -5}));
  EXPECT_EQ(i.scatter_reduce(0, from_vector<int64_t>({1}), from_vector<int64_t>({5}), "amin", false).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 5}));
}

TEST(Selections, ErrorsAndEdges) {
  EXPECT_TRUE(throws_error([] { take_along_dim(ones({2, 3}), from_vector<int64_t>({0}), 1); },
                           {"take_along_dim", "same number of dims"}));
  EXPECT_TRUE(throws_error([] { take_along_dim(ones({2, 3}), ones({2, 1}), 1); }, {"take_along_dim: the indices must be i64"}));
  EXPECT_TRUE(throws_error([] { take_along_dim(ones({2, 3}), from_vector<int64_t>({-1}, {1, 1}), 1); }, {"out of range"}));
  EXPECT_TRUE(throws_error([] { masked_select(ones({2}), ones({2})); }, {"masked_select: the mask must be a bool tensor"}));
  EXPECT_EQ(masked_select(ones({2, 2}), zeros({2, 2}, {.dtype = DType::b8})).shape(), (Shape{0}));
  EXPECT_EQ(nonzero(zeros({0, 3})).shape(), (Shape{0, 2}));
  EXPECT_EQ(nonzero(scalar_tensor(3)).shape(), (Shape{1, 0}));  // a 0-d input: one row of no coordinates
  EXPECT_EQ(nonzero(scalar_tensor(0)).shape(), (Shape{0, 0}));
  EXPECT_EQ(nonzero_numpy(scalar_tensor(3))[0].to_vector<int64_t>(), (std::vector<int64_t>{0}));
}

TEST(EmbeddingBag, ErrorsAndModule) {
  const Tensor w = ones({5, 2});
  const Tensor input = from_vector<int64_t>({0, 1, 2});
  EXPECT_TRUE(throws_error([&] { F::embedding_bag(input, w, {.offsets = from_vector<int64_t>({1})}); },
                           {"embedding_bag: offsets[0] must be 0"}));
  EXPECT_TRUE(throws_error([&] { F::embedding_bag(input, w, {.offsets = from_vector<int64_t>({0, 4})}); },
                           {"offsets[-1] = 4 is past the input's length 3"}));
  EXPECT_TRUE(throws_error([&] { F::embedding_bag(input, w); }, {"a 1-D input needs offsets"}));
  EXPECT_TRUE(throws_error([&] { F::embedding_bag(input, w, {.offsets = from_vector<int64_t>({0}), .mode = "mean",
                                                             .per_sample_weights = ones({3})}); },
                           {"per_sample_weights is only supported for mode \"sum\""}));
  EXPECT_TRUE(throws_error([&] { F::embedding_bag(input, w, {.offsets = from_vector<int64_t>({0}), .scale_grad_by_freq = true,
                                                             .mode = "max"}); },
                           {"scale_grad_by_freq is not supported for mode \"max\""}));
  EXPECT_TRUE(throws_error([&] { F::embedding_bag(from_vector<int64_t>({7}), w, {.offsets = from_vector<int64_t>({0})}); },
                           {"embedding: index 7", "vocabulary of 5"}));
  Generator gen(3);
  nn::EmbeddingBag bag(6, 4, {.mode = "sum", .padding_idx = -1}, &gen);
  EXPECT_EQ(*bag.options.padding_idx, 5);
  EXPECT_EQ(bag.weight.index({5}).abs().sum().item<float>(), 0.f);  // the padding row starts at zero
  EXPECT_EQ(bag.named_parameters().size(), 1u);
  const Tensor out = bag.forward(from_vector<int64_t>({1, 2, 5, 3}), from_vector<int64_t>({0, 3}));
  EXPECT_EQ(out.shape(), (Shape{2, 4}));
  EXPECT_TRUE(test::golden_mismatch(out.index({0}), bag.weight.index({1}) + bag.weight.index({2}), 1e-6, 1e-6) <= 1.0);
  EXPECT_EQ(bag.forward(from_vector<int64_t>({1, 2, 3, 4}, {2, 2})).shape(), (Shape{2, 4}));
  EXPECT_TRUE(throws_error([] { nn::EmbeddingBag(3, 2, {.mode = "median"}); }, {"EmbeddingBag: mode must be"}));
}

TEST(Embedding, MaxNormRenormalisesTheLookedUpRowsOnly) {
  nn::Embedding emb(4, 2, {.max_norm = 1.0});
  {
    NoGradGuard no_grad;
    emb.weight.copy_(from_vector<float>({3, 4, 0.3f, 0.4f, 6, 8, 1, 0}, {4, 2}));
  }
  const Tensor y = emb.forward(from_vector<int64_t>({0, 1, 0}));
  // row 0 (norm 5) scaled by 1 / (5 + 1e-7); row 1 (norm 0.5) kept; row 2 (norm 10) not looked up: kept
  const float k = static_cast<float>(1.0 / (5.0 + 1e-7));
  EXPECT_TRUE(close_to(emb.weight, {3 * k, 4 * k, 0.3, 0.4, 6, 8, 1, 0}, {4, 2}));
  EXPECT_TRUE(close_to(y, {3 * k, 4 * k, 0.3, 0.4, 3 * k, 4 * k}, {3, 2}));
}

// Device plumbing, with a second CPU backend standing in for CUDA (as tests/test_cuda_standin.cpp): index
// tensors and masks on the CPU index a "cuda:0" tensor, a 0-d CPU value fills it, results stay on its device.
TEST(Index2Devices, CpuIndicesOnAnotherDevice) {
  static cpu::CpuBackend standin;  // outlives every tensor it serves
  set_backend_override(DeviceType::CUDA, &standin);
  {
    const Device gpu{DeviceType::CUDA, 0};
    Tensor x = arange(12, {.dtype = DType::f32}).reshape({3, 4}).to(gpu);
    const Tensor picked = x.index({from_vector<int64_t>({2, 0}), from_vector<bool>({true, false, false, true})});
    EXPECT_EQ(picked.device(), gpu);
    EXPECT_TRUE(close_to(picked.to(kCPU), {8, 3}, {2}));
    x.index_put_({gt(x, 5.0).to(kCPU)}, scalar_tensor(-1.0));
    EXPECT_TRUE(close_to(x.to(kCPU), {0, 1, 2, 3, 4, 5, -1, -1, -1, -1, -1, -1}, {3, 4}));
    const Tensor nz = nonzero(lt(x, 0.0));
    EXPECT_EQ(nz.device(), gpu);
    EXPECT_EQ(nz.shape(), (Shape{6, 2}));
    const Tensor r = x.scatter_reduce(1, zeros({3, 2}, {.dtype = DType::i64, .device = gpu}), ones({3, 2}, {.device = gpu}), "amax", false);
    EXPECT_TRUE(close_to(r.to(kCPU), {1, 1, 2, 3, 1, 5, -1, -1, 1, -1, -1, -1}, {3, 4}));
    const Tensor bag = F::embedding_bag(from_vector<int64_t>({0, 2, 1}).to(gpu), ones({3, 2}, {.device = gpu}),
                                        {.offsets = from_vector<int64_t>({0, 1}).to(gpu), .mode = "sum"});
    EXPECT_EQ(bag.device(), gpu);
    EXPECT_TRUE(close_to(bag.to(kCPU), {1, 1, 2, 2}, {2, 2}));
  }
  set_backend_override(DeviceType::CUDA, nullptr);
}

}  // namespace
}  // namespace ember
