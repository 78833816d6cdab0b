#pragma once
// What CUDA can do in this process, without any CUDA header: usable from plain C++ everywhere.
#include <cstddef>
#include <string>

namespace ember::cuda {

// True when this build has CUDA and a driver and at least one GPU are usable.
bool is_available();
// Number of usable GPUs (0 when !is_available()).
int device_count();
// Why CUDA is unusable, as a sentence naming the cause: this build lacks CUDA, no driver, no GPU,
// driver too old for this runtime, and what to do in C++ terms (use kCPU); the apps add their own
// command-line advice (--device cpu). Empty when is_available().
std::string unavailable_reason();
// Whether this build of Ember was compiled with CUDA support.
bool built_with_cuda();

struct GpuInfo {
  std::string name;
  int compute_major = 0, compute_minor = 0;  // compute capability, e.g. 9.0 for H100/H200
  size_t total_memory = 0;                   // bytes
  int multiprocessors = 0;
};
// GPU `index` (0 ≤ index < device_count()); throws ember::Error otherwise.
GpuInfo gpu_info(int index);
// "driver 13.0, runtime 13.0, cuBLAS 13.0.0 (built with), cuDNN 9.13.0" — the versions this process sees
// (empty without CUDA). Loads cuDNN (not cuBLAS); a cuDNN that cannot be loaded is reported, not thrown.
std::string versions();
// The name of GPU `device`, e.g. "NVIDIA H200".
std::string device_name(int device = 0);

// Memory of GPU `device` as Ember's caching allocator sees it (PyTorch's torch.cuda.memory_allocated and
// friends): bytes held by live tensors, their high-water mark since the last reset, and bytes reserved
// from the driver (live + cached). empty_cache() returns the cached blocks to the driver.
size_t memory_allocated(int device = 0);
size_t max_memory_allocated(int device = 0);
size_t memory_reserved(int device = 0);
void reset_peak_memory_stats(int device = 0);
void empty_cache(int device = 0);
// Waits until every op queued on `device` has finished (Ember's ops are asynchronous on the GPU), and
// raises an error a kernel reported.
void synchronize(int device = 0);
// Makes `device` the calling thread's current GPU for CUDA code of your own; Ember's ops run on the device
// of their tensors whatever it is.
void set_device(int device);

// Deterministic mode: cuDNN convolutions use only algorithms that give the same bits on every run (may be
// slower). Ops that accumulate with atomics (scatter_add, and so embedding and gather backward) stay
// order-dependent in the last bits. Off by default, as in PyTorch.
void set_deterministic(bool on);
bool deterministic();

}  // namespace ember::cuda
