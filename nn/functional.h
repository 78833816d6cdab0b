#pragma once
// nn::functional — the stateless layer and loss functions (torch.nn.functional). Each records the
// autograd graph; the heavy ones (conv2d, pooling, normalisation, cross entropy) run as fused Backend ops
// with fused backward passes, the rest are compositions of differentiable tensor ops.
//
// Shapes: N batch, C channels, H/W spatial, O output channels, K kernel, D features.
#include <cstdint>
#include <optional>

#include "autograd/ops.h"
#include "core/tensor.h"

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

struct Conv2dOptions {
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  int64_t groups = 1;
};
// x [N, C, H, W] (or [C, H, W]), weight [O, C/groups, KH, KW], bias [O] or undefined → [N, O, OH, OW] with
// OH = ⌊(H + 2·padding - dilation·(KH-1) - 1) / stride⌋ + 1; below 1 (the dilated kernel larger than the
// padded input) throws, as PyTorch.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {}, const Conv2dOptions& options = {});

struct Pool2dOptions {
  int64_t kernel[2] = {2, 2};
  int64_t stride[2] = {0, 0};  // 0: the kernel size (PyTorch's default)
  int64_t padding[2] = {0, 0};
  bool count_include_pad = true;  // avg only
  bool ceil_mode = false;         // ⌈⌉ instead of ⌊⌋ in OH, OW (PyTorch's ceil_mode)
};
// x [N, C, H, W] (or [C, H, W]) → [N, C, OH, OW], OH = ⌊(H + 2·padding - kernel) / stride⌋ + 1; below 1
// (the kernel larger than the padded input) throws, as PyTorch. padding must be at most half the kernel.
// ceil_mode rounds up instead, keeping a last window only where it starts inside the input or the left
// padding (PyTorch's rule); a window reaching past the right padding is clipped there (avg with
// count_include_pad divides by the window up to the end of the padding, as PyTorch).
// max: the gradient goes to each window's first maximum.
Tensor max_pool2d(const Tensor& x, const Pool2dOptions& options);
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options);
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

// --- attention --------------------------------------------------------------------------------------------
struct AttentionOptions {
  Tensor attn_mask;             // bool (true = attend) or q's dtype (added to the scores), broadcastable to
                                // [..., L, S]; undefined: none. It gets no gradient.
  bool is_causal = false;       // mask key j > query i (top-left aligned); not together with attn_mask
  double dropout_p = 0.0;       // applied to the attention weights when > 0 (pass 0 in eval, as PyTorch)
  std::optional<double> scale;  // default 1/sqrt(E)
  Generator* gen = nullptr;     // the dropout's generator; nullptr: the default generator
};
// torch.nn.functional.scaled_dot_product_attention: softmax(q·kᵀ·scale + mask) · v, with the dropout on the
// softmax. q [..., L, E], k [..., S, E], v [..., S, Ev] (the same leading dims) → [..., L, Ev]. One fused
// op (FlashAttention-2's blocked algorithm): memory linear in L and S. A fully masked row gives 0 and passes
// no gradient, as PyTorch's math kernel since 2.5 (_safe_softmax; 2.0-2.4 gave NaN).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                   const AttentionOptions& options = {});

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
