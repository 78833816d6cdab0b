#pragma once
// Random draws, one element per call: element i of a draw depends only on (seed, offset + i), so the CPU
// (backends/cpu/index_random.cpp) and CUDA (backends/cuda/index_random.cu) give the same numbers for any
// thread count. Both run RandomFill.
#include <cstdint>

#include "backends/backend.h"
#include "backends/scalar_math.h"
#include "base/host_device.h"
#include "base/philox.h"

namespace ember::kernels {

// Element `index` of a draw: one Philox block per element, so the value depends on nothing else.
template <RandomOp op, typename T>
EMBER_HOST_DEVICE T random_element(uint64_t seed, uint64_t index, double a, double b) {
  const Philox4 r = philox4x32_10(seed, index);
  if constexpr (op == RandomOp::uniform) return static_cast<T>(a + (b - a) * uniform01<T>(r));
  if constexpr (op == RandomOp::bernoulli) return uniform01<T>(r) < static_cast<T>(a) ? T(1) : T(0);
  if constexpr (op == RandomOp::normal) {
    // Box–Muller on words 2 and 3 (u1 in (0, 1], so the log is finite).
    const T u1 = (static_cast<T>(r.v[2]) + T(1)) * static_cast<T>(1.0 / 4294967296.0);
    const T u2 = static_cast<T>(r.v[3]) * static_cast<T>(1.0 / 4294967296.0);
    const T z = m_sqrt(T(-2) * m_log(u1)) * m_cos(static_cast<T>(6.283185307179586476925) * u2);
    return static_cast<T>(a + b * z);
    // cppcheck-suppress missingReturn ; every RandomOp has a branch (if constexpr)
  }
}

// out[i] = element offset + i of a draw, for i in [0, n): what each backend's index loop runs.
template <RandomOp op, typename T>
struct RandomFill {
  T* out;
  uint64_t seed, offset;
  double a, b;
  EMBER_HOST_DEVICE void operator()(int64_t i) const {
    out[i] = random_element<op, T>(seed, offset + static_cast<uint64_t>(i), a, b);
  }
};

}  // namespace ember::kernels
