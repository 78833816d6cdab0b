// libFuzzer target for the safetensors reader (core/safetensors.cpp): any input must parse into tensors
// or end in an ember::Error — never a crash, a sanitizer report or an unbounded allocation.
//
//   CXX=clang++ cmake -S . -B build-fuzz -DEMBER_FUZZ=ON -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_BENCH=OFF
//   cmake --build build-fuzz -j2 --target fuzz_safetensors
//   build-fuzz/fuzz/fuzz_safetensors -max_total_time=300 -rss_limit_mb=2048 fuzz/corpus/safetensors
#include <cstddef>
#include <cstdint>

#include "core/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto contents = ember::safetensors::parse(reinterpret_cast<const char*>(data), size, "fuzz-input");
    for (const auto& [name, t] : contents.tensors) (void)t.numel();
  } catch (const ember::Error&) {
  }
  return 0;
}
