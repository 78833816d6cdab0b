// cumsum and sort along one dim. Every row (all indices but `dim`) is independent: threads split the rows,
// and a row is scanned or sorted by one thread with the bodies of backends/reduce_math.h (CumsumRow,
// SortRows: a stable merge sort by kernels::sort_before), which backends/cuda/sort_scan.cu runs too; so
// results do not depend on the number of threads and match the GPU's.
#include <algorithm>
#include <memory>
#include <type_traits>

#include "backends/checks.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/strided_loop.h"
#include "backends/reduce_math.h"
#include "backends/strided.h"
#include "base/parallel.h"

namespace ember::cpu {

void CpuBackend::cumsum(const TensorArg& in, const TensorArg& out, int dim, bool reverse) {
  checks::check_cumsum(in, out, dim);
  if (in.numel() == 0) return;
  dispatch_dtype(in.dtype, "cumsum", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {  // refused by the check
      const ReductionPlan plan = row_plan(in, out, dim);
      const int64_t len = in.shape[dim];
      for_each_index(plan.num_outputs, std::max<int64_t>(1, kGrainSize / len),
                     kernels::CumsumRow<T>{plan, in.ptr<T>(), out.ptr<T>(), len, in.strides[dim], out.strides[dim],
                                           reverse});
    }
  });
}

void CpuBackend::sort(const TensorArg& in, const TensorArg& values, const TensorArg& indices, int dim,
                      bool descending) {
  checks::check_sort(in, values, indices, dim);
  if (in.numel() == 0) return;
  dispatch_dtype(in.dtype, "sort", [&](auto tag) {
    using T = decltype(tag);
    const int64_t len = in.shape[dim];
    const kernels::SortRows<T> rows{row_plan(in, values, dim), row_plan(in, indices, dim), in.ptr<T>(),
                                    values.ptr<T>(), indices.ptr<int64_t>(), len, in.strides[dim],
                                    values.strides[dim], indices.strides[dim], descending};
    parallel_for(rows.vplan.num_outputs, std::max<int64_t>(1, kGrainSize / (8 * len)), [&](int64_t begin, int64_t end) {
      // This range's scratch, reused row after row (a unique_ptr: std::vector<bool> has no data()).
      const auto v = std::make_unique<T[]>(static_cast<size_t>(2 * len));
      const auto i = std::make_unique<int64_t[]>(static_cast<size_t>(2 * len));
      const kernels::SortScratch<T> scratch{v.get(), v.get() + len, i.get(), i.get() + len};
      for (int64_t o = begin; o < end; ++o) rows(o, scratch);
    });
  });
}

}  // namespace ember::cpu
