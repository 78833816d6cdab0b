#pragma once
// Parameter initialisation (torch.nn.init), in place, through a Generator (default: the global one).
#include "core/tensor.h"

namespace ember::nn::init {

enum class FanMode { fan_in, fan_out };
enum class Nonlinearity { linear, relu, leaky_relu, tanh, sigmoid };

// fan_in/fan_out of a weight: [out, in] → (in, out); [O, I, k...] → (I·∏k, O·∏k). Needs ≥ 2 dims.
std::pair<int64_t, int64_t> fans(const Tensor& t);
// torch.nn.init.calculate_gain (param: leaky_relu's negative slope).
double calculate_gain(Nonlinearity nonlinearity, double param = 0.01);

void uniform_(Tensor& t, double a, double b, Generator* gen = nullptr);
void normal_(Tensor& t, double mean, double std, Generator* gen = nullptr);
void constant_(Tensor& t, double value);
void zeros_(Tensor& t);
void ones_(Tensor& t);
// U(-bound, bound), bound = gain·sqrt(3 / fan), gain = calculate_gain(nonlinearity, a).
void kaiming_uniform_(Tensor& t, double a = 0, FanMode mode = FanMode::fan_in,
                      Nonlinearity nonlinearity = Nonlinearity::leaky_relu, Generator* gen = nullptr);
void kaiming_normal_(Tensor& t, double a = 0, FanMode mode = FanMode::fan_in,
                     Nonlinearity nonlinearity = Nonlinearity::leaky_relu, Generator* gen = nullptr);
// U(-a, a), a = gain·sqrt(6 / (fan_in + fan_out)); and N(0, gain·sqrt(2 / (fan_in + fan_out))).
void xavier_uniform_(Tensor& t, double gain = 1.0, Generator* gen = nullptr);
void xavier_normal_(Tensor& t, double gain = 1.0, Generator* gen = nullptr);
// N(mean, std) truncated to [a, b] (torch.nn.init.trunc_normal_: the bounds are values, not multiples of std),
// drawn as PyTorch draws it: u ~ U(Φ(α), Φ(β)), t = mean + std·Φ⁻¹(u), clamped to [a, b].
void trunc_normal_(Tensor& t, double mean = 0.0, double std = 1.0, double a = -2.0, double b = 2.0,
                   Generator* gen = nullptr);

}  // namespace ember::nn::init
