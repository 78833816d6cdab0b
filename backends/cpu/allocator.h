#pragma once
// A caching allocator for host memory. glibc's malloc maps and unmaps every multi-MB buffer, which costs
// ~500k page faults per second in a conv loop (DESIGN.md, CPU facts); this one keeps freed blocks in
// size-binned free lists and hands them out again. Blocks are 64-byte aligned (AVX-512 lines).
//
// Size classes: up to 512 B, multiples of 64; above, four classes per power of two (≤ 25% waste).
// Thread-safe (one mutex; data loader workers allocate too).
#include <cstddef>
#include <mutex>
#include <vector>

#include "backends/backend.h"

namespace ember::cpu {

class CachingAllocator {
 public:
  // The system allocator behind the cache; tests substitute a fake one to check the bookkeeping.
  struct SystemAllocator {
    void* (*allocate)(size_t bytes) = nullptr;  // returns nullptr when out of memory
    void (*deallocate)(void* ptr) = nullptr;
  };

  CachingAllocator();
  explicit CachingAllocator(SystemAllocator system);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Throws ember::Error when the system is out of memory even after the cache is released.
  void* allocate(size_t bytes);
  void deallocate(void* ptr, size_t bytes);  // `bytes` as passed to allocate
  MemoryStats stats() const;
  void reset_peak();
  void empty_cache();  // returns every cached block to the system

  static size_t size_class(size_t bytes);  // the rounded size a request is served with
  static int class_index(size_t rounded);

 private:
  void release_cached_locked();

  SystemAllocator system_;
  mutable std::mutex mutex_;
  std::vector<std::vector<void*>> free_lists_;  // by class_index
  MemoryStats stats_;
};

}  // namespace ember::cpu
