#pragma once
// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): the counter-based
// generator behind every random draw in Ember — the backends' random ops (backends/kernels.h), randperm and
// the data pipeline's augmentations (data/random.h). A pure function of (key, counter), so a draw is the same
// on every device and thread count.
#include <cstdint>

#include "base/host_device.h"

namespace ember {

struct Philox4 {
  uint32_t v[4];
};

EMBER_HOST_DEVICE void mulhilo32(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

// Four random 32-bit words for (key = seed, counter = index); every call is independent.
EMBER_HOST_DEVICE Philox4 philox4x32_10(uint64_t seed, uint64_t index) {
  uint32_t c0 = static_cast<uint32_t>(index), c1 = static_cast<uint32_t>(index >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo32(0xD2511F53u, c0, hi0, lo0);
    mulhilo32(0xCD9E8D57u, c2, hi1, lo1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

// Uniform in [0, 1): 24 random bits for float, 53 for double.
template <typename T> EMBER_HOST_DEVICE T uniform01(const Philox4& r);
template <> EMBER_HOST_DEVICE float uniform01<float>(const Philox4& r) {
  return static_cast<float>(r.v[0] >> 8) * (1.0f / 16777216.0f);
}
template <> EMBER_HOST_DEVICE double uniform01<double>(const Philox4& r) {
  const uint64_t bits = (static_cast<uint64_t>(r.v[0]) << 21) ^ (r.v[1] >> 11);
  return static_cast<double>(bits & ((1ULL << 53) - 1)) * (1.0 / 9007199254740992.0);
}

}  // namespace ember
