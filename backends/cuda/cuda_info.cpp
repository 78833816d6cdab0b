// CUDA device queries through the runtime API. Plain C++ (no kernels): compiled with the host compiler
// and linked against cudart, so a CUDA build still runs on a machine without a GPU or driver. None of them
// loads cuBLAS or cuDNN (versions() excepted, which loads cuDNN for its version).
#include <cuda_runtime_api.h>
#include <cublas_api.h>
#include <cudnn.h>

#include <string>

#include "backends/cuda_info.h"
#include "base/error.h"

namespace ember::cuda {
namespace {

// What to do instead, in C++ terms (the apps add their --device advice).
constexpr const char* kUseCpu = "use the CPU instead (kCPU; move a model or tensor there with .to(kCPU))";

struct Probe {
  int count = 0;
  std::string reason;
};

const Probe& probe() {
  static const Probe p = [] {
    Probe r;
    const cudaError_t err = cudaGetDeviceCount(&r.count);
    if (err == cudaSuccess && r.count > 0) return r;
    r.count = 0;
    switch (err) {
      case cudaSuccess:
      case cudaErrorNoDevice:
        r.reason = std::string("no CUDA GPU is present on this machine (the driver reports 0 devices); ") + kUseCpu;
        break;
      case cudaErrorInsufficientDriver: {
        int driver = 0, runtime = 0;
        cudaDriverGetVersion(&driver);
        cudaRuntimeGetVersion(&runtime);
        r.reason = driver == 0
                       ? std::string("no NVIDIA driver is installed (libcuda.so not found); install the driver or ") + kUseCpu
                       : "the NVIDIA driver (CUDA " + std::to_string(driver / 1000) + "." +
                             std::to_string(driver % 1000 / 10) + ") is too old for this build's CUDA runtime (" +
                             std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10) +
                             "); update the driver or " + kUseCpu;
        break;
      }
      default:
        r.reason = std::string("CUDA is unusable: ") + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) +
                   "); " + kUseCpu;
    }
    cudaGetLastError();  // clear the sticky error state of the failed query
    return r;
  }();
  return p;
}

}  // namespace

bool built_with_cuda() { return true; }

GpuInfo gpu_info(int index) {
  EMBER_CHECK(index >= 0 && index < device_count(), "gpu_info(", index, "): ",
              device_count() == 0 ? unavailable_reason() : "valid indices are 0.." + std::to_string(device_count() - 1));
  cudaDeviceProp p{};
  const cudaError_t err = cudaGetDeviceProperties(&p, index);
  EMBER_CHECK(err == cudaSuccess, "cudaGetDeviceProperties(", index, "): ", cudaGetErrorString(err));
  return {p.name, p.major, p.minor, p.totalGlobalMem, p.multiProcessorCount};
}

std::string versions() {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  const auto v = [](int x) { return std::to_string(x / 1000) + "." + std::to_string(x % 1000 / 10); };
  const auto v3 = [](size_t x) {  // cuDNN's encoding: 91300 = 9.13.0
    return std::to_string(x / 10000) + "." + std::to_string(x % 10000 / 100) + "." + std::to_string(x % 100);
  };
  // cuBLAS: the version built against (loading the library for its number would cost ~150 MiB); cuDNN: the
  // one loaded (a 128 KB dispatcher; backends/cuda/lazy_libs.cpp), or why it cannot be.
  std::string cudnn;
  try {
    cudnn = v3(cudnnGetVersion());
  } catch (const Error& e) {
    cudnn = std::string("not loadable: ") + e.what();
  }
  return "driver " + (driver == 0 ? std::string("none") : v(driver)) + ", runtime " + v(runtime) + ", cuBLAS " +
         v3(CUBLAS_VERSION) + " (built with), cuDNN " + cudnn;
}
bool is_available() { return probe().count > 0; }
int device_count() { return probe().count; }
std::string unavailable_reason() { return probe().reason; }

}  // namespace ember::cuda
