// gather / scatter_add / scatter, and Philox random numbers.
#include <atomic>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/strided_loop.h"
#include "backends/kernels.h"

namespace ember::cpu {

// Iterates over the index tensor's shape with the three operands of an IndexPlan (backends/strided.h).
void CpuBackend::index(IndexOp op, const TensorArg& in, const TensorArg& index, const TensorArg& out, int dim) {
  EMBER_CHECK(index.dtype == DType::i64, "gather/scatter: index must be i64, got ", dtype_name(index.dtype));
  EMBER_CHECK(in.dtype == out.dtype, "gather/scatter: input and output dtypes differ");
  const bool gather = op == IndexOp::gather;
  const TensorArg& iterated = gather ? out : in;
  const IndexPlan plan(iterated, gather ? in : out, dim);
  const TensorArg& other = plan.other;
  const int64_t limit = plan.limit, step = plan.step;
  std::atomic<int64_t> bad{-1};
  std::atomic<bool> found_bad{false};
  dispatch_dtype(in.dtype, "gather", [&](auto tag) {
    using T = decltype(tag);
    auto body = [&](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        const int64_t idx = *reinterpret_cast<const int64_t*>(p[1] + i * s[1]);
        if (idx < 0 || idx >= limit) [[unlikely]] {
          if (!found_bad.exchange(true)) bad = idx;
          return;
        }
        T* it = reinterpret_cast<T*>(p[0] + i * s[0]);
        T* addr = reinterpret_cast<T*>(p[2] + i * s[2]) + idx * step;
        if (gather) *it = *addr;
        else if (op == IndexOp::scatter) *addr = *it;
        else *addr = static_cast<T>(*addr + *it);
      }
    };
    // scatter_add and scatter write to positions other threads may write: run them on one thread (so a
    // repeated index in scatter keeps the last write in row-major order).
    strided_loop<3>({&iterated, &index, &other}, body, gather ? kGrainSize : INT64_MAX);
  });
  EMBER_CHECK(!found_bad, gather ? "gather/index_select" : op == IndexOp::scatter ? "scatter" : "scatter_add",
              ": index ", bad.load(),
              " is out of range for dim ", dim, " of size ", limit);
}

void CpuBackend::random(RandomOp op, const TensorArg& out, uint64_t seed, uint64_t offset, double a, double b) {
  EMBER_CHECK(out.is_contiguous(), "random: output must be contiguous");
  dispatch_floating(out.dtype, "random", [&](auto tag) {
    using T = decltype(tag);
    T* o = static_cast<T*>(out.data);
    const auto run = [&](auto op_c) {
      constexpr RandomOp kOp = decltype(op_c)::value;
      parallel_for(out.numel(), 4096, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) o[i] = kernels::random_element<kOp, T>(seed, offset + i, a, b);
      });
    };
    kernels::dispatch_random_op(op, run);
  });
}

}  // namespace ember::cpu
