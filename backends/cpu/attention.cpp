// Scaled dot-product attention on the CPU: FlashAttention-2's blocked algorithm (Dao, 2023). The [L, S]
// score matrix is never stored: each task takes a block of kBr query rows of one (batch, head) and walks
// the keys kBc at a time, keeping each row's running max and sum (online softmax, attention_math.h) and
// its output accumulator; only the per-row log-sum-exp is saved for the backward, which recomputes the
// scores block by block. Memory beyond the operands: per-thread block buffers and one value per query row.
//
// The block products (q·kᵀ, p·v and the backward's five) are OpenBLAS GEMM calls on the blocks, single-
// threaded inside the parallel region (as conv2d's): measured 2026-12-01 (docs/benchmarks.md), they beat the
// first version's hand-written vectorised axpy loops (commit 5971a3e) clearly.
//
// The backward: with at least two (batch, kv head) pairs per thread, one task per pair walks key blocks ×
// query blocks once, each block pair's scores and softmax gradient feeding dK, dV and dQ (dQ accumulated in
// the output); with fewer (long sequences of few heads), a dK/dV pass over key blocks and a dQ pass over query
// blocks, which recompute them once each but keep every thread busy. Grouped-query attention: the kv heads'
// tasks loop over their group's query heads, so each dK/dV block has one writer. The element-wise loops
// between the products (exp, the dropout factors, the softmax gradient) are vectorised: a local f32 exp, the
// dropout mask one Philox block per four weights (attention_math::dropout_factors), and causally hidden keys
// skipped.
#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <vector>

#include "backends/attention_math.h"
#include "backends/checks.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/openblas.h"
#include "backends/cpu/strided_loop.h"
#include "base/parallel.h"

