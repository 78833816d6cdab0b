// Fused optimizer updates: the shared OptimizerStep functor, one thread per element.
#include "backends/cuda/loops.cuh"
#include "backends/kernels.h"

namespace ember::cuda {
namespace {

template <OptimizerOp op, typename T>
struct StepElement {
  kernels::OptimizerStep<T> f;
  T* param;
  const T* grad;
  T *s0, *s1, *s2;
  __device__ void operator()(int64_t i) const { f.template apply<op>(i, param, grad, s0, s1, s2); }
};

}  // namespace

void CudaBackend::optimizer_step(OptimizerOp op, const OptimizerParams& p, const TensorArg& param,
                                 const TensorArg& grad, const TensorArg* s0, const TensorArg* s1, const TensorArg* s2) {
  EMBER_CHECK(param.is_contiguous() && grad.is_contiguous(), "optimizer step: parameter and gradient must be contiguous");
  DeviceContext& ctx = context(param.device_index);
  dispatch_floating(param.dtype, "optimizer step", [&](auto tag) {
    using T = decltype(tag);
    T *b0 = s0 ? s0->ptr<T>() : nullptr, *b1 = s1 ? s1->ptr<T>() : nullptr, *b2 = s2 ? s2->ptr<T>() : nullptr;
    kernels::dispatch_optimizer_op(op, [&](auto op_c) {
      launch_index(ctx.stream, param.numel(),
                   StepElement<decltype(op_c)::value, T>{kernels::OptimizerStep<T>(p), param.ptr<T>(), grad.ptr<T>(), b0, b1, b2});
    });
  });
}

}  // namespace ember::cuda
