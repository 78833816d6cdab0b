#pragma once
// Kernel launchers shared by the CUDA sources, the counterparts of backends/cpu/strided_loop.h: element-wise
// loops over StridedOperands (the CPU's index math), index loops (launch_index: a kernel is a shared body
// from backends/*_math.h plus this launch), row kernels (launch_rows), and a block reduction with a fixed
// combination order (deterministic results).
#include <algorithm>
#include <array>
#include <utility>

#include "backends/cuda/cuda_backend.h"
#include "backends/nn_math.h"
#include "backends/strided.h"

namespace ember::cuda {

inline constexpr int kBlock = 256;  // threads per block of every launcher here (a power of two)

// Blocks for a grid-stride loop over n items: enough to fill any GPU, few enough to amortise the index math.
inline unsigned grid_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kBlock - 1) / kBlock, 1, 65536));
}

// Blocks for a kernel with one block per row (a grid-stride loop over rows by blockIdx.x): one per row, at
// most 65536.
inline unsigned blocks_for(int64_t rows) { return static_cast<unsigned>(std::clamp<int64_t>(rows, 1, 65536)); }

#define EMBER_GRID_STRIDE_LOOP(i, n)                                                         \
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < (n);    \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

template <int N>
struct LinearOperands {
  char* base[N];
  int64_t step[N];  // bytes per element (0 for a broadcast scalar)
};

template <int N, typename F>
__global__ void linear_kernel(LinearOperands<N> ops, int64_t n, F f) {
  EMBER_GRID_STRIDE_LOOP(i, n) {
    char* p[N];
#pragma unroll
    for (int k = 0; k < N; ++k) p[k] = ops.base[k] + i * ops.step[k];
    f(p);
  }
}

template <int N, typename F>
__global__ void strided_kernel(StridedOperands<N> ops, int64_t n, F f) {
  EMBER_GRID_STRIDE_LOOP(i, n) {
    char* p[N];
    ops.pointers(i, p);
    f(p);
  }
}

// Calls f(char* p[N]) on the device for every element of the operands (same shape; args[0] is the output
// by convention). One flat dim after coalescing (contiguous, or a broadcast scalar) takes the kernel
// without index division.
template <int N, typename F>
void launch_elementwise(cudaStream_t stream, const std::array<const TensorArg*, N>& args, F f) {
  const StridedOperands<N> ops(args);
  const int64_t n = ops.numel();
  if (n == 0) return;
  if (ops.ndim == 1) {
    LinearOperands<N> lin;
    for (int k = 0; k < N; ++k) {
      lin.base[k] = ops.base[k];
      lin.step[k] = ops.strides[k][0];
    }
    linear_kernel<N><<<grid_for(n), kBlock, 0, stream>>>(lin, n, f);
  } else {
    strided_kernel<N><<<grid_for(n), kBlock, 0, stream>>>(ops, n, f);
  }
  EMBER_CUDA_CHECK_LAUNCH();
}

template <typename F>
__global__ void index_kernel(int64_t n, F f) {
  EMBER_GRID_STRIDE_LOOP(i, n) f(i);
}

// Calls f(int64_t i) on the device for i in [0, n).
template <typename F>
void launch_index(cudaStream_t stream, int64_t n, F f) {
  if (n == 0) return;
  index_kernel<<<grid_for(n), kBlock, 0, stream>>>(n, f);
  EMBER_CUDA_CHECK_LAUNCH();
}

// launch_index as the `launch(n, body)` argument of the shared entries (rnn_math.h): on ctx's stream.
struct IndexLauncher {
  cudaStream_t stream;
  template <typename F>
  void operator()(int64_t n, const F& f) const {
    launch_index(stream, n, f);
  }
};
inline IndexLauncher index_launcher(const DeviceContext& ctx) { return {ctx.stream}; }

// Launches a kBlock-thread row kernel (one block per row, grid-stride over `rows`) with `args`; nothing when
// there are no rows.
template <typename... Params, typename... Args>
void launch_rows(cudaStream_t stream, int64_t rows, void (*kernel)(Params...), Args&&... args) {
  if (rows <= 0) return;
  kernel<<<blocks_for(rows), kBlock, 0, stream>>>(std::forward<Args>(args)...);
  EMBER_CUDA_CHECK_LAUNCH();
}

// Combines one value per thread of a kBlock-thread block with f in a fixed tree order (so the result does
// not depend on timing); every thread gets the result. All threads of the block must call it.
template <typename Acc, typename F>
__device__ Acc block_reduce(Acc v, F f) {
  __shared__ Acc shared[kBlock];
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int width = kBlock / 2; width > 0; width >>= 1) {
    if (static_cast<int>(threadIdx.x) < width) shared[threadIdx.x] = f(shared[threadIdx.x], shared[threadIdx.x + width]);
    __syncthreads();
  }
  const Acc result = shared[0];
  __syncthreads();  // the shared array may be reused by the caller's next block_reduce
  return result;
}

// The `row` of nn_math's row bodies for a kBlock-thread block working on one row: thread t takes the
// elements t, t + kBlock, ...; reduce combines the threads' values in block_reduce's fixed order. Every
// thread of the block must take part (the row bodies' control flow is uniform across the block).
struct BlockRow {
  template <typename F>
  __device__ void each(int64_t n, F&& f) const {
    for (int64_t j = threadIdx.x; j < n; j += kBlock) f(j);
  }
  template <typename A, typename F, typename Op>
  __device__ A reduce(int64_t n, A init, F&& f, Op op) const {
    A acc = init;
    for (int64_t j = threadIdx.x; j < n; j += kBlock) acc = op(acc, f(j));
    return block_reduce(acc, op);
  }
};

// Records an error found by a kernel (the first one wins); see KernelError.
__device__ inline void report_kernel_error(KernelError* e, KernelErrorCode code, int dim, long long value,
                                           long long limit) {
  if (atomicCAS(&e->claimed, 0, 1) == 0) {
    e->dim = dim;
    e->value = value;
    e->limit = limit;
    __threadfence_system();
    *static_cast<volatile int*>(&e->code) = static_cast<int>(code);
  }
}

}  // namespace ember::cuda
