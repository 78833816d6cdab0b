#include "base/format.h"

#include <charconv>
#include <cstdio>

namespace ember {

std::string format_mib(double bytes, int decimals) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f MiB", decimals, bytes / kBytesPerMiB);
  return buf;
}

std::string format_bytes(size_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return std::to_string(bytes) + " bytes";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return std::string(buf) + " (" + std::to_string(bytes) + " bytes)";
}

std::string format_shortest(double v) {
  if (v != v) return "nan";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace ember
