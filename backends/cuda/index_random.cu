// gather / scatter_add / scatter, and Philox random numbers (the CPU's counter-based generator, element for element).
#include "backends/cuda/loops.cuh"
#include "backends/kernels.h"

namespace ember::cuda {
namespace {

__device__ inline void atomic_add(float* a, float v) { atomicAdd(a, v); }
__device__ inline void atomic_add(double* a, double v) { atomicAdd(a, v); }
__device__ inline void atomic_add(int64_t* a, int64_t v) {  // two's complement: unsigned addition is the same
  atomicAdd(reinterpret_cast<unsigned long long*>(a), static_cast<unsigned long long>(v));
}
__device__ inline void atomic_add(bool*, bool) {}  // rejected on the host

// Operands (an IndexPlan's): p[0] the iterated tensor, p[1] the index, p[2] the addressed tensor at
// position 0 of `dim`; the index times `step` is added here.
template <typename T, IndexOp kOp>
struct IndexElement {
  int64_t limit, step;
  int dim;
  KernelError* error;
  __device__ void operator()(char** p) const {
    const int64_t idx = *reinterpret_cast<const int64_t*>(p[1]);
    if (idx < 0 || idx >= limit) {
      report_kernel_error(error, kOp == IndexOp::gather ? KernelErrorCode::gather_index : KernelErrorCode::scatter_index,
                          dim, idx, limit);
      return;
    }
    T* addressed = reinterpret_cast<T*>(p[2]) + idx * step;
    if constexpr (kOp == IndexOp::gather) *reinterpret_cast<T*>(p[0]) = *addressed;
    else if constexpr (kOp == IndexOp::scatter) *addressed = *reinterpret_cast<const T*>(p[0]);
    else atomic_add(addressed, *reinterpret_cast<const T*>(p[0]));
  }
};

template <RandomOp op, typename T>
struct RandomElement {
  T* out;
  uint64_t seed, offset;
  double a, b;
  __device__ void operator()(int64_t i) const { out[i] = kernels::random_element<op, T>(seed, offset + i, a, b); }
};

}  // namespace

// scatter_add accumulates with atomics: with repeated indices the order of the additions, and so the last
// bits of a float sum, can differ from run to run (as in PyTorch). scatter with repeated indices keeps an
// unspecified one of the writes (as PyTorch on CUDA).
void CudaBackend::index(IndexOp op, const TensorArg& in, const TensorArg& index, const TensorArg& out, int dim) {
  EMBER_CHECK(index.dtype == DType::i64, "gather/scatter: index must be i64, got ", dtype_name(index.dtype));
  EMBER_CHECK(in.dtype == out.dtype, "gather/scatter: input and output dtypes differ");
  const bool gather = op == IndexOp::gather;
  EMBER_CHECK(op != IndexOp::scatter_add || in.dtype != DType::b8, "scatter_add: not defined for bool tensors on CUDA; convert with .to(DType::i64)");
  DeviceContext& ctx = context(out.device_index);
  const TensorArg& iterated = gather ? out : in;
  const IndexPlan plan(iterated, gather ? in : out, dim);  // backends/strided.h, as the CPU
  const TensorArg& other = plan.other;
  const int64_t limit = plan.limit, step = plan.step;
  dispatch_dtype(in.dtype, "gather", [&](auto tag) {
    using T = decltype(tag);
    const std::array<const TensorArg*, 3> args{&iterated, &index, &other};
    switch (op) {
      case IndexOp::gather: return launch_elementwise<3>(ctx.stream, args, IndexElement<T, IndexOp::gather>{limit, step, dim, ctx.error});
      case IndexOp::scatter_add: return launch_elementwise<3>(ctx.stream, args, IndexElement<T, IndexOp::scatter_add>{limit, step, dim, ctx.error});
      case IndexOp::scatter: return launch_elementwise<3>(ctx.stream, args, IndexElement<T, IndexOp::scatter>{limit, step, dim, ctx.error});
    }
  });
}

void CudaBackend::random(RandomOp op, const TensorArg& out, uint64_t seed, uint64_t offset, double a, double b) {
  EMBER_CHECK(out.is_contiguous(), "random: output must be contiguous");
  DeviceContext& ctx = context(out.device_index);
  dispatch_floating(out.dtype, "random", [&](auto tag) {
    using T = decltype(tag);
    kernels::dispatch_random_op(op, [&](auto op_c) {
      launch_index(ctx.stream, out.numel(), RandomElement<decltype(op_c)::value, T>{out.ptr<T>(), seed, offset, a, b});
    });
  });
}

}  // namespace ember::cuda
