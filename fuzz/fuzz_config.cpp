// libFuzzer target for the ember-train config loader through the real schema (apps/config.cpp): any
// input must either become a TrainConfig or end in a ConfigError (exit code 2 in the apps, with the file,
// line and key) — never a crash, a sanitizer report or another exception. A config that loads must also
// survive the resolved-config round trip the run directory relies on: to_yaml, parsed again, is the same
// config (same YAML, same hash). A first line "#set key=value" is applied as a --set override.
//
//   CXX=clang++ cmake -S . -B build-fuzz -DEMBER_FUZZ=ON -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_BENCH=OFF
//   cmake --build build-fuzz -j2 --target fuzz_config
//   build-fuzz/fuzz/fuzz_config -max_total_time=300 -rss_limit_mb=2048 fuzz/corpus/config
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "apps/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  if (text.rfind("#set ", 0) == 0) overrides.push_back(text.substr(5, text.find('\n') - 5));
  ember::app::TrainConfig config;
  try {
    config = ember::app::parse_config(text, "fuzz.yaml", overrides);
  } catch (const ember::app::ConfigError&) {
    return 0;
  }
  const std::string resolved = ember::app::to_yaml(config);
  try {
    const ember::app::TrainConfig again = ember::app::parse_config(resolved, "resolved.yaml");
    if (ember::app::to_yaml(again) != resolved || ember::app::config_hash(again) != ember::app::config_hash(config)) {
      std::fprintf(stderr, "the resolved config does not read back to itself:\n%s\n---\n%s\n", resolved.c_str(),
                   ember::app::to_yaml(again).c_str());
      std::abort();
    }
  } catch (const ember::app::ConfigError& e) {
    std::fprintf(stderr, "the resolved config does not load: %s\n%s\n", e.what(), resolved.c_str());
    std::abort();
  }
  return 0;
}
