// Batched GEMM through OpenBLAS. a [B, M, K], b [B, K, N], out [B, M, N] contiguous.
#include "backends/checks.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/openblas.h"
#include "base/parallel.h"
#include "backends/strided.h"

namespace ember::cpu {
namespace {

template <typename T>
void naive_gemm(int64_t M, int64_t N, int64_t K, const T* a, int64_t as0, int64_t as1, const T* b, int64_t bs0,
                int64_t bs1, T* c) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      T acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += a[i * as0 + k * as1] * b[k * bs0 + j * bs1];
      c[i * N + j] = acc;
    }
}

}  // namespace

void CpuBackend::matmul(const TensorArg& a, const TensorArg& b, const TensorArg& out) {
  const checks::MatmulDims d = checks::check_matmul(a, b, out);
  const int64_t B = d.B, M = d.M, N = d.N, K = d.K;  // not a structured binding: lambdas capture them below
  if (B == 0 || M == 0 || N == 0) return;
  if (K == 0) {
    fill(out, 0.0);
    return;
  }
  if (a.dtype == DType::i64) {  // no BLAS for integers; rare (index arithmetic), so a plain loop
    parallel_for(B, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        naive_gemm(M, N, K, a.ptr<int64_t>() + i * a.strides[0], a.strides[1], a.strides[2],
                   b.ptr<int64_t>() + i * b.strides[0], b.strides[1], b.strides[2], out.ptr<int64_t>() + i * M * N);
    });
    return;
  }
  const GemmLayout la = gemm_layout(a, "a"), lb = gemm_layout(b, "b");
  dispatch_floating(a.dtype, "matmul", [&](auto tag) {
    using T = decltype(tag);
    const auto one = [&](int64_t i) {
      gemm<T>(la.transposed, lb.transposed, M, N, K, T(1), a.ptr<T>() + i * a.strides[0], la.ld,
              b.ptr<T>() + i * b.strides[0], lb.ld, T(0), out.ptr<T>() + i * M * N, N);
    };
    // Many small matrices: whole matrices per chunk (gemm then runs serially inside the region).
    // Otherwise one after another, each split across the pool by gemm.
    if (B >= num_threads() && M * N * K < (int64_t{1} << 21)) {
      parallel_for(B, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) one(i);
      });
    } else {
      for (int64_t i = 0; i < B; ++i) one(i);
    }
  });
}

}  // namespace ember::cpu
