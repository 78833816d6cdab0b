// Contexts, memory, host copies and kernel-reported errors of the CUDA backend.
#include "backends/cuda/cuda_backend.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "backends/checks.h"
#include "backends/cuda_info.h"
#include "base/error.h"
#include "base/format.h"

namespace ember::cuda {

namespace detail {
void throw_call_error(const char* file, int line, const char* call, const char* library, const char* error_name,
                      const char* error_string) {
  const std::string what = error_string != nullptr && *error_string != '\0' ? std::string(" (") + error_string + ")" : "";
  ember::detail::throw_error(library, " error ", error_name, what, " in ", call, " at ", file, ":", line);
}
}  // namespace detail

namespace {

std::atomic<bool> g_deterministic{false};
thread_local int t_current_device = -1;

void* device_malloc(size_t bytes) {
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, bytes);
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // not sticky: clear it, the caching allocator frees its cache and retries
    return nullptr;
  }
  EMBER_CUDA_CHECK(err);
  return p;
}
void device_free(void* p) { cudaFree(p); }  // from destructors: nothing to do about an error here

[[noreturn]] void raise_kernel_error(KernelError& e, int device) {
  const auto code = static_cast<KernelErrorCode>(e.code);
  const long long value = e.value, limit = e.limit;
  const int dim = e.dim;
  e.code = 0;
  e.claimed = 0;
  const std::string where = " (found by a kernel on cuda:" + std::to_string(device) +
                            "; the op ran before the call that reports it)";
  switch (code) {
    case KernelErrorCode::gather_index: checks::throw_index_out_of_range(IndexOp::gather, value, dim, limit, where);
    case KernelErrorCode::scatter_index: checks::throw_index_out_of_range(IndexOp::scatter, value, dim, limit, where);
    case KernelErrorCode::scatter_add_index:
      checks::throw_index_out_of_range(IndexOp::scatter_add, value, dim, limit, where);
    case KernelErrorCode::target_index: checks::throw_bad_target(value, dim, limit, false, where);
    default:
      ember::detail::throw_error("a CUDA kernel reported error code ", static_cast<int>(code), where);
  }
}

}  // namespace

bool deterministic_algorithms() { return g_deterministic.load(std::memory_order_relaxed); }
void set_deterministic(bool on) { g_deterministic.store(on, std::memory_order_relaxed); }
bool deterministic() { return deterministic_algorithms(); }

void set_device(int index) {
  EMBER_CHECK(index >= 0 && index < device_count(), "set_device(", index, "): ",
              device_count() == 0 ? unavailable_reason() : "valid indices are 0.." + std::to_string(device_count() - 1));
  EMBER_CUDA_CHECK(cudaSetDevice(index));
  t_current_device = index;
}

CudaBackend& cuda_backend() {
  // Never destroyed: tensors in other static objects may be freed after this function's statics are gone.
  static CudaBackend& instance = *new CudaBackend;
  return instance;
}
Backend& backend_instance() { return cuda_backend(); }

DeviceContext& CudaBackend::context(int index) {
  EMBER_CHECK(index >= 0 && index < device_count() && index < kMaxGpus, "cuda:", index, ": ",
              device_count() == 0 ? unavailable_reason()
                                  : "this machine has " + std::to_string(device_count()) + " GPU(s)");
  DeviceContext* ctx = contexts_[index].load(std::memory_order_acquire);
  if (ctx == nullptr) [[unlikely]] ctx = &create_context(index);
  if (t_current_device != index) {
    EMBER_CUDA_CHECK(cudaSetDevice(index));
    t_current_device = index;
  }
  if (*static_cast<volatile int*>(&ctx->error->code) != 0) [[unlikely]] raise_kernel_error(*ctx->error, index);
  return *ctx;
}

DeviceContext& CudaBackend::create_context(int index) {
  std::lock_guard lock(mutex_);
  if (DeviceContext* existing = contexts_[index].load()) return *existing;
  auto ctx = std::make_unique<DeviceContext>();
  ctx->index = index;
  EMBER_CUDA_CHECK(cudaSetDevice(index));
  t_current_device = index;
  EMBER_CUDA_CHECK(cudaGetDeviceProperties(&ctx->props, index));
  EMBER_CUDA_CHECK(cudaStreamCreateWithFlags(&ctx->stream, cudaStreamNonBlocking));
  EMBER_CUBLAS_CHECK(cublasCreate(&ctx->cublas));
  EMBER_CUBLAS_CHECK(cublasSetStream(ctx->cublas, ctx->stream));
  EMBER_CUDNN_CHECK(cudnnCreate(&ctx->cudnn));
  EMBER_CUDNN_CHECK(cudnnSetStream(ctx->cudnn, ctx->stream));
  CachingAllocator::SystemAllocator system{device_malloc, device_free};
  system.device = "cuda:" + std::to_string(index);
  system.total_memory = ctx->props.totalGlobalMem;
  system.advice = "lower the batch size (ember-bench --find-max-batch finds the largest that fits) or the model size";
  ctx->allocator = std::make_unique<CachingAllocator>(system);
  void* error = nullptr;
  EMBER_CUDA_CHECK(cudaHostAlloc(&error, sizeof(KernelError), cudaHostAllocMapped | cudaHostAllocPortable));
  ctx->error = new (error) KernelError{};
  DeviceContext* raw = ctx.release();  // lives as long as the (immortal) backend
  contexts_[index].store(raw, std::memory_order_release);
  return *raw;
}

