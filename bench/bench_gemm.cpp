// SGEMM at the Fashion-MNIST MLP's exact shapes (784-256-128-10, batch 64 and 256), one library per process:
//
//   bench_gemm --lib openblas|onednn-sgemm|onednn-matmul|blis|libxsmm --threads N [--batch 64,256] [--ms 30]
//
// prints one JSON line per GEMM (and one for the whole step's GEMMs back to back). tools/gemm_table.py runs it
// for every library (OpenBLAS once per kernel family: OPENBLAS_CORETYPE is read when the library loads) in
// alternating rounds and prints the table in docs/benchmarks.md.
//
// The GEMMs are row-major and transposed exactly as Ember calls them (nn::functional::linear is x @ Wᵀ; the
// matmul backward computes dX = G @ W and, for a transposed weight, dW = Gᵀ @ X; backends/cpu/matmul.cpp
// passes strided operands to cblas_sgemm as transposes):
//   forward   y[B, out] = x[B, in] · W[out, in]ᵀ     sgemm(N, T, M=B,   N=out, K=in)
//   dX        dx[B, in] = g[B, out] · W[out, in]      sgemm(N, N, M=B,   N=in,  K=out)  (not for layer 1)
//   dW        dW[out, in] = g[B, out]ᵀ · x[B, in]     sgemm(T, N, M=out, N=in,  K=B)
// OpenBLAS is loaded as Ember loads it (backends/cpu/openblas.cpp: the OpenMP build, SkylakeX kernels on
// AVX-512 unless OPENBLAS_CORETYPE is set). libxsmm (single-threaded JIT kernels) gets the column-major
// equivalent; a shape its JIT has no kernel for is reported as unsupported, not timed through a fallback.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/openblas.h"

#ifdef EMBER_GEMM_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>
#endif
#ifdef EMBER_GEMM_BLIS
#include <blis.h>
#endif
#ifdef EMBER_GEMM_LIBXSMM
#include <libxsmm.h>
#endif

namespace {

struct Shape {
  std::string name;
  bool ta, tb;
  int m, n, k;
  int lda, ldb;  // row-major leading dims as Ember passes them; ldc = n
  double flops() const { return 2.0 * m * n * k; }
};

std::vector<Shape> mlp_shapes(int B) {
  // In the order of one training step: forward 1-3, then backward 3-1 (dX before dW, as the engine runs them).
  const int dims[4] = {784, 256, 128, 10};
  std::vector<Shape> s;
  for (int l = 0; l < 3; ++l) {
    const int in = dims[l], out = dims[l + 1];
    s.push_back({"fwd" + std::to_string(l + 1), false, true, B, out, in, in, in});
  }
  for (int l = 2; l >= 0; --l) {
    const int in = dims[l], out = dims[l + 1];
    if (l > 0) s.push_back({"dX" + std::to_string(l + 1), false, false, B, in, out, out, in});
    s.push_back({"dW" + std::to_string(l + 1), true, false, out, in, B, out, in});
  }
  return s;
}

using Gemm = std::function<void(const float* a, const float* b, float* c)>;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "error: %s\n", what.c_str());
  std::exit(2);
}

