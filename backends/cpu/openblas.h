#pragma once
// OpenBLAS, loaded at run time so that Ember decides how it starts.
//
// Why not link it: Debian's OpenBLAS 0.3.21 does not recognise this generation of Xeon and falls back to
// its SSE3 (Prescott) kernels, 4-5× slower (upstream issue #4267). It reads OPENBLAS_CORETYPE once, in its
// library constructor — before any code of a program that links it can run. Loading it with dlopen lets
// Ember set OPENBLAS_CORETYPE=SkylakeX first on CPUs with AVX-512 (unless the user set a value), so it is
// fast as installed. Ember calls it single-threaded and splits GEMMs across its own pool (gemm, parallel.h).
#include <cstdint>
#include <string>

namespace ember::cpu {

enum BlasOrder { kRowMajor = 101 };
enum BlasTranspose { kNoTrans = 111, kTrans = 112 };

struct Blas {
  void (*sgemm)(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                const float* b, int ldb, float beta, float* c, int ldc) = nullptr;
  void (*dgemm)(int order, int trans_a, int trans_b, int m, int n, int k, double alpha, const double* a, int lda,
                const double* b, int ldb, double beta, double* c, int ldc) = nullptr;
  void (*set_num_threads)(int) = nullptr;
  char* (*get_corename)() = nullptr;
  int (*get_parallel)() = nullptr;  // 0 sequential, 1 pthreads, 2 OpenMP
  std::string library;              // path that was loaded
  std::string error;                // why loading failed (then the pointers are null)
};

// C[M, N] = alpha · op(A) · op(B) + beta · C, row-major (float or double), split across Ember's pool: through
// OpenBLAS, or oneDNN's sgemm for f32 GEMMs whose every dimension is at least 32 (EMBER_SGEMM=openblas: never).
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc);

// Loads OpenBLAS on first use (thread-safe). Throws ember::Error, saying what to install, when absent.
const Blas& blas();
// "OpenBLAS SkylakeX (OpenMP), /usr/lib/..." or the reason it is unavailable; never throws.
std::string blas_description();

}  // namespace ember::cpu
