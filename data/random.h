#pragma once
// Counter-based random numbers for the data layer. Everything random in data/ (shuffles, random crops,
// flips) is a pure function of (key, counter) through Philox4x32-10 — the generator the backends use —
// so results do not depend on which thread computes them or in which order.
#include <cstdint>

#include "base/philox.h"

namespace ember::data {

// SplitMix64's finaliser: a well-mixed 64-bit key from two words (e.g. seed and epoch).
inline uint64_t mix_key(uint64_t a, uint64_t b) {
  uint64_t z = a + 0x9E3779B97F4A7C15ULL * (b + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// An integer uniform in [0, n) from 64 random bits (multiply-shift: no division, bias < n / 2^64).
inline uint64_t uniform_below(uint64_t bits, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(bits) * n) >> 64);
}

// The random stream of one example: counter blocks (index << 16) + 0, 1, 2, ... under `key`, so each
// example of an epoch owns 2^16 blocks (2^18 words) no other example touches.
class ExampleRng {
 public:
  ExampleRng(uint64_t key, uint64_t index) : key_(key), counter_(index << 16) {}

  uint32_t next_u32() {
    if (used_ == 4) {
      block_ = philox4x32_10(key_, counter_++);
      used_ = 0;
    }
    return block_.v[used_++];
  }
  uint64_t next_u64() { return (static_cast<uint64_t>(next_u32()) << 32) | next_u32(); }
  // Uniform in [0, n); n > 0.
  int64_t uniform_int(int64_t n) { return static_cast<int64_t>(uniform_below(next_u64(), static_cast<uint64_t>(n))); }
  // Uniform in [0, 1) with 24 random bits.
  float uniform01() { return static_cast<float>(next_u32() >> 8) * (1.0f / 16777216.0f); }

 private:
  uint64_t key_;
  uint64_t counter_;
  Philox4 block_{};
  int used_ = 4;
};

}  // namespace ember::data
