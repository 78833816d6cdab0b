#include "data/fault.h"

#include <charconv>
#include <cstdlib>

#include "base/error.h"
#include "base/log.h"

namespace ember::data {
namespace {
constexpr const char* kVariable = "EMBER_FAULT_INJECT";

std::string setting() {
  const char* env = std::getenv(kVariable);
  return env != nullptr ? env : "";
}
}  // namespace

int64_t injected_read_fault(const std::string& file) {
  const std::string text = setting();
  if (text.empty()) return -1;
  const std::string prefix = "read:";
  const size_t at = text.find('@');
  const std::string head = text.substr(0, at);
  const std::string number = head.size() > prefix.size() ? head.substr(prefix.size()) : "";
  int64_t index = -1;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), index);
  const bool whole_number = !number.empty() && ec == std::errc() && end == number.data() + number.size();
  const bool filter_ok = at == std::string::npos || at + 1 < text.size();  // "read:K@" names no file
  EMBER_CHECK(text.rfind(prefix, 0) == 0 && whole_number && index >= 0 && filter_ok,
              kVariable, "='", text, "' is not a fault to inject; expected read:K or read:K@TEXT (K an example index, "
              "TEXT part of the dataset file's path), or unset it");
  if (at != std::string::npos && file.find(text.substr(at + 1)) == std::string::npos) return -1;
  logger().warn("{}={}: every read of example {} of {} will fail (fault injection for tests)", kVariable, text, index,
             file);
  return index;
}

void throw_injected_read_fault(const std::string& file, int64_t index) {
  detail::throw_error(file, ": example ", index, " could not be read (fault injected by ", kVariable, "=", setting(),
                      ")");
}

}  // namespace ember::data
