// Scaled dot-product attention on CUDA: the online-softmax algorithm of backends/cpu/attention.cpp in its
// simplest form, sharing the per-element math (attention_math.h). One kBlock-thread block per query row
// (forward, dQ) or per key row (dK/dV); each dot product is a block_reduce (fixed order: deterministic),
// each thread owns a strided slice of the row's E or Ev elements, so no atomics. Memory stays linear in L
// and S: nothing of size L×S is stored.
// It is deliberately plain (no tiling through shared memory, no tensor cores): it cannot be run where it is
// written (no GPU), so it is kept small enough to be checked by reading. cuDNN's fused attention
// (cudnn_frontend SDPA graphs) is not used yet for the same reason: it could not be validated here.
#include "backends/attention_math.h"
#include "backends/checks.h"
#include "backends/cuda/loops.cuh"
#include "backends/nn_math.h"

namespace ember::cuda {
namespace {

using attention_math::OnlineSoftmax;

// The sizes (B, H, L, S, E, Ev, Hkv: checks::AttentionDims), the operands and the parameters of one call.
template <typename T>
struct AttentionArgs : checks::AttentionDims {
  const T *q, *k, *v, *mask, *out, *lse, *dout;
  T *out_w, *lse_w, *dq, *dk, *dv;
  int64_t mask_strides[4];  // [B, H, L, S]; 0 where broadcast
  AttentionParams p;
};

// Σ a[e]·b[e] over n elements, computed by the whole block (every thread gets it).
template <typename T>
__device__ T block_dot(const T* a, const T* b, int64_t n) {
  T s = 0;
  for (int64_t e = threadIdx.x; e < n; e += kBlock) s += a[e] * b[e];
  return block_reduce(s, nn_math::SumOp{});
}

// The row of key (or value) j of the kv head that (batch, query head) bh reads: kv_head(bh)·S + j.
template <typename T>
__device__ int64_t key_row(const AttentionArgs<T>& a, int64_t bh, int64_t j) {
  return attention_math::kv_head(bh, a.H, a.Hkv) * a.S + j;
}

// The score of query row `row` (= bh·L + i) and key j.
template <typename T>
__device__ T row_score(const AttentionArgs<T>& a, int64_t bh, int64_t i, int64_t j) {
  const T dot = block_dot(a.q + (bh * a.L + i) * a.E, a.k + key_row(a, bh, j) * a.E, a.E);
  const int64_t b = bh / a.H, h = bh % a.H;
  const int64_t* ms = a.mask_strides;
  const T m = a.mask != nullptr ? a.mask[b * ms[0] + h * ms[1] + i * ms[2] + j * ms[3]] : T(0);
  return attention_math::score(dot, a.p, m, i, j);
}

template <typename T>
__global__ void __launch_bounds__(kBlock) attention_forward_kernel(AttentionArgs<T> a) {
  for (int64_t row = blockIdx.x; row < a.B * a.H * a.L; row += gridDim.x) {
    const int64_t bh = row / a.L, i = row % a.L;
    T* o = a.out_w + row * a.Ev;
    for (int64_t d = threadIdx.x; d < a.Ev; d += kBlock) o[d] = T(0);
    OnlineSoftmax<T> st;  // identical in every thread: built from block-reduced scores
    const int64_t j_end = a.p.causal ? (i + 1 < a.S ? i + 1 : a.S) : a.S;
    for (int64_t j = 0; j < j_end; ++j) {
      const T s = row_score(a, bh, i, j);
      const T alpha = st.rescale(s);
      const T w = st.weight(s);
      st.l += w;
      const T pw = w * attention_math::dropout_factor<T>(a.p, static_cast<uint64_t>(row * a.S + j));
      const T* vj = a.v + key_row(a, bh, j) * a.Ev;
      for (int64_t d = threadIdx.x; d < a.Ev; d += kBlock) o[d] = o[d] * alpha + pw * vj[d];
    }
    const T inv = st.inverse_sum();
    for (int64_t d = threadIdx.x; d < a.Ev; d += kBlock) o[d] *= inv;
    if (threadIdx.x == 0) a.lse_w[row] = st.logsumexp();
  }
}

// The softmax gradient of (query row `row`, key j): ds = p·(dP·z - D); also returns p·z (dV's weight).
template <typename T>
__device__ T pair_grad(const AttentionArgs<T>& a, int64_t bh, int64_t i, int64_t j, T D, T& pz) {
  const int64_t row = bh * a.L + i;
  const T pr = kernels::m_exp(row_score(a, bh, i, j) - a.lse[row]);
  const T dp = block_dot(a.dout + row * a.Ev, a.v + key_row(a, bh, j) * a.Ev, a.Ev);
  const T z = attention_math::dropout_factor<T>(a.p, static_cast<uint64_t>(row * a.S + j));
  pz = pr * z;
  return attention_math::score_grad(pr, dp * z, D);
}

template <typename T>
__global__ void __launch_bounds__(kBlock) attention_backward_dq_kernel(AttentionArgs<T> a) {
  for (int64_t row = blockIdx.x; row < a.B * a.H * a.L; row += gridDim.x) {
    const int64_t bh = row / a.L, i = row % a.L;
    const T D = block_dot(a.dout + row * a.Ev, a.out + row * a.Ev, a.Ev);
    T* g = a.dq + row * a.E;
    for (int64_t e = threadIdx.x; e < a.E; e += kBlock) g[e] = T(0);
    const int64_t j_end = a.p.causal ? (i + 1 < a.S ? i + 1 : a.S) : a.S;
    for (int64_t j = 0; j < j_end; ++j) {
      T pz;
      const T ds = pair_grad(a, bh, i, j, D, pz) * static_cast<T>(a.p.scale);
      const T* kj = a.k + key_row(a, bh, j) * a.E;
      for (int64_t e = threadIdx.x; e < a.E; e += kBlock) g[e] += ds * kj[e];
    }
  }
}

// One block per key row of a kv head: it sums over the query rows of every query head of the kv head's group
// (grouped-query attention; the group is one head otherwise), in head order.
template <typename T>
__global__ void __launch_bounds__(kBlock) attention_backward_dkv_kernel(AttentionArgs<T> a) {
  const int64_t group = a.H / a.Hkv;
  for (int64_t key = blockIdx.x; key < a.B * a.Hkv * a.S; key += gridDim.x) {
    const int64_t kvh = key / a.S, j = key % a.S, bh0 = kvh / a.Hkv * a.H + kvh % a.Hkv * group;
    T* gk = a.dk != nullptr ? a.dk + key * a.E : nullptr;
    T* gv = a.dv != nullptr ? a.dv + key * a.Ev : nullptr;
    for (int64_t e = threadIdx.x; gk != nullptr && e < a.E; e += kBlock) gk[e] = T(0);
    for (int64_t d = threadIdx.x; gv != nullptr && d < a.Ev; d += kBlock) gv[d] = T(0);
    for (int64_t bh = bh0; bh < bh0 + group; ++bh) {
      for (int64_t i = a.p.causal ? j : 0; i < a.L; ++i) {  // causal: rows i < j do not see key j
        const int64_t row = bh * a.L + i;
        const T D = block_dot(a.dout + row * a.Ev, a.out + row * a.Ev, a.Ev);
        T pz;
        const T ds = pair_grad(a, bh, i, j, D, pz) * static_cast<T>(a.p.scale);
        const T *qi = a.q + row * a.E, *gi = a.dout + row * a.Ev;
        for (int64_t e = threadIdx.x; gk != nullptr && e < a.E; e += kBlock) gk[e] += ds * qi[e];
        for (int64_t d = threadIdx.x; gv != nullptr && d < a.Ev; d += kBlock) gv[d] += pz * gi[d];
      }
    }
  }
}

template <typename T>
AttentionArgs<T> make_args(const checks::AttentionDims& d, const TensorArg& q, const TensorArg& k, const TensorArg& v,
                           const TensorArg* mask, const TensorArg& out, const TensorArg& lse, const AttentionParams& p) {
  AttentionArgs<T> a{};
  static_cast<checks::AttentionDims&>(a) = d;
  a.q = q.ptr<T>();
  a.k = k.ptr<T>();
  a.v = v.ptr<T>();
  a.out = a.out_w = out.ptr<T>();  // written by the forward, read by the backward
  a.lse = a.lse_w = lse.ptr<T>();
  a.mask = ptr_or_null<const T>(mask);
  for (int i = 0; mask != nullptr && i < 4; ++i) a.mask_strides[i] = mask->strides[i];
  a.p = p;
  return a;
}

}  // namespace

void CudaBackend::attention_forward(const TensorArg& q, const TensorArg& k, const TensorArg& v, const TensorArg* mask,
                                    const TensorArg& out, const TensorArg& lse, const AttentionParams& p) {
  const checks::AttentionDims d = checks::check_attention_forward(q, k, v, mask, out, lse, p);
  DeviceContext& ctx = context(q.device_index);
  dispatch_floating(q.dtype, "scaled_dot_product_attention", [&](auto tag) {
    using T = decltype(tag);
    launch_rows(ctx.stream, d.B * d.H * d.L, attention_forward_kernel<T>, make_args<T>(d, q, k, v, mask, out, lse, p));
  });
}

void CudaBackend::attention_backward(const TensorArg& q, const TensorArg& k, const TensorArg& v, const TensorArg* mask,
                                     const TensorArg& out, const TensorArg& lse, const TensorArg& grad_out,
                                     const TensorArg* grad_q, const TensorArg* grad_k, const TensorArg* grad_v,
                                     const AttentionParams& p) {
  const checks::AttentionDims d =
      checks::check_attention_backward(q, k, v, mask, out, lse, grad_out, grad_q, grad_k, grad_v, p);
  DeviceContext& ctx = context(q.device_index);
  dispatch_floating(q.dtype, "scaled_dot_product_attention_backward", [&](auto tag) {
    using T = decltype(tag);
    AttentionArgs<T> a = make_args<T>(d, q, k, v, mask, out, lse, p);
    a.dout = grad_out.ptr<T>();
    a.dq = ptr_or_null<T>(grad_q);
    a.dk = ptr_or_null<T>(grad_k);
    a.dv = ptr_or_null<T>(grad_v);
    if (a.dq != nullptr) launch_rows(ctx.stream, d.B * d.H * d.L, attention_backward_dq_kernel<T>, a);
    if (a.dk != nullptr || a.dv != nullptr)
      launch_rows(ctx.stream, d.B * d.Hkv * d.S, attention_backward_dkv_kernel<T>, a);
  });
}

// Rotary position embedding: attention_math.h's element body, one thread per output element.
void CudaBackend::rotary(const TensorArg& x, const TensorArg& cos, const TensorArg& sin, const TensorArg& out,
                         const RotaryParams& p) {
  attention_math::rotary(x, cos, sin, out, p, index_launcher(context(x.device_index)));
}

}  // namespace ember::cuda
