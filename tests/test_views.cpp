// Views: reshape/view, permute, transpose, narrow, slice, select, expand, squeeze/unsqueeze, flatten.
// Every view shares storage with its base, and a write through the view is seen by the base.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include "test_helpers.h"

using namespace ember;
using ember::test::close_to;
using ember::test::make;
using ember::test::throws_error;

namespace {

// [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]] in `dtype`.
Tensor grid(DType dtype = DType::f32) { return arange(12, {.dtype = dtype}).reshape({3, 4}); }

}  // namespace

TEST(Views, ReshapeAndView) {
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    const Tensor t = grid(dtype);
    const Tensor r = t.reshape({4, 3});
    EXPECT_TRUE(r.shares_storage(t));
    EXPECT_EQ(r.strides(), (Shape{3, 1}));
    EXPECT_TRUE(close_to(r, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {4, 3}));
    EXPECT_EQ(t.view({2, -1, 3}).shape(), (Shape{2, 2, 3}));  // -1 inferred
    EXPECT_EQ(t.view({-1}).shape(), Shape{12});
    EXPECT_EQ(t.reshape({12, 1, 1}).shape(), (Shape{12, 1, 1}));
    EXPECT_EQ(scalar_tensor(3, {.dtype = dtype}).reshape({1, 1}).shape(), (Shape{1, 1}));
    EXPECT_EQ(make({5}, {1}, dtype).reshape({}).shape(), Shape{});
  }
}

TEST(Views, ViewOfNonContiguous) {
  const Tensor t = arange(24).reshape({2, 3, 4});
  // Permuting the two outer dims keeps the inner one contiguous: splitting/merging inside it is a view.
  const Tensor p = t.permute({1, 0, 2});  // [3, 2, 4], strides [4, 12, 1]
  const Tensor v = p.view({3, 2, 2, 2});
  EXPECT_TRUE(v.shares_storage(t));
  EXPECT_EQ(v.strides(), (Shape{4, 12, 2, 1}));
  EXPECT_EQ(v.to_vector<float>(), p.contiguous().view({3, 2, 2, 2}).to_vector<float>());
  // Merging the permuted dims is not expressible with strides: view throws, reshape copies.
  EXPECT_TRUE(throws_error([&] { p.view({6, 4}); },
                           {"view", "[6, 4]", "[3, 2, 4]", "strides [4, 12, 1]", "reshape()", "contiguous()"}));
  const Tensor r = p.reshape({6, 4});
  EXPECT_FALSE(r.shares_storage(t));
  EXPECT_TRUE(close_to(r.select(0, 1), {12, 13, 14, 15}, {4}));
  // A transposed matrix flattened needs a copy; a sliced column range can be split along rows.
  EXPECT_TRUE(throws_error([&] { grid().t().view({12}); }, {"view", "[12]"}));
  EXPECT_TRUE(close_to(grid().t().reshape({12}), {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}, {12}));
  const Tensor rows = arange(24).reshape({6, 4}).narrow(0, 2, 4);  // rows 2..5, contiguous at offset 8
  EXPECT_TRUE(rows.view({2, 2, 4}).shares_storage(rows));
  EXPECT_TRUE(close_to(rows.view({2, 8}).select(0, 1), {16, 17, 18, 19, 20, 21, 22, 23}, {8}));
}

TEST(Views, PermuteTranspose) {
  for (DType dtype : {DType::f32, DType::f64}) {
    const Tensor t = arange(24, {.dtype = dtype}).reshape({2, 3, 4});
    const Tensor p = t.permute({2, 0, 1});
    EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
    EXPECT_EQ(p.strides(), (Shape{1, 12, 4}));
    EXPECT_TRUE(p.shares_storage(t));
    // p[i][j][k] = t[j][k][i] = 12 j + 4 k + i
    EXPECT_TRUE(close_to(p.select(0, 1), {1, 5, 9, 13, 17, 21}, {2, 3}));
    EXPECT_TRUE(close_to(t.permute({-1, 0, 1}), p.to_vector<double>(), {4, 2, 3}));
    const Tensor tr = t.transpose(0, -1);
    EXPECT_EQ(tr.shape(), (Shape{4, 3, 2}));
    EXPECT_TRUE(close_to(tr.select(0, 3), {3, 15, 7, 19, 11, 23}, {3, 2}));
    EXPECT_TRUE(close_to(grid(dtype).t(), {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}, {4, 3}));
    EXPECT_TRUE(close_to(grid(dtype).t().t(), grid(dtype).to_vector<double>(), {3, 4}));
  }
  EXPECT_EQ(make({1, 2}, {2}).t().shape(), Shape{2});  // t() of a 1-D tensor is itself
}

