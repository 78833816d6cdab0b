// cumsum and sort along one dim: one thread per row (all indices but `dim`), the CPU's order of operations
// (kernels::ScanAcc, kernels::sort_before), so results match the CPU backend's exactly.
//
// LIMIT: a row is handled by a single thread. Right for the usual shapes (many rows: a batch of logits, the
// k of a top-k); a few very long rows (one row of 10^6 elements) run serially on one thread each — correct
// but slow (sort is a merge sort, O(n log n) per row, with 2 · rows · n scratch elements and indices).
#include "backends/cuda/loops.cuh"
#include "backends/kernels.h"
#include "backends/strided.h"

namespace ember::cuda {
namespace {

template <typename T>
struct CumsumRowOp {
  ReductionPlan plan;
  const T* in;
  T* out;
  int64_t len, in_step, out_step;
  bool reverse;
  __device__ void operator()(int64_t o) const {
    int64_t in_off, out_off;
    plan.offsets(o, in_off, out_off);
    kernels::ScanAcc<T> acc = 0;
    for (int64_t k = 0; k < len; ++k) {
      const int64_t i = reverse ? len - 1 - k : k;
      acc += static_cast<kernels::ScanAcc<T>>(in[in_off + i * in_step]);
      out[out_off + i * out_step] = static_cast<T>(acc);
    }
  }
};

// Bottom-up merge sort of one row, ping-ponging between two scratch rows (a, b). Stable: on ties the
// left run's element is taken first.
template <typename T>
struct SortRowOp {
  ReductionPlan vplan, iplan;
  const T* in;
  T* values;
  int64_t* indices;
  T* scratch_v;          // 2 · rows · len
  int64_t* scratch_i;    // 2 · rows · len
  int64_t rows, len, in_step, v_step, i_step;
  bool descending;
  __device__ void operator()(int64_t o) const {
    int64_t in_off, v_off, unused, i_off;
    vplan.offsets(o, in_off, v_off);
    iplan.offsets(o, unused, i_off);
    T* av = scratch_v + o * len;
    int64_t* ai = scratch_i + o * len;
    T* bv = scratch_v + (rows + o) * len;
    int64_t* bi = scratch_i + (rows + o) * len;
    for (int64_t k = 0; k < len; ++k) {
      av[k] = in[in_off + k * in_step];
      ai[k] = k;
    }
    for (int64_t width = 1; width < len; width *= 2) {
      for (int64_t lo = 0; lo < len; lo += 2 * width) {
        const int64_t mid = lo + width < len ? lo + width : len;
        const int64_t hi = lo + 2 * width < len ? lo + 2 * width : len;
        int64_t i = lo, j = mid, k = lo;
        while (i < mid && j < hi) {
          const bool right = kernels::sort_before(av[j], av[i], descending);  // strictly before: stable
          bv[k] = right ? av[j] : av[i];
          bi[k++] = right ? ai[j++] : ai[i++];
        }
        for (; i < mid; ++i, ++k) bv[k] = av[i], bi[k] = ai[i];
        for (; j < hi; ++j, ++k) bv[k] = av[j], bi[k] = ai[j];
      }
      T* tv = av;
      av = bv;
      bv = tv;
      int64_t* ti = ai;
      ai = bi;
      bi = ti;
    }
    for (int64_t k = 0; k < len; ++k) {
      values[v_off + k * v_step] = av[k];
      indices[i_off + k * i_step] = ai[k];
    }
  }
};

}  // namespace

void CudaBackend::cumsum(const TensorArg& in, const TensorArg& out, int dim, bool reverse) {
  EMBER_CHECK(in.dtype == out.dtype, "cumsum: input and output dtypes differ");
  EMBER_CHECK(dim >= 0 && dim < in.ndim, "cumsum: dim ", dim, " is out of range for ", in.ndim, " dims");
  DeviceContext& ctx = context(out.device_index);
  if (in.numel() == 0) return;
  dispatch_dtype(in.dtype, "cumsum", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      ember::detail::throw_error("cumsum: not defined for bool tensors in the backend; convert with .to(DType::i64)");
    } else {
      const ReductionPlan plan = row_plan(in, out, dim);
      launch_index(ctx.stream, plan.num_outputs,
                   CumsumRowOp<T>{plan, static_cast<const T*>(in.data), static_cast<T*>(out.data), in.shape[dim],
                                  in.strides[dim], out.strides[dim], reverse});
    }
  });
}

void CudaBackend::sort(const TensorArg& in, const TensorArg& values, const TensorArg& indices, int dim,
                       bool descending) {
  EMBER_CHECK(values.dtype == in.dtype, "sort: values must have the input's dtype");
  EMBER_CHECK(indices.dtype == DType::i64, "sort: indices must be i64");
  EMBER_CHECK(dim >= 0 && dim < in.ndim, "sort: dim ", dim, " is out of range for ", in.ndim, " dims");
  DeviceContext& ctx = context(values.device_index);
  if (in.numel() == 0) return;
  dispatch_dtype(in.dtype, "sort", [&](auto tag) {
    using T = decltype(tag);
    const ReductionPlan vplan = row_plan(in, values, dim), iplan = row_plan(in, indices, dim);
    const int64_t rows = vplan.num_outputs, len = in.shape[dim];
    const size_t n = static_cast<size_t>(2 * rows * len);
    CudaBackend::Workspace scratch_v(ctx, n * sizeof(T)), scratch_i(ctx, n * sizeof(int64_t));
    launch_index(ctx.stream, rows,
                 SortRowOp<T>{vplan, iplan, static_cast<const T*>(in.data), static_cast<T*>(values.data),
                              static_cast<int64_t*>(indices.data), scratch_v.as<T>(), scratch_i.as<int64_t>(), rows,
                              len, in.strides[dim], values.strides[dim], indices.strides[dim], descending});
  });
}

}  // namespace ember::cuda
