// cumsum and sort along one dim: one thread per row (all indices but `dim`), with the CPU's bodies
// (backends/reduce_math.h: CumsumRow, SortRows, a stable merge sort by kernels::sort_before), so results
// match the CPU backend's exactly.
//
// LIMIT: a row is handled by a single thread. Right for the usual shapes (many rows: a batch of logits, the
// k of a top-k); a few very long rows (one row of 10^6 elements) run serially on one thread each — correct
// but slow (O(n log n) per row, with 2 · rows · n scratch elements and indices).
#include <type_traits>

#include "backends/checks.h"
#include "backends/cuda/loops.cuh"
#include "backends/reduce_math.h"
#include "backends/strided.h"

namespace ember::cuda {
namespace {

// Row o of a sort with its own rows of the scratch (2 · rows · len values and positions).
template <typename T>
struct SortRowOp {
  kernels::SortRows<T> rows;
  T* scratch_v;
  int64_t* scratch_i;
  __device__ void operator()(int64_t o) const {
    const int64_t n = rows.vplan.num_outputs, len = rows.len;
    rows(o, kernels::SortScratch<T>{scratch_v + o * len, scratch_v + (n + o) * len, scratch_i + o * len,
                                    scratch_i + (n + o) * len});
  }
};

}  // namespace

void CudaBackend::cumsum(const TensorArg& in, const TensorArg& out, int dim, bool reverse) {
  checks::check_cumsum(in, out, dim);
  DeviceContext& ctx = context(out.device_index);
  if (in.numel() == 0) return;
  dispatch_dtype(in.dtype, "cumsum", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {  // refused by the check
      const ReductionPlan plan = row_plan(in, out, dim);
      launch_index(ctx.stream, plan.num_outputs,
                   kernels::CumsumRow<T>{plan, in.ptr<T>(), out.ptr<T>(), in.shape[dim], in.strides[dim],
                                         out.strides[dim], reverse});
    }
  });
}

void CudaBackend::sort(const TensorArg& in, const TensorArg& values, const TensorArg& indices, int dim,
                       bool descending) {
  checks::check_sort(in, values, indices, dim);
  DeviceContext& ctx = context(values.device_index);
  if (in.numel() == 0) return;
  dispatch_dtype(in.dtype, "sort", [&](auto tag) {
    using T = decltype(tag);
    const kernels::SortRows<T> rows{row_plan(in, values, dim), row_plan(in, indices, dim), in.ptr<T>(),
                                    values.ptr<T>(), indices.ptr<int64_t>(), in.shape[dim], in.strides[dim],
                                    values.strides[dim], indices.strides[dim], descending};
    const size_t n = static_cast<size_t>(2 * rows.vplan.num_outputs * rows.len);
    CudaBackend::Workspace scratch_v(ctx, n * sizeof(T)), scratch_i(ctx, n * sizeof(int64_t));
    launch_index(ctx.stream, rows.vplan.num_outputs, SortRowOp<T>{rows, scratch_v.as<T>(), scratch_i.as<int64_t>()});
  });
}

}  // namespace ember::cuda
