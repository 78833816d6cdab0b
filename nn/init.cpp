#include "nn/init.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "core/raw.h"

namespace ember::nn::init {

std::pair<int64_t, int64_t> fans(const Tensor& t) {
  EMBER_CHECK(t.dim() >= 2, "init: fan in/out need a weight with at least 2 dims, got shape ", t.shape());
  int64_t receptive = 1;
  for (int d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

double calculate_gain(Nonlinearity nonlinearity, double param) {
  switch (nonlinearity) {
    case Nonlinearity::linear:
    case Nonlinearity::sigmoid: return 1.0;
    case Nonlinearity::tanh: return 5.0 / 3.0;
    case Nonlinearity::relu: return std::sqrt(2.0);
    case Nonlinearity::leaky_relu: return std::sqrt(2.0 / (1 + param * param));
  }
  return 1.0;
}

void uniform_(Tensor& t, double a, double b, Generator* gen) { raw::random_(t, RandomOp::uniform, a, b, gen); }
void normal_(Tensor& t, double mean, double std, Generator* gen) { raw::random_(t, RandomOp::normal, mean, std, gen); }
void constant_(Tensor& t, double value) { raw::fill_(t, value); }
void zeros_(Tensor& t) { raw::fill_(t, 0.0); }
void ones_(Tensor& t) { raw::fill_(t, 1.0); }

namespace {
double kaiming_std(const Tensor& t, double a, FanMode mode, Nonlinearity nonlinearity) {
  const auto [fan_in, fan_out] = fans(t);
  const int64_t fan = mode == FanMode::fan_in ? fan_in : fan_out;
  EMBER_CHECK(fan > 0, "init: kaiming init of an empty weight ", t.shape());
  return calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan));
}
double xavier_std(const Tensor& t, double gain) {
  const auto [fan_in, fan_out] = fans(t);
  return gain * std::sqrt(2.0 / static_cast<double>(fan_in + fan_out));
}
}  // namespace

void kaiming_uniform_(Tensor& t, double a, FanMode mode, Nonlinearity nonlinearity, Generator* gen) {
  const double bound = std::sqrt(3.0) * kaiming_std(t, a, mode, nonlinearity);
  uniform_(t, -bound, bound, gen);
}

void kaiming_normal_(Tensor& t, double a, FanMode mode, Nonlinearity nonlinearity, Generator* gen) {
  normal_(t, 0.0, kaiming_std(t, a, mode, nonlinearity), gen);
}

void xavier_uniform_(Tensor& t, double gain, Generator* gen) {
  const double a = std::sqrt(3.0) * xavier_std(t, gain);
  uniform_(t, -a, a, gen);
}

void xavier_normal_(Tensor& t, double gain, Generator* gen) { normal_(t, 0.0, xavier_std(t, gain), gen); }

namespace {
double normal_cdf(double x) { return 0.5 * (1.0 + std::erf(x / std::numbers::sqrt2)); }
// Φ⁻¹(u) for u in (0, 1): Giles' single-precision erfinv as the start, then Newton steps on erf to double
// precision.
double normal_quantile(double u) {
  const double y = std::clamp(2.0 * u - 1.0, -1.0 + 1e-16, 1.0 - 1e-16);
  double w = -std::log((1.0 - y) * (1.0 + y)), x;
  if (w < 5.0) {
    w -= 2.5;
    x = 2.81022636e-08;
    for (const double c : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                           -0.00417768164, 0.246640727, 1.50140941})
      x = c + x * w;
  } else {
    w = std::sqrt(w) - 3.0;
    x = -0.000200214257;
    for (const double c : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                           0.00943887047, 1.00167406, 2.83297682})
      x = c + x * w;
  }
  x *= y;
  for (int i = 0; i < 2; ++i) x -= (std::erf(x) - y) / (2.0 / std::sqrt(std::numbers::pi) * std::exp(-x * x));
  return std::numbers::sqrt2 * x;
}
}  // namespace

void trunc_normal_(Tensor& t, double mean, double std, double a, double b, Generator* gen) {
  EMBER_CHECK(std > 0 && a < b, "init: trunc_normal_ needs std > 0 and a < b, got std ", std, ", [", a, ", ", b, "]");
  uniform_(t, normal_cdf((a - mean) / std), normal_cdf((b - mean) / std), gen);
  std::vector<double> v = t.to_vector<double>();  // once per weight at construction: the host is fine
  for (double& x : v) x = std::clamp(mean + std * normal_quantile(x), a, b);
  raw::copy_(t, from_vector(v, t.shape()));
}

}  // namespace ember::nn::init
