// Fused optimizer updates: the shared OptimizerStep functor over contiguous parameters.
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/parallel.h"
#include "backends/kernels.h"

namespace ember::cpu {

void CpuBackend::optimizer_step(OptimizerOp op, const OptimizerParams& p, const TensorArg& param,
                                const TensorArg& grad, const TensorArg* s0, const TensorArg* s1, const TensorArg* s2) {
  EMBER_CHECK(param.is_contiguous() && grad.is_contiguous(), "optimizer step: parameter and gradient must be contiguous");
  dispatch_floating(param.dtype, "optimizer step", [&](auto tag) {
    using T = decltype(tag);
    const kernels::OptimizerStep<T> f(op, p);
    T* w = param.ptr<T>();
    const T* g = grad.ptr<T>();
    T *b0 = s0 ? s0->ptr<T>() : nullptr, *b1 = s1 ? s1->ptr<T>() : nullptr, *b2 = s2 ? s2->ptr<T>() : nullptr;
    parallel_for(param.numel(), kGrainSize, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        f(w[i], g[i], b0 ? b0 + i : nullptr, b1 ? b1 + i : nullptr, b2 ? b2 + i : nullptr);
    });
  });
}

}  // namespace ember::cpu
