// matmul (2-D, batched with broadcast batch dims, 1-D operands, views, f32/f64/i64), cat, stack,
// index_select, gather, scatter_add.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include "core/raw.h"
#include "test_helpers.h"

using namespace ember;
using ember::test::close_to;
using ember::test::layouts;
using ember::test::make;

namespace {

// Reference batched matmul in double: a [Ba, M, K] @ b [Bb, K, N], batch index broadcast when one is 1.
std::vector<double> reference_matmul(const std::vector<double>& a, int64_t Ba, const std::vector<double>& b,
                                     int64_t Bb, int64_t M, int64_t K, int64_t N) {
  const int64_t B = std::max(Ba, Bb);
  std::vector<double> out(B * M * N, 0.0);
  for (int64_t i = 0; i < B; ++i)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += a[(Ba == 1 ? 0 : i) * M * K + m * K + k] * b[(Bb == 1 ? 0 : i) * K * N + k * N + n];
        out[i * M * N + m * N + n] = acc;
      }
  return out;
}

std::vector<double> iota(int64_t n, double start = 1, double step = 1) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(start + i * step);
  return v;
}

}  // namespace

TEST(Matmul, TwoDimsAllLayouts) {
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    for (const auto& a : layouts({1, 2, 3, 4, 5, 6}, {2, 3}, dtype))
      for (const auto& b : layouts({7, 8, 9, 10, 11, 12}, {3, 2}, dtype)) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + a.name + " @ " + b.name);
        const Tensor c = matmul(a.t, b.t);
        EXPECT_EQ(c.dtype(), dtype);
        EXPECT_TRUE(close_to(c, {58, 64, 139, 154}, {2, 2}));
        EXPECT_TRUE(close_to(b.t.matmul(a.t), {39, 54, 69, 49, 68, 87, 59, 82, 105}, {3, 3}));
      }
    const Tensor sq = make({1, 2, 3, 4}, {2, 2}, dtype);
    EXPECT_TRUE(close_to(matmul(sq, make({5, 6, 7, 8}, {2, 2}, dtype)), {19, 22, 43, 50}, {2, 2}));
    EXPECT_TRUE(close_to(matmul(sq.t(), sq), {10, 14, 14, 20}, {2, 2}));  // both operands share storage
    // Column and row vectors as 2-D matrices, and a slice of a wider matrix (leading dim > cols).
    EXPECT_TRUE(close_to(matmul(make({1, 2}, {2, 1}, dtype), make({3, 4}, {1, 2}, dtype)), {3, 4, 6, 8}, {2, 2}));
    const Tensor wide = make(iota(12), {3, 4}, dtype).narrow(1, 1, 2);  // [[2,3],[6,7],[10,11]]
    EXPECT_TRUE(close_to(matmul(wide.t(), wide), {140, 158, 158, 179}, {2, 2}));
  }
}

TEST(Matmul, OneDimensionalOperands) {
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    for (const auto& v : layouts({1, 2, 3}, {3}, dtype)) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + v.name);
      EXPECT_TRUE(close_to(matmul(v.t, make({7, 8, 9, 10, 11, 12}, {3, 2}, dtype)), {58, 64}, {2}));
      EXPECT_TRUE(close_to(matmul(make({1, 2, 3, 4, 5, 6}, {2, 3}, dtype), v.t), {14, 32}, {2}));
      EXPECT_TRUE(close_to(matmul(v.t, make({4, 5, 6}, {3}, dtype)), {32}, {}));  // dot product: 0-d
      // A batched left operand with a vector on the right: [2, 2, 3] @ [3] -> [2, 2].
      EXPECT_TRUE(close_to(matmul(make(iota(12), {2, 2, 3}, dtype), v.t), {14, 32, 50, 68}, {2, 2}));
      EXPECT_TRUE(close_to(matmul(v.t, make(iota(12), {2, 3, 2}, dtype)), {22, 28, 58, 64}, {2, 2}));
    }
    // Stride-0 vector (expanded scalar).
    EXPECT_TRUE(close_to(matmul(scalar_tensor(2, {.dtype = dtype}).expand({3}), make({1, 2, 3}, {3}, dtype)), {12}, {}));
  }
}

