#pragma once
// Index arithmetic shared by the backends (the CPU's loops and the CUDA kernels use the same structs, so
// the CPU tests check the index math the GPU runs):
// - StridedOperands: N operands that share a shape but not strides (the analogue of PyTorch's
//   TensorIterator). Dims of size 1 are dropped and dims contiguous in every operand merged.
// - ReductionPlan: a reduction's input split into kept dims (one output each) and reduced dims.
// Both are plain structs, built on the host and passed by value to GPU kernels.
#include <array>
#include <cstdint>

#include "backends/backend.h"
#include "base/host_device.h"

namespace ember {

template <int N>
struct StridedOperands {
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};  // bytes
  char* base[N] = {};

  StridedOperands() = default;
  // All TensorArgs must have the same shape (the caller has expanded inputs).
  explicit StridedOperands(const std::array<const TensorArg*, N>& args) {
    const TensorArg& first = *args[0];
    for (int d = 0; d < first.ndim; ++d) {
      if (first.shape[d] == 1) continue;  // size-1 dims never move the pointers
      shape[ndim] = first.shape[d];
      for (int k = 0; k < N; ++k)
        strides[k][ndim] = args[k]->strides[d] * static_cast<int64_t>(dtype_size(args[k]->dtype));
      ++ndim;
    }
    for (int k = 0; k < N; ++k) base[k] = static_cast<char*>(args[k]->data);
    coalesce();
    if (ndim == 0) {  // a single element: one run of length 1
      ndim = 1;
      shape[0] = 1;
      for (int k = 0; k < N; ++k) strides[k][0] = 0;
    }
  }

  EMBER_HOST_DEVICE int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= shape[d];
    return n;
  }

  // The operands' addresses at element `linear` (row-major over the shape).
  EMBER_HOST_DEVICE void pointers(int64_t linear, char* (&ptrs)[N]) const {
    for (int k = 0; k < N; ++k) ptrs[k] = base[k];
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t i = linear % shape[d];
      linear /= shape[d];
      for (int k = 0; k < N; ++k) ptrs[k] += i * strides[k][d];
    }
  }

 private:
  // Merge dim d into d+1 when, for every operand, stepping d equals stepping d+1 shape[d+1] times.
  void coalesce() {
    if (ndim <= 1) return;
    int out = 0;
    for (int d = 1; d < ndim; ++d) {
      bool mergeable = true;
      for (int k = 0; k < N; ++k)
        if (strides[k][out] != strides[k][d] * shape[d]) mergeable = false;
      if (mergeable) {
        shape[out] *= shape[d];
        for (int k = 0; k < N; ++k) strides[k][out] = strides[k][d];
      } else {
        ++out;
        shape[out] = shape[d];
        for (int k = 0; k < N; ++k) strides[k][out] = strides[k][d];
      }
    }
    ndim = out + 1;
  }
};

// A reduction of `in` into `out` (keepdim form: out has in's rank, size 1 in the reduced dims).
struct ReductionPlan {
  TensorArg reduced;  // the reduced dims of the input, data = element 0 of the first output's slice
  int kept_ndim = 0;
  int64_t kept_shape[kMaxDims] = {};
  int64_t in_kept_strides[kMaxDims] = {};   // elements
  int64_t out_kept_strides[kMaxDims] = {};  // elements
  int64_t num_outputs = 1;

  ReductionPlan(const TensorArg& in, const TensorArg& out) {
    EMBER_CHECK(in.ndim == out.ndim, "reduce: output must have the input's rank (keepdim form)");
    reduced.data = in.data;
    reduced.dtype = in.dtype;
    for (int d = 0; d < in.ndim; ++d) {
      if (out.shape[d] == in.shape[d]) {
        if (in.shape[d] == 1) continue;
        kept_shape[kept_ndim] = in.shape[d];
        in_kept_strides[kept_ndim] = in.strides[d];
        out_kept_strides[kept_ndim] = out.strides[d];
        ++kept_ndim;
        num_outputs *= in.shape[d];
      } else {
        EMBER_CHECK(out.shape[d] == 1, "reduce: output dim ", d, " is ", out.shape[d], ", expected 1 or ", in.shape[d]);
        reduced.shape[reduced.ndim] = in.shape[d];
        reduced.strides[reduced.ndim] = in.strides[d];
        ++reduced.ndim;
      }
    }
  }

