#pragma once
// Logging: one spdlog logger named "ember". Its level comes from EMBER_LOG_LEVEL (trace, debug, info,
// warn, error, critical, off; default info).
#include <spdlog/spdlog.h>

namespace ember {
spdlog::logger& logger();
}  // namespace ember