TEST(Matmul, BatchedAndBroadcast) {
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const Tensor a = make({1, 2, 3, 4, 1, 0, 0, 1}, {2, 2, 2}, dtype);
    const Tensor b = make({5, 6, 7, 8, 2, 3, 4, 5}, {2, 2, 2}, dtype);
    EXPECT_TRUE(close_to(matmul(a, b), {19, 22, 43, 50, 2, 3, 4, 5}, {2, 2, 2}));
    // Batched with transposed matrices: a[i]^T @ b[i].
    EXPECT_TRUE(close_to(matmul(a.transpose(1, 2), b), {26, 30, 38, 44, 2, 3, 4, 5}, {2, 2, 2}));
    // A permuted batch dim that does not collapse into one stride: [2, 2, 2] seen as batch-last storage.
    const Tensor perm = make({1, 1, 2, 0, 3, 0, 4, 1}, {2, 2, 2}, dtype).permute({2, 0, 1});  // == a
    EXPECT_TRUE(close_to(matmul(perm, b), {19, 22, 43, 50, 2, 3, 4, 5}, {2, 2, 2}));
    // [2, 1, 2, 3] @ [3, 3, 2] -> [2, 3, 2, 2]: the batch dims broadcast.
    const std::vector<double> av = iota(12, -5), bv = iota(18, 1, 0.5);
    std::vector<double> expected;
    for (int i = 0; i < 2; ++i) {
      const std::vector<double> ai(av.begin() + i * 6, av.begin() + (i + 1) * 6);
      const auto part = reference_matmul(ai, 1, bv, 3, 2, 3, 2);
      expected.insert(expected.end(), part.begin(), part.end());
    }
    if (dtype != DType::i64) {
      for (const auto& x : layouts(av, {2, 1, 2, 3}, dtype))
        for (const auto& y : layouts(bv, {3, 3, 2}, dtype)) {
          SCOPED_TRACE(x.name + " @ " + y.name);
          EXPECT_TRUE(close_to(matmul(x.t, y.t), expected, {2, 3, 2, 2}));
        }
    }
    // [4, 2, 3] @ [3, 2]: a 2-D right operand broadcasts over the batch (folded into one GEMM when it can).
    const std::vector<double> a3 = iota(24), b2 = iota(6, -2);
    const auto e3 = reference_matmul(a3, 4, b2, 1, 2, 3, 2);
    for (const auto& x : layouts(a3, {4, 2, 3}, dtype)) {
      SCOPED_TRACE(x.name);
      EXPECT_TRUE(close_to(matmul(x.t, make(b2, {3, 2}, dtype)), e3, {4, 2, 2}));
      EXPECT_TRUE(close_to(matmul(x.t, make(b2, {2, 3}, dtype).t()),
                           reference_matmul(a3, 4, {-2, 1, -1, 2, 0, 3}, 1, 2, 3, 2), {4, 2, 2}));
    }
    // An expanded (stride-0) batch operand equals its materialised copy.
    const Tensor shared = make(b2, {3, 2}, dtype).unsqueeze(0).expand({4, 3, 2});
    EXPECT_TRUE(close_to(matmul(make(a3, {4, 2, 3}, dtype), shared), e3, {4, 2, 2}));
    EXPECT_TRUE(close_to(matmul(make(b2, {2, 3}, dtype).unsqueeze(0).expand({4, 2, 3}), make(a3, {4, 3, 2}, dtype)),
                         reference_matmul(b2, 1, a3, 4, 2, 3, 2), {4, 2, 2}));
  }
}

