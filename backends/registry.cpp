// Device parsing and the DeviceType → Backend table.
#include <charconv>

#include "backends/backend.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cuda_info.h"
#include "base/log.h"

namespace ember {

#if defined(EMBER_WITH_CUDA)
namespace cuda {
Backend& backend_instance();  // backends/cuda/cuda_backend.cpp
}  // namespace cuda
#endif

namespace {
std::string cuda_unusable_reason() { return cuda::is_available() ? std::string() : cuda::unavailable_reason(); }
}  // namespace

std::string Device::str() const { return is_cpu() ? "cpu" : "cuda:" + std::to_string(index); }

Device Device::parse(std::string_view text) {
  if (text == "cpu") return kCPU;
  if (text == "auto") {
    if (cuda_unusable_reason().empty()) {
      logger().info("device auto: using cuda:0 ({} GPU(s) found)", cuda::device_count());
      return Device(DeviceType::CUDA, 0);
    }
    logger().info("device auto: using cpu ({})", cuda_unusable_reason());
    return kCPU;
  }
  if (text.substr(0, 4) == "cuda") {
    int index = 0;
    if (text.size() > 4) {
      const std::string_view num = text.substr(5);
      const auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), index);
      EMBER_CHECK(text[4] == ':' && !num.empty() && ec == std::errc() && end == num.data() + num.size() && index >= 0,
                  "device '", text, "' is not a device; expected cpu, cuda, cuda:N (N >= 0) or auto");
    }
    EMBER_CHECK(cuda::is_available(), "device '", text, "' requested, but ", cuda::unavailable_reason());
    EMBER_CHECK(index < cuda::device_count(), "device '", text, "' requested, but this machine has ",
                cuda::device_count(), " GPU(s): valid indices are 0..", cuda::device_count() - 1);
    return Device(DeviceType::CUDA, index);
  }
  detail::throw_error("device '", text, "' is not a device; expected cpu, cuda, cuda:N or auto");
}

namespace {
Backend* g_override[kNumDeviceTypes] = {};
}  // namespace

void set_backend_override(DeviceType type, Backend* b) { g_override[static_cast<int>(type)] = b; }

Backend& backend(Device device) {
  if (Backend* b = g_override[static_cast<int>(device.type)]) [[unlikely]] return *b;
  if (device.is_cpu()) return cpu::cpu_backend();
#if defined(EMBER_WITH_CUDA)
  if (cuda::is_available()) return cuda::backend_instance();
#endif
  detail::throw_error("device ", device.str(), ": ", cuda_unusable_reason());
}

// --- ember::cuda's device API, for both builds: through backend(), so an override serves it in tests ---
namespace cuda {
namespace {
Backend& gpu(int device) { return backend(Device(DeviceType::CUDA, device)); }
}  // namespace
size_t memory_allocated(int device) { return gpu(device).memory_stats(device).allocated; }
size_t max_memory_allocated(int device) { return gpu(device).memory_stats(device).peak_allocated; }
size_t memory_reserved(int device) { return gpu(device).memory_stats(device).reserved; }
void reset_peak_memory_stats(int device) { gpu(device).reset_peak_memory_stats(device); }
void empty_cache(int device) { gpu(device).empty_cache(device); }
void synchronize(int device) { gpu(device).synchronize(device); }
std::string device_name(int device) { return gpu_info(device).name; }
}  // namespace cuda

}  // namespace ember
