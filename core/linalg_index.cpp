// matmul, cat/stack, index_select/gather/scatter_add.
#include <optional>

#include "core/raw.h"

namespace ember::raw {
namespace {

// BLAS takes a matrix whose dims are (rows, cols) with one unit stride and the other ≥ the extent.
bool gemm_compatible(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  return (cs == 1 && (rows == 1 || rs >= cols)) || (rs == 1 && (cols == 1 || cs >= rows));
}

// A [B, R, C] view of `t` (dims: batch..., R, C) when the batch dims collapse into one stride; else of a
// contiguous copy. Makes the matrices BLAS-compatible too.
Tensor as_batched(const Tensor& t, int64_t batch) {
  const int n = t.dim();
  const int64_t rows = t.shape()[n - 2], cols = t.shape()[n - 1];
  const int64_t rs = t.strides()[n - 2], cs = t.strides()[n - 1];
  int64_t bstride = 0;
  bool collapsible = true;
  int64_t expected = -1;  // stride the next-outer non-trivial batch dim must have
  for (int d = n - 3; d >= 0; --d) {
    if (t.shape()[d] == 1) continue;
    if (expected < 0) {
      bstride = t.strides()[d];
    } else if (t.strides()[d] != expected) {
      collapsible = false;
    }
    expected = t.strides()[d] * t.shape()[d];
  }
  if (collapsible && gemm_compatible(rows, cols, rs, cs)) return as_strided(t, {batch, rows, cols}, {bstride, rs, cs}, t.offset());
  const Tensor c = contiguous(t);
  return as_strided(c, {batch, rows, cols}, {rows * cols, cols, 1}, c.offset());
}

// A BLAS-compatible matrix as the [1, R, C] descriptor the backend takes, without making a view (small
// matmuls are dominated by such overhead). nullopt when t is not such a matrix.
std::optional<TensorArg> as_batch_of_one(const Tensor& t) {
  if (t.dim() != 2 || !gemm_compatible(t.shape()[0], t.shape()[1], t.strides()[0], t.strides()[1])) return std::nullopt;
  TensorArg a = t.arg();
  a.ndim = 3;
  a.shape[2] = a.shape[1], a.strides[2] = a.strides[1];
  a.shape[1] = a.shape[0], a.strides[1] = a.strides[0];
  a.shape[0] = 1, a.strides[0] = 0;
  return a;
}

}  // namespace

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  check_same_device(a_in, b_in, "matmul");
  EMBER_CHECK(a_in.dim() >= 1 && b_in.dim() >= 1, "matmul: both operands need at least 1 dim, got shapes ",
              a_in.shape(), " and ", b_in.shape());
  const DType dtype = result_type(a_in, b_in);
  EMBER_CHECK(dtype != DType::b8, "matmul: not defined for bool tensors");
  Tensor a = to(a_in, dtype), b = to(b_in, dtype);
  const bool a_vec = a.dim() == 1, b_vec = b.dim() == 1;
  if (a_vec) a = unsqueeze(a, 0);
  if (b_vec) b = unsqueeze(b, 1);
  const int64_t M = a.shape()[a.dim() - 2], K = a.shape()[a.dim() - 1];
  const int64_t K2 = b.shape()[b.dim() - 2], N = b.shape()[b.dim() - 1];
  EMBER_CHECK(K == K2, "matmul: shapes ", a_in.shape(), " and ", b_in.shape(), " cannot be multiplied (", K, " != ", K2,
              ")");
  if (!a_vec && !b_vec && a.dim() == 2 && b.dim() == 2) {  // [M, K] @ [K, N]: straight to the backend
    const auto a3 = as_batch_of_one(a), b3 = as_batch_of_one(b);
    if (a3 && b3) {
      Tensor out = empty({M, N}, dtype, a.device());
      backend(a.device()).matmul(*a3, *b3, *as_batch_of_one(out));
      return out;
    }
  }
  // [.., M, K] @ [K, N] with a foldable into rows: one GEMM of [(..)·M, K] @ [K, N], as PyTorch does.
  if (b.dim() == 2 && a.dim() > 2 && a.is_contiguous() && K > 0) {  // K > 0: the fold divides by K
    Shape out_shape = a.shape();
    out_shape[out_shape.size() - 1] = N;
    Tensor flat = matmul(view(a, {a.numel() / K, K}), b);
    Tensor out = view(flat, out_shape);
    return b_vec ? squeeze(out, -1) : out;
  }
  Shape batch_a(std::span<const int64_t>(a.shape().data(), a.dim() - 2));
  Shape batch_b(std::span<const int64_t>(b.shape().data(), b.dim() - 2));
  const Shape batch = broadcast_shapes(batch_a, batch_b, "matmul (batch dims)");
  Shape a_shape = batch, b_shape = batch;
  a_shape.push_back(M), a_shape.push_back(K);
  b_shape.push_back(K), b_shape.push_back(N);
  const int64_t B = batch.numel();
  const Tensor a3 = as_batched(expand(a, a_shape), B), b3 = as_batched(expand(b, b_shape), B);
  Tensor out = empty({B, M, N}, dtype, a.device());
  backend(a.device()).matmul(a3.arg(), b3.arg(), out.arg());
  Shape out_shape = batch;
  if (!a_vec) out_shape.push_back(M);
  if (!b_vec) out_shape.push_back(N);
  return view(out, out_shape);
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  EMBER_CHECK(!tensors.empty(), "cat: expected a non-empty list of tensors");
  const Tensor& first = tensors[0];
  EMBER_CHECK(first.dim() > 0, "cat: zero-dimensional tensors cannot be concatenated; use stack()");
  const int d = wrap_dim(dim, first.dim(), "cat");
  DType dtype = first.dtype();
  int64_t total = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    check_same_device(first, t, "cat");
    EMBER_CHECK(t.dim() == first.dim(), "cat: tensor ", i, " has ", t.dim(), " dims (shape ", t.shape(),
                "), tensor 0 has ", first.dim(), " (shape ", first.shape(), ")");
    for (int k = 0; k < first.dim(); ++k)
      EMBER_CHECK(k == d || t.shape()[k] == first.shape()[k], "cat: tensor ", i, " has shape ", t.shape(),
                  ", tensor 0 has ", first.shape(), "; all dims but dim ", d, " must match");
    dtype = promote_types(dtype, t.dtype());
    total += t.shape()[d];
  }
  Shape shape = first.shape();
  shape[d] = total;
  Tensor out = empty(shape, dtype, first.device());
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    backend(out.device()).copy(t.arg(), narrow(out, d, offset, t.shape()[d]).arg());
    offset += t.shape()[d];
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  EMBER_CHECK(!tensors.empty(), "stack: expected a non-empty list of tensors");
  const int d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> parts;
  parts.reserve(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].shape() == tensors[0].shape(), "stack: tensor ", i, " has shape ", tensors[i].shape(),
                ", tensor 0 has ", tensors[0].shape(), "; stack needs equal shapes");
    parts.push_back(unsqueeze(tensors[i], d));
  }
  return cat(parts, d);
}

Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index) {
  check_same_device(t, index, "index_select");
  EMBER_CHECK(index.dtype() == DType::i64, "index_select: the index must be i64, got ", dtype_name(index.dtype()));
  EMBER_CHECK(index.dim() <= 1, "index_select: the index must be 0-d or 1-D, got shape ", index.shape(),
              " (as PyTorch); for an N-d index take index_select(x, dim, index.flatten()) and reshape it to the "
              "index's shape plus x's other dims (nn::functional::embedding(index, x) does this for dim 0)");
  const int d = wrap_dim(dim, t.dim(), "index_select");
  if (t.dim() == 0) return gather(t, 0, index);
  Shape shape = t.shape();
  shape[d] = index.numel();
  Tensor out = empty(shape, t.dtype(), t.device());
  // The index seen with the output's shape: stride 0 everywhere but `d`.
  Shape strides = Shape::filled(shape.size(), 0);
  strides[d] = index.dim() == 1 ? index.strides()[0] : 0;
  const Tensor idx = as_strided(index, shape, strides, index.offset());
  backend(t.device()).index(IndexOp::gather, t.arg(), idx.arg(), out.arg(), d);
  return out;
}

