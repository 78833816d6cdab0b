#include "backends/caching_allocator.h"

#include <bit>
#include <cstdlib>
#include <string>
#include <utility>

#include "base/error.h"
#include "base/format.h"

namespace ember {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kSmallLimit = 512;
constexpr int kSmallClasses = kSmallLimit / kAlignment;  // 64, 128, ..., 512
constexpr int kSubClasses = 4;                           // per power of two above 512

void* system_allocate(size_t bytes) { return std::aligned_alloc(kAlignment, bytes); }
void system_deallocate(void* ptr) { std::free(ptr); }

}  // namespace

size_t CachingAllocator::size_class(size_t bytes) {
  if (bytes <= kSmallLimit) return bytes == 0 ? kAlignment : (bytes + kAlignment - 1) / kAlignment * kAlignment;
  // Round up to the next of {4, 5, 6, 7} × 2^(k-2).
  const int k = std::bit_width(bytes - 1) - 1;  // 2^k < bytes <= 2^(k+1)
  const size_t step = (size_t{1} << k) / kSubClasses;
  return (bytes + step - 1) / step * step;
}

int CachingAllocator::class_index(size_t rounded) {
  if (rounded <= kSmallLimit) return static_cast<int>(rounded / kAlignment) - 1;
  const int k = std::bit_width(rounded - 1) - 1;
  const size_t step = (size_t{1} << k) / kSubClasses;
  const int sub = static_cast<int>((rounded - (size_t{1} << k)) / step) - 1;  // 0..3
  return kSmallClasses + (k - 9) * kSubClasses + sub;
}

CachingAllocator::CachingAllocator() : CachingAllocator(SystemAllocator{system_allocate, system_deallocate}) {}

CachingAllocator::CachingAllocator(SystemAllocator system) : system_(std::move(system)), free_lists_(kSmallClasses + 60 * kSubClasses) {}

CachingAllocator::~CachingAllocator() { release_cached_locked(); }

std::string CachingAllocator::out_of_memory_message(size_t bytes, bool cache_released) const {
  std::string m = system_.device + ": out of memory allocating " + format_bytes(bytes) + "; " +
                  format_bytes(stats_.allocated) + " allocated by Ember tensors, " + format_bytes(stats_.reserved) +
                  " reserved by Ember";
  if (system_.total_memory != 0) m += ", device total " + format_bytes(system_.total_memory);
  if (cache_released) m += " (cache released and retried)";
  return m + "; " + system_.advice;
}

void* CachingAllocator::allocate(size_t bytes) {
  std::lock_guard lock(mutex_);
  // NOTE: above this, size_class() would wrap around to a small size (and the class index run off the lists).
  EMBER_CHECK(bytes <= (size_t{1} << 62), out_of_memory_message(bytes, false),
              " (the request is larger than any machine's memory: check the tensor's shape)");
  const size_t rounded = size_class(bytes);
  const int cls = class_index(rounded);
  void* ptr = nullptr;
  auto& list = free_lists_[cls];
  if (!list.empty()) {
    ptr = list.back();
    list.pop_back();
  } else {
    ptr = system_.allocate(rounded);
    if (ptr == nullptr) {  // one retry after giving the cache back
      release_cached_locked();
      ptr = system_.allocate(rounded);
    }
    EMBER_CHECK(ptr != nullptr, out_of_memory_message(bytes, true));
    stats_.reserved += rounded;
    ++stats_.device_allocs;
  }
  stats_.allocated += rounded;
  if (stats_.allocated > stats_.peak_allocated) stats_.peak_allocated = stats_.allocated;
  return ptr;
}

void CachingAllocator::deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  const size_t rounded = size_class(bytes);
  std::lock_guard lock(mutex_);
  free_lists_[class_index(rounded)].push_back(ptr);
  stats_.allocated -= rounded;
}

MemoryStats CachingAllocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void CachingAllocator::reset_peak() {
  std::lock_guard lock(mutex_);
  stats_.peak_allocated = stats_.allocated;
}

void CachingAllocator::empty_cache() {
  std::lock_guard lock(mutex_);
  release_cached_locked();
}

void CachingAllocator::release_cached_locked() {
  for (size_t cls = 0; cls < free_lists_.size(); ++cls) {
    for (void* p : free_lists_[cls]) {
      system_.deallocate(p);
    }
    // Reconstruct the class size to keep `reserved` exact.
    if (!free_lists_[cls].empty()) {
      size_t rounded;
      if (cls < static_cast<size_t>(kSmallClasses)) {
        rounded = (cls + 1) * kAlignment;
      } else {
        const size_t rel = cls - kSmallClasses;
        const int k = static_cast<int>(rel / kSubClasses) + 9;
        const size_t sub = rel % kSubClasses + 1;
        rounded = (size_t{1} << k) + sub * ((size_t{1} << k) / kSubClasses);
      }
      stats_.reserved -= rounded * free_lists_[cls].size();
    }
    free_lists_[cls].clear();
  }
}

}  // namespace ember
