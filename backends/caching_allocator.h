#pragma once
// A caching allocator, one per device: freed blocks go to size-binned free lists and are handed out again,
// so the system allocator (malloc, cudaMalloc) is called only on a cache miss. On the CPU, glibc's malloc
// maps and unmaps every multi-MB buffer, which costs ~500k page faults per second in a conv loop (DESIGN.md,
// CPU facts); on CUDA, cudaMalloc/cudaFree synchronise the device. CUDA uses one stream per device, so a
// block freed by the host can be handed to the next op at once: that op runs after every op already queued
// on the stream, including the last one that used the block (stream-ordered reuse, as PyTorch's allocator).
//
// Size classes: up to 512 B, multiples of 64; above, four classes per power of two (≤ 25% waste).
// Thread-safe (one mutex; data loader workers allocate too).
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "backends/backend.h"

namespace ember {

class CachingAllocator {
 public:
  // The system allocator behind the cache; tests substitute a fake one to check the bookkeeping.
  struct SystemAllocator {
    void* (*allocate)(size_t bytes) = nullptr;  // returns nullptr when out of memory
    void (*deallocate)(void* ptr) = nullptr;
    std::string device = "cpu";  // names the device in out-of-memory messages
    size_t total_memory = 0;     // the device's capacity, for those messages (0: not stated)
    std::string advice = "lower the batch size or the model size";  // what the message tells the user to do
  };

  CachingAllocator();
  explicit CachingAllocator(SystemAllocator system);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Throws ember::Error when the system is out of memory even after the cache is released, with the size
  // requested, what is allocated and reserved, the device total, and what to lower.
  void* allocate(size_t bytes);
  void deallocate(void* ptr, size_t bytes);  // `bytes` as passed to allocate
  MemoryStats stats() const;
  void reset_peak();
  void empty_cache();  // returns every cached block to the system

  static size_t size_class(size_t bytes);  // the rounded size a request is served with
  static int class_index(size_t rounded);

 private:
  void release_cached_locked();
  std::string out_of_memory_message(size_t bytes, bool cache_released) const;

  SystemAllocator system_;
  mutable std::mutex mutex_;
  std::vector<std::vector<void*>> free_lists_;  // by class_index
  MemoryStats stats_;
};

}  // namespace ember
