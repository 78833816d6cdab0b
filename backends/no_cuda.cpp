// The CUDA queries for a build without CUDA (EMBER_CUDA=OFF or no toolkit found).
#include "backends/cuda_info.h"
#include "base/error.h"

namespace ember::cuda {

bool built_with_cuda() { return false; }
bool is_available() { return false; }
int device_count() { return 0; }
std::string unavailable_reason() {
  return "this build of Ember has no CUDA support; rebuild with -DEMBER_CUDA=ON (needs the CUDA toolkit and "
         "cuDNN), or use the CPU instead (kCPU; move a model or tensor there with .to(kCPU))";
}

GpuInfo gpu_info(int index) {
  detail::throw_error("gpu_info(", index, "): ", unavailable_reason());
}
std::string versions() { return {}; }
void set_device(int device) { detail::throw_error("set_device(", device, "): ", unavailable_reason()); }

namespace {
bool g_deterministic = false;  // kept so a program sets it the same way on every build
}  // namespace
void set_deterministic(bool on) { g_deterministic = on; }
bool deterministic() { return g_deterministic; }

}  // namespace ember::cuda
