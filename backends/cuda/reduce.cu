// reduce and arg_reduce. One block per output; a long reduction with few outputs is split into chunks
// (blocks along y) whose partial results a second kernel combines. Each block combines its threads'
// values in a fixed tree (block_reduce), and the chunking depends only on the shape: the same input gives
// the same bits on every run (not necessarily the CPU's: the summation order differs).
#include <type_traits>

#include "backends/checks.h"
#include "backends/cuda/loops.cuh"
#include "backends/dispatch.h"
#include "backends/reduce_math.h"

namespace ember::cuda {
namespace {

// Block (o, c) reduces chunk c of output o's elements; with one chunk it writes the output itself.
template <ReduceOp op, typename T, typename Acc>
__global__ void reduce_kernel(ReductionPlan plan, StridedOperands<1> reduced, int64_t count, int64_t chunk_len,
                              T* out, Acc* partial) {
  const int64_t o = blockIdx.x;
  const int64_t begin = blockIdx.y * chunk_len;
  const int64_t end = begin + chunk_len < count ? begin + chunk_len : count;
  int64_t in_off, out_off;
  plan.offsets(o, in_off, out_off);
  reduced.base[0] += in_off * static_cast<int64_t>(sizeof(T));
  const kernels::ReduceFn<op, Acc> f;
  Acc acc = f.identity();
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    char* p[1];
    reduced.pointers(i, p);
    acc = f(acc, static_cast<Acc>(*reinterpret_cast<const T*>(p[0])));
  }
  acc = block_reduce(acc, f);
  if (threadIdx.x != 0) return;
  if (gridDim.y == 1) out[out_off] = kernels::reduce_finish<op, T>(acc, count);
  else partial[o * gridDim.y + blockIdx.y] = acc;
}

template <ReduceOp op, typename T, typename Acc>
__global__ void combine_kernel(ReductionPlan plan, int64_t chunks, int64_t count, const Acc* partial, T* out) {
  const int64_t o = blockIdx.x;
  const kernels::ReduceFn<op, Acc> f;
  Acc acc = f.identity();
  for (int64_t c = threadIdx.x; c < chunks; c += blockDim.x) acc = f(acc, partial[o * chunks + c]);
  acc = block_reduce(acc, f);
  int64_t in_off, out_off;
  plan.offsets(o, in_off, out_off);
  if (threadIdx.x == 0) out[out_off] = kernels::reduce_finish<op, T>(acc, count);
}

template <ReduceOp op, typename T>
void reduce_impl(DeviceContext& ctx, const TensorArg& in, const TensorArg& out) {
  using Acc = typename kernels::ReduceAcc<op, T>::type;
  const ReductionPlan plan(in, out);
  const int64_t count = plan.reduced.numel();
  if (plan.num_outputs == 0) return;
  EMBER_CHECK(plan.num_outputs < (int64_t{1} << 31), "reduce: more than 2^31 outputs is not supported on CUDA");
  const StridedOperands<1> reduced({&plan.reduced});
  // Few outputs and long reductions: up to 1024 chunks of at least 16k elements each.
  constexpr int64_t kMinChunk = 16384;
  const int64_t chunks = plan.num_outputs >= 256 ? 1 : std::clamp<int64_t>(count / kMinChunk, 1, 1024);
  const int64_t chunk_len = (count + chunks - 1) / chunks;
  T* out_ptr = static_cast<T*>(out.data);
  const dim3 grid(static_cast<unsigned>(plan.num_outputs), static_cast<unsigned>(chunks));
  if (chunks == 1) {
    reduce_kernel<op, T, Acc><<<grid, kBlock, 0, ctx.stream>>>(plan, reduced, count, chunk_len, out_ptr, nullptr);
    EMBER_CUDA_CHECK_LAUNCH();
    return;
  }
  CudaBackend::Workspace partial(ctx, static_cast<size_t>(plan.num_outputs * chunks) * sizeof(Acc));
  reduce_kernel<op, T, Acc><<<grid, kBlock, 0, ctx.stream>>>(plan, reduced, count, chunk_len, out_ptr,
                                                              partial.as<Acc>());
  EMBER_CUDA_CHECK_LAUNCH();
  combine_kernel<op, T, Acc><<<static_cast<unsigned>(plan.num_outputs), kBlock, 0, ctx.stream>>>(
      plan, chunks, count, partial.as<Acc>(), out_ptr);
  EMBER_CUDA_CHECK_LAUNCH();
}

}  // namespace

void CudaBackend::reduce(ReduceOp op, const TensorArg& in, const TensorArg& out) {
  checks::check_reduce(op, in, out);
  DeviceContext& ctx = context(out.device_index);
  dispatch_dtype(in.dtype, "reduce", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>)  // refused by the check
      kernels::dispatch_reduce_op(op, [&](auto op_c) { reduce_impl<decltype(op_c)::value, T>(ctx, in, out); });
  });
}

// One thread per output scans its dim (kernels::ArgBest, the CPU's body).
void CudaBackend::arg_reduce(ArgReduceOp op, const TensorArg& in, const TensorArg& out, int dim) {
  checks::check_arg_reduce(op, in, out, dim);
  DeviceContext& ctx = context(out.device_index);
  dispatch_dtype(in.dtype, "arg_reduce", [&](auto tag) {
    using T = decltype(tag);
    const ReductionPlan plan(in, out);
    launch_index(ctx.stream, plan.num_outputs,
                 kernels::ArgBest<T>{plan, in.ptr<T>(), out.ptr<int64_t>(), in.shape[dim], in.strides[dim],
                                     op == ArgReduceOp::argmax});
  });
}

}  // namespace ember::cuda
