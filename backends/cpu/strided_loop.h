#pragma once
// The CPU backend's loops on Ember's thread pool (base/parallel.h), the counterparts of
// backends/cuda/loops.cuh:
// - for_each_index(n, grain, body): body(i) for i in [0, n), the index loop every shared per-element or
//   per-output body (backends/*_math.h) runs in, as CUDA's launch_index.
// - for_each_run / strided_loop: iteration over StridedOperands (backends/strided.h), the body called once
//   per run of the innermost dim with byte pointers and byte strides, so that it can take a contiguous fast
//   path that the compiler vectorises.
#include <array>
#include <cstdint>

#include "backends/backend.h"
#include "backends/strided.h"
#include "base/parallel.h"

namespace ember::cpu {

using ember::StridedOperands;

// Calls body(i) for every i in [0, n), split across threads in ranges of at least `grain` indices.
template <typename Body>
void for_each_index(int64_t n, int64_t grain, const Body& body) {
  parallel_for(n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) body(i);
  });
}

// Calls body(char* ptrs[N], const int64_t inner_strides[N], int64_t count) for every run of the innermost
// dim, covering linear element range [begin, end).
template <int N, typename Body>
void for_each_run(const StridedOperands<N>& ops, int64_t begin, int64_t end, Body&& body) {
  const int nd = ops.ndim;
  const int64_t inner = ops.shape[nd - 1];
  int64_t idx[kMaxDims];
  int64_t rem = begin;
  for (int d = nd - 1; d >= 0; --d) {
    idx[d] = rem % ops.shape[d];
    rem /= ops.shape[d];
  }
  int64_t inner_strides[N];
  for (int k = 0; k < N; ++k) inner_strides[k] = ops.strides[k][nd - 1];
  int64_t pos = begin;
  while (pos < end) {
    char* ptrs[N];
    for (int k = 0; k < N; ++k) {
      char* p = ops.base[k];
      for (int d = 0; d < nd; ++d) p += idx[d] * ops.strides[k][d];
      ptrs[k] = p;
    }
    const int64_t count = (inner - idx[nd - 1]) < (end - pos) ? (inner - idx[nd - 1]) : (end - pos);
    body(ptrs, inner_strides, count);
    pos += count;
    // advance the multi-index by `count` (always ends a row or the range)
    idx[nd - 1] += count;
    for (int d = nd - 1; d > 0 && idx[d] >= ops.shape[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

// Runs body over every element, split across threads when large.
template <int N, typename Body>
void strided_loop(const std::array<const TensorArg*, N>& args, Body&& body, int64_t grain = kGrainSize) {
  StridedOperands<N> ops(args);
  parallel_for(ops.numel(), grain, [&](int64_t begin, int64_t end) { for_each_run(ops, begin, end, body); });
}

}  // namespace ember::cpu