// Builds the call for one shape and library; returns an empty function when the library cannot do it.
Gemm make_gemm(const std::string& lib, const Shape& s, std::string& note) {
  if (lib == "openblas") {
    const auto& b = ember::cpu::blas();
    return [&b, s](const float* pa, const float* pb, float* pc) {
      b.sgemm(ember::cpu::kRowMajor, s.ta ? ember::cpu::kTrans : ember::cpu::kNoTrans,
              s.tb ? ember::cpu::kTrans : ember::cpu::kNoTrans, s.m, s.n, s.k, 1.0f, pa, s.lda, pb, s.ldb, 0.0f, pc, s.n);
    };
  }
#ifdef EMBER_GEMM_ONEDNN
  if (lib == "onednn-sgemm") {
    return [s](const float* pa, const float* pb, float* pc) {
      dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k, 1.0f, pa, s.lda, pb, s.ldb, 0.0f, pc, s.n);
    };
  }
  if (lib == "onednn-matmul") {  // the primitive created once per shape, as a framework would cache it
    using dt = dnnl::memory::data_type;
    static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    static dnnl::stream strm(eng);
    const dnnl::memory::dims a_strides = s.ta ? dnnl::memory::dims{1, s.lda} : dnnl::memory::dims{s.lda, 1};
    const dnnl::memory::dims b_strides = s.tb ? dnnl::memory::dims{1, s.ldb} : dnnl::memory::dims{s.ldb, 1};
    const dnnl::memory::desc ad({s.m, s.k}, dt::f32, a_strides), bd({s.k, s.n}, dt::f32, b_strides),
        cd({s.m, s.n}, dt::f32, dnnl::memory::dims{s.n, 1});
    const auto prim = std::make_shared<dnnl::matmul>(dnnl::matmul::primitive_desc(dnnl::matmul::desc(ad, bd, cd), eng));
    note = "primitive created once";
    return [prim, ad, bd, cd](const float* pa, const float* pb, float* pc) {
      dnnl::memory am(ad, eng, const_cast<float*>(pa)), bm(bd, eng, const_cast<float*>(pb)), cm(cd, eng, pc);
      prim->execute(strm, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
      strm.wait();
    };
  }
#endif
#ifdef EMBER_GEMM_BLIS
  if (lib == "blis") {
    return [s](const float* pa, const float* pb, float* pc) {
      float one = 1.0f, zero = 0.0f;
      bli_sgemm(s.ta ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, s.tb ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, s.m, s.n, s.k,
                &one, const_cast<float*>(pa), s.lda, 1, const_cast<float*>(pb), s.ldb, 1, &zero, pc, s.n, 1);
    };
  }
#endif
#ifdef EMBER_GEMM_LIBXSMM
  if (lib == "libxsmm") {
    // Row-major C[m, n] = op(A) op(B) is column-major C'[n, m] = op(B)' op(A)' on the same buffers.
    const int flags = (s.tb ? LIBXSMM_GEMM_FLAG_TRANS_A : 0) | (s.ta ? LIBXSMM_GEMM_FLAG_TRANS_B : 0);
    const libxsmm_blasint lda = s.ldb, ldb = s.lda, ldc = s.n;
    const float alpha = 1.0f, beta = 0.0f;
    const libxsmm_smmfunction f = libxsmm_smmdispatch(s.n, s.m, s.k, &lda, &ldb, &ldc, &alpha, &beta, &flags, nullptr);
    if (f == nullptr) {
      note = "no JIT kernel for this transpose";
      return {};
    }
    return [f](const float* pa, const float* pb, float* pc) { f(pb, pa, pc); };
  }
#endif
  fail("--lib " + lib + " is unknown or was not found at build time (openblas, onednn-sgemm, onednn-matmul, blis, "
       "libxsmm: see bench/CMakeLists.txt)");
}

// The library's result against a plain double-precision loop: a wrong transpose or leading dim must fail
// loudly rather than be timed.
void check(const std::string& lib, const Shape& s, const Gemm& gemm, const float* a, const float* b, float* c) {
  std::fill(c, c + size_t(s.m) * s.n, -7.0f);
  gemm(a, b, c);
  for (int i = 0; i < s.m; ++i)
    for (int j = 0; j < s.n; ++j) {
      double ref = 0;
      for (int p = 0; p < s.k; ++p)
        ref += double(s.ta ? a[size_t(p) * s.lda + i] : a[size_t(i) * s.lda + p]) *
               double(s.tb ? b[size_t(j) * s.ldb + p] : b[size_t(p) * s.ldb + j]);
      const double got = c[size_t(i) * s.n + j];
      if (!(std::abs(got - ref) <= 1e-3 * (1 + std::abs(ref))))
        fail(lib + " computes a wrong " + s.name + " (" + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
             std::to_string(s.k) + ") at [" + std::to_string(i) + ", " + std::to_string(j) + "]: " +
             std::to_string(got) + " instead of " + std::to_string(ref));
    }
}

// Seconds per call, wall-clock and process CPU time: batches of calls of ~`ms` / 5 each, five times; the
// medians. With one thread the CPU time is what the call costs when the process is not descheduled (on a
// shared machine the wall time also counts the other processes' time slices).
struct Timing {
  double wall, cpu;
};

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

Timing time_calls(const std::function<void()>& call, double ms) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < 3; ++i) call();
  int reps = 1;
  for (;;) {  // find a batch size that takes ~ms / 5
    const auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) call();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s * 1e3 > ms / 5 || reps > (1 << 24)) break;
    reps *= 2;
  }
  std::vector<double> wall, cpu;
  for (int r = 0; r < 5; ++r) {
    const double c0 = cpu_seconds();
    const auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) call();
    wall.push_back(std::chrono::duration<double>(Clock::now() - t0).count() / reps);
    cpu.push_back((cpu_seconds() - c0) / reps);
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return {wall[2], cpu[2]};
}

}  // namespace