TEST(Views, NarrowSliceSelect) {
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    const Tensor t = grid(dtype);
    EXPECT_TRUE(close_to(t.narrow(1, 1, 2), {1, 2, 5, 6, 9, 10}, {3, 2}));
    EXPECT_TRUE(close_to(t.narrow(0, -1, 1), {8, 9, 10, 11}, {1, 4}));  // negative start counts from the end
    EXPECT_EQ(t.narrow(0, 1, 2).offset(), 4);
    EXPECT_TRUE(close_to(t.slice(1, 0, 4, 2), {0, 2, 4, 6, 8, 10}, {3, 2}));
    EXPECT_EQ(t.slice(1, 1, 4, 2).strides(), (Shape{4, 2}));
    EXPECT_TRUE(close_to(t.slice(1, 1, 100, 2), {1, 3, 5, 7, 9, 11}, {3, 2}));  // end clamped
    EXPECT_TRUE(close_to(t.slice(0, -2, 3), {4, 5, 6, 7, 8, 9, 10, 11}, {2, 4}));
    EXPECT_TRUE(close_to(t.slice(1, -1, -100), {}, {3, 0}));  // empty when end <= start
    EXPECT_TRUE(close_to(t.slice(0, 0, 3, 5), {0, 1, 2, 3}, {1, 4}));
    EXPECT_TRUE(close_to(t.select(0, 1), {4, 5, 6, 7}, {4}));
    EXPECT_TRUE(close_to(t.select(1, -1), {3, 7, 11}, {3}));
    EXPECT_TRUE(close_to(t.select(0, 2).select(0, 3), {11}, {}));
    // Views of views compose: a column of the transposed grid, sliced.
    EXPECT_TRUE(close_to(t.t().select(1, 2).slice(0, 1, 4, 2), {9, 11}, {2}));
  }
}

TEST(Views, Expand) {
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    const Tensor col = make({1, 2, 3}, {3, 1}, dtype);
    const Tensor e = col.expand({2, 3, 4});
    EXPECT_EQ(e.shape(), (Shape{2, 3, 4}));
    EXPECT_EQ(e.strides(), (Shape{0, 1, 0}));  // broadcast dims have stride 0
    EXPECT_TRUE(e.shares_storage(col));
    EXPECT_TRUE(close_to(e.select(0, 1), {1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}, {3, 4}));
    EXPECT_EQ(col.expand({-1, 2}).shape(), (Shape{3, 2}));  // -1 keeps the size
    EXPECT_TRUE(close_to(scalar_tensor(5, {.dtype = dtype}).expand({2, 2}), {5, 5, 5, 5}, {2, 2}));
    EXPECT_TRUE(close_to(make({1, 2}, {2}, dtype).expand_as(zeros({2, 2})), {1, 2, 1, 2}, {2, 2}));
  }
  // Expanding a view (transposed row) keeps its strides in the kept dims.
  const Tensor row = grid().t().select(1, 1);  // [4, 5, 6, 7], stride 1
  EXPECT_TRUE(close_to(row.unsqueeze(0).expand({2, 4}), {4, 5, 6, 7, 4, 5, 6, 7}, {2, 4}));
  const Tensor colv = grid().select(1, 2).unsqueeze(1);  // [[2], [6], [10]], stride 4
  EXPECT_TRUE(close_to(colv.expand({3, 2}), {2, 2, 6, 6, 10, 10}, {3, 2}));
  EXPECT_TRUE(throws_error([] { make({1, 2, 3}, {3}).expand({2, 4}); }, {"expand", "size 3", "[2, 4]", "or be 1"}));
  EXPECT_TRUE(throws_error([] { make({1, 2, 3}, {3}).expand({3, 3}).expand({3}); }, {"expand", "fewer dims"}));
  EXPECT_TRUE(throws_error([] { make({1}, {1}).expand({-2}); }, {"expand"}));
}

