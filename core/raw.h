#pragma once
// Forward-only tensor operations: compute through the Backend and record nothing. The user-facing ops
// (autograd/ops.h, Tensor methods) are built on these; code inside core/ and the backward formulas use
// them directly. Shapes, dtypes and devices are checked here, with errors that name the op.
#include <tuple>
#include <vector>

#include "core/tensor.h"

namespace ember::raw {

// --- views (share storage; no data moves) ---------------------------------------------------------
Tensor as_strided(const Tensor& t, const Shape& shape, const Shape& strides, int64_t offset);
Tensor reshape(const Tensor& t, const Shape& shape);  // view if possible, else copy
Tensor view(const Tensor& t, const Shape& shape);     // view or throw
Tensor permute(const Tensor& t, const Shape& dims);
Tensor transpose(const Tensor& t, int64_t dim0, int64_t dim1);
Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length);
Tensor slice(const Tensor& t, int64_t dim, int64_t start, int64_t end, int64_t step);
Tensor select(const Tensor& t, int64_t dim, int64_t index);
Tensor expand(const Tensor& t, const Shape& shape);
Tensor squeeze(const Tensor& t);
Tensor squeeze(const Tensor& t, int64_t dim);
Tensor unsqueeze(const Tensor& t, int64_t dim);
Tensor flatten(const Tensor& t, int64_t start_dim, int64_t end_dim);

// --- copies and conversion --------------------------------------------------------------------------
Tensor contiguous(const Tensor& t);
Tensor clone(const Tensor& t);
Tensor to(const Tensor& t, DType dtype);
Tensor to(const Tensor& t, Device device);
// dst ← src (src broadcast to dst's shape, dtype converted, devices crossed). Bumps dst's version.
void copy_(const Tensor& dst, const Tensor& src);
void fill_(const Tensor& t, double value);
// Makes dst's TensorImpl view src's data (storage, shape, strides, dtype), keeping dst's autograd fields:
// every handle to dst sees the new data. What Module::to uses (PyTorch's `param.data = ...`).
void set_data(const Tensor& dst, const Tensor& src);

// --- broadcasting and type promotion -------------------------------------------------------------
// NumPy rules; throws naming `op` and both shapes when they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// PyTorch's result_type for two tensors: larger category wins (bool < integer < floating); within a
// category, a dimensioned tensor's dtype wins over a 0-d one's; otherwise the larger dtype.
DType result_type(const Tensor& a, const Tensor& b);
// Throws "tensors on different devices: cpu and cuda:0 in <op>; move one with .to(...)" (DESIGN.md).
void check_same_device(const Tensor& a, const Tensor& b, const char* op);

// --- element-wise ----------------------------------------------------------------------------------
Tensor unary(UnaryOp op, const Tensor& t, double alpha = 0, double beta = 0);
// grad · f'(x) of a unary op, from what the op saves (backends/elementwise_ops.h): x, y, or nothing (pass
// an undefined tensor). grad and saved have one shape; the result is in grad's dtype.
Tensor unary_backward(UnaryOp op, const Tensor& grad, const Tensor& saved, double alpha = 0, double beta = 0);
Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b);  // broadcasts and promotes
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// a ⊕= b in place (b broadcast to a's shape, converted to a's dtype). Bumps a's version.
void binary_(BinaryOp op, const Tensor& a, const Tensor& b);
// A 0-d tensor holding `value` with the dtype a C++ scalar of that kind gets next to `like`:
// like's dtype when it is floating or `value` is integral, else f32.
Tensor scalar_like(const Tensor& like, double value, bool value_is_integral);

// --- reductions ------------------------------------------------------------------------------------
// Empty `dims` means all dims. Sum/mean of bool or i64 accumulate in i64 (mean: f32).
Tensor reduce(ReduceOp op, const Tensor& t, const Shape& dims, bool keepdim);
Tensor arg_reduce(ArgReduceOp op, const Tensor& t, int64_t dim, bool keepdim);

// --- scans and sorts along one dim (core/sort_scan.cpp) ----------------------------------------------------
// Running sum along dim (reverse: from the end); bool and i64 accumulate in i64, floats keep their dtype.
Tensor cumsum(const Tensor& t, int64_t dim, bool reverse = false);
// (values, indices): each row along dim sorted stably, NaN as the largest; indices are i64. Any dtype.
std::tuple<Tensor, Tensor> sort(const Tensor& t, int64_t dim, bool descending);

// --- linear algebra, joining, indexing -------------------------------------------------------------
// torch.matmul: 1-D operands are promoted (and the added dim removed); batch dims broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim);
Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& t, int64_t dim, const Tensor& index);
// A tensor of `shape` filled with zeros, then out[... index ...] += src along dim.
Tensor scatter_add(const Shape& shape, int64_t dim, const Tensor& index, const Tensor& src);

// --- masking, indexing, flipping, sampling (core/indexing.cpp) ------------------------------------------
// A copy of t with out[... index[i][j][k] ...][j][k] = src[i][j][k] along dim (PyTorch's scatter): index
// has t's number of dims, index.size(d) <= src.size(d) for every d and <= t.size(d) for d != dim; src has
// t's dtype (only its index-shaped corner is read).
Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src);
// A copy of t with t[.., index[i], ..] += alpha · source[.., i, ..] along dim (1-D index; PyTorch's
// index_add). For integer tensors alpha is truncated to an integer, as PyTorch.
Tensor index_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& source, double alpha);
// A contiguous copy of t reversed along each of `dims`.
Tensor flip(const Tensor& t, const Shape& dims);
// A bool [rows, cols] mask: true where col - row <= diagonal (lower) or >= diagonal (upper), on `device`.
Tensor triangle_mask(int64_t rows, int64_t cols, int64_t diagonal, bool lower, Device device);
// i64 samples of category indices (see ember::multinomial).
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen);

// --- random -------------------------------------------------------------------------------------------
void random_(const Tensor& t, RandomOp op, double a, double b, Generator* gen);

// A new contiguous tensor, uninitialised.
Tensor empty(const Shape& shape, DType dtype, Device device);
// A new contiguous CPU tensor in page-locked memory (its copies to a GPU are asynchronous). Needs CUDA.
Tensor empty_pinned(const Shape& shape, DType dtype);

// --- scatter reductions, nonzero, writes at element offsets (core/indexing.cpp) --------------------------------
// A copy of t with src added at the index along dim (torch.scatter_add); index, src and t as scatter's.
Tensor scatter_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src);
// A copy of t with src reduced into it at the index along dim (torch.scatter_reduce): reduce is "sum",
// "prod", "mean", "amax" or "amin"; include_self: t's values take part (false: only the scattered ones, at
// the positions the index names). "mean" of integers rounds down (floor), as PyTorch. Not for bool.
Tensor scatter_reduce(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                      bool include_self);
// [count, t.dim()] i64: the multi-indices of t's nonzero (true) elements in row-major order. Reads the count
// back to the host (a GPU waits), as PyTorch.
Tensor nonzero(const Tensor& t);
// target's storage ← vals at element offsets pos from the storage's first element (pos and vals 1-D, one
// length; vals of target's dtype), added when accumulate, else written (a repeated offset: one write wins).
// In place: bumps target's version. The offsets must lie in the storage (callers compute them from views).
void put_(const Tensor& target, const Tensor& pos, const Tensor& vals, bool accumulate);

}  // namespace ember::raw