size_t CudaBackend::streams(cudaStream_t (&out)[kMaxGpus]) {
  size_t n = 0;
  for (const auto& c : contexts_)
    if (DeviceContext* ctx = c.load(std::memory_order_acquire)) out[n++] = ctx->stream;
  return n;
}

void* CudaBackend::allocate(size_t bytes, int device_index) {
  if (device_index == kPinnedHost) {
    void* p = pinned_.allocate(bytes);
    EMBER_CHECK(p != nullptr, "cuda: out of page-locked host memory allocating ", bytes,
                " bytes for a batch; lower the batch size or the number of loader workers");
    return p;
  }
  return context(device_index).allocator->allocate(bytes);
}

void CudaBackend::deallocate(void* ptr, size_t bytes, int device_index) {
  if (ptr == nullptr) return;
  if (device_index == kPinnedHost) {
    cudaStream_t all[kMaxGpus];
    return pinned_.release(ptr, bytes, {all, streams(all)});
  }
  // NOTE: no context() here: it may throw (a pending kernel error), and this runs in destructors.
  contexts_[device_index].load(std::memory_order_acquire)->allocator->deallocate(ptr, bytes);
}

MemoryStats CudaBackend::memory_stats(int device_index) { return context(device_index).allocator->stats(); }
void CudaBackend::reset_peak_memory_stats(int device_index) { context(device_index).allocator->reset_peak(); }
void CudaBackend::empty_cache(int device_index) {
  context(device_index).allocator->empty_cache();
  pinned_.release_cached();
}

void CudaBackend::synchronize(int device_index) {
  DeviceContext& ctx = context(device_index);
  EMBER_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
  context(device_index);  // raises an error a kernel reported
}

void CudaBackend::copy_bytes_host(void* device_ptr, void* host_ptr, size_t bytes, bool to_host, int device_index) {
  if (bytes == 0) return;
  DeviceContext& ctx = context(device_index);
  if (to_host) {  // the caller reads the bytes next: wait for them
    EMBER_CUDA_CHECK(cudaMemcpyAsync(host_ptr, device_ptr, bytes, cudaMemcpyDeviceToHost, ctx.stream));
    EMBER_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
    context(device_index);
    return;
  }
  // To the device: from page-locked memory the copy is asynchronous. Pageable memory would make the
  // driver wait for the stream, so it is staged through pinned blocks, in chunks (the pool then holds a
  // few chunks, not a copy of the largest tensor ever moved).
  if (pinned_.owns(host_ptr, bytes)) {
    EMBER_CUDA_CHECK(cudaMemcpyAsync(device_ptr, host_ptr, bytes, cudaMemcpyHostToDevice, ctx.stream));
    return;
  }
  constexpr size_t kChunk = size_t{32} << 20;
  auto* dst = static_cast<char*>(device_ptr);
  const auto* src = static_cast<const char*>(host_ptr);
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(kChunk, bytes - done);
    void* stage = pinned_.allocate(n);
    if (stage == nullptr) {  // no page-locked memory left: a synchronous copy still works
      EMBER_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));  // the destination may be in use by queued ops
      EMBER_CUDA_CHECK(cudaMemcpy(dst + done, src + done, bytes - done, cudaMemcpyHostToDevice));
      return;
    }
    std::memcpy(stage, src + done, n);
    EMBER_CUDA_CHECK(cudaMemcpyAsync(dst + done, stage, n, cudaMemcpyHostToDevice, ctx.stream));
    pinned_.release(stage, n, {&ctx.stream, 1});
    done += n;
  }
}

std::string CudaBackend::describe() {
  const GpuInfo g = gpu_info(0);
  return g.name + " (sm_" + std::to_string(g.compute_major) + std::to_string(g.compute_minor) + ", " +
         format_mib(static_cast<double>(g.total_memory), 0) + ", " + std::to_string(g.multiprocessors) + " SMs), " +
         std::to_string(device_count()) + " GPU(s); " + versions();
}

}  // namespace ember::cuda