TEST(Views, SqueezeUnsqueezeFlatten) {
  const Tensor t = zeros({1, 3, 1, 2});
  EXPECT_EQ(t.squeeze().shape(), (Shape{3, 2}));
  EXPECT_EQ(t.squeeze(0).shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(t.squeeze(-2).shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(t.squeeze(1).shape(), (Shape{1, 3, 1, 2}));  // not size 1: unchanged, as PyTorch
  EXPECT_TRUE(t.squeeze().shares_storage(t));
  const Tensor g = grid(DType::f64);
  EXPECT_EQ(g.unsqueeze(0).shape(), (Shape{1, 3, 4}));
  EXPECT_EQ(g.unsqueeze(-1).shape(), (Shape{3, 4, 1}));
  EXPECT_EQ(g.unsqueeze(1).shape(), (Shape{3, 1, 4}));
  EXPECT_EQ(g.unsqueeze(2).strides(), (Shape{4, 1, 1}));
  EXPECT_TRUE(close_to(g.t().unsqueeze(1).select(0, 2), {2, 6, 10}, {1, 3}));
  EXPECT_EQ(scalar_tensor(1).unsqueeze(0).shape(), Shape{1});
  const Tensor c = arange(24, {.dtype = DType::f64}).reshape({2, 3, 4});
  EXPECT_EQ(c.flatten().shape(), Shape{24});
  EXPECT_TRUE(c.flatten().shares_storage(c));
  EXPECT_EQ(c.flatten(1).shape(), (Shape{2, 12}));
  EXPECT_EQ(c.flatten(0, 1).shape(), (Shape{6, 4}));
  EXPECT_EQ(c.flatten(-2, -1).shape(), (Shape{2, 12}));
  EXPECT_EQ(scalar_tensor(2).flatten().shape(), Shape{1});
  // Flattening a non-contiguous view copies, in logical order.
  EXPECT_TRUE(close_to(c.transpose(1, 2).flatten(1).select(0, 0), {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}, {12}));
  EXPECT_TRUE(throws_error([&] { c.flatten(2, 1); }, {"flatten", "start_dim 2", "end_dim 1"}));
}

TEST(Views, WritesThroughViewsAreSeen) {
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    Tensor t = grid(dtype);
    t.t().select(0, 1).fill_(-1);  // column 1
    EXPECT_TRUE(close_to(t, {0, -1, 2, 3, 4, -1, 6, 7, 8, -1, 10, 11}, {3, 4}));
    t.narrow(0, 2, 1).fill_(9);  // last row
    EXPECT_TRUE(close_to(t.select(0, 2), {9, 9, 9, 9}, {4}));
    t.slice(1, 0, 4, 3).copy_(make({100, 200, 300, 400, 500, 600}, {3, 2}, dtype));  // columns 0 and 3
    EXPECT_TRUE(close_to(t, {100, -1, 2, 200, 300, -1, 6, 400, 500, 9, 9, 600}, {3, 4}));
    Tensor v = t.view({2, 6});
    v.add_(ones({6}, {.dtype = dtype}));
    EXPECT_TRUE(close_to(t.select(0, 0), {101, 0, 3, 201}, {4}));
    t.reshape({12}).mul_(2);
    EXPECT_TRUE(close_to(t.select(1, 1), {0, 0, 20}, {3}));
    // The permuted and unsqueezed views see the change too.
    EXPECT_TRUE(close_to(t.permute({1, 0}).unsqueeze(0).select(0, 0).select(0, 0), {202, 602, 1002}, {3}));
  }
}
