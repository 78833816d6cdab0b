// cumsum and sort along one dim. Every row (all indices but `dim`) is independent: threads split the rows,
// and a row is scanned or sorted by one thread (std::stable_sort on positions, with kernels::sort_before),
// so results do not depend on the number of threads.
#include <algorithm>
#include <numeric>
#include <type_traits>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "base/parallel.h"
#include "backends/kernels.h"
#include "backends/strided.h"

namespace ember::cpu {

void CpuBackend::cumsum(const TensorArg& in, const TensorArg& out, int dim, bool reverse) {
  EMBER_CHECK(in.dtype == out.dtype, "cumsum: input and output dtypes differ");
  EMBER_CHECK(dim >= 0 && dim < in.ndim, "cumsum: dim ", dim, " is out of range for ", in.ndim, " dims");
  if (in.numel() == 0) return;
  dispatch_dtype(in.dtype, "cumsum", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      detail::throw_error("cumsum: not defined for bool tensors in the backend; convert with .to(DType::i64)");
    } else {
      using Acc = kernels::ScanAcc<T>;
      const ReductionPlan plan = row_plan(in, out, dim);
      const int64_t len = in.shape[dim], in_step = in.strides[dim], out_step = out.strides[dim];
      const T* in_base = static_cast<const T*>(in.data);
      T* out_base = static_cast<T*>(out.data);
      parallel_for(plan.num_outputs, std::max<int64_t>(1, kGrainSize / len), [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o) {
          int64_t in_off, out_off;
          plan.offsets(o, in_off, out_off);
          Acc acc = 0;
          for (int64_t k = 0; k < len; ++k) {
            const int64_t i = reverse ? len - 1 - k : k;
            acc += static_cast<Acc>(in_base[in_off + i * in_step]);
            out_base[out_off + i * out_step] = static_cast<T>(acc);
          }
        }
      });
    }
  });
}

void CpuBackend::sort(const TensorArg& in, const TensorArg& values, const TensorArg& indices, int dim,
                      bool descending) {
  EMBER_CHECK(values.dtype == in.dtype, "sort: values must have the input's dtype");
  EMBER_CHECK(indices.dtype == DType::i64, "sort: indices must be i64");
  EMBER_CHECK(dim >= 0 && dim < in.ndim, "sort: dim ", dim, " is out of range for ", in.ndim, " dims");
  if (in.numel() == 0) return;
  dispatch_dtype(in.dtype, "sort", [&](auto tag) {
    using T = decltype(tag);
    const ReductionPlan vplan = row_plan(in, values, dim), iplan = row_plan(in, indices, dim);
    const int64_t len = in.shape[dim], in_step = in.strides[dim];
    const int64_t v_step = values.strides[dim], i_step = indices.strides[dim];
    const T* in_base = static_cast<const T*>(in.data);
    T* v_base = static_cast<T*>(values.data);
    int64_t* i_base = static_cast<int64_t*>(indices.data);
    parallel_for(vplan.num_outputs, std::max<int64_t>(1, kGrainSize / (8 * len)), [&](int64_t begin, int64_t end) {
      std::vector<int64_t> order(static_cast<size_t>(len));
      for (int64_t o = begin; o < end; ++o) {
        int64_t in_off, v_off, unused, i_off;
        vplan.offsets(o, in_off, v_off);
        iplan.offsets(o, unused, i_off);
        const T* x = in_base + in_off;
        std::iota(order.begin(), order.end(), int64_t{0});
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
          return kernels::sort_before(x[a * in_step], x[b * in_step], descending);
        });
        for (int64_t k = 0; k < len; ++k) {
          v_base[v_off + k * v_step] = x[order[k] * in_step];
          i_base[i_off + k * i_step] = order[k];
        }
      }
    });
  });
}

}  // namespace ember::cpu
