#include "nn/init.h"

#include <cmath>

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

}  // namespace ember::nn::init
