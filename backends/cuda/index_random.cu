// gather / scatter_add / scatter and Philox random numbers, with the CPU's bodies (index_element of
// backends/strided.h, kernels::RandomFill): the CPU's counter-based generator, element for element.
#include "backends/checks.h"
#include "backends/cuda/loops.cuh"
#include "backends/dispatch.h"
#include "backends/random_math.h"
#include "backends/strided.h"

namespace ember::cuda {
namespace {

struct AtomicAdd {
  __device__ void operator()(float* a, float v) const { atomicAdd(a, v); }
  __device__ void operator()(double* a, double v) const { atomicAdd(a, v); }
  __device__ void operator()(int64_t* a, int64_t v) const {  // two's complement: unsigned addition is the same
    atomicAdd(reinterpret_cast<unsigned long long*>(a), static_cast<unsigned long long>(v));
  }
  __device__ void operator()(bool*, bool) const {}  // scatter_add on bool is refused on the host
};

// Operands (an IndexPlan's): p[0] the iterated tensor, p[1] the index, p[2] the addressed tensor at
// position 0 of `dim`.
template <typename T, IndexOp kOp>
struct IndexElement {
  int64_t limit, step;
  int dim;
  KernelError* error;
  __device__ void operator()(char** p) const {
    const int64_t idx = *reinterpret_cast<const int64_t*>(p[1]);
    if (!index_element<kOp>(reinterpret_cast<T*>(p[0]), reinterpret_cast<T*>(p[2]), idx, limit, step, AtomicAdd{}))
      report_kernel_error(error, index_error_code(kOp), dim, idx, limit);
  }
};

}  // namespace

// scatter_add accumulates with atomics: with repeated indices the order of the additions, and so the last
// bits of a float sum, can differ from run to run (as in PyTorch). scatter with repeated indices keeps an
// unspecified one of the writes (as PyTorch on CUDA).
void CudaBackend::index(IndexOp op, const TensorArg& in, const TensorArg& index, const TensorArg& out, int dim) {
  checks::check_index(op, in, index, out, dim);
  // NOTE: CUDA only: there is no atomic addition of bools (the CPU ORs them in place).
  EMBER_CHECK(op != IndexOp::scatter_add || in.dtype != DType::b8,
              "scatter_add: not defined for bool tensors on CUDA; convert with .to(DType::i64)");
  DeviceContext& ctx = context(out.device_index);
  const bool gather = op == IndexOp::gather;
  const TensorArg& iterated = gather ? out : in;
  const IndexPlan plan(iterated, gather ? in : out, dim);  // backends/strided.h, as the CPU
  dispatch_dtype(in.dtype, "gather", [&](auto tag) {
    kernels::dispatch_index_op(op, [&](auto op_c) {
      launch_elementwise<3>(ctx.stream, {&iterated, &index, &plan.other},
                            IndexElement<decltype(tag), decltype(op_c)::value>{plan.limit, plan.step, dim, ctx.error});
    });
  });
}

void CudaBackend::random(RandomOp op, const TensorArg& out, uint64_t seed, uint64_t offset, double a, double b) {
  checks::check_random(out);
  DeviceContext& ctx = context(out.device_index);
  dispatch_floating(out.dtype, "random", [&](auto tag) {
    using T = decltype(tag);
    kernels::dispatch_random_op(op, [&](auto op_c) {
      launch_index(ctx.stream, out.numel(), kernels::RandomFill<decltype(op_c)::value, T>{out.ptr<T>(), seed, offset, a, b});
    });
  });
}

}  // namespace ember::cuda
