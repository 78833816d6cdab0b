// reduce and arg_reduce. Input dims split into kept dims (size in the output) and reduced dims (size 1 in
// the output). Many outputs: threads split the outputs. Few outputs (a full sum): threads split the
// reduced range into fixed-size chunks whose partial results are combined in chunk order, so the result
// does not depend on the number of threads.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "backends/checks.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/strided_loop.h"
#include "backends/dispatch.h"
#include "backends/reduce_math.h"

namespace ember::cpu {
namespace {

// Reduces elements [begin, end) (linear, row-major) of the reduced sub-view starting at `base`.
template <ReduceOp op, typename T, typename Acc>
Acc reduce_range(StridedOperands<1> ops, char* base, int64_t begin, int64_t end) {
  ops.base[0] = base;
  const kernels::ReduceFn<op, Acc> f;
  Acc acc = f.identity();
  for_each_run(ops, begin, end, [&](char** p, const int64_t* s, int64_t n) {
    const T* x = reinterpret_cast<const T*>(p[0]);
    if constexpr (op == ReduceOp::sum || op == ReduceOp::mean) {
      Acc partial = 0;
      if (s[0] == sizeof(T)) {
#pragma omp simd reduction(+ : partial)
        for (int64_t i = 0; i < n; ++i) partial += static_cast<Acc>(x[i]);
      } else {
        for (int64_t i = 0; i < n; ++i) partial += static_cast<Acc>(*reinterpret_cast<const T*>(p[0] + i * s[0]));
      }
      acc += partial;
    } else {
      for (int64_t i = 0; i < n; ++i) acc = f(acc, static_cast<Acc>(*reinterpret_cast<const T*>(p[0] + i * s[0])));
    }
  });
  return acc;
}

constexpr int64_t kChunk = 1 << 16;  // reduced elements per partial result (see reduce_impl)

// The input as [R, K] row-major with the reduced dims leading and the kept dims trailing, both contiguous (a
// bias gradient: the column sums of [N, C]); K: 0 if the layout is another.
int64_t leading_reduction_columns(const ReductionPlan& plan) {
  if (plan.reduced.ndim == 0) return 0;
  int64_t stride = 1;
  for (int d = plan.kept_ndim - 1; d >= 0; --d) {
    if (plan.in_kept_strides[d] != stride || plan.out_kept_strides[d] != stride) return 0;
    stride *= plan.kept_shape[d];
  }
  const int64_t K = stride;
  for (int d = plan.reduced.ndim - 1; d >= 0; --d) {
    if (plan.reduced.strides[d] != stride) return 0;
    stride *= plan.reduced.shape[d];
  }
  return K;
}

// Sum or mean over the R leading rows of [R, K], a tile of columns at a time, rows streaming through the cache
// (the general path walks one strided column at a time). Each output adds its elements in the general path's
// order: runs of the innermost reduced dim each summed from 0 into its chunk's partial, chunk partials summed
// in order; so the results are bit-identical to it and independent of the number of threads.
template <ReduceOp op, typename T, typename Acc>
void reduce_leading(const ReductionPlan& plan, int64_t K, const T* in, T* out) {
  const int64_t R = plan.reduced.numel(), inner = plan.reduced.shape[plan.reduced.ndim - 1];
  constexpr int64_t kTile = 512;
  parallel_for(K, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(R, 1)), [&](int64_t begin, int64_t end) {
    Acc total[kTile], chunk[kTile], run[kTile];
    for (int64_t k0 = begin; k0 < end; k0 += kTile) {
      const int64_t nk = std::min(kTile, end - k0);
      std::fill(total, total + nk, Acc(0));
      for (int64_t c0 = 0; c0 < R; c0 += kChunk) {
        const int64_t c_end = std::min(R, c0 + kChunk);
        std::fill(chunk, chunk + nk, Acc(0));
        for (int64_t r0 = c0; r0 < c_end;) {
          const int64_t r_end = std::min(c_end, (r0 / inner + 1) * inner);
          std::fill(run, run + nk, Acc(0));
          for (int64_t r = r0; r < r_end; ++r) {
            const T* x = in + r * K + k0;
#pragma omp simd
            for (int64_t k = 0; k < nk; ++k) run[k] += static_cast<Acc>(x[k]);
          }
#pragma omp simd
          for (int64_t k = 0; k < nk; ++k) chunk[k] += run[k];
          r0 = r_end;
        }
#pragma omp simd
        for (int64_t k = 0; k < nk; ++k) total[k] += chunk[k];
      }
      for (int64_t k = 0; k < nk; ++k) {
        out[k0 + k] = kernels::reduce_finish<op, T>(total[k], R);
      }
    }
  });
}

template <ReduceOp op, typename T>
void reduce_impl(const TensorArg& in, const TensorArg& out) {
  using Acc = typename kernels::ReduceAcc<op, T>::type;
  const ReductionPlan plan(in, out);
  const StridedOperands<1> ops({&plan.reduced});
  const int64_t count = plan.reduced.numel();
  const kernels::ReduceFn<op, Acc> f;
  const auto finish = [count](Acc acc) { return kernels::reduce_finish<op, T>(acc, count); };
  char* const in_base = static_cast<char*>(in.data);
  T* const out_base = static_cast<T*>(out.data);

  // Every output is its fixed-size chunks' partial results combined in chunk order, whichever of the two
  // paths below (or reduce_leading) computes it. NOTE: the path depends on the number of threads, so the summation order
  // must not: results are then bit-identical for any EMBER_NUM_THREADS.
  if constexpr (op == ReduceOp::sum || op == ReduceOp::mean) {
    const int64_t K = count > 0 ? leading_reduction_columns(plan) : 0;
    if (K > 1) return reduce_leading<op, T, Acc>(plan, K, static_cast<const T*>(in.data), out_base);
  }
  const int64_t chunks = (count + kChunk - 1) / kChunk;
  if (plan.num_outputs >= num_threads() || count < kGrainSize) {
    parallel_for(plan.num_outputs, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(count, 1)),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t o = begin; o < end; ++o) {
                     int64_t in_off, out_off;
                     plan.offsets(o, in_off, out_off);
                     Acc acc = f.identity();
                     for (int64_t c = 0; c < chunks; ++c)
                       acc = f(acc, reduce_range<op, T, Acc>(ops, in_base + in_off * sizeof(T), c * kChunk,
                                                             std::min(count, (c + 1) * kChunk)));
                     out_base[out_off] = finish(acc);
                   }
                 });
    return;
  }
  // Few outputs, long reductions: threads split each reduction's chunks.
  std::vector<Acc> partial(static_cast<size_t>(chunks));
  for (int64_t o = 0; o < plan.num_outputs; ++o) {
    int64_t in_off, out_off;
    plan.offsets(o, in_off, out_off);
    parallel_for(chunks, 2, [&](int64_t begin, int64_t end) {
      for (int64_t c = begin; c < end; ++c)
        partial[c] = reduce_range<op, T, Acc>(ops, in_base + in_off * sizeof(T), c * kChunk,
                                              std::min(count, (c + 1) * kChunk));
    });
    Acc acc = f.identity();
    for (int64_t c = 0; c < chunks; ++c) acc = f(acc, partial[c]);
    out_base[out_off] = finish(acc);
  }
}

}  // namespace

void CpuBackend::reduce(ReduceOp op, const TensorArg& in, const TensorArg& out) {
  checks::check_reduce(op, in, out);
  dispatch_dtype(in.dtype, "reduce", [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>)  // refused by the check
      kernels::dispatch_reduce_op(op, [&](auto op_c) { reduce_impl<decltype(op_c)::value, T>(in, out); });
  });
}

void CpuBackend::arg_reduce(ArgReduceOp op, const TensorArg& in, const TensorArg& out, int dim) {
  checks::check_arg_reduce(op, in, out, dim);
  dispatch_dtype(in.dtype, "arg_reduce", [&](auto tag) {
    using T = decltype(tag);
    const ReductionPlan plan(in, out);
    const int64_t len = in.shape[dim];
    for_each_index(plan.num_outputs, std::max<int64_t>(1, kGrainSize / len),
                   kernels::ArgBest<T>{plan, in.ptr<T>(), out.ptr<int64_t>(), len, in.strides[dim],
                                       op == ArgReduceOp::argmax});
  });
}

}  // namespace ember::cpu