TEST(Matmul, LargerAndEmpty) {
  // Many small matrices (threads split the batch) and one bigger GEMM, against the reference loop.
  Generator g(3);
  for (DType dtype : ember::test::kFloatTypes) {
    const Tensor a = randn({8, 16, 24}, {.dtype = dtype}, &g), b = randn({8, 24, 20}, {.dtype = dtype}, &g);
    EXPECT_TRUE(close_to(matmul(a, b), reference_matmul(a.to_vector<double>(), 8, b.to_vector<double>(), 8, 16, 24, 20),
                         {8, 16, 20}, 1e-4, 1e-4));
    const Tensor c = randn({130, 70}, {.dtype = dtype}, &g), d = randn({70, 90}, {.dtype = dtype}, &g);
    EXPECT_TRUE(close_to(matmul(c, d.t().contiguous().t()),
                         reference_matmul(c.to_vector<double>(), 1, d.to_vector<double>(), 1, 130, 70, 90), {130, 90},
                         1e-4, 1e-4));
  }
  // Empty inner dim: zeros; empty outer dims: empty results.
  EXPECT_TRUE(close_to(matmul(zeros({2, 0}), zeros({0, 3})), {0, 0, 0, 0, 0, 0}, {2, 3}));
  EXPECT_TRUE(close_to(matmul(zeros({2, 3, 0}), zeros({0, 2})), std::vector<double>(12, 0.0), {2, 3, 2}));
  EXPECT_EQ(matmul(zeros({0, 3}), zeros({3, 2})).shape(), (Shape{0, 2}));
  // Mixed dtypes promote.
  EXPECT_EQ(matmul(make({1, 2}, {1, 2}, DType::i64), make({3, 4}, {2, 1}, DType::f32)).dtype(), DType::f32);
  EXPECT_TRUE(close_to(matmul(make({1, 2}, {1, 2}, DType::f64), make({3, 4}, {2, 1}, DType::f32)), {11}, {1, 1}));
}

TEST(Join, Cat) {
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const Tensor a = make({1, 2, 3, 4}, {2, 2}, dtype);
    EXPECT_TRUE(close_to(cat({a, make({5, 6}, {1, 2}, dtype)}), {1, 2, 3, 4, 5, 6}, {3, 2}));
    EXPECT_TRUE(close_to(cat({a, make({7, 8}, {2, 1}, dtype)}, 1), {1, 2, 7, 3, 4, 8}, {2, 3}));
    EXPECT_TRUE(close_to(cat({a, a.t(), a.slice(1, 1, 2)}, -1), {1, 2, 1, 3, 2, 3, 4, 2, 4, 4}, {2, 5}));
    EXPECT_TRUE(close_to(cat({a.t()}, 0), {1, 3, 2, 4}, {2, 2}));
    EXPECT_FALSE(cat({a}).shares_storage(a));  // always a new tensor
    EXPECT_TRUE(close_to(cat({make({1}, {1}, dtype).expand({3}), zeros({0}, {.dtype = dtype}), make({2}, {1}, dtype)}),
                         {1, 1, 1, 2}, {4}));
  }
  const Tensor mixed = cat({make({1, 2}, {2}, DType::i64), make({0.5}, {1}, DType::f32)});
  EXPECT_EQ(mixed.dtype(), DType::f32);
  EXPECT_TRUE(close_to(mixed, {1, 2, 0.5}, {3}));
}

TEST(Join, Stack) {
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    const Tensor x = make({1, 2}, {2}, dtype), y = make({3, 4}, {2}, dtype);
    EXPECT_TRUE(close_to(stack({x, y}), {1, 2, 3, 4}, {2, 2}));
    EXPECT_TRUE(close_to(stack({x, y}, 1), {1, 3, 2, 4}, {2, 2}));
    EXPECT_TRUE(close_to(stack({x, y}, -1), {1, 3, 2, 4}, {2, 2}));
    const Tensor m = make({1, 2, 3, 4}, {2, 2}, dtype);
    EXPECT_TRUE(close_to(stack({m, m.t(), m * 0}, 1), {1, 2, 1, 3, 0, 0, 3, 4, 2, 4, 0, 0}, {2, 3, 2}));
    EXPECT_TRUE(close_to(stack({scalar_tensor(1, {.dtype = dtype}), scalar_tensor(2, {.dtype = dtype})}), {1, 2}, {2}));
  }
}

