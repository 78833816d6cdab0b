#pragma once
// nn::functional — the stateless layer and loss functions (torch.nn.functional). Each records the
// autograd graph; the heavy ones (conv2d, pooling, normalisation, cross entropy) run as fused Backend ops
// with fused backward passes, the rest are compositions of differentiable tensor ops.
//
// Shapes: N batch, C channels, H/W spatial, O output channels, K kernel, D features.
#include <cstdint>

#include "autograd/ops.h"
#include "core/tensor.h"
#include "nn/options.h"

namespace ember::nn::functional {

// The activations, as torch::nn::functional names them (they are the ember:: ops of autograd/ops.h).
using ember::elu;
using ember::gelu;
using ember::hardtanh;
using ember::leaky_relu;
using ember::log_softmax;
using ember::relu;
using ember::sigmoid;
using ember::silu;
using ember::softmax;
using ember::softplus;
using ember::tanh;

enum class Reduction { none, mean, sum };

// y = x @ weightᵀ + bias. x [*, in], weight [out, in], bias [out] or undefined.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = {});

// The options structs are nn::Conv2dOptions, nn::Pool2dOptions, ... (nn/options.h), shared with the Modules.
using nn::AvgPool2dOptions;
using nn::Conv1dOptions;
using nn::Conv2dOptions;
using nn::MaxPool2dOptions;
using nn::Pool2dOptions;

// x [N, C, H, W] (or [C, H, W]), weight [O, C/groups, KH, KW], bias [O] or undefined → [N, O, OH, OW] with
// OH = ⌊(H + 2·padding - dilation·(KH-1) - 1) / stride⌋ + 1; below 1 (the dilated kernel larger than the
// padded input) throws, as PyTorch. Of the options it reads stride, padding, dilation and groups.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, const Conv2dOptions& options = {});
inline Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv2dOptions::Fields& options) {
  return conv2d(x, weight, bias, Conv2dOptions(options));  // F::conv2d(x, w, b, {.stride = 2, .padding = 1})
}
// x [N, C, L] (or [C, L]), weight [O, C/groups, K], bias [O] or undefined → [N, O, OL]: conv2d with a unit
// height (the same kernels and backward), as torch.nn.functional.conv1d.
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, const Conv1dOptions& options = {});
inline Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Conv1dOptions::Fields& options) {
  return conv1d(x, weight, bias, Conv1dOptions(options));
}

// x [N, C, H, W] (or [C, H, W]) → [N, C, OH, OW], OH = ⌊(H + 2·padding - kernel) / stride⌋ + 1; below 1
// (the kernel larger than the padded input) throws, as PyTorch. padding must be at most half the kernel.
// ceil_mode rounds up instead, keeping a last window only where it starts inside the input or the left
// padding (PyTorch's rule); a window reaching past the right padding is clipped there (avg with
// count_include_pad divides by the window up to the end of the padding, as PyTorch).
// max: the gradient goes to each window's first maximum. max_pool2d(x, 2): a 2×2 kernel, stride 2.
Tensor max_pool2d(const Tensor& x, const Pool2dOptions& options);
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options);
inline Tensor max_pool2d(const Tensor& x, const Pool2dOptions::Fields& o) { return max_pool2d(x, Pool2dOptions(o)); }
inline Tensor avg_pool2d(const Tensor& x, const Pool2dOptions::Fields& o) { return avg_pool2d(x, Pool2dOptions(o)); }
// Average pooling to [N, C, out_h, out_w]; H and W must be multiples of the output size (1×1: global).
Tensor adaptive_avg_pool2d(const Tensor& x, int64_t out_h = 1, int64_t out_w = 1);

// x [N, C] or [N, C, *]; running_mean/var [C] (updated in place when training; may be undefined only when
// training); weight/bias [C] or undefined.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum = 0.1, double eps = 1e-5);
// Normalises over the trailing dims `normalized_shape`; weight/bias have that shape or are undefined.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);
// Zeroes each element with probability p and scales the rest by 1/(1-p) when training; identity otherwise.
Tensor dropout(const Tensor& x, double p, bool training, Generator* gen = nullptr);
// weight [V, D], indices i64 of any shape → [*indices.shape, D]. Backward scatter-adds into weight.
Tensor embedding(const Tensor& indices, const Tensor& weight);

// --- losses: input [N, C] with class indices target i64 [N], or same-shaped targets ---------------------
struct CrossEntropyOptions {
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
  Reduction reduction = Reduction::mean;  // mean: over the targets that are not ignore_index
};
// log_softmax + nll fused. logits [N, C] (or [C] with a 0-d target).
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& options = {});
// log_probs [N, C], target i64 [N].
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, int64_t ignore_index = -100,
                Reduction reduction = Reduction::mean);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean);
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::mean);
// Sigmoid + binary cross entropy, stable for large |logits|: max(x,0) - x·y + log(1 + e^-|x|).
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                        Reduction reduction = Reduction::mean);

}  // namespace ember::nn::functional
