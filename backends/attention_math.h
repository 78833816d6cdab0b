#pragma once
// The per-element math of scaled dot-product attention, shared by the CPU's blocked kernel
// (backends/cpu/attention.cpp) and the CUDA kernels (backends/cuda/attention.cu): the score of one
// (query, key) pair, one step of the online softmax, the dropout mask and the softmax gradient; and the
// rotary position embedding's element body and entry (both backends run it in their index loop).
// Plain ternaries, no std::min/max: those are host-only constexpr functions under nvcc.
#include <cstdint>
#include <limits>

#include "backends/backend.h"
#include "backends/checks.h"
#include "backends/scalar_math.h"
#include "base/dtype.h"
#include "base/host_device.h"
#include "base/philox.h"

namespace ember::attention_math {

template <typename T> EMBER_HOST_DEVICE T neg_inf() { return -std::numeric_limits<T>::infinity(); }

// Grouped-query attention: the (batch, kv head) index b·Hkv + h / (H / Hkv) of (batch, query head)
// bh = b·H + h, with H query heads and Hkv kv heads (H a multiple of Hkv; Hkv = H: bh itself).
EMBER_HOST_DEVICE int64_t kv_head(int64_t bh, int64_t H, int64_t Hkv) { return bh / H * Hkv + bh % H / (H / Hkv); }

// The score of query i and key j: q·k·scale plus the additive mask; -inf where is_causal hides j > i.
template <typename T>
EMBER_HOST_DEVICE T score(T dot, const AttentionParams& p, T mask, int64_t i, int64_t j) {
  if (p.causal && j > i) return neg_inf<T>();
  return dot * static_cast<T>(p.scale) + mask;
}

// The running state of one row's online softmax: max m, Σ exp(s - m) l. The output accumulator a is
// rescaled by `alpha` whenever m grows; each new score contributes exp(s - m) = `weight`.
template <typename T>
struct OnlineSoftmax {
  T m, l;
  EMBER_HOST_DEVICE OnlineSoftmax() : m(neg_inf<T>()), l(T(0)) {}
  // Raises the max to cover a block whose largest score is `block_max`; returns the factor the sum and the
  // accumulator are multiplied by. While every score so far is -inf the max stays -inf (factor 1), so a row
  // whose first keys are masked is not poisoned by exp(-inf - -inf) = NaN.
  EMBER_HOST_DEVICE T rescale(T block_max) {
    const T m_new = kernels::m_max(m, block_max);
    if (m_new == neg_inf<T>()) return T(1);
    const T alpha = kernels::m_exp(m - m_new);  // exp(-inf) = 0 on the first finite block
    m = m_new;
    l *= alpha;
    return alpha;
  }
  // exp(s - m) for a score of the current block (0 for -inf scores; 0 while the row is all -inf).
  EMBER_HOST_DEVICE T weight(T s) const { return m == neg_inf<T>() ? T(0) : kernels::m_exp(s - m); }
  // A row whose scores are all -inf (fully masked) has l = 0: its output is 0 and its gradients are 0, as
  // PyTorch's math kernel since 2.5 (at::_safe_softmax; 2.0-2.4 gave NaN there).
  // 1/l, which the accumulator is multiplied by at the end (0 for a fully masked row).
  EMBER_HOST_DEVICE T inverse_sum() const { return l == T(0) ? T(0) : T(1) / l; }
  // log Σ exp(s); +inf for a fully masked row, so that the backward's exp(s - lse) is 0 for all its keys.
  EMBER_HOST_DEVICE T logsumexp() const { return l == T(0) ? -neg_inf<T>() : m + kernels::m_log(l); }
};

// The dropout of attention weight `index` ((b·H + h)·L + i)·S + j: 0 with probability p, else 1/(1-p). One
// Philox block gives four 32-bit words, one per weight: weight `index` takes word index % 4 of the block at
// counter offset + index / 4 (the caller reserved B·H·L·S counters from `offset`, of which this uses a
// quarter), so the forward and the backward regenerate the same mask on any device and thread count, and the
// CPU evaluates one block per four weights (dropout_factors). The draw is the bernoulli of
// kernels::random_element on that word: float for both dtypes, so f32 and f64 runs with one seed drop the
// same weights.
EMBER_HOST_DEVICE float dropout_keep_probability(const AttentionParams& p) {
  return static_cast<float>(1.0 - p.dropout_p);
}
EMBER_HOST_DEVICE bool dropout_keeps(float keep_probability, uint32_t word) {
  return static_cast<float>(word >> 8) * (1.0f / 16777216.0f) < keep_probability;
}

template <typename T>
EMBER_HOST_DEVICE T dropout_factor(const AttentionParams& p, uint64_t index) {
  if (!(p.dropout_p > 0)) return T(1);
  const Philox4 r = philox4x32_10(p.seed, p.offset + index / 4);
  return dropout_keeps(dropout_keep_probability(p), r.v[index % 4]) ? static_cast<T>(1.0 / (1.0 - p.dropout_p))
                                                                      : T(0);
}

// The factors of weights [index0, index0 + n) into z: dropout_factor's values, one Philox block per four.
// The blocks of 64 words at a time, then the factors: two loops the CPU compiler vectorises.
template <typename T>
EMBER_HOST_DEVICE void dropout_factors(const AttentionParams& p, uint64_t index0, int64_t n, T* z) {
  const T kept = static_cast<T>(1.0 / (1.0 - p.dropout_p));
  const float keep_probability = dropout_keep_probability(p);
  constexpr int64_t kBlocks = 16;
  uint32_t words[4 * kBlocks];
  const uint64_t counter0 = p.offset + index0 / 4;  // word w (from the first block's word 0) is weight index0 - skip + w
  const int64_t skip = static_cast<int64_t>(index0 % 4), total = skip + n;
  for (int64_t w0 = 0; w0 < total; w0 += 4 * kBlocks) {
    const int64_t blocks = (total - w0 + 3) / 4 < kBlocks ? (total - w0 + 3) / 4 : kBlocks;
    for (int64_t b = 0; b < blocks; ++b) {
      const Philox4 r = philox4x32_10(p.seed, counter0 + static_cast<uint64_t>(w0 / 4 + b));
      for (int lane = 0; lane < 4; ++lane) words[4 * b + lane] = r.v[lane];
    }
    const int64_t begin = w0 > skip ? w0 : skip, end = w0 + 4 * kBlocks < total ? w0 + 4 * kBlocks : total;
    for (int64_t w = begin; w < end; ++w) z[w - skip] = dropout_keeps(keep_probability, words[w - w0]) ? kept : T(0);
  }
}

// dS = P ∘ (dP - D) with D = rowsum(dO ∘ O) (FlashAttention-2's backward). The dropout factor is in dP.
template <typename T> EMBER_HOST_DEVICE T score_grad(T prob, T dprob, T row_dot) { return prob * (dprob - row_dot); }

// --- rotary position embedding (Backend::rotary) ---------------------------------------------------------
// Element i of out [B, H, L, E] (contiguous) from the strided x: dims e >= R are copied; dim e of pair j is
// its first element (a' = a·cos - b·sin: e = j, or e = 2j interleaved) or its second (b' = b·cos + a·sin:
// e = j + R/2, or 2j + 1), a and b the pair's two x values, cos/sin row l of the [L, R/2] tables. Written as
// Hugging Face's x·cos + rotate_half(x)·sin: the two products, then their sum.
template <typename T>
struct Rotary {
  const T *x, *cos, *sin;
  T* out;
  int64_t H, L, E, pairs;
  int64_t xs[4];  // x's strides over [B, H, L, E]
  bool interleaved;
  T sign;  // +1, or -1 for the inverse rotation
  EMBER_HOST_DEVICE void operator()(int64_t i) const {
    const int64_t e = i % E, row = i / E, l = row % L, h = row / L % H, b = row / L / H;
    const T* xr = x + b * xs[0] + h * xs[1] + l * xs[2];
    const T a = xr[e * xs[3]];
    if (e >= 2 * pairs) {
      out[i] = a;
      return;
    }
    const bool first = interleaved ? e % 2 == 0 : e < pairs;
    const int64_t j = interleaved ? e / 2 : (first ? e : e - pairs);
    const int64_t partner = interleaved ? (first ? e + 1 : e - 1) : (first ? e + pairs : e - pairs);
    const T c = cos[l * pairs + j], s = sign * sin[l * pairs + j], other = xr[partner * xs[3]];
    out[i] = first ? a * c - other * s : a * c + other * s;
  }
};

// The entry of both backends: its check, its dtype, its body over the B·H·L·E output elements; `launch(n,
// body)` runs body(i) for i in [0, n) (the backend's index loop).
template <typename Launch>
void rotary(const TensorArg& x, const TensorArg& cos, const TensorArg& sin, const TensorArg& out,
            const RotaryParams& p, Launch&& launch) {
  const checks::RotaryDims d = checks::check_rotary(x, cos, sin, out);
  dispatch_floating(x.dtype, "apply_rotary", [&](auto tag) {
    using T = decltype(tag);
    launch(d.B * d.H * d.L * d.E,
           Rotary<T>{x.ptr<T>(), cos.ptr<T>(), sin.ptr<T>(), out.ptr<T>(), d.H, d.L, d.E, d.pairs,
                     {x.strides[0], x.strides[1], x.strides[2], x.strides[3]}, p.interleaved, T(p.inverse ? -1 : 1)});
  });
}

}  // namespace ember::attention_math
