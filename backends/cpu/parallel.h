#pragma once
// The CPU backend's one thread pool: OpenMP (libgomp). OpenBLAS is loaded in its OpenMP build, so GEMM
// runs on the same threads instead of a second spinning pool (DESIGN.md, CPU facts).
#include <algorithm>
#include <cstdint>

namespace ember::cpu {

// Threads Ember uses: EMBER_NUM_THREADS if set, else the number of cores.
int num_threads();

// Sets flush-to-zero and denormals-are-zero on the calling thread, once per thread. Denormals make
// later epochs 30-45% slower on these CPUs; every parallel region calls this on each of its threads.
void enable_flush_denormal_on_this_thread();

int omp_thread_id();  // omp_get_thread_num(), without including omp.h everywhere

// Below this many elements a loop runs on the calling thread: starting a parallel region costs a few µs.
inline constexpr int64_t kGrainSize = 32768;

// Calls fn(begin, end) over [0, n) split into one contiguous range per thread (or once, serially, when
// n < grain or only one thread is used). fn must not throw.
template <typename Fn>
void parallel_for(int64_t n, int64_t grain, Fn&& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  const int threads = num_threads();
  if (n < grain || threads == 1) {
    enable_flush_denormal_on_this_thread();
    fn(int64_t{0}, n);
    return;
  }
  const int64_t max_chunks = (n + grain - 1) / grain;
  const int team = static_cast<int>(std::clamp<int64_t>(max_chunks, 1, threads));  // ≥ 1: divides below
#pragma omp parallel num_threads(team)
  {
    enable_flush_denormal_on_this_thread();
    const int tid = omp_thread_id();
    const int64_t chunk = (n + team - 1) / team;
    const int64_t begin = tid * chunk;
    const int64_t end = begin + chunk < n ? begin + chunk : n;
    if (begin < end) fn(begin, end);
  }
}

}  // namespace ember::cpu
