#pragma once
// The CPU backend's thread pool: Ember's own (base/thread_pool.cpp), not OpenMP's fork-join.
//
// A parallel region is split into more chunks than threads; the calling thread works too, and every
// participant claims the next chunk from one atomic counter. The caller waits only for chunks that have been
// claimed, never for a thread that has taken no work: on a shared machine, a worker the OS has descheduled
// costs at most the chunk it holds (with OpenMP's static split and end barrier the whole region waits for it:
// issue 18 measured a 6.4x slowdown with one competing process). OpenBLAS runs single-threaded; gemm()
// (openblas.h) splits a GEMM's output across this pool.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "base/non_copyable.h"

namespace ember::cpu {

// Threads Ember uses, the calling thread included: EMBER_NUM_THREADS if set, else the number of cores.
int num_threads();

// Sets flush-to-zero and denormals-are-zero on the calling thread, once per thread. Denormals make
// later epochs 30-45% slower on these CPUs; every participant of a region has it set.
void enable_flush_denormal_on_this_thread();

// The index of the calling participant within the running parallel region, in [0, num_threads()): the slot
// of per-thread scratch space. 0 outside a region and on a thread that runs a region serially.
int thread_slot();

// Whether a parallel_for called here would use the pool: false inside a region (nested loops run serially),
// on a thread marked by SerialThisThread, and with one thread.
bool can_parallelize();

// Marks the calling thread as one whose ops run serially (a data-loader worker: it must not start a team of
// its own next to the training thread's), for the lifetime of the object.
class SerialThisThread : NonCopyable {
 public:
  SerialThisThread();
  ~SerialThisThread();

 private:
  bool previous_;
};

// oneDNN (Debian's build runs on OpenMP) sizes its regions from the calling thread's OpenMP setting, which
// gemm() keeps at 1 for OpenBLAS: an OpenMpTeam makes it num_threads() (1 where can_parallelize() is false)
// for its lifetime. Convolutions still run oneDNN's fork-join regions inside it.
class OpenMpTeam : NonCopyable {
 public:
  OpenMpTeam();
  ~OpenMpTeam();
  static int size();  // the calling thread's OpenMP team size now (omp_get_max_threads)

 private:
  int previous_;
};

// Below this many elements a loop runs on the calling thread: a region costs about a microsecond.
inline constexpr int64_t kGrainSize = 32768;

namespace pool_detail {
// Runs body(ctx, c) for every c in [0, chunks) on the pool and the calling thread; returns when every chunk
// is done. Returns false, having run nothing, when the pool cannot be used from here (see can_parallelize,
// or another thread's region holds the pool): the caller then runs the chunks itself.
bool run_on_pool(int64_t chunks, void (*body)(void*, int64_t), void* ctx);
// Chunks per thread a region is split into: a descheduled worker then delays the region by at most about
// 1/kChunksPerThread of it.
inline constexpr int64_t kChunksPerThread = 4;
}  // namespace pool_detail

// [0, n) cut into `chunks` contiguous ranges of `size` elements (the last one shorter), about `want` of them.
struct Ranges {
  int64_t n, size, chunks;
  Ranges(int64_t n_, int64_t want) : n(n_), size((n_ + want - 1) / want), chunks((n_ + size - 1) / size) {}
  int64_t begin(int64_t c) const { return c * size; }
  int64_t end(int64_t c) const { return std::min(n, (c + 1) * size); }
};

// Calls fn(c) for every c in [0, chunks): on the pool when it can be used from here, else one after another
// on the calling thread. Chunks run concurrently and in no fixed order; fn must not throw.
template <typename Fn>
void parallel_chunks(int64_t chunks, Fn&& fn) {
  const auto body = [](void* f, int64_t c) { (*static_cast<std::remove_reference_t<Fn>*>(f))(c); };
  void* ctx = const_cast<void*>(static_cast<const void*>(&fn));
  if (chunks >= 2 && pool_detail::run_on_pool(chunks, body, ctx)) return;
  enable_flush_denormal_on_this_thread();
  for (int64_t c = 0; c < chunks; ++c) fn(c);
}

// Calls fn(begin, end) over [0, n) split into contiguous ranges of at least `grain` elements (or once,
// fn(0, n), when n < 2 * grain or the pool is not used). Ranges run concurrently and in no fixed order;
// fn must not throw.
template <typename Fn>
void parallel_for(int64_t n, int64_t grain, Fn&& fn) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  const int64_t max_chunks = n / grain;
  if (max_chunks < 2 || !can_parallelize()) {
    enable_flush_denormal_on_this_thread();
    fn(int64_t{0}, n);
    return;
  }
  const Ranges r(n, std::min(max_chunks, num_threads() * pool_detail::kChunksPerThread));
  parallel_chunks(r.chunks, [&](int64_t c) { fn(r.begin(c), r.end(c)); });
}

}  // namespace ember::cpu
