// Fused optimizer updates: the shared OptimizerStep functor over contiguous parameters.
#include "backends/checks.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/dispatch.h"
#include "backends/optimizer_math.h"
#include "base/parallel.h"

namespace ember::cpu {

void CpuBackend::optimizer_step(OptimizerOp op, const OptimizerParams& p, const TensorArg& param,
                                const TensorArg& grad, const TensorArg* s0, const TensorArg* s1, const TensorArg* s2) {
  checks::check_optimizer_step(op, p, param, grad, s0, s1, s2);
  dispatch_floating(param.dtype, "optimizer step", [&](auto tag) {
    using T = decltype(tag);
    const kernels::OptimizerStep<T> f(p);
    T* w = param.ptr<T>();
    const T* g = grad.ptr<T>();
    T *b0 = ptr_or_null<T>(s0), *b1 = ptr_or_null<T>(s1), *b2 = ptr_or_null<T>(s2);
    const auto run = [&](auto op_c) {
      constexpr OptimizerOp kOp = decltype(op_c)::value;
      parallel_for(param.numel(), kGrainSize, [&](int64_t begin, int64_t end) {
        // Local copies: stores through the float pointers cannot then alias the functor's constants, so
        // the compiler hoists its flags out of the loop and vectorises each variant.
        const kernels::OptimizerStep<T> local = f;
        T* __restrict pw = w;
        const T* __restrict pg = g;
        T* __restrict p0 = b0;
        T* __restrict p1 = b1;
        T* __restrict p2 = b2;
#pragma omp simd
        for (int64_t i = begin; i < end; ++i) local.template apply<kOp>(i, pw, pg, p0, p1, p2);
      });
    };
    kernels::dispatch_optimizer_op(op, run);
  });
}

}  // namespace ember::cpu
