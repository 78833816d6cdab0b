// The CPU caching allocator's bookkeeping, through a fake SystemAllocator that counts calls and can run
// out of memory on demand; then the same statistics as the CPU backend reports them for real tensors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <thread>
#include <vector>

#include <ember/ember.h>

#include "backends/caching_allocator.h"
#include "test_helpers.h"

using namespace ember;
using ember::CachingAllocator;
using ember::test::throws_error;

namespace {

// A system allocator with a capacity: it refuses a request that would exceed it (as malloc returns null).
struct FakeSystem {
  static inline size_t capacity = 0;
  static inline size_t live_bytes = 0;
  static inline int allocs = 0, frees = 0;
  static inline std::map<void*, size_t> blocks;

  static void* allocate(size_t bytes) {
    if (bytes > capacity - live_bytes) return nullptr;
    void* p = std::aligned_alloc(64, bytes);
    blocks[p] = bytes;
    live_bytes += bytes;
    ++allocs;
    return p;
  }
  static void deallocate(void* p) {
    live_bytes -= blocks.at(p);
    blocks.erase(p);
    ++frees;
    std::free(p);
  }
  static CachingAllocator::SystemAllocator reset(size_t cap = size_t{64} << 20) {
    capacity = cap;
    live_bytes = 0;
    allocs = frees = 0;
    blocks.clear();
    return {allocate, deallocate};
  }
};

}  // namespace

TEST(Allocator, SizeClasses) {
  const std::pair<size_t, size_t> cases[] = {
      {0, 64},     {1, 64},       {64, 64},      {65, 128},     {500, 512},    {512, 512},
      {513, 640},  {640, 640},    {641, 768},    {896, 896},    {897, 1024},   {1024, 1024},
      {1025, 1280}, {1537, 1792}, {2049, 2560},  {size_t{1} << 20, size_t{1} << 20},
      {(size_t{1} << 20) + 1, (size_t{5} << 18)},  {(size_t{7} << 28) + 5, size_t{1} << 31},
  };
  for (auto [bytes, rounded] : cases) EXPECT_EQ(CachingAllocator::size_class(bytes), rounded) << bytes;
  // Every class is at least the request, wastes at most 25% above 512 B, and owns exactly one index.
  std::map<int, size_t> size_of_index;
  for (size_t bytes = 1; bytes < (size_t{1} << 34); bytes = bytes * 9 / 8 + 1) {
    const size_t r = CachingAllocator::size_class(bytes);
    EXPECT_GE(r, bytes);
    EXPECT_EQ(r % 64, 0u);
    if (bytes > 512) {
      EXPECT_LE(r - bytes, bytes / 4) << bytes;
    }
    EXPECT_EQ(CachingAllocator::size_class(r), r);  // a class size is its own class
    const int idx = CachingAllocator::class_index(r);
    auto [it, inserted] = size_of_index.emplace(idx, r);
    EXPECT_EQ(it->second, r) << "index " << idx << " shared by " << it->second << " and " << r;
  }
  // Indices grow with the size.
  int previous = -1;
  for (const auto& [idx, r] : size_of_index) {
    EXPECT_GT(idx, previous);
    previous = idx;
  }
}

