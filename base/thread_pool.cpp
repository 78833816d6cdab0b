// Ember's CPU thread pool (parallel.h says why it is not OpenMP's).
//
// One region at a time. Its state is one 64-bit word: the region's number (32 bits), its chunk count and the
// next unclaimed chunk (16 bits each). The caller writes the region's body, then publishes the word; every
// participant claims chunks with fetch_add on it. A claim whose returned word has next < count is a chunk of
// the region that word names, and that region cannot finish before the chunk is done — so its body is still
// valid to read, whenever the claimer was descheduled. A participant that arrives late finds next >= count
// and goes back to waiting; the caller waits only for the done count, i.e. for claimed chunks.
//
// Idle workers spin briefly (regions come microseconds apart in a training step), then sleep on a futex
// (std::atomic::wait); the caller wakes them only when some sleep.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "base/parallel.h"
#include "base/error.h"

namespace ember::cpu {
namespace {

thread_local int t_slot = 0;
thread_local bool t_serial = false;  // inside a region, a pool worker, or marked SerialThisThread

inline void cpu_relax() {
#if defined(__x86_64__)
  _mm_pause();
#endif
}

constexpr int kCountBits = 16;
constexpr uint64_t kMask = (uint64_t{1} << kCountBits) - 1;
constexpr uint64_t pack(uint32_t region, int64_t count) {
  return (uint64_t{region} << 32) | (static_cast<uint64_t>(count) << kCountBits);
}
constexpr int64_t next_of(uint64_t s) { return static_cast<int64_t>(s & kMask); }
constexpr int64_t count_of(uint64_t s) { return static_cast<int64_t>((s >> kCountBits) & kMask); }

class Pool {
 public:
  explicit Pool(int threads) {
    // Detached: the pool lives as long as the process.
    for (int slot = 1; slot < threads; ++slot) std::thread([this, slot] { work(slot); }).detach();
  }

  bool run(int64_t chunks, void (*body)(void*, int64_t), void* ctx) {
    if (busy_.exchange(true, std::memory_order_acquire)) return false;  // another thread's region holds it
    body_ = body;
    ctx_ = ctx;
    done_.store(0, std::memory_order_relaxed);
    ++region_;
    state_.store(pack(region_, chunks), std::memory_order_seq_cst);  // publishes body_, ctx_ (release)
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      wake_.fetch_add(1, std::memory_order_seq_cst);
      wake_.notify_all();
    }
    t_serial = true;
    t_slot = 0;
    enable_flush_denormal_on_this_thread();
    claim_and_run();
    // Claimed chunks still running elsewhere: spin, then let a descheduled claimer have this core.
    for (int spins = 0; done_.load(std::memory_order_acquire) < chunks; ++spins) {
      if (spins < 4096) cpu_relax();
      else std::this_thread::yield();
    }
    t_serial = false;
    busy_.store(false, std::memory_order_release);
    return true;
  }

 private:
  void claim_and_run() {
    for (;;) {
      const uint64_t s = state_.fetch_add(1, std::memory_order_acq_rel);
      if (next_of(s) >= count_of(s)) return;
      body_(ctx_, next_of(s));
      done_.fetch_add(1, std::memory_order_release);
    }
  }

  bool has_work() const {
    const uint64_t s = state_.load(std::memory_order_seq_cst);
    return next_of(s) < count_of(s);
  }

  [[noreturn]] void work(int slot) {
    t_slot = slot;
    t_serial = true;
    enable_flush_denormal_on_this_thread();
    for (;;) {
      // Spin about 50 µs for the next region, then sleep until a caller wakes us.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
      bool found = false;
      for (int i = 0; !found; ++i) {
        found = has_work();
        if (!found && (i & 63) == 63 && std::chrono::steady_clock::now() > deadline) break;
        if (!found) cpu_relax();
      }
      if (!found) {
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        const uint32_t w = wake_.load(std::memory_order_seq_cst);
        if (!has_work()) wake_.wait(w, std::memory_order_seq_cst);
        sleepers_.fetch_sub(1, std::memory_order_seq_cst);
        continue;
      }
      claim_and_run();
    }
  }

  std::atomic<bool> busy_{false};
  uint32_t region_ = 0;  // written only by the thread holding busy_
  void (*body_)(void*, int64_t) = nullptr;
  void* ctx_ = nullptr;
  alignas(64) std::atomic<uint64_t> state_{0};
  alignas(64) std::atomic<int64_t> done_{0};
  alignas(64) std::atomic<uint32_t> wake_{0};
  std::atomic<int> sleepers_{0};
};

Pool& pool() {
  static Pool& p = *new Pool(num_threads());  // never destroyed: workers sleep until the process ends
  return p;
}

}  // namespace

int thread_slot() { return t_slot; }

bool can_parallelize() { return !t_serial && num_threads() > 1; }

SerialThisThread::SerialThisThread() : previous_(t_serial) { t_serial = true; }
SerialThisThread::~SerialThisThread() { t_serial = previous_; }

namespace pool_detail {
bool run_on_pool(int64_t chunks, void (*body)(void*, int64_t), void* ctx) {
  if (!can_parallelize() || chunks < 2) return false;
  EMBER_CHECK(chunks <= (int64_t{1} << (kCountBits - 1)), "parallel_for: ", chunks, " chunks is more than the pool's ",
              int64_t{1} << (kCountBits - 1));
  return pool().run(chunks, body, ctx);
}
}  // namespace pool_detail

}  // namespace ember::cpu
