#pragma once
// Device: where a tensor's storage lives. Parsed from "cpu", "cuda", "cuda:N" or "auto".
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace ember {

enum class DeviceType : uint8_t { CPU, CUDA };
inline constexpr int kNumDeviceTypes = 2;

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;  // GPU ordinal; always 0 for the CPU

  constexpr Device() = default;
  constexpr Device(DeviceType t, int i = 0) : type(t), index(t == DeviceType::CPU ? 0 : i) {}

  // "cpu", "cuda" (= cuda:0), "cuda:N", or "auto" (cuda:0 when a usable GPU is present, else cpu; the
  // choice and its reason are logged at info level). Throws ember::Error for anything else, and for a
  // CUDA device this build or machine cannot serve (saying which: no CUDA in this build, no driver, no
  // GPU, index out of range).
  static Device parse(std::string_view text);

  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  std::string str() const;
  friend bool operator==(const Device&, const Device&) = default;
};

inline constexpr Device kCPU{DeviceType::CPU, 0};

inline std::ostream& operator<<(std::ostream& out, const Device& d) { return out << d.str(); }

}  // namespace ember
