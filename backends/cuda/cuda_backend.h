#pragma once
// The CUDA backend: one stream, one cuBLAS and one cuDNN handle and one caching allocator per GPU, created
// on first use. Element math comes from backends/kernels.h and index math from backends/strided.h, the
// same code the CPU backend runs; GEMM is cuBLAS, convolution cuDNN. Only files in backends/cuda/
// include this header (it needs the CUDA headers).
//
// Ordering: every op is queued on its device's stream and returns without waiting; copies to the host
// and synchronize() wait. Nothing else synchronises.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "backends/backend.h"
#include "backends/caching_allocator.h"
#include "backends/cuda/check.h"

namespace ember::cuda {

inline constexpr int kPinnedHost = kPinnedHostIndex;  // backend.h

// An error a kernel found (an index out of range). Kernels cannot throw: the first one to find an error
// writes it here, in page-locked host memory mapped into the device's address space, and the backend
// raises it as an ember::Error at its next call (or the next synchronize()).
// raise_kernel_error turns it into the message the CPU throws at once (checks::throw_*).
enum class KernelErrorCode : int { none, gather_index, scatter_index, scatter_add_index, target_index };
constexpr KernelErrorCode index_error_code(IndexOp op) {
  return op == IndexOp::gather    ? KernelErrorCode::gather_index
         : op == IndexOp::scatter ? KernelErrorCode::scatter_index
                                  : KernelErrorCode::scatter_add_index;
}
struct KernelError {
  int claimed = 0;  // set with atomicCAS by the first kernel thread that reports
  int code = 0;     // a KernelErrorCode, written last (after the fields below): the host reads it first
  int dim = 0;       // the op's dim (gather, scatter_add) or the sample (cross_entropy)
  long long value = 0;
  long long limit = 0;
};

// Page-locked host blocks in size classes. A released block is reused only once the copies queued before
// its release have finished (an event recorded on every device stream at release), so an asynchronous
// copy never reads a block that has been handed out again.
class PinnedPool {
 public:
  void* allocate(size_t bytes);
  // `streams`: where copies that read the block may still be queued.
  void release(void* ptr, size_t bytes, std::span<const cudaStream_t> streams);
  bool owns(const void* ptr, size_t bytes) const;  // [ptr, ptr + bytes) lies in one of this pool's blocks
  size_t reserved() const;
  void release_cached();  // frees the cached blocks whose copies have finished (empty_cache)

 private:
  struct Block {
    size_t size = 0;
    std::vector<cudaEvent_t> pending;  // the block is free once all of these have completed
  };
  bool ready(Block& b);
  mutable std::mutex mutex_;
  std::map<const char*, Block> blocks_;                // every block, live or cached, by address
  std::vector<cudaEvent_t> idle_events_;               // completed events, recorded again by the next release
  std::vector<std::vector<void*>> free_;               // by CachingAllocator::class_index
  size_t reserved_ = 0;
};

struct DeviceContext {
  int index = 0;
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cudaDeviceProp props{};
  std::unique_ptr<CachingAllocator> allocator;
  KernelError* error = nullptr;  // mapped host memory (unified addressing: the same pointer on the device)
};

class CudaBackend final : public Backend {
 public:
  DeviceType type() const override { return DeviceType::CUDA; }

  void* allocate(size_t bytes, int device_index) override;
  void deallocate(void* ptr, size_t bytes, int device_index) override;
  MemoryStats memory_stats(int device_index) override;
  void reset_peak_memory_stats(int device_index) override;
  void empty_cache(int device_index) override;
  void synchronize(int device_index) override;

  EMBER_BACKEND_OPS(EMBER_BACKEND_OVERRIDE)

  std::string describe() override;

  // The context of GPU `index`, created on first use. Makes `index` the calling thread's current device
  // and raises any error a kernel reported since the last call: every entry point starts with this.
  DeviceContext& context(int index);

  // Device scratch memory from the caching allocator, returned on scope exit. Safe while kernels that use
  // it are still queued: the next user of the block is queued after them on the same stream.
  class Workspace {
   public:
    Workspace(DeviceContext& ctx, size_t bytes)
        : ctx_(ctx), bytes_(bytes), ptr_(bytes == 0 ? nullptr : ctx.allocator->allocate(bytes)) {}
    ~Workspace() {
      if (ptr_ != nullptr) ctx_.allocator->deallocate(ptr_, bytes_);
    }
    Workspace(const Workspace&) = delete;
    Workspace& operator=(const Workspace&) = delete;
    template <typename T> T* as() const { return static_cast<T*>(ptr_); }
    size_t size() const { return bytes_; }

   private:
    DeviceContext& ctx_;
    size_t bytes_;
    void* ptr_;
  };

 private:
  DeviceContext& create_context(int index);
  static constexpr int kMaxGpus = 64;
  // The streams of the contexts created so far, into `out`; returns how many.
  size_t streams(cudaStream_t (&out)[kMaxGpus]);

  std::mutex mutex_;
  std::atomic<DeviceContext*> contexts_[kMaxGpus] = {};  // by device index, created on first use, never freed
  PinnedPool pinned_;
};

CudaBackend& cuda_backend();

// Whether cuDNN must pick deterministic algorithms (ember::cuda::set_deterministic).
bool deterministic_algorithms();

}  // namespace ember::cuda