TEST(Index, IndexSelect) {
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const Tensor x = make(iota(12, 0), {3, 4}, dtype);
    const Tensor rows = from_vector<int64_t>({2, 0, 2});
    EXPECT_TRUE(close_to(index_select(x, 0, rows), {8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11}, {3, 4}));
    EXPECT_TRUE(close_to(index_select(x, 1, from_vector<int64_t>({3, 1})), {3, 1, 7, 5, 11, 9}, {3, 2}));
    EXPECT_TRUE(close_to(index_select(x, -1, from_vector<int64_t>({})), {}, {3, 0}));
    // On views, and with an index that is itself a strided view.
    EXPECT_TRUE(close_to(index_select(x.t(), 0, rows), {2, 6, 10, 0, 4, 8, 2, 6, 10}, {3, 3}));
    EXPECT_TRUE(close_to(index_select(x.slice(1, 1, 4, 2), 1, from_vector<int64_t>({1, 1, 0})),
                         {3, 3, 1, 7, 7, 5, 11, 11, 9}, {3, 3}));
    const Tensor strided_index = from_vector<int64_t>({1, 99, 0, 99}).slice(0, 0, 4, 2);  // [1, 0]
    EXPECT_TRUE(close_to(index_select(x, 0, strided_index), {4, 5, 6, 7, 0, 1, 2, 3}, {2, 4}));
    EXPECT_TRUE(close_to(index_select(x, 0, scalar_tensor(1, {.dtype = DType::i64})), {4, 5, 6, 7}, {1, 4}));
  }
}

TEST(Index, Gather) {
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    for (const auto& x : layouts(iota(12, 0), {3, 4}, dtype)) {
      SCOPED_TRACE(x.name);
      // Picking each row's label: out[i][0] = x[i][label[i]].
      const Tensor labels = from_vector<int64_t>({2, 0, 3}, {3, 1});
      EXPECT_TRUE(close_to(gather(x.t, 1, labels), {2, 4, 11}, {3, 1}));
      EXPECT_TRUE(close_to(gather(x.t, 1, from_vector<int64_t>({3, 3, 0, 1, 1, 1}, {3, 2})), {3, 3, 4, 5, 9, 9}, {3, 2}));
      EXPECT_TRUE(close_to(gather(x.t, 0, from_vector<int64_t>({0, 1, 2, 0}, {1, 4})), {0, 5, 10, 3}, {1, 4}));
      EXPECT_TRUE(close_to(gather(x.t, -2, from_vector<int64_t>({2, 2}, {1, 2})), {8, 9}, {1, 2}));
    }
  }
}

TEST(Index, ScatterAdd) {
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const Tensor src = make({1, 2, 3, 4, 5, 6}, {2, 3}, dtype);
    const Tensor index = from_vector<int64_t>({0, 2, 0, 1, 1, 1}, {2, 3});
    const Tensor out = raw::scatter_add({2, 3}, 1, index, src);  // duplicates accumulate
    EXPECT_EQ(out.dtype(), dtype);
    EXPECT_TRUE(close_to(out, {4, 0, 2, 0, 15, 0}, {2, 3}));
    EXPECT_TRUE(close_to(raw::scatter_add({3}, 0, from_vector<int64_t>({0, 2, 0, 2}), make({1, 2, 3, 4}, {4}, dtype)),
                         {4, 0, 6}, {3}));
    // Transposed source, and an output larger than the source along the other dim.
    EXPECT_TRUE(close_to(raw::scatter_add({3, 3}, 0, from_vector<int64_t>({2, 0, 2, 1, 0, 2}, {3, 2}), src.t()),
                         {3, 4, 0, 0, 5, 0, 3, 6, 0}, {3, 3}));
    // scatter_add undoes gather's selection: summing the gathered values back.
    const Tensor x = make(iota(6, 1), {2, 3}, dtype);
    const Tensor idx = from_vector<int64_t>({1, 1, 2, 0}, {2, 2});
    EXPECT_TRUE(close_to(raw::scatter_add({2, 3}, 1, idx, gather(x, 1, idx)), {0, 4, 0, 4, 0, 6}, {2, 3}));
  }
}
