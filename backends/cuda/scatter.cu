// scatter_reduce on the GPU: one thread per index element, combining into out with compare-and-swap loops
// (atomicAdd for sum). The math and the operand check are the CPU's (backends/index_math.h). With repeated
// indices the order of the combinations is unspecified: a float sum or product may differ in its last bits
// from run to run (as in PyTorch); amax/amin do not depend on the order.
#include <cstring>
#include <type_traits>

#include "backends/cuda/loops.cuh"
#include "backends/checks.h"
#include "backends/index_math.h"

namespace ember::cuda {
namespace {

template <ScatterReduceOp kOp, typename T>
__device__ inline void atomic_combine(T* addr, T v) {
  if constexpr (kOp == ScatterReduceOp::sum && std::is_floating_point_v<T>) {
    atomicAdd(addr, v);
  } else {
    using Bits = std::conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>;
    static_assert(sizeof(Bits) == sizeof(T), "scatter_reduce: 4- or 8-byte elements");
    Bits* word = reinterpret_cast<Bits*>(addr);
    Bits old = *word, assumed;
    do {
      assumed = old;
      T current, next;
      memcpy(&current, &assumed, sizeof(T));
      next = index_math::combine<kOp, T>(current, v);
      Bits desired;
      memcpy(&desired, &next, sizeof(T));
      if (desired == assumed) return;  // nothing changes (amax/amin not beaten)
      old = atomicCAS(word, assumed, desired);
    } while (old != assumed);
  }
}

// Operands (an IndexPlan's): p[0] the source, p[1] the index, p[2] the output at position 0 of `dim`.
template <typename T, ScatterReduceOp kOp>
struct ScatterReduceElement {
  int64_t limit, step;
  int dim;
  KernelError* error;
  __device__ void operator()(char** p) const {
    const int64_t idx = *reinterpret_cast<const int64_t*>(p[1]);
    if (idx < 0 || idx >= limit) {
      report_kernel_error(error, KernelErrorCode::scatter_index, dim, idx, limit);
      return;
    }
    atomic_combine<kOp, T>(reinterpret_cast<T*>(p[2]) + idx * step, *reinterpret_cast<const T*>(p[0]));
  }
};

}  // namespace

void CudaBackend::scatter_reduce(ScatterReduceOp op, const TensorArg& src, const TensorArg& index,
                                 const TensorArg& out, int dim) {
  checks::check_scatter_reduce(op, src, index, out, dim);
  const IndexPlan plan(src, out, dim);
  DeviceContext& ctx = context(out.device_index);
  const std::array<const TensorArg*, 3> args{&src, &index, &plan.other};
  dispatch_dtype(src.dtype, "scatter_reduce", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      const auto launch = [&](auto op_c) {
        constexpr ScatterReduceOp kOp = decltype(op_c)::value;
        launch_elementwise<3>(ctx.stream, args, ScatterReduceElement<T, kOp>{plan.limit, plan.step, dim, ctx.error});
      };
      switch (op) {
        case ScatterReduceOp::sum: return launch(std::integral_constant<ScatterReduceOp, ScatterReduceOp::sum>{});
        case ScatterReduceOp::prod: return launch(std::integral_constant<ScatterReduceOp, ScatterReduceOp::prod>{});
        case ScatterReduceOp::amax: return launch(std::integral_constant<ScatterReduceOp, ScatterReduceOp::amax>{});
        case ScatterReduceOp::amin: return launch(std::integral_constant<ScatterReduceOp, ScatterReduceOp::amin>{});
      }
    }
  });
}

}  // namespace ember::cuda
