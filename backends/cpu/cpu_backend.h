#pragma once
// The CPU backend: loops over the shared functors of backends/kernels.h on Ember's thread pool
// (parallel.h), OpenBLAS GEMM, and a caching allocator. It is the reference every other backend is
// checked against.
#include "backends/backend.h"
#include "backends/caching_allocator.h"

namespace ember::cpu {

class CpuBackend final : public Backend {
 public:
  CpuBackend() = default;
  // Memory from `system` instead of the C library: tests make a CPU stand-in for a GPU with a capacity.
  explicit CpuBackend(CachingAllocator::SystemAllocator system) : allocator_(std::move(system)) {}
  DeviceType type() const override { return DeviceType::CPU; }

  void* allocate(size_t bytes, int) override { return allocator_.allocate(bytes); }
  void deallocate(void* ptr, size_t bytes, int) override { allocator_.deallocate(ptr, bytes); }
  MemoryStats memory_stats(int) override { return allocator_.stats(); }
  void reset_peak_memory_stats(int) override { allocator_.reset_peak(); }
  void empty_cache(int) override { allocator_.empty_cache(); }
  void synchronize(int) override {}

  EMBER_BACKEND_OPS(EMBER_BACKEND_OVERRIDE)

  std::string describe() override;

  // Scratch memory from the caching allocator, returned on scope exit.
  class Workspace {
   public:
    Workspace(CpuBackend& b, size_t bytes) : b_(b), bytes_(bytes), ptr_(b.allocator_.allocate(bytes)) {}
    ~Workspace() { b_.allocator_.deallocate(ptr_, bytes_); }
    Workspace(const Workspace&) = delete;
    Workspace& operator=(const Workspace&) = delete;
    template <typename T> T* as() const { return static_cast<T*>(ptr_); }

   private:
    CpuBackend& b_;
    size_t bytes_;
    void* ptr_;
  };

 private:
  CachingAllocator allocator_;
};

CpuBackend& cpu_backend();

}  // namespace ember::cpu
