#include "base/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

namespace ember {

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto l = spdlog::get("ember");
    if (!l) l = spdlog::stderr_color_mt("ember");
    spdlog::level::level_enum level = spdlog::level::info;
    if (const char* env = std::getenv("EMBER_LOG_LEVEL")) {
      level = spdlog::level::from_str(env);
      // from_str maps unknown names to "off"; say so rather than go silent.
      if (level == spdlog::level::off && std::string_view(env) != "off") {
        level = spdlog::level::info;
        l->warn("EMBER_LOG_LEVEL='{}' is not a level (trace, debug, info, warn, error, critical, off); "
                "using info", env);
      }
    }
    l->set_level(level);
    l->set_pattern("[%H:%M:%S.%e] [ember] [%^%l%$] %v");
    return l;
  }();
  return *instance;
}

}  // namespace ember
