#pragma once
// The scalar math every shared body is written in: float/double overloads of the C math library (m_exp,
// m_log, ...) and the NaN-propagating max/min, callable from host and device code alike (plain C math:
// expf/exp exist in both; std::max is host-only constexpr under nvcc).
#include <cmath>

#include "base/host_device.h"

namespace ember::kernels {

// m_<name>(x) for float (::<name>f) and double (::<name>), one line of this list each.
#define EMBER_C_MATH_1(X) X(exp) X(log) X(sqrt) X(tanh) X(erf) X(cos) X(sin) X(expm1) X(log1p)
#define EMBER_X(name)                                                  \
  EMBER_HOST_DEVICE float m_##name(float x) { return ::name##f(x); }  \
  EMBER_HOST_DEVICE double m_##name(double x) { return ::name(x); }
EMBER_C_MATH_1(EMBER_X)
#undef EMBER_X
EMBER_HOST_DEVICE float m_pow(float x, float y) { return ::powf(x, y); }
EMBER_HOST_DEVICE double m_pow(double x, double y) { return ::pow(x, y); }
template <typename T> EMBER_HOST_DEVICE bool m_isnan(T x) { return x != x; }

template <typename T> EMBER_HOST_DEVICE T m_max(T a, T b) { return (a > b || m_isnan(a)) ? a : b; }  // NaN wins
template <typename T> EMBER_HOST_DEVICE T m_min(T a, T b) { return (a < b || m_isnan(a)) ? a : b; }

}  // namespace ember::kernels