Tensor gather(const Tensor& t, int64_t dim, const Tensor& index) {
  check_same_device(t, index, "gather");
  EMBER_CHECK(index.dtype() == DType::i64, "gather: the index must be i64, got ", dtype_name(index.dtype()));
  EMBER_CHECK(index.dim() == t.dim(), "gather: the index (shape ", index.shape(), ") must have as many dims as the "
              "input (shape ", t.shape(), ")");
  const int d = wrap_dim(dim, t.dim(), "gather");
  for (int k = 0; k < t.dim(); ++k)
    EMBER_CHECK(k == d || index.shape()[k] <= t.shape()[k], "gather: index shape ", index.shape(),
                " exceeds the input shape ", t.shape(), " in dim ", k);
  Tensor out = empty(index.shape(), t.dtype(), t.device());
  if (t.dim() == 0) {
    backend(t.device()).index(IndexOp::gather, unsqueeze(t, 0).arg(), unsqueeze(index, 0).arg(),
                              unsqueeze(out, 0).arg(), 0);
  } else {
    backend(t.device()).index(IndexOp::gather, t.arg(), index.arg(), out.arg(), d);
  }
  return out;
}

Tensor scatter_add(const Shape& shape, int64_t dim, const Tensor& index, const Tensor& src) {
  check_same_device(src, index, "scatter_add");
  EMBER_CHECK(index.dtype() == DType::i64, "scatter_add: the index must be i64, got ", dtype_name(index.dtype()));
  EMBER_CHECK(index.shape() == src.shape(), "scatter_add: the index shape ", index.shape(),
              " must equal the source shape ", src.shape());
  EMBER_CHECK(src.dim() == shape.size(), "scatter_add: the source (shape ", src.shape(),
              ") must have as many dims as the output ", shape);
  const int d = wrap_dim(dim, shape.size(), "scatter_add");
  for (int k = 0; k < shape.size(); ++k)
    EMBER_CHECK(k == d || src.shape()[k] <= shape[k], "scatter_add: source shape ", src.shape(),
                " exceeds the output shape ", shape, " in dim ", k);
  Tensor out = zeros(shape, {.dtype = src.dtype(), .device = src.device()});
  backend(src.device()).index(IndexOp::scatter_add, src.arg(), index.arg(), out.arg(), d);
  return out;
}

}  // namespace ember::raw