int main(int argc, char** argv) {
  std::string lib = "openblas";
  int threads = 1;
  double ms = 30;
  std::vector<int> batches = {64, 256};
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    if (i + 1 >= argc) fail("option " + k + " needs a value");
    const std::string v = argv[i + 1];
    if (k == "--lib") lib = v;
    else if (k == "--threads") threads = std::stoi(v);
    else if (k == "--ms") ms = std::stod(v);
    else if (k == "--batch") {
      batches.clear();
      for (size_t p = 0; p < v.size();) {
        const size_t q = v.find(',', p);
        batches.push_back(std::stoi(v.substr(p, q - p)));
        p = q == std::string::npos ? v.size() : q + 1;
      }
    } else fail("unknown option " + k + " (known: --lib --threads --batch --ms)");
  }
  omp_set_num_threads(threads);  // oneDNN (OpenMP build) and BLIS's OpenMP build read it
  std::string lib_desc = lib;
  if (lib == "openblas") {
    const auto& b = ember::cpu::blas();
    if (b.set_num_threads != nullptr) b.set_num_threads(threads);
    lib_desc = "openblas-" + std::string(b.get_corename != nullptr ? b.get_corename() : "?");
  }
#ifdef EMBER_GEMM_BLIS
  if (lib == "blis") {
    bli_thread_set_num_threads(threads);
    lib_desc = "blis-" + std::string(bli_arch_string(bli_arch_query_id()));  // its kernel family (BLIS_ARCH_TYPE)
  }
#endif
#ifdef EMBER_GEMM_LIBXSMM
  if (lib == "libxsmm") {
    if (threads != 1) fail("libxsmm's JIT kernels are single-threaded: use --threads 1");
    libxsmm_init();
  }
#endif

  std::mt19937 rng(0);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const auto filled = [&](size_t n) {
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
  };
  for (int B : batches) {
    const std::vector<Shape> shapes = mlp_shapes(B);
    std::vector<std::vector<float>> as, bs, cs;
    std::vector<Gemm> calls;
    double step_flops = 0;
    bool complete = true;
    for (const Shape& s : shapes) {
      as.push_back(filled(size_t(s.ta ? s.k : s.m) * s.lda));
      bs.push_back(filled(size_t(s.tb ? s.n : s.k) * s.ldb));
      cs.emplace_back(size_t(s.m) * s.n);
      std::string note;
      calls.push_back(make_gemm(lib, s, note));
      step_flops += s.flops();
      const size_t i = calls.size() - 1;
      if (!calls[i]) {
        complete = false;
        std::printf("{\"lib\": \"%s\", \"threads\": %d, \"batch\": %d, \"gemm\": \"%s\", \"m\": %d, \"n\": %d, \"k\": %d, "
                    "\"ta\": %d, \"tb\": %d, \"unsupported\": \"%s\"}\n",
                    lib_desc.c_str(), threads, B, s.name.c_str(), s.m, s.n, s.k, s.ta, s.tb, note.c_str());
        continue;
      }
      check(lib_desc, s, calls[i], as[i].data(), bs[i].data(), cs[i].data());
      const Timing t = time_calls([&] { calls[i](as[i].data(), bs[i].data(), cs[i].data()); }, ms);
      std::printf("{\"lib\": \"%s\", \"threads\": %d, \"batch\": %d, \"gemm\": \"%s\", \"m\": %d, \"n\": %d, \"k\": %d, "
                  "\"ta\": %d, \"tb\": %d, \"us\": %.3f, \"cpu_us\": %.3f, \"gflops\": %.2f}\n",
                  lib_desc.c_str(), threads, B, s.name.c_str(), s.m, s.n, s.k, s.ta, s.tb, t.wall * 1e6, t.cpu * 1e6,
                  s.flops() / t.wall / 1e9);
      std::fflush(stdout);
    }
    if (complete) {  // one step's GEMMs back to back, as the training step issues them
      const Timing t = time_calls([&] {
        for (size_t i = 0; i < calls.size(); ++i) calls[i](as[i].data(), bs[i].data(), cs[i].data());
      }, ms * 2);
      std::printf("{\"lib\": \"%s\", \"threads\": %d, \"batch\": %d, \"gemm\": \"step\", \"flops\": %.0f, \"us\": %.3f, "
                  "\"cpu_us\": %.3f, \"gflops\": %.2f}\n",
                  lib_desc.c_str(), threads, B, step_flops, t.wall * 1e6, t.cpu * 1e6, step_flops / t.wall / 1e9);
    }
  }
}
