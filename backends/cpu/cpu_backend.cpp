// Memory, copies, fill, threads and the backend registry.
#include "backends/cpu/cpu_backend.h"

#include <omp.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "backends/checks.h"
#include "backends/cpu/openblas.h"
#include "backends/cpu/strided_loop.h"
#include "base/log.h"

namespace ember::cpu {

int num_threads() {
  static const int n = [] {
    if (const char* env = std::getenv("EMBER_NUM_THREADS")) {
      char* end = nullptr;
      const long v = std::strtol(env, &end, 10);
      if (end != env && *end == '\0' && v >= 1 && v <= 1024) return static_cast<int>(v);
      logger().warn("EMBER_NUM_THREADS='{}' is not a thread count (1-1024); using the number of cores", env);
    }
    const unsigned hw = std::thread::hardware_concurrency();
    return hw == 0 ? 1 : static_cast<int>(hw);
  }();
  return n;
}

OpenMpTeam::OpenMpTeam() : previous_(omp_get_max_threads()) {
  omp_set_num_threads(can_parallelize() ? num_threads() : 1);
}
OpenMpTeam::~OpenMpTeam() { omp_set_num_threads(previous_); }
int OpenMpTeam::size() { return omp_get_max_threads(); }

void enable_flush_denormal_on_this_thread() {
  thread_local bool done = false;
  if (done) return;
#if defined(__x86_64__)
  _mm_setcsr(_mm_getcsr() | 0x8040);  // FTZ (bit 15) | DAZ (bit 6)
#endif
  done = true;
}

CpuBackend& cpu_backend() {
  static CpuBackend& instance = [] () -> CpuBackend& {
    // Never destroyed: tensors in other static objects may be freed after this function's statics are
    // gone, and their Storage returns memory here.
    return *new CpuBackend;
  }();
  return instance;
}

void CpuBackend::copy_bytes_host(void* device_ptr, void* host_ptr, size_t bytes, bool to_host, int) {
  if (bytes == 0) return;
  if (to_host) std::memcpy(host_ptr, device_ptr, bytes);
  else std::memcpy(device_ptr, host_ptr, bytes);
}

namespace {

template <typename From, typename To>
void copy_cast(const TensorArg& src, const TensorArg& dst) {
  strided_loop<2>({&dst, &src}, [](char** p, const int64_t* s, int64_t n) {
    To* out = reinterpret_cast<To*>(p[0]);
    const From* in = reinterpret_cast<const From*>(p[1]);
    if (s[0] == sizeof(To) && s[1] == sizeof(From)) {
      if constexpr (std::is_same_v<From, To>) {
        std::memcpy(out, in, n * sizeof(To));
      } else {
        for (int64_t i = 0; i < n; ++i) out[i] = static_cast<To>(in[i]);
      }
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<To*>(p[0] + i * s[0]) = static_cast<To>(*reinterpret_cast<const From*>(p[1] + i * s[1]));
    }
  });
}

}  // namespace

void CpuBackend::copy(const TensorArg& src, const TensorArg& dst) {
  checks::check_copy(src, dst);
  dispatch_dtype(src.dtype, "copy", [&](auto from) {
    dispatch_dtype(dst.dtype, "copy", [&](auto to) { copy_cast<decltype(from), decltype(to)>(src, dst); });
  });
}

void CpuBackend::fill(const TensorArg& out, double value) {
  dispatch_dtype(out.dtype, "fill", [&](auto tag) {
    using T = decltype(tag);
    const T v = static_cast<T>(value);
    strided_loop<1>({&out}, [v](char** p, const int64_t* s, int64_t n) {
      if (s[0] == sizeof(T)) {
        T* o = reinterpret_cast<T*>(p[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = v;
      } else {
        for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * s[0]) = v;
      }
    });
  });
}

std::string CpuBackend::describe() {
  std::string model = "unknown CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      model = line.substr(line.find(':') + 2);
      break;
    }
  }
  std::string simd = "scalar";
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) simd = "AVX-512";
  else if (__builtin_cpu_supports("avx2")) simd = "AVX2";
  else if (__builtin_cpu_supports("sse4.2")) simd = "SSE4.2";
#endif
  return model + ", " + std::to_string(std::thread::hardware_concurrency()) + " cores, " + simd + ", " +
         std::to_string(num_threads()) + " threads; GEMM: " + blas_description();
}

}  // namespace ember::cpu
