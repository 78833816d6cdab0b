// The CUDA queries for a build without CUDA (EMBER_CUDA=OFF or no toolkit found).
#include "backends/cuda_info.h"
#include "backends/error.h"

namespace ember::cuda {

bool built_with_cuda() { return false; }
bool is_available() { return false; }
int device_count() { return 0; }
std::string unavailable_reason() {
  return "this build of Ember has no CUDA support; rebuild with -DEMBER_CUDA=ON (needs the CUDA toolkit and "
         "cuDNN), or use --device cpu";
}

GpuInfo gpu_info(int index) {
  detail::throw_error("gpu_info(", index, "): ", unavailable_reason());
}
std::string versions() { return {}; }

}  // namespace ember::cuda
