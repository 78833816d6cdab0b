#pragma once
// Reductions, arg-reductions, scans and sorts: the accumulators, identities and per-output bodies that
// backends/cpu/{reduce,sort_scan}.cpp and backends/cuda/{reduce,sort_scan}.cu both run. A body handles one
// output (one row along the reduced or scanned dim) given its offsets from a ReductionPlan
// (backends/strided.h), so each backend only chooses how the outputs are spread over its threads.
#include <cstdint>
#include <limits>

#include "backends/backend.h"
#include "backends/scalar_math.h"
#include "backends/strided.h"
#include "base/host_device.h"

namespace ember::kernels {

// --- reduce ---------------------------------------------------------------------------------------------
// Accumulator type: sums of f32 accumulate in f64 (cheap where the loop is memory-bound, and it keeps a
// 16M-element sum accurate); everything else in its own type.
template <ReduceOp op, typename T> struct ReduceAcc { using type = T; };
template <> struct ReduceAcc<ReduceOp::sum, float> { using type = double; };
template <> struct ReduceAcc<ReduceOp::mean, float> { using type = double; };

template <ReduceOp op, typename Acc>
struct ReduceFn {
  // NOTE: ∓infinity for floats, not lowest()/max(): the identity must never win against a real value,
  // or the max of [-inf, -inf] would be -3.4e38.
  static EMBER_HOST_DEVICE Acc identity() {
    using L = std::numeric_limits<Acc>;
    if constexpr (op == ReduceOp::max) return L::has_infinity ? -L::infinity() : L::lowest();
    if constexpr (op == ReduceOp::min) return L::has_infinity ? L::infinity() : L::max();
    return Acc(0);
  }
  EMBER_HOST_DEVICE Acc operator()(Acc acc, Acc x) const {
    if constexpr (op == ReduceOp::max) return m_max(x, acc);
    if constexpr (op == ReduceOp::min) return m_min(x, acc);
    return acc + x;
  }
};

// The output of a reduction of `count` elements from its accumulator: mean divides, the others round.
template <ReduceOp op, typename T, typename Acc>
EMBER_HOST_DEVICE T reduce_finish(Acc acc, int64_t count) {
  if constexpr (op == ReduceOp::mean) return static_cast<T>(acc / static_cast<Acc>(count));
  return static_cast<T>(acc);
}

// --- arg_reduce -----------------------------------------------------------------------------------------
// Output o of argmax/argmin along a dim of `len` elements `stride` apart: the first of equal values wins
// (strictly better only), NaN counts as the maximum and the minimum (the first NaN wins, as PyTorch).
template <typename T>
struct ArgBest {
  ReductionPlan plan;  // the input against the output (the input's shape with the dim set to 1)
  const T* in;
  int64_t* out;
  int64_t len, stride;
  bool is_max;
  EMBER_HOST_DEVICE void operator()(int64_t o) const {
    int64_t in_off, out_off;
    plan.offsets(o, in_off, out_off);
    const T* x = in + in_off;
    int64_t best = 0;
    T best_v = x[0];
    for (int64_t i = 1; i < len && !m_isnan(best_v); ++i) {
      const T v = x[i * stride];
      if ((is_max ? v > best_v : v < best_v) || m_isnan(v)) {
        best = i;
        best_v = v;
      }
    }
    out[out_off] = best;
  }
};

// --- cumsum ---------------------------------------------------------------------------------------------
// cumsum's accumulator: double for f32 (as PyTorch's CPU kernel), the type itself otherwise.
template <typename T> using ScanAcc = typename ReduceAcc<ReduceOp::sum, T>::type;

// Row o of a cumsum along a dim of `len` elements (reverse: from the end, Σ_{j≥i}).
template <typename T>
struct CumsumRow {
  ReductionPlan plan;  // row_plan(in, out, dim)
  const T* in;
  T* out;
  int64_t len, in_step, out_step;
  bool reverse;
  EMBER_HOST_DEVICE void operator()(int64_t o) const {
    int64_t in_off, out_off;
    plan.offsets(o, in_off, out_off);
    ScanAcc<T> acc = 0;
    for (int64_t k = 0; k < len; ++k) {
      const int64_t i = reverse ? len - 1 - k : k;
      acc += static_cast<ScanAcc<T>>(in[in_off + i * in_step]);
      out[out_off + i * out_step] = static_cast<T>(acc);
    }
  }
};

// --- sort -----------------------------------------------------------------------------------------------
// Whether a sorts before b: ascending or descending, NaN as the largest value (PyTorch's order: last when
// ascending, first when descending). A strict weak order, so a stable sort keeps equal elements (and NaNs)
// in input order.
template <typename T>
EMBER_HOST_DEVICE bool sort_before(T a, T b, bool descending) {
  if (descending) return a > b || (m_isnan(a) && !m_isnan(b));
  return a < b || (!m_isnan(a) && m_isnan(b));
}

// Scratch of one row's sort: two rows of values and positions (len each) that the merge passes ping-pong
// between.
template <typename T>
struct SortScratch {
  T *av, *bv;
  int64_t *ai, *bi;
};

// Sorts the `len` elements of x (`x_step` apart) stably (bottom-up merge sort: on ties the left run's element
// is taken first) into values (v_step apart) and their positions in the row into indices (i_step apart).
template <typename T>
EMBER_HOST_DEVICE void sort_row(const T* x, int64_t x_step, int64_t len, bool descending, SortScratch<T> s, T* values,
                                int64_t v_step, int64_t* indices, int64_t i_step) {
  for (int64_t k = 0; k < len; ++k) {
    s.av[k] = x[k * x_step];
    s.ai[k] = k;
  }
  for (int64_t width = 1; width < len; width *= 2) {
    for (int64_t lo = 0; lo < len; lo += 2 * width) {
      const int64_t mid = lo + width < len ? lo + width : len;
      const int64_t hi = lo + 2 * width < len ? lo + 2 * width : len;
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        const bool right = sort_before(s.av[j], s.av[i], descending);  // strictly before: stable
        s.bv[k] = right ? s.av[j] : s.av[i];
        s.bi[k++] = right ? s.ai[j++] : s.ai[i++];
      }
      for (; i < mid; ++i, ++k) s.bv[k] = s.av[i], s.bi[k] = s.ai[i];
      for (; j < hi; ++j, ++k) s.bv[k] = s.av[j], s.bi[k] = s.ai[j];
    }
    T* tv = s.av;
    s.av = s.bv;
    s.bv = tv;
    int64_t* ti = s.ai;
    s.ai = s.bi;
    s.bi = ti;
  }
  for (int64_t k = 0; k < len; ++k) {
    values[k * v_step] = s.av[k];
    indices[k * i_step] = s.ai[k];
  }
}

// The rows of a sort along one dim: row o's input, values and indices from their plans (row_plan).
template <typename T>
struct SortRows {
  ReductionPlan vplan, iplan;  // row_plan(in, values, dim), row_plan(in, indices, dim)
  const T* in;
  T* values;
  int64_t* indices;
  int64_t len, in_step, v_step, i_step;
  bool descending;
  EMBER_HOST_DEVICE void operator()(int64_t o, const SortScratch<T>& scratch) const {
    int64_t in_off, v_off, unused, i_off;
    vplan.offsets(o, in_off, v_off);
    iplan.offsets(o, unused, i_off);
    sort_row(in + in_off, in_step, len, descending, scratch, values + v_off, v_step, indices + i_off, i_step);
  }
};

}  // namespace ember::kernels
