// Batched GEMM through cuBLAS (f32/f64; i64 with a plain kernel). a [B, M, K], b [B, K, N], out [B, M, N].
// cuBLAS is column-major: the row-major product out = a·b is computed as outᵀ = bᵀ·aᵀ, and a row-major
// matrix is its own transpose in column-major order, so each operand's transpose flag is the one the
// CPU's row-major GEMM would use.
#include <climits>

#include "backends/checks.h"
#include "backends/cuda/loops.cuh"

namespace ember::cuda {
namespace {

struct GemmOperand {
  cublasOperation_t op;
  int64_t ld;
};

GemmOperand gemm_operand(const TensorArg& arg, const char* name) {
  const GemmLayout l = gemm_layout(arg, name);  // backends/strided.h: the CPU's rule
  return {l.transposed ? CUBLAS_OP_T : CUBLAS_OP_N, l.ld};
}

struct IntGemm {
  const int64_t* a;
  const int64_t* b;
  int64_t* c;
  int64_t M, N, K, as0, as1, as2, bs0, bs1, bs2;
  __device__ void operator()(int64_t i) const {  // i = (batch, row, col) of the output
    const int64_t col = i % N, row = (i / N) % M, batch = i / (M * N);
    const int64_t* pa = a + batch * as0 + row * as1;
    const int64_t* pb = b + batch * bs0 + col * bs2;
    int64_t acc = 0;
    for (int64_t k = 0; k < K; ++k) acc += pa[k * as2] * pb[k * bs1];
    c[i] = acc;
  }
};

}  // namespace

void CudaBackend::matmul(const TensorArg& a, const TensorArg& b, const TensorArg& out) {
  const checks::MatmulDims d = checks::check_matmul(a, b, out);
  const int64_t B = d.B, M = d.M, N = d.N, K = d.K;  // not a structured binding: lambdas capture them below
  DeviceContext& ctx = context(out.device_index);
  if (B == 0 || M == 0 || N == 0) return;
  if (K == 0) return fill(out, 0.0);
  if (a.dtype == DType::i64) {  // no cuBLAS for integers; rare (index arithmetic)
    launch_index(ctx.stream, B * M * N,
                 IntGemm{a.ptr<int64_t>(), b.ptr<int64_t>(), out.ptr<int64_t>(), M, N, K, a.strides[0], a.strides[1],
                         a.strides[2], b.strides[0], b.strides[1], b.strides[2]});
    return;
  }
  const GemmOperand ga = gemm_operand(a, "a"), gb = gemm_operand(b, "b");
  for (int64_t v : {M, N, K, B, ga.ld, gb.ld})
    EMBER_CHECK(v <= INT_MAX, "matmul: a dimension of ", v, " exceeds cuBLAS's 32-bit limit; split the product");
  const int m = static_cast<int>(N), n = static_cast<int>(M), k = static_cast<int>(K);
  const int lda = static_cast<int>(gb.ld), ldb = static_cast<int>(ga.ld), batch = static_cast<int>(B);
  if (a.dtype == DType::f32) {
    const float one = 1.0f, zero = 0.0f;
    EMBER_CUBLAS_CHECK(cublasSgemmStridedBatched(ctx.cublas, gb.op, ga.op, m, n, k, &one, b.ptr<float>(), lda,
                                                 b.strides[0], a.ptr<float>(), ldb, a.strides[0], &zero,
                                                 out.ptr<float>(), m, M * N, batch));
  } else {  // f64 (checks::check_matmul refused bool; i64 took the kernel above)
    const double one = 1.0, zero = 0.0;
    EMBER_CUBLAS_CHECK(cublasDgemmStridedBatched(ctx.cublas, gb.op, ga.op, m, n, k, &one, b.ptr<double>(), lda,
                                                 b.strides[0], a.ptr<double>(), ldb, a.strides[0], &zero,
                                                 out.ptr<double>(), m, M * N, batch));
  }
}

}  // namespace ember::cuda
