#include "backends/cpu/openblas.h"

#include <dlfcn.h>

#include <omp.h>

#if EMBER_WITH_ONEDNN
#include <oneapi/dnnl/dnnl.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "base/parallel.h"
#include "backends/cpu/signal_guard.h"
#include "base/error.h"
#include "base/log.h"

namespace ember::cpu {
namespace {

// The OpenMP build first (one thread pool), then whatever the alternatives system points at.
constexpr const char* kCandidates[] = {
    "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0",
    "/usr/lib/aarch64-linux-gnu/openblas-openmp/libopenblas.so.0",
    "libopenblas.so.0",
};

// A small GEMM with awkward sizes against a plain loop: some OpenBLAS kernels compute wrong results on
// CPUs they were not written for, so a kernel Ember chose is checked before it is trusted.
template <typename T, typename Gemm>
bool gemm_is_correct(Gemm gemm) {
  constexpr int M = 37, N = 29, K = 67;
  std::vector<T> a(M * K), b(K * N), c(M * N, T(-1)), ref(M * N, T(0));
  for (int i = 0; i < M * K; ++i) a[i] = T((i * 7 % 13) - 6) / T(8);
  for (int i = 0; i < K * N; ++i) b[i] = T((i * 5 % 11) - 5) / T(4);
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < N; ++j) ref[i * N + j] += a[i * K + k] * b[k * N + j];
  gemm(kRowMajor, kNoTrans, kNoTrans, M, N, K, T(1), a.data(), K, b.data(), N, T(0), c.data(), N);
  for (int i = 0; i < M * N; ++i)
    if (!(std::abs(c[i] - ref[i]) <= T(1e-3) * (T(1) + std::abs(ref[i])))) return false;
  return true;
}

Blas load_once(const char* coretype);

Blas load() {
  const char* user = std::getenv("OPENBLAS_CORETYPE");
#if defined(__x86_64__)
  // Must happen before the library's constructor runs, i.e. before dlopen.
  if (user == nullptr && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
    Blas b = load_once("SkylakeX");
    if (!b.error.empty() || (gemm_is_correct<float>(b.sgemm) && gemm_is_correct<double>(b.dgemm))) return b;
    logger().warn("OpenBLAS SkylakeX kernels failed the start-up check on this CPU; using its own choice instead");
    unsetenv("OPENBLAS_CORETYPE");
  }
#endif
  Blas b = load_once(nullptr);
  if (b.error.empty() && !(gemm_is_correct<float>(b.sgemm) && gemm_is_correct<double>(b.dgemm))) {
    b.error = "OpenBLAS (" + b.library + ", " + (b.get_corename ? b.get_corename() : std::string("?")) +
              " kernels) computes wrong GEMM results on this CPU; set OPENBLAS_CORETYPE to an older kernel "
              "family (e.g. Haswell) and retry";
    b.sgemm = nullptr;
    b.dgemm = nullptr;
  }
  return b;
}

// Loads the library with OPENBLAS_CORETYPE set to `coretype` (when not null); a previous load of the same
// library is closed first so its constructor reads the variable again.
Blas load_once(const char* coretype) {
  static void* previous = nullptr;
  if (previous != nullptr) {
    dlclose(previous);
    previous = nullptr;
  }
  if (coretype != nullptr) setenv("OPENBLAS_CORETYPE", coretype, 1);
  Blas b;
  void* handle = nullptr;
  for (const char* path : kCandidates) {
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) {
      b.library = path;
      break;
    }
  }
  previous = handle;
  if (handle == nullptr) {
    b.error = "OpenBLAS not found (tried the OpenMP build and libopenblas.so.0); install it with "
              "'apt-get install libopenblas0-openmp' or run scripts/setup.sh";
    return b;
  }
  b.sgemm = reinterpret_cast<decltype(b.sgemm)>(dlsym(handle, "cblas_sgemm"));
  b.dgemm = reinterpret_cast<decltype(b.dgemm)>(dlsym(handle, "cblas_dgemm"));
  b.set_num_threads = reinterpret_cast<decltype(b.set_num_threads)>(dlsym(handle, "openblas_set_num_threads"));
  b.get_corename = reinterpret_cast<decltype(b.get_corename)>(dlsym(handle, "openblas_get_corename"));
  b.get_parallel = reinterpret_cast<decltype(b.get_parallel)>(dlsym(handle, "openblas_get_parallel"));
  if (b.sgemm == nullptr || b.dgemm == nullptr) {
    b.error = b.library + " has no cblas_sgemm/cblas_dgemm; install libopenblas0-openmp";
    b.sgemm = nullptr;
    b.dgemm = nullptr;
    return b;
  }
  // Single-threaded: Ember splits GEMMs across its own pool (gemm below). The OpenMP build's setter also sets
  // this thread's OpenMP team size to 1, which blas_single_threaded_here() relies on anyway.
  if (b.set_num_threads != nullptr) b.set_num_threads(1);
  const std::string core = b.get_corename != nullptr ? b.get_corename() : "unknown";
  const int parallel = b.get_parallel != nullptr ? b.get_parallel() : -1;
  logger().debug("GEMM: OpenBLAS {} kernels ({} build, run single-threaded, split across Ember's {} threads; {})",
                 core, parallel == 2 ? "OpenMP" : parallel == 1 ? "pthreads" : "sequential", num_threads(), b.library);
#if defined(__x86_64__)
  if ((core == "Prescott" || core == "Core2" || core == "Nehalem") && __builtin_cpu_supports("avx2")) {
    logger().warn("OpenBLAS runs its {} kernels on a CPU with AVX2 (OPENBLAS_CORETYPE={}); GEMM will be several "
               "times slower than it could be; unset OPENBLAS_CORETYPE", core,
               std::getenv("OPENBLAS_CORETYPE") ? std::getenv("OPENBLAS_CORETYPE") : "unset");
  }
#endif
  return b;
}