namespace ember::cpu {
namespace {

using attention_math::OnlineSoftmax;

constexpr int64_t kBr = 64;  // query rows per task
constexpr int64_t kBc = 128;  // keys per block

using Dims = checks::AttentionDims;

template <typename T>
struct MaskView {  // the additive mask as a strided [B, H, L, S] view; absent: 0
  const T* data = nullptr;
  int64_t sb = 0, sh = 0, sl = 0, ss = 0;
  T at(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return data != nullptr ? data[b * sb + h * sh + i * sl + j * ss] : T(0);
  }
};

template <typename T>
MaskView<T> mask_view(const TensorArg* m) {
  MaskView<T> v;
  if (m == nullptr) return v;
  v.data = m->ptr<T>();
  v.sb = m->strides[0];
  v.sh = m->strides[1];
  v.sl = m->strides[2];
  v.ss = m->strides[3];
  return v;
}

// The keys of [j0, j0 + nc) query row i can see: all nc, or under is_causal those with j <= i (0 when i < j0).
int64_t visible(const AttentionParams& p, int64_t i, int64_t j0, int64_t nc) {
  return p.causal ? std::clamp<int64_t>(i - j0 + 1, 0, nc) : nc;
}

// The scores of query rows [i0, i0 + nr) against keys [j0, j0 + nc) of (b, h): s = q·kᵀ·scale + mask, into s
// (row stride kBc); -inf where is_causal hides the key. q and k point at the (b, h) matrices.
template <typename T>
void block_scores(const T* q, const T* k, const MaskView<T>& mask, const AttentionParams& p, int64_t b, int64_t h,
                  int64_t i0, int64_t nr, int64_t j0, int64_t nc, int64_t E, T* s) {
  gemm<T>(false, true, nr, nc, E, T(1), q + i0 * E, E, k + j0 * E, E, T(0), s, kBc);
  const T scale = static_cast<T>(p.scale);
  for (int64_t ii = 0; ii < nr; ++ii) {
    T* row = s + ii * kBc;
    const int64_t i = i0 + ii, n = visible(p, i, j0, nc);
    if (mask.data == nullptr) {
#pragma omp simd
      for (int64_t jj = 0; jj < n; ++jj) row[jj] *= scale;  // attention_math::score with mask 0
    } else {
      for (int64_t jj = 0; jj < n; ++jj) row[jj] = attention_math::score(row[jj], p, mask.at(b, h, i, j0 + jj), i, j0 + jj);
    }
    std::fill(row + n, row + nc, attention_math::neg_inf<T>());
  }
}

// exp(x) for the element-wise loops, vectorisable (no libm call): GCC 12 vectorises expf only under
// -ffast-math, which glibc's vector declarations need. f32 by Cody–Waite range reduction, x = n·ln 2 + r with
// |r| <= ln(2)/2, and Cephes expf's polynomial for e^r (within 2 ulp of expf). The loops pass x = s - max <= 0:
// 0 below -87.3 (exp(-inf) = 0), +inf above 88 (expf overflows at 88.72), NaN stays NaN. f64 keeps libm's exp
// (the goldens' 1e-11).
inline float vexp(float x) {
  const float xc = std::min(std::max(x, -87.3f), 88.0f);  // NaN passes through both
  const float t = xc * 1.44269504088896341f + 12582912.0f;  // 1.5·2^23: t's low bits hold round(x·log2 e)
  const float n = t - 12582912.0f;
  const int32_t n_int = std::bit_cast<int32_t>(t) - std::bit_cast<int32_t>(12582912.0f);
  const float r = (xc - n * 0.693359375f) - n * -2.12194440e-4f;  // ln 2 in two parts
  float e = 1.9875691500e-4f;
  e = e * r + 1.3981999507e-3f;
  e = e * r + 8.3334519073e-3f;
  e = e * r + 4.1665795894e-2f;
  e = e * r + 1.6666665459e-1f;
  e = e * r + 5.0000001201e-1f;
  e = e * r * r + r + 1.0f;
  const float two_n = std::bit_cast<float>((n_int + 127) << 23);  // n in [-126, 127]: a normal 2^n
  const float y = e * two_n;
  return x < -87.3f ? 0.0f : (x > 88.0f ? std::numeric_limits<float>::infinity() : y);
}
inline double vexp(double x) { return kernels::m_exp(x); }

// Tasks per thread below which a parallel_for stays on the calling thread: a task is one block of rows
// against all S keys (or of keys against all L rows); tiny problems (gradcheck's) are not worth a region.
int64_t task_grain(int64_t rows, int64_t others, int64_t width) {
  const int64_t work = std::max<int64_t>(1, rows * others * width);
  return std::max<int64_t>(1, (int64_t{1} << 18) / work);
}

// The order tasks are handed out in, over the n blocks of one (batch, head): 0, n-1, 1, n-2, ... Under
// is_causal block k costs about k (query blocks) or n-k (key blocks); parallel_for gives each thread a
// contiguous range, which this order fills with cheap and expensive blocks alike.
int64_t zigzag(int64_t t, int64_t n) { return t % 2 == 0 ? t / 2 : n - 1 - t / 2; }

// The keys query rows [i0, i0 + nr) can see: [0, S), or [0, i0 + nr) under is_causal.
int64_t key_end(const AttentionParams& p, int64_t i0, int64_t nr, int64_t S) {
  return p.causal ? std::min(S, i0 + nr) : S;
}

template <typename T>
void forward(const Dims& d, const T* q, const T* k, const T* v, const MaskView<T>& mask, T* out, T* lse,
             const AttentionParams& p) {
  const int64_t q_blocks = (d.L + kBr - 1) / kBr;
  const bool dropout = p.dropout_p > 0;
  parallel_for(d.B * d.H * q_blocks, task_grain(std::min(kBr, d.L), d.S, d.E + d.Ev), [&](int64_t begin, int64_t end) {
    std::vector<T> s(kBr * kBc), acc(kBr * d.Ev), z(kBc);
    std::vector<OnlineSoftmax<T>> rows(kBr);
    for (int64_t task = begin; task < end; ++task) {
      const int64_t bh = task / q_blocks, b = bh / d.H, h = bh % d.H;
      const int64_t i0 = zigzag(task % q_blocks, q_blocks) * kBr, nr = std::min(kBr, d.L - i0);
      const int64_t kvh = attention_math::kv_head(bh, d.H, d.Hkv);
      const T *qh = q + bh * d.L * d.E, *kh = k + kvh * d.S * d.E, *vh = v + kvh * d.S * d.Ev;
      std::fill(acc.begin(), acc.end(), T(0));
      std::fill(rows.begin(), rows.end(), OnlineSoftmax<T>());
      const int64_t j_end = key_end(p, i0, nr, d.S);
      for (int64_t j0 = 0; j0 < j_end; j0 += kBc) {
        const int64_t nc = std::min(kBc, j_end - j0);
        block_scores(qh, kh, mask, p, b, h, i0, nr, j0, nc, d.E, s.data());
        for (int64_t ii = 0; ii < nr; ++ii) {
          T* srow = s.data() + ii * kBc;
          T* arow = acc.data() + ii * d.Ev;
          OnlineSoftmax<T>& row = rows[ii];
          const int64_t n = visible(p, i0 + ii, j0, nc);  // the rest are -inf: weight 0
          // kernels::m_max over the row (NaN wins), as a max reduction and a NaN flag that vectorise
          T block_max = attention_math::neg_inf<T>();
          int nan = 0;
#pragma omp simd reduction(max : block_max) reduction(| : nan)
          for (int64_t jj = 0; jj < n; ++jj) {
            block_max = srow[jj] > block_max ? srow[jj] : block_max;
            nan |= srow[jj] != srow[jj] ? 1 : 0;
          }
          if (nan != 0) block_max = std::numeric_limits<T>::quiet_NaN();
          const T alpha = row.rescale(block_max);
          if (alpha != T(1)) {
#pragma omp simd
            for (int64_t e = 0; e < d.Ev; ++e) arow[e] *= alpha;
          }
          if (row.m == attention_math::neg_inf<T>()) {  // every score so far -inf: row.weight is 0
            std::fill(srow, srow + nc, T(0));
            continue;
          }
          // row.weight(s) = exp(s - m), summed into l
          const T m = row.m;
          T sum = 0;
#pragma omp simd reduction(+ : sum)
          for (int64_t jj = 0; jj < n; ++jj) {
            const T w = vexp(srow[jj] - m);
            srow[jj] = w;
            sum += w;
          }
          row.l += sum;
          std::fill(srow + n, srow + nc, T(0));
          if (dropout) {
            attention_math::dropout_factors(p, static_cast<uint64_t>((bh * d.L + i0 + ii) * d.S + j0), n, z.data());
#pragma omp simd
            for (int64_t jj = 0; jj < n; ++jj) srow[jj] *= z[jj];
          }
        }
        gemm<T>(false, false, nr, d.Ev, nc, T(1), s.data(), kBc, vh + j0 * d.Ev, d.Ev, T(1), acc.data(), d.Ev);
      }
      for (int64_t ii = 0; ii < nr; ++ii) {
        const T inv = rows[ii].inverse_sum();
        T* o = out + (bh * d.L + i0 + ii) * d.Ev;
        const T* arow = acc.data() + ii * d.Ev;
#pragma omp simd
        for (int64_t e = 0; e < d.Ev; ++e) o[e] = arow[e] * inv;
        lse[bh * d.L + i0 + ii] = rows[ii].logsumexp();
      }
    }
  });
}

// One (query block, key block) pair of the backward: p = exp(s - lse) (the forward's probabilities) into
// `prob`, and ds = p·(dP·z - D) into `ds` with dP = dO·vᵀ and z the dropout factor. prob is returned with the
// dropout applied (p·z: what multiplies v in the forward, so dV = (p·z)ᵀ dO). z: kBc values of scratch.
template <typename T>
void block_grads(const Dims& d, const T* qh, const T* doh, const T* kh, const T* vh, const T* lse_h, const T* D_h,
                 const MaskView<T>& mask, const AttentionParams& p, int64_t b, int64_t h, int64_t bh, int64_t i0,
                 int64_t nr, int64_t j0, int64_t nc, T* prob, T* ds, T* z) {
  block_scores(qh, kh, mask, p, b, h, i0, nr, j0, nc, d.E, prob);
  gemm<T>(false, true, nr, nc, d.Ev, T(1), doh + i0 * d.Ev, d.Ev, vh + j0 * d.Ev, d.Ev, T(0), ds, kBc);  // dP
  for (int64_t ii = 0; ii < nr; ++ii) {
    const T l = lse_h[i0 + ii], D = D_h[i0 + ii];
    T *pr = prob + ii * kBc, *dsr = ds + ii * kBc;
    const int64_t n = visible(p, i0 + ii, j0, nc);  // the rest are -inf: p = 0, ds = 0
    if (p.dropout_p > 0) {
      attention_math::dropout_factors(p, static_cast<uint64_t>((bh * d.L + i0 + ii) * d.S + j0), n, z);
#pragma omp simd
      for (int64_t jj = 0; jj < n; ++jj) {
        const T e = vexp(pr[jj] - l);
        dsr[jj] = attention_math::score_grad(e, dsr[jj] * z[jj], D);
        pr[jj] = e * z[jj];
      }
    } else {
#pragma omp simd
      for (int64_t jj = 0; jj < n; ++jj) {
        const T e = vexp(pr[jj] - l);
        dsr[jj] = attention_math::score_grad(e, dsr[jj], D);
        pr[jj] = e;
      }
    }
    std::fill(pr + n, pr + nc, T(0));
    std::fill(dsr + n, dsr + nc, T(0));
  }
}

template <typename T>
void backward(const Dims& d, const T* q, const T* k, const T* v, const MaskView<T>& mask, const T* out,
              const T* lse, const T* dout, T* dq, T* dk, T* dv, const AttentionParams& p) {
  // D = rowsum(dO ∘ O), one value per query row.
  std::vector<T> D(d.B * d.H * d.L);
  parallel_for(d.B * d.H * d.L, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, d.Ev)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t r = begin; r < end; ++r) {
                   T sum = 0;
                   const T *g = dout + r * d.Ev, *o = out + r * d.Ev;
                   for (int64_t e = 0; e < d.Ev; ++e) sum += g[e] * o[e];
                   D[r] = sum;
                 }
               });
  const T scale = static_cast<T>(p.scale);
  const int64_t q_blocks = (d.L + kBr - 1) / kBr, k_blocks = (d.S + kBc - 1) / kBc;
  // The q and dO matrices of (batch, query head) bh and the k and v matrices of the kv head it reads.
  const auto head = [&](int64_t bh) {
    const int64_t kvh = attention_math::kv_head(bh, d.H, d.Hkv);
    return std::array<const T*, 4>{q + bh * d.L * d.E, k + kvh * d.S * d.E, v + kvh * d.S * d.Ev,
                                   dout + bh * d.L * d.Ev};
  };
  // A kv head's dK and dV sum over its group of query heads (grouped-query attention; a group of one
  // otherwise): the tasks below own kv heads, so one task sums a group, in head order (deterministic).
  const int64_t group = d.H / d.Hkv;
  const auto first_head = [&](int64_t kvh) { return kvh / d.Hkv * d.H + kvh % d.Hkv * group; };
  // Enough (batch, kv head) tasks for the threads: one pass per kv head over key blocks × its query heads'
  // query blocks, each block pair's scores and softmax gradient computed once for dK, dV and dQ (dQ
  // accumulated in place in the output: [L, E] of the task's own query heads). Otherwise (long sequences of
  // few heads) the dK/dV pass and the dQ pass below, parallel over blocks, recompute them once each.
  if (dq != nullptr && (dk != nullptr || dv != nullptr) && d.B * d.Hkv >= 2 * int64_t{num_threads()}) {
    parallel_for(d.B * d.Hkv, task_grain(group * d.L, d.S, 3 * (d.E + d.Ev)), [&](int64_t begin, int64_t end) {
      std::vector<T> prob(kBr * kBc), ds(kBr * kBc), z(kBc), dk_acc(kBc * d.E), dv_acc(kBc * d.Ev);
      for (int64_t kvh = begin; kvh < end; ++kvh) {
        const int64_t bh0 = first_head(kvh);
        std::fill(dq + bh0 * d.L * d.E, dq + (bh0 + group) * d.L * d.E, T(0));
        for (int64_t j0 = 0; j0 < d.S; j0 += kBc) {
          const int64_t nc = std::min(kBc, d.S - j0);
          std::fill(dk_acc.begin(), dk_acc.end(), T(0));
          std::fill(dv_acc.begin(), dv_acc.end(), T(0));
          for (int64_t bh = bh0; bh < bh0 + group; ++bh) {
            const int64_t b = bh / d.H, h = bh % d.H;
            const auto [qh, kh, vh, doh] = head(bh);
            T* dqh = dq + bh * d.L * d.E;
            for (int64_t i0 = p.causal ? j0 / kBr * kBr : 0; i0 < d.L; i0 += kBr) {
              const int64_t nr = std::min(kBr, d.L - i0);
              block_grads(d, qh, doh, kh, vh, lse + bh * d.L, D.data() + bh * d.L, mask, p, b, h, bh, i0, nr, j0,
                          nc, prob.data(), ds.data(), z.data());
              gemm<T>(true, false, nc, d.Ev, nr, T(1), prob.data(), kBc, doh + i0 * d.Ev, d.Ev, T(1), dv_acc.data(),
                      d.Ev);
              gemm<T>(true, false, nc, d.E, nr, scale, ds.data(), kBc, qh + i0 * d.E, d.E, T(1), dk_acc.data(), d.E);
              gemm<T>(false, false, nr, d.E, nc, scale, ds.data(), kBc, kh + j0 * d.E, d.E, T(1), dqh + i0 * d.E,
                      d.E);
            }
          }
          if (dk != nullptr) std::copy(dk_acc.begin(), dk_acc.begin() + nc * d.E, dk + (kvh * d.S + j0) * d.E);
          if (dv != nullptr) std::copy(dv_acc.begin(), dv_acc.begin() + nc * d.Ev, dv + (kvh * d.S + j0) * d.Ev);
        }
      }
    });
    return;
  }
  // dK and dV: one task per (batch·kv head, key block), over the query blocks of its query heads that see it.
  if (dk != nullptr || dv != nullptr) {
    parallel_for(d.B * d.Hkv * k_blocks, task_grain(std::min(kBc, d.S), group * d.L, 2 * (d.E + d.Ev)),
                 [&](int64_t begin, int64_t end) {
      std::vector<T> prob(kBr * kBc), ds(kBr * kBc), z(kBc), dk_acc(kBc * d.E), dv_acc(kBc * d.Ev);
      for (int64_t task = begin; task < end; ++task) {
        const int64_t kvh = task / k_blocks, bh0 = first_head(kvh);
        const int64_t j0 = zigzag(task % k_blocks, k_blocks) * kBc, nc = std::min(kBc, d.S - j0);
        std::fill(dk_acc.begin(), dk_acc.end(), T(0));
        std::fill(dv_acc.begin(), dv_acc.end(), T(0));
        for (int64_t bh = bh0; bh < bh0 + group; ++bh) {
          const int64_t b = bh / d.H, h = bh % d.H;
          const auto [qh, kh, vh, doh] = head(bh);
          const int64_t i_start = p.causal ? j0 / kBr * kBr : 0;  // causal: rows i < j0 see none of these keys
          for (int64_t i0 = i_start; i0 < d.L; i0 += kBr) {
            const int64_t nr = std::min(kBr, d.L - i0);
            block_grads(d, qh, doh, kh, vh, lse + bh * d.L, D.data() + bh * d.L, mask, p, b, h, bh, i0, nr, j0, nc,
                        prob.data(), ds.data(), z.data());
            // dV += (p·z)ᵀ dO, dK += dSᵀ q · scale
            gemm<T>(true, false, nc, d.Ev, nr, T(1), prob.data(), kBc, doh + i0 * d.Ev, d.Ev, T(1), dv_acc.data(),
                    d.Ev);
            gemm<T>(true, false, nc, d.E, nr, scale, ds.data(), kBc, qh + i0 * d.E, d.E, T(1), dk_acc.data(), d.E);
          }
        }
        if (dk != nullptr) std::copy(dk_acc.begin(), dk_acc.begin() + nc * d.E, dk + (kvh * d.S + j0) * d.E);
        if (dv != nullptr) std::copy(dv_acc.begin(), dv_acc.begin() + nc * d.Ev, dv + (kvh * d.S + j0) * d.Ev);
      }
    });
  }
  // dQ: one task per (batch·head, query block), over the key blocks it sees.
  if (dq != nullptr) {
    parallel_for(d.B * d.H * q_blocks, task_grain(std::min(kBr, d.L), d.S, 2 * d.E + d.Ev),
                 [&](int64_t begin, int64_t end) {
      std::vector<T> prob(kBr * kBc), ds(kBr * kBc), z(kBc), dq_acc(kBr * d.E);
      for (int64_t task = begin; task < end; ++task) {
        const int64_t bh = task / q_blocks, b = bh / d.H, h = bh % d.H;
        const int64_t i0 = zigzag(task % q_blocks, q_blocks) * kBr, nr = std::min(kBr, d.L - i0);
        const auto [qh, kh, vh, doh] = head(bh);
        std::fill(dq_acc.begin(), dq_acc.end(), T(0));
        const int64_t j_end = key_end(p, i0, nr, d.S);
        for (int64_t j0 = 0; j0 < j_end; j0 += kBc) {
          const int64_t nc = std::min(kBc, j_end - j0);
          block_grads(d, qh, doh, kh, vh, lse + bh * d.L, D.data() + bh * d.L, mask, p, b, h, bh, i0, nr, j0, nc,
                      prob.data(), ds.data(), z.data());
          // dQ += dS k · scale
          gemm<T>(false, false, nr, d.E, nc, scale, ds.data(), kBc, kh + j0 * d.E, d.E, T(1), dq_acc.data(), d.E);
        }
        std::copy(dq_acc.begin(), dq_acc.begin() + nr * d.E, dq + (bh * d.L + i0) * d.E);
      }
    });
  }
}

}  // namespace

