// scatter_reduce: src reduced into out along dim at the index (backends/index_math.h has the math).

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/strided_loop.h"
#include "backends/checks.h"
#include "backends/index_math.h"

namespace ember::cpu {

// One thread, in row-major order of the index (positions repeat: the reduction order is the index's).
void CpuBackend::scatter_reduce(ScatterReduceOp op, const TensorArg& src, const TensorArg& index,
                                const TensorArg& out, int dim) {
  checks::check_scatter_reduce(op, src, index, out, dim);
  const IndexPlan plan(src, out, dim);
  const int64_t limit = plan.limit, step = plan.step;
  int64_t bad = 0;
  bool found_bad = false;
  dispatch_dtype(src.dtype, "scatter_reduce", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const auto run = [&](auto op_c) {
        constexpr ScatterReduceOp kOp = decltype(op_c)::value;
        auto body = [&](char** p, const int64_t* s, int64_t n) {
          for (int64_t i = 0; i < n && !found_bad; ++i) {
            const int64_t idx = *reinterpret_cast<const int64_t*>(p[1] + i * s[1]);
            if (idx < 0 || idx >= limit) [[unlikely]] {
              found_bad = true, bad = idx;
              return;
            }
            T* addr = reinterpret_cast<T*>(p[2] + i * s[2]) + idx * step;
            *addr = index_math::combine<kOp, T>(*addr, *reinterpret_cast<const T*>(p[0] + i * s[0]));
          }
        };
        strided_loop<3>({&src, &index, &plan.other}, body, INT64_MAX);
      };
      switch (op) {
        case ScatterReduceOp::sum: return run(std::integral_constant<ScatterReduceOp, ScatterReduceOp::sum>{});
        case ScatterReduceOp::prod: return run(std::integral_constant<ScatterReduceOp, ScatterReduceOp::prod>{});
        case ScatterReduceOp::amax: return run(std::integral_constant<ScatterReduceOp, ScatterReduceOp::amax>{});
        case ScatterReduceOp::amin: return run(std::integral_constant<ScatterReduceOp, ScatterReduceOp::amin>{});
      }
    }
  });
  EMBER_CHECK(!found_bad, "scatter_reduce: index ", bad, " is out of range for dim ", dim, " of size ", limit);
}

}  // namespace ember::cpu