const Blas& loaded() {
  static const Blas b = load();
  return b;
}

}  // namespace

const Blas& blas() {
  const Blas& b = loaded();
  EMBER_CHECK(b.error.empty(), "matmul (cpu): ", b.error);
  return b;
}

namespace {

// OpenBLAS's OpenMP build sizes its team from the calling thread's OpenMP setting (omp_get_max_threads), not
// from openblas_set_num_threads: make that 1 on every thread that calls it. Ember splits GEMMs itself.
void blas_single_threaded_here() {
  if (omp_get_max_threads() != 1) omp_set_num_threads(1);  // (an OpenMpTeam scope may have raised it)
}

// oneDNN's sgemm is 5-30% faster than OpenBLAS's kernels on the MLP's large GEMMs and 25-60% slower when a
// dimension is ~10 (docs/benchmarks.md, bench/bench_gemm.cpp): it takes those with every dimension this large.
constexpr int64_t kOnednnMinDim = 32;

// Which library runs an f32 GEMM, decided once per GEMM from its whole shape, so every chunk of a split GEMM
// runs in the same library whatever the chunk sizes.
enum class Sgemm { openblas, onednn };

Sgemm sgemm_for(int64_t m, int64_t n, int64_t k) {
#if EMBER_WITH_ONEDNN
  static const bool forced_openblas = [] {
    const char* v = std::getenv("EMBER_SGEMM");
    return v != nullptr && std::string(v) == "openblas";
  }();
  if (!forced_openblas && std::min({m, n, k}) >= kOnednnMinDim) return Sgemm::onednn;
#endif
  (void)m, (void)n, (void)k;
  return Sgemm::openblas;
}

template <typename T>
void gemm_serial(const Blas& lib, Sgemm which, int ta, int tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                 int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  blas_single_threaded_here();
#if EMBER_WITH_ONEDNN
  if constexpr (std::is_same_v<T, float>) {
    if (which == Sgemm::onednn) {
      const AsyncSignalsBlocked no_signals_in_jit_gemm;  // signal_guard.h: oneDNN's GEMM kernels move RSP
      const dnnl_status_t st = dnnl_sgemm(ta == kTrans ? 'T' : 'N', tb == kTrans ? 'T' : 'N', m, n, k, alpha, a, lda,
                                          b, ldb, beta, c, ldc);
      EMBER_CHECK(st == dnnl_success, "matmul (cpu): oneDNN's sgemm failed with status ", static_cast<int>(st),
                  " for ", m, "x", n, "x", k);
      return;
    }
  }
#endif
  (void)which;
  if constexpr (std::is_same_v<T, float>)
    lib.sgemm(kRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  else
    lib.dgemm(kRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Below this many multiply-adds per chunk a split costs more than it gains (a call's packing and start-up).
constexpr int64_t kMinChunkMacs = int64_t{1} << 18;
// Chunk edges fall on multiples of the kernels' register tiles (16 in both dimensions covers OpenBLAS's
// Haswell and SkylakeX s/dgemm kernels).
constexpr int64_t kTile = 16;
// A GEMM is cut into 2 chunks per thread, not the pool's usual 4: each chunk packs the shared operand again,
// and with oneDNN's kernels the 2-thread MLP step at batch 64 ran 17-31% faster so (quiet, 3 alternating
// rounds), and 5-11% faster with a competing process (docs/benchmarks.md), where a descheduled thread now
// holds half of its share instead of a quarter.
constexpr int64_t kGemmChunksPerThread = 2;

}  // namespace

// Splits C's larger dimension into chunks claimed by the pool's threads, each one single-threaded GEMM: every
// chunk packs the whole of the operand it shares with the others (A when the columns are split), so the
// larger dimension is split, which duplicates the smaller operand's packing.
template <typename T>
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b,
          int64_t ldb, T beta, T* c, int64_t ldc) {
  const Blas& lib = blas();
  const Sgemm which = std::is_same_v<T, float> ? sgemm_for(m, n, k) : Sgemm::openblas;
  const int ta = trans_a ? kTrans : kNoTrans, tb = trans_b ? kTrans : kNoTrans;
  const bool split_n = n >= m;
  const int64_t extent = split_n ? n : m;
  const int64_t by_work = m * n * k / kMinChunkMacs, by_tiles = extent / kTile;
  const int64_t want = std::min({by_work, by_tiles, int64_t{num_threads()} * kGemmChunksPerThread});
  if (want < 2 || !can_parallelize()) {
    gemm_serial(lib, which, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const int64_t size = ((extent + want - 1) / want + kTile - 1) / kTile * kTile;
  parallel_chunks((extent + size - 1) / size, [&](int64_t chunk) {
    const int64_t lo = chunk * size, len = std::min(extent, lo + size) - lo;
    if (split_n)  // columns [lo, lo + len) of B and C
      gemm_serial(lib, which, ta, tb, m, len, k, alpha, a, lda, trans_b ? b + lo * ldb : b + lo, ldb, beta, c + lo, ldc);
    else  // rows [lo, lo + len) of A and C
      gemm_serial(lib, which, ta, tb, len, n, k, alpha, trans_a ? a + lo : a + lo * lda, lda, b, ldb, beta, c + lo * ldc,
                  ldc);
  });
}
template void gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                          float, float*, int64_t);
template void gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t, const double*,
                           int64_t, double, double*, int64_t);

std::string blas_description() {
  const Blas& b = loaded();
  if (!b.error.empty()) return b.error;
  const int parallel = b.get_parallel != nullptr ? b.get_parallel() : -1;
  return "OpenBLAS " + std::string(b.get_corename != nullptr ? b.get_corename() : "?") + " kernels (" +
         (parallel == 2 ? "OpenMP" : parallel == 1 ? "pthreads" : "sequential") + "), " + b.library;
}

}  // namespace ember::cpu