void CpuBackend::attention_forward(const TensorArg& q, const TensorArg& k, const TensorArg& v, const TensorArg* mask,
                                   const TensorArg& out, const TensorArg& lse, const AttentionParams& p) {
  const Dims d = checks::check_attention_forward(q, k, v, mask, out, lse, p);
  dispatch_floating(q.dtype, "scaled_dot_product_attention", [&](auto tag) {
    using T = decltype(tag);
    forward<T>(d, q.ptr<T>(), k.ptr<T>(), v.ptr<T>(), mask_view<T>(mask), out.ptr<T>(), lse.ptr<T>(), p);
  });
}

void CpuBackend::attention_backward(const TensorArg& q, const TensorArg& k, const TensorArg& v, const TensorArg* mask,
                                    const TensorArg& out, const TensorArg& lse, const TensorArg& grad_out,
                                    const TensorArg* grad_q, const TensorArg* grad_k, const TensorArg* grad_v,
                                    const AttentionParams& p) {
  const Dims d = checks::check_attention_backward(q, k, v, mask, out, lse, grad_out, grad_q, grad_k, grad_v, p);
  dispatch_floating(q.dtype, "scaled_dot_product_attention_backward", [&](auto tag) {
    using T = decltype(tag);
    backward<T>(d, q.ptr<T>(), k.ptr<T>(), v.ptr<T>(), mask_view<T>(mask), out.ptr<T>(), lse.ptr<T>(),
                grad_out.ptr<T>(), ptr_or_null<T>(grad_q), ptr_or_null<T>(grad_k), ptr_or_null<T>(grad_v), p);
  });
}

// Rotary position embedding: attention_math.h's element body in the index loop.
void CpuBackend::rotary(const TensorArg& x, const TensorArg& cos, const TensorArg& sin, const TensorArg& out,
                        const RotaryParams& p) {
  attention_math::rotary(x, cos, sin, out, p, [](int64_t n, const auto& body) { for_each_index(n, kGrainSize, body); });
}

}  // namespace ember::cpu