TEST(Allocator, ReusesFreedBlocksOfTheSameClass) {
  CachingAllocator alloc(FakeSystem::reset());
  void* a = alloc.allocate(100);  // class 128
  EXPECT_EQ(FakeSystem::allocs, 1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  alloc.deallocate(a, 100);
  EXPECT_EQ(FakeSystem::frees, 0);  // cached, not returned
  void* b = alloc.allocate(120);  // same class: the cached block
  EXPECT_EQ(b, a);
  EXPECT_EQ(FakeSystem::allocs, 1);
  void* c = alloc.allocate(100);  // the cached block is in use: a new one
  EXPECT_NE(c, a);
  EXPECT_EQ(FakeSystem::allocs, 2);
  void* d = alloc.allocate(1000);  // another class
  EXPECT_EQ(FakeSystem::allocs, 3);
  EXPECT_EQ(FakeSystem::blocks.at(d), 1024u);
  alloc.deallocate(d, 1000);
  alloc.deallocate(b, 120);
  alloc.deallocate(c, 100);
  void* e = alloc.allocate(65);  // both 128-byte blocks cached: one comes back
  EXPECT_TRUE(e == b || e == c);
  EXPECT_EQ(FakeSystem::allocs, 3);
  alloc.deallocate(e, 65);
  EXPECT_EQ(alloc.stats().device_allocs, 3u);
}

TEST(Allocator, Statistics) {
  CachingAllocator alloc(FakeSystem::reset());
  EXPECT_EQ(alloc.stats().allocated, 0u);
  void* a = alloc.allocate(1000);   // 1024
  void* b = alloc.allocate(3000);   // 3072
  MemoryStats s = alloc.stats();
  EXPECT_EQ(s.allocated, 4096u);
  EXPECT_EQ(s.peak_allocated, 4096u);
  EXPECT_EQ(s.reserved, 4096u);
  EXPECT_EQ(s.device_allocs, 2u);
  alloc.deallocate(b, 3000);
  s = alloc.stats();
  EXPECT_EQ(s.allocated, 1024u);
  EXPECT_EQ(s.peak_allocated, 4096u);  // the high-water mark stays
  EXPECT_EQ(s.reserved, 4096u);        // the freed block is cached
  alloc.reset_peak();
  EXPECT_EQ(alloc.stats().peak_allocated, 1024u);
  void* c = alloc.allocate(2900);  // reuses the 3072 block
  s = alloc.stats();
  EXPECT_EQ(s.allocated, 4096u);
  EXPECT_EQ(s.peak_allocated, 4096u);
  EXPECT_EQ(s.reserved, 4096u);
  EXPECT_EQ(s.device_allocs, 2u);
  EXPECT_EQ(FakeSystem::live_bytes, s.reserved);  // reserved is what the system really holds
  alloc.deallocate(a, 1000);
  alloc.deallocate(c, 2900);
  EXPECT_EQ(alloc.stats().allocated, 0u);
}

TEST(Allocator, EmptyCacheReturnsOnlyCachedBlocks) {
  CachingAllocator alloc(FakeSystem::reset());
  const size_t sizes[] = {10, 513, 5000, (size_t{1} << 20) + 1, 777777};
  std::vector<void*> ptrs;
  for (size_t n : sizes) ptrs.push_back(alloc.allocate(n));
  void* kept = alloc.allocate(64);
  for (size_t i = 0; i < ptrs.size(); ++i) alloc.deallocate(ptrs[i], sizes[i]);
  EXPECT_EQ(alloc.stats().reserved, FakeSystem::live_bytes);
  alloc.empty_cache();
  const MemoryStats s = alloc.stats();
  EXPECT_EQ(FakeSystem::frees, 5);
  EXPECT_EQ(s.allocated, 64u);
  EXPECT_EQ(s.reserved, 64u);  // exact: every class size is reconstructed correctly
  EXPECT_EQ(FakeSystem::live_bytes, 64u);
  EXPECT_EQ(FakeSystem::blocks.count(kept), 1u);
  // After emptying, a request goes to the system again.
  void* again = alloc.allocate(5000);
  EXPECT_EQ(FakeSystem::allocs, 7);
  alloc.deallocate(again, 5000);
  alloc.deallocate(kept, 64);
}

TEST(Allocator, DestructorReturnsTheCache) {
  FakeSystem::reset();
  {
    CachingAllocator alloc({FakeSystem::allocate, FakeSystem::deallocate});
    alloc.deallocate(alloc.allocate(4096), 4096);
    alloc.deallocate(alloc.allocate(100), 100);
    EXPECT_EQ(FakeSystem::live_bytes, 4096u + 128u);
  }
  EXPECT_EQ(FakeSystem::live_bytes, 0u);
  EXPECT_EQ(FakeSystem::frees, 2);
}

TEST(Allocator, OutOfMemoryReleasesTheCacheAndRetries) {
  CachingAllocator alloc(FakeSystem::reset(4096));
  void* a = alloc.allocate(2048);
  alloc.deallocate(a, 2048);              // 2048 cached
  void* b = alloc.allocate(3000);         // 3072: fits only once the cache is given back
  EXPECT_NE(b, nullptr);
  EXPECT_EQ(FakeSystem::frees, 1);
  const MemoryStats s = alloc.stats();
  EXPECT_EQ(s.reserved, 3072u);
  EXPECT_EQ(s.allocated, 3072u);
  alloc.deallocate(b, 3000);
}

TEST(Allocator, OutOfMemoryMessage) {
  CachingAllocator alloc(FakeSystem::reset(1 << 20));
  void* live = alloc.allocate(1000);
  alloc.deallocate(alloc.allocate(5000), 5000);  // cached: reserved > allocated
  const size_t huge = size_t{1} << 40;
  EXPECT_TRUE(throws_error([&] { alloc.allocate(huge); },
                           {"cpu: out of memory", "1099511627776 bytes", "(1024 bytes) allocated", "reserved",
                            "lower the batch size"}));
  const MemoryStats s = alloc.stats();  // a failed request changes nothing
  EXPECT_EQ(s.allocated, 1024u);
  EXPECT_EQ(s.device_allocs, 2u);
  // Requests near the top of size_t must fail cleanly too (rounding must not wrap around).
  EXPECT_TRUE(throws_error([&] { alloc.allocate(~size_t{0} - 10); }, {"cpu: out of memory"}));
  alloc.deallocate(live, 1000);
}

// The CUDA backend's allocator is this class over cudaMalloc: its message names the GPU and its capacity.
TEST(Allocator, OutOfMemoryMessageNamesTheDevice) {
  CachingAllocator::SystemAllocator system = FakeSystem::reset(1 << 20);
  system.device = "cuda:1";
  system.total_memory = size_t{80} << 30;
  CachingAllocator alloc(system);
  void* live = alloc.allocate(size_t{1} << 19);
  EXPECT_TRUE(throws_error([&] { alloc.allocate(size_t{3} << 19); },
                           {"cuda:1: out of memory allocating 1.50 MiB (1572864 bytes)",
                            "512.00 KiB (524288 bytes) allocated by Ember tensors", "device total 80.00 GiB",
                            "cache released and retried", "lower the batch size"}));
  alloc.deallocate(live, size_t{1} << 19);
}

TEST(Allocator, ThreadsShareOneAllocator) {
  CachingAllocator alloc(FakeSystem::reset());
  const auto work = [&alloc](size_t base) {
    for (int i = 0; i < 2000; ++i) {
      const size_t n = base + (i % 7) * 300;
      void* p = alloc.allocate(n);
      static_cast<char*>(p)[0] = 1;
      alloc.deallocate(p, n);
    }
  };
  std::thread t1(work, 100), t2(work, 200);
  t1.join();
  t2.join();
  const MemoryStats s = alloc.stats();
  EXPECT_EQ(s.allocated, 0u);
  EXPECT_EQ(s.reserved, FakeSystem::live_bytes);
  EXPECT_LE(s.device_allocs, 2u * 7u);  // at most one block per class per thread: the rest were reused
}

TEST(Allocator, CpuBackendStatsForTensors) {
  const MemoryStats before = memory_stats();
  {
    const Tensor t = zeros({1 << 20});  // 4 MiB
    const MemoryStats during = memory_stats();
    EXPECT_EQ(during.allocated - before.allocated, size_t{4} << 20);
    EXPECT_GE(during.peak_allocated, during.allocated);
    EXPECT_GE(during.reserved, during.allocated);
  }
  const MemoryStats after = memory_stats();
  EXPECT_EQ(after.allocated, before.allocated);
  {
    const Tensor t = ones({1 << 20});  // the cached block again: no new system allocation
    EXPECT_EQ(memory_stats().device_allocs, after.device_allocs);
  }
  empty_cache();
  EXPECT_EQ(memory_stats().reserved, memory_stats().allocated);
}
