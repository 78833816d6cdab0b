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
// driver too old for this runtime. Empty when is_available().
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
// "driver 13.0, runtime 13.0, cuDNN 9.13.0" — the versions this process sees (empty without CUDA).
std::string versions();

}  // namespace ember::cuda
