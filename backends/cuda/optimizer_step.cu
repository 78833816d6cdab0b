// Fused optimizer updates: the shared OptimizerStep functor, one thread per element.
#include "backends/checks.h"
#include "backends/cuda/loops.cuh"
#include "backends/dispatch.h"
#include "backends/optimizer_math.h"

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
  checks::check_optimizer_step(op, p, param, grad, s0, s1, s2);
  DeviceContext& ctx = context(param.device_index);
  dispatch_floating(param.dtype, "optimizer step", [&](auto tag) {
    using T = decltype(tag);
    kernels::dispatch_optimizer_op(op, [&](auto op_c) {
      launch_index(ctx.stream, param.numel(),
                   StepElement<decltype(op_c)::value, T>{kernels::OptimizerStep<T>(p), param.ptr<T>(), grad.ptr<T>(),
                                                         ptr_or_null<T>(s0), ptr_or_null<T>(s1), ptr_or_null<T>(s2)});
    });
  });
}

}  // namespace ember::cuda
