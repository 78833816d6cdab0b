// gather / scatter_add / scatter (the element body index_element of backends/strided.h), and Philox random
// numbers (kernels::RandomFill): the bodies backends/cuda/index_random.cu runs too.
#include <atomic>
#include <climits>

#include "backends/checks.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/strided_loop.h"
#include "backends/dispatch.h"
#include "backends/random_math.h"
#include "backends/strided.h"

namespace ember::cpu {

// Iterates over the index tensor's shape with the three operands of an IndexPlan (backends/strided.h).
void CpuBackend::index(IndexOp op, const TensorArg& in, const TensorArg& index, const TensorArg& out, int dim) {
  checks::check_index(op, in, index, out, dim);
  const bool gather = op == IndexOp::gather;
  const TensorArg& iterated = gather ? out : in;
  const IndexPlan plan(iterated, gather ? in : out, dim);
  const int64_t limit = plan.limit, step = plan.step;
  std::atomic<int64_t> bad{-1};
  std::atomic<bool> found_bad{false};
  dispatch_dtype(in.dtype, "gather", [&](auto tag) {
    using T = decltype(tag);
    kernels::dispatch_index_op(op, [&](auto op_c) {
      constexpr IndexOp kOp = decltype(op_c)::value;
      const auto add = [](T* a, T v) { *a = static_cast<T>(*a + v); };
      auto body = [&](char** p, const int64_t* s, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          const int64_t idx = *reinterpret_cast<const int64_t*>(p[1] + i * s[1]);
          if (!index_element<kOp>(reinterpret_cast<T*>(p[0] + i * s[0]), reinterpret_cast<T*>(p[2] + i * s[2]), idx,
                                  limit, step, add)) [[unlikely]] {
            if (!found_bad.exchange(true)) bad = idx;
            return;
          }
        }
      };
      // scatter_add and scatter write to positions other threads may write: run them on one thread (so a
      // repeated index in scatter keeps the last write in row-major order).
      strided_loop<3>({&iterated, &index, &plan.other}, body, gather ? kGrainSize : INT64_MAX);
    });
  });
  if (found_bad) checks::throw_index_out_of_range(op, bad.load(), dim, limit);
}

void CpuBackend::random(RandomOp op, const TensorArg& out, uint64_t seed, uint64_t offset, double a, double b) {
  checks::check_random(out);
  dispatch_floating(out.dtype, "random", [&](auto tag) {
    using T = decltype(tag);
    kernels::dispatch_random_op(op, [&](auto op_c) {
      for_each_index(out.numel(), 4096, kernels::RandomFill<decltype(op_c)::value, T>{out.ptr<T>(), seed, offset, a, b});
    });
  });
}

}  // namespace ember::cpu
