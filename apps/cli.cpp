#include "apps/cli.h"

#include "base/device.h"

namespace ember::app {

Device parse_device(const std::string& text) {
  try {
    return Device::parse(text);
  } catch (const Error& e) {
    const std::string msg = e.what();
    throw ConfigError("--device " + text + ": " + msg +
                      (msg.find("--device cpu") == std::string::npos ? " (--device cpu works on every machine)" : ""));
  }
}

}  // namespace ember::app
