#pragma once
// Iteration over N operands that share a shape but not strides (the CPU analogue of PyTorch's
// TensorIterator): dims of size 1 are dropped, dims that are contiguous in every operand are merged, and
// the body is called once per run of the innermost dim with byte pointers and byte strides, so it can
// take a contiguous fast path that the compiler vectorises.
#include <array>
#include <cstdint>

#include "backends/backend.h"
#include "backends/cpu/parallel.h"

namespace ember::cpu {

template <int N>
struct StridedOperands {
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};  // bytes
  char* base[N] = {};

  // All TensorArgs must have the same shape (the caller has expanded inputs).
  explicit StridedOperands(const std::array<const TensorArg*, N>& args) {
    const TensorArg& first = *args[0];
    for (int d = 0; d < first.ndim; ++d) {
      if (first.shape[d] == 1) continue;  // size-1 dims never move the pointers
      shape[ndim] = first.shape[d];
      for (int k = 0; k < N; ++k)
        strides[k][ndim] = args[k]->strides[d] * static_cast<int64_t>(dtype_size(args[k]->dtype));
      ++ndim;
    }
    for (int k = 0; k < N; ++k) base[k] = static_cast<char*>(args[k]->data);
    coalesce();
    if (ndim == 0) {  // a single element: one run of length 1
      ndim = 1;
      shape[0] = 1;
      for (int k = 0; k < N; ++k) strides[k][0] = 0;
    }
  }

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= shape[d];
    return n;
  }

 private:
  // Merge dim d into d+1 when, for every operand, stepping d equals stepping d+1 shape[d+1] times.
  void coalesce() {
    if (ndim <= 1) return;
    int out = 0;
    for (int d = 1; d < ndim; ++d) {
      bool mergeable = true;
      for (int k = 0; k < N; ++k)
        if (strides[k][out] != strides[k][d] * shape[d]) mergeable = false;
      if (mergeable) {
        shape[out] *= shape[d];
        for (int k = 0; k < N; ++k) strides[k][out] = strides[k][d];
      } else {
        ++out;
        shape[out] = shape[d];
        for (int k = 0; k < N; ++k) strides[k][out] = strides[k][d];
      }
    }
    ndim = out + 1;
  }
};

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
