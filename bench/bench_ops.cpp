// Microbenchmarks of the Foundation ops, each next to the machine limit it should approach:
// GEMM against OpenBLAS called directly (same library, same threads), element-wise ops against a plain
// STREAM-style triad over the same bytes. Run: ./build/bench/bench_ops
#include <benchmark/benchmark.h>

#include <ember/ember.h>

#include <vector>

#include "backends/cpu/openblas.h"
#include "base/parallel.h"
#include "core/raw.h"

using namespace ember;

namespace {

void BM_Matmul(benchmark::State& state) {
  const int64_t n = state.range(0);
  Generator gen(0);
  const Tensor a = randn({n, n}, {}, &gen), b = randn({n, n}, {}, &gen);
  for (auto _ : state) benchmark::DoNotOptimize(matmul(a, b).data_ptr());
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}
BENCHMARK(BM_Matmul)->Arg(256)->Arg(512)->Arg(1024)->Unit(benchmark::kMicrosecond)->UseRealTime();

// The same GEMM straight into OpenBLAS: the ceiling for BM_Matmul.
void BM_OpenBlasSgemm(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<float> a(n * n, 1.0f), b(n * n, 1.0f), c(n * n);
  const auto& blas = cpu::blas();
  for (auto _ : state) {
    blas.sgemm(cpu::kRowMajor, cpu::kNoTrans, cpu::kNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f,
               c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
}
BENCHMARK(BM_OpenBlasSgemm)->Arg(256)->Arg(512)->Arg(1024)->Unit(benchmark::kMicrosecond)->UseRealTime();

// Bytes moved per element: add reads 2 floats and writes 1; relu reads 1 and writes 1; sum reads 1.
void set_bandwidth(benchmark::State& state, int64_t n, int floats_per_element) {
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(n) * 4 * floats_per_element,
                                              benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

void BM_Add(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Tensor a = ones({n}), b = ones({n});
  for (auto _ : state) benchmark::DoNotOptimize((a + b).data_ptr());
  set_bandwidth(state, n, 3);
}
BENCHMARK(BM_Add)->Arg(1 << 20)->Arg(1 << 24)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_Relu(benchmark::State& state) {
  const int64_t n = state.range(0);
  Generator gen(0);
  const Tensor a = randn({n}, {}, &gen);
  for (auto _ : state) benchmark::DoNotOptimize(relu(a).data_ptr());
  set_bandwidth(state, n, 2);
}
BENCHMARK(BM_Relu)->Arg(1 << 20)->Arg(1 << 24)->Unit(benchmark::kMicrosecond)->UseRealTime();

void BM_Sum(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Tensor a = ones({n});
  for (auto _ : state) benchmark::DoNotOptimize(sum(a).data_ptr());
  set_bandwidth(state, n, 1);
}
BENCHMARK(BM_Sum)->Arg(1 << 24)->Unit(benchmark::kMicrosecond)->UseRealTime();

// STREAM triad (c = a + s·b) on the same thread pool: the memory-bandwidth ceiling for the ops above.
void BM_TriadReference(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n);
  for (auto _ : state) {
    cpu::parallel_for(n, cpu::kGrainSize, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) c[i] = a[i] + 3.0f * b[i];
    });
    benchmark::DoNotOptimize(c.data());
  }
  set_bandwidth(state, n, 3);
}
BENCHMARK(BM_TriadReference)->Arg(1 << 20)->Arg(1 << 24)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