  // Element offsets (input, output) of output number o (row-major over the kept dims).
  EMBER_HOST_DEVICE void offsets(int64_t o, int64_t& in_off, int64_t& out_off) const {
    in_off = 0;
    out_off = 0;
    for (int d = kept_ndim - 1; d >= 0; --d) {
      const int64_t i = o % kept_shape[d];
      o /= kept_shape[d];
      in_off += i * in_kept_strides[d];
      out_off += i * out_kept_strides[d];
    }
  }
};

// How a row-major BLAS call sees one matrix (dims 1, 2) of a 3-D operand: as stored, with leading dim ld,
// when its columns have unit stride; transposed when its rows do. (cuBLAS computes the row-major product
// as the transposed column-major one, with the same flags.) Throws when neither dim has unit stride.
struct GemmLayout {
  bool transposed = false;
  int64_t ld = 1;
};
inline GemmLayout gemm_layout(const TensorArg& arg, const char* name) {
  const int64_t rows = arg.shape[1], cols = arg.shape[2];
  const int64_t rs = arg.strides[1], cs = arg.strides[2];
  if (cs == 1 && (rows == 1 || rs >= cols)) return {false, rows == 1 ? (cols > 1 ? cols : 1) : rs};
  if (rs == 1 && (cols == 1 || cs >= rows)) return {true, cols == 1 ? (rows > 1 ? rows : 1) : cs};
  detail::throw_error("matmul: operand ", name, " has strides [", rs, ", ", cs,
                      "] with no unit stride; make it contiguous first");
}

// gather and scatter_add iterate over the index's shape with three operands: the iterated tensor (out for
// gather, in for scatter_add), the index, and `other` — the addressed tensor viewed with the iterated
// shape and its `dim` stride pinned to 0, so that element + index · `step` is the addressed element; an
// index must lie in [0, limit).
struct IndexPlan {
  TensorArg other;
  int64_t limit = 0, step = 0;
  IndexPlan(const TensorArg& iterated, const TensorArg& addressed, int dim) : other(addressed) {
    other.ndim = iterated.ndim;
    for (int d = 0; d < iterated.ndim; ++d) {
      other.shape[d] = iterated.shape[d];
      other.strides[d] = d == dim ? 0 : addressed.strides[d];
    }
    limit = addressed.shape[dim];
    step = addressed.strides[dim];
  }
};

// One element of gather / scatter / scatter_add on an IndexPlan's operands: `it` is the iterated tensor's
// element, `at` the addressed tensor's element at position 0 of `dim` (`other`'s), idx the index. Returns
// false, doing nothing, when idx lies outside [0, limit). add(addressed, v) is scatter_add's addition (the CPU:
// in place, one thread; CUDA: atomic).
template <IndexOp kOp, typename T, typename Add>
EMBER_HOST_DEVICE bool index_element(T* it, T* at, int64_t idx, int64_t limit, int64_t step, const Add& add) {
  if (idx < 0 || idx >= limit) return false;
  T* addressed = at + idx * step;
  if constexpr (kOp == IndexOp::gather) *it = *addressed;
  else if constexpr (kOp == IndexOp::scatter) *addressed = *it;
  else add(addressed, *it);
  return true;
}

// The rows along `dim` of `in` and of `other` (a tensor of in's shape, e.g. an output): offsets(o, ...)
// gives the first element of row o in both; a row has in.shape[dim] elements, strides[dim] apart.
inline ReductionPlan row_plan(const TensorArg& in, const TensorArg& other, int dim) {
  TensorArg heads = other;
  heads.shape[dim] = 1;
  return ReductionPlan(in, heads);
}

}  // namespace ember
