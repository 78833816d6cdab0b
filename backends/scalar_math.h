#pragma once
// The scalar math every shared body is written in: float/double overloads of the C math library (m_exp,
// m_log, ...) and the NaN-propagating max/min, callable from host and device code alike (plain C math:
// expf/exp exist in both; std::max is host-only constexpr under nvcc).
#include <cmath>

#include "base/host_device.h"

namespace ember::kernels {

EMBER_HOST_DEVICE float m_exp(float x) { return ::expf(x); }
EMBER_HOST_DEVICE double m_exp(double x) { return ::exp(x); }
EMBER_HOST_DEVICE float m_log(float x) { return ::logf(x); }
EMBER_HOST_DEVICE double m_log(double x) { return ::log(x); }
EMBER_HOST_DEVICE float m_sqrt(float x) { return ::sqrtf(x); }
EMBER_HOST_DEVICE double m_sqrt(double x) { return ::sqrt(x); }
EMBER_HOST_DEVICE float m_tanh(float x) { return ::tanhf(x); }
EMBER_HOST_DEVICE double m_tanh(double x) { return ::tanh(x); }
EMBER_HOST_DEVICE float m_erf(float x) { return ::erff(x); }
EMBER_HOST_DEVICE double m_erf(double x) { return ::erf(x); }
EMBER_HOST_DEVICE float m_pow(float x, float y) { return ::powf(x, y); }
EMBER_HOST_DEVICE double m_pow(double x, double y) { return ::pow(x, y); }
EMBER_HOST_DEVICE float m_cos(float x) { return ::cosf(x); }
EMBER_HOST_DEVICE double m_cos(double x) { return ::cos(x); }
EMBER_HOST_DEVICE float m_sin(float x) { return ::sinf(x); }
EMBER_HOST_DEVICE double m_sin(double x) { return ::sin(x); }
EMBER_HOST_DEVICE float m_expm1(float x) { return ::expm1f(x); }
EMBER_HOST_DEVICE double m_expm1(double x) { return ::expm1(x); }
EMBER_HOST_DEVICE float m_log1p(float x) { return ::log1pf(x); }
EMBER_HOST_DEVICE double m_log1p(double x) { return ::log1p(x); }
template <typename T> EMBER_HOST_DEVICE bool m_isnan(T x) { return x != x; }

template <typename T> EMBER_HOST_DEVICE T m_max(T a, T b) { return (a > b || m_isnan(a)) ? a : b; }  // NaN wins
template <typename T> EMBER_HOST_DEVICE T m_min(T a, T b) { return (a < b || m_isnan(a)) ? a : b; }

}  // namespace ember::kernels
