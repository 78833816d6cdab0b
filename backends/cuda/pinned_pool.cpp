// Page-locked host memory for copies to the GPU, reused once the copies that read it have finished.
#include <cstring>

#include "backends/cuda/cuda_backend.h"

namespace ember::cuda {

bool PinnedPool::ready(Block& b) {
  for (cudaEvent_t e : b.pending) {
    const cudaError_t st = cudaEventQuery(e);
    if (st == cudaErrorNotReady) return false;
    EMBER_CUDA_CHECK(st);
  }
  idle_events_.insert(idle_events_.end(), b.pending.begin(), b.pending.end());
  b.pending.clear();
  return true;
}

void* PinnedPool::allocate(size_t bytes) {
  const size_t rounded = CachingAllocator::size_class(bytes);
  const size_t cls = static_cast<size_t>(CachingAllocator::class_index(rounded));
  std::lock_guard lock(mutex_);
  if (cls < free_.size()) {
    auto& list = free_[cls];
    for (size_t i = 0; i < list.size(); ++i) {
      if (!ready(blocks_.at(static_cast<const char*>(list[i])))) continue;
      void* p = list[i];
      list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
      return p;
    }
  }
  void* p = nullptr;
  if (cudaHostAlloc(&p, rounded, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  blocks_[static_cast<const char*>(p)] = Block{rounded, {}};
  reserved_ += rounded;
  return p;
}

void PinnedPool::release(void* ptr, size_t bytes, std::span<const cudaStream_t> streams) {
  const size_t cls = static_cast<size_t>(CachingAllocator::class_index(CachingAllocator::size_class(bytes)));
  std::lock_guard lock(mutex_);
  Block& b = blocks_.at(static_cast<const char*>(ptr));
  for (cudaStream_t s : streams) {
    cudaEvent_t e = nullptr;  // a completed one again, or a new one (no driver allocation per copy)
    if (!idle_events_.empty()) {
      e = idle_events_.back();
      idle_events_.pop_back();
    }
    // NOTE: runs in destructors: on failure, wait for the stream instead of throwing.
    if ((e == nullptr && cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) ||
        cudaEventRecord(e, s) != cudaSuccess) {
      cudaGetLastError();
      if (e != nullptr) cudaEventDestroy(e);
      cudaStreamSynchronize(s);
      continue;
    }
    b.pending.push_back(e);
  }
  if (free_.size() <= cls) free_.resize(cls + 1);
  free_[cls].push_back(ptr);
}

bool PinnedPool::owns(const void* ptr, size_t bytes) const {
  const char* p = static_cast<const char*>(ptr);
  std::lock_guard lock(mutex_);
  auto it = blocks_.upper_bound(p);  // the first block starting after p
  if (it == blocks_.begin()) return false;
  --it;
  return p + bytes <= it->first + it->second.size;
}

void PinnedPool::release_cached() {
  std::lock_guard lock(mutex_);
  for (auto& list : free_) {
    std::erase_if(list, [&](void* ptr) {
      const auto it = blocks_.find(static_cast<const char*>(ptr));
      if (!ready(it->second)) return false;
      reserved_ -= it->second.size;
      blocks_.erase(it);
      cudaFreeHost(ptr);
      return true;
    });
  }
}

size_t PinnedPool::reserved() const {
  std::lock_guard lock(mutex_);
  return reserved_;
}

}  // namespace ember::cuda
