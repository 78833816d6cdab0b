#pragma once
// nn::functional — the stateless layer and loss functions (torch.nn.functional). Each records the
// autograd graph; the heavy ones (conv2d, pooling, normalisation, cross entropy) run as fused Backend ops
// with fused backward passes, the rest are compositions of differentiable tensor ops.
//
// Shapes: N batch, C channels, H/W spatial, O output channels, K kernel, D features.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <tuple>

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
// Adaptive pooling to [N, C, out_h, out_w] (or [C, out_h, out_w]) from any H, W, as PyTorch: output (i, j)
// pools rows [⌊i·H/out_h⌋, ⌈(i+1)·H/out_h⌉) and columns likewise (windows may overlap or differ in size;
// nn_math::adaptive_start/end). One size means out×out, as adaptive_avg_pool2d(x, 7) in PyTorch.
// max: the gradient goes to each window's first maximum (NaN wins).
Tensor adaptive_avg_pool2d(const Tensor& x, int64_t output_size);
Tensor adaptive_avg_pool2d(const Tensor& x, int64_t out_h, int64_t out_w);
Tensor adaptive_max_pool2d(const Tensor& x, int64_t output_size);
Tensor adaptive_max_pool2d(const Tensor& x, int64_t out_h, int64_t out_w);
// With the indices of the maxima (h·W + w within each plane, i64), as return_indices=True.
std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& x, int64_t out_h, int64_t out_w);

// x [N, C] or [N, C, *]; running_mean/var [C] (updated in place when training; may be undefined only when
// training); weight/bias [C] or undefined.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum = 0.1, double eps = 1e-5);
// Normalises over the trailing dims `normalized_shape`; weight/bias have that shape or are undefined.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);
// Zeroes each element with probability p and scales the rest by 1/(1-p) when training; identity otherwise.
Tensor dropout(const Tensor& x, double p, bool training, Generator* gen = nullptr);
// weight [V, D], indices i64 of any shape → [*indices.shape, D]. Backward scatter-adds into weight, except
// at the positions holding padding_idx (in [-V, V); negative counts from the end; nullopt: none), whose
// rows get no gradient from them, as PyTorch. An index outside [0, V) throws, naming it and its position.
// max_norm: first renormalises, in place and without a graph, the rows the indices name whose norm_type-norm
// exceeds it (torch.embedding_renorm_: scaled by max_norm / (norm + 1e-7)). scale_grad_by_freq: each
// position's gradient is divided by the number of times its index occurs in `indices`.
struct EmbeddingFuncOptions {
  std::optional<int64_t> padding_idx{};
  std::optional<double> max_norm{};
  double norm_type = 2.0;
  bool scale_grad_by_freq = false;
};
Tensor embedding(const Tensor& indices, const Tensor& weight, const EmbeddingFuncOptions& options = {});
// Sums, means or maxima of bags of embeddings without materialising them (torch.nn.functional.embedding_bag):
// input i64 is 2-D [B, N] (B bags of N; no offsets) or 1-D [L] with offsets i64 [B] (bag b is
// input[offsets[b] : offsets[b+1]], the last to the end; include_last_offset: offsets has B + 1 entries,
// the last one ending bag B - 1). offsets must start at 0, not decrease and not pass L. → [B, D].
// mode "sum", "mean" (divided by the bag's size) or "max" (element-wise; the gradient goes to the first
// maximum). per_sample_weights (input's shape, weight's dtype; "sum" only) multiply each embedding.
// padding_idx: those entries leave their bag (a mean divides by the others). An empty bag gives zeros.
// max_norm, norm_type and scale_grad_by_freq as embedding's ("max" refuses scale_grad_by_freq, as PyTorch).
struct EmbeddingBagFuncOptions {
  Tensor offsets{};
  std::optional<double> max_norm{};
  double norm_type = 2.0;
  bool scale_grad_by_freq = false;
  std::string mode = "mean";
  Tensor per_sample_weights{};
  bool include_last_offset = false;
  std::optional<int64_t> padding_idx{};
};
Tensor embedding_bag(const Tensor& input, const Tensor& weight, const EmbeddingBagFuncOptions& options = {});

// --- attention --------------------------------------------------------------------------------------------
struct AttentionOptions {
  Tensor attn_mask{};           // bool (true = attend) or q's dtype (added to the scores), broadcastable to
                                // [..., L, S]; undefined: none. It gets no gradient.
  bool is_causal = false;       // mask key j > query i (top-left aligned); not together with attn_mask
  double dropout_p = 0.0;       // applied to the attention weights when > 0 (pass 0 in eval, as PyTorch)
  std::optional<double> scale{};  // default 1/sqrt(E)
  Generator* gen = nullptr;     // the dropout's generator; nullptr: the default generator
};
// torch.nn.functional.scaled_dot_product_attention: softmax(q·kᵀ·scale + mask) · v, with the dropout on the
// softmax. q [..., L, E], k [..., S, E], v [..., S, Ev] (the same leading dims) → [..., L, Ev]. One fused
// op (FlashAttention-2's blocked algorithm): memory linear in L and S. A fully masked row gives 0 and passes
// no gradient, as PyTorch's math kernel since 2.5 (_safe_softmax; 2.0-2.4 gave NaN).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                   const AttentionOptions& options = {});

// --- recurrent cells --------------------------------------------------------------------------------------
// The pointwise part of one LSTM / GRU step, one fused op each (backends/rnn_math.h), PyTorch's gate order.
// lstm_cell_pointwise: gates [B, 4H] (x·W_ihᵀ + b_ih + h·W_hhᵀ + b_hh; order i, f, g, o), c_prev [B, H] →
//   {h, c} [B, H] (c = σ(f)·c_prev + σ(i)·tanh(g), h = σ(o)·tanh(c)); differentiable in gates and c_prev.
// gru_cell_pointwise: input_gates (x·W_ihᵀ + b_ih) and hidden_gates (h·W_hhᵀ + b_hh) [B, 3H] (order r, z, n),
//   h_prev [B, H] → h' [B, H] (n = tanh(x_n + r·h_n), h' = n + z·(h_prev - n)), as PyTorch's fused GRU cell.
std::pair<Tensor, Tensor> lstm_cell_pointwise(const Tensor& gates, const Tensor& c_prev);
Tensor gru_cell_pointwise(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& h_prev);
// One full step, torch.lstm_cell / torch.gru_cell: input [B, I] (or [I]), state [B, H] (or [H]), w_ih
// [4H, I] / [3H, I], w_hh [4H, H] / [3H, H], biases [4H] / [3H] or undefined. Returns {h, c} / h.
std::pair<Tensor, Tensor> lstm_cell(const Tensor& input, const Tensor& h, const Tensor& c, const Tensor& w_ih,
                                    const Tensor& w_hh, const Tensor& b_ih = {}, const Tensor& b_hh = {});
Tensor gru_cell(const Tensor& input, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih = {},
                const Tensor& b_hh = {});
// One direction of one recurrent layer over a sequence, as one autograd node (what nn::LSTM / nn::GRU run):
// xp [T, B, G·H] is the input projection of every step (x·W_ihᵀ + b_ih, plus b_hh for an LSTM), w_hh
// [G·H, H], b_hh [G·H] (GRU; undefined: none), h0 (and c0) [B, H]; reverse runs t = T-1 .. 0. Each step is one
// h·W_hhᵀ GEMM and the fused cell; the backward is backpropagation through time with the fused cell
// backward. Returns output [T, B, H], h_n and (LSTM) c_n [B, H].
struct RecurrentSequence {
  Tensor output, h_n, c_n;
};
RecurrentSequence lstm_sequence(const Tensor& xp, const Tensor& w_hh, const Tensor& h0, const Tensor& c0,
                                bool reverse = false);
RecurrentSequence gru_sequence(const Tensor& xp, const Tensor& w_hh, const Tensor& b_hh, const Tensor& h0,
                               bool reverse = false);

// --- losses --------------------------------------------------------------------------------------------
// Each takes one options struct shaped like LibTorch's torch::nn::functional::*FuncOptions. `weight` and
// `pos_weight` are constants (no gradient flows into them, as PyTorch).

// Class targets: input [N, C] (or [C] with a 0-d target, or [N, C, d1, ..., dk] with target
// [N, d1, ..., dk]), target i64 class indices; or probability targets: a floating target of the input's
// shape (each row a distribution over C; no ignore_index).
struct CrossEntropyOptions {
  int64_t ignore_index = -100;  // class targets only
  double label_smoothing = 0.0;  // in [0, 1]: target (1-ε)·target + ε/C
  Reduction reduction = Reduction::mean;
  Tensor weight{};  // [C] per-class weights, or undefined
};
using CrossEntropyFuncOptions = CrossEntropyOptions;  // LibTorch's name
// log_softmax + nll, with PyTorch 1.13's reductions: class targets with mean divide by the summed weights
// of the non-ignored targets (their count without weight; 0/0 = NaN when all are ignored); probability
// targets with mean divide by the number of rows (N·d1·…·dk), with or without weight. The plain
// class-index case (no weight) is one fused op; the others are compositions of differentiable ops.
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& options = {});

struct NLLLossOptions {
  int64_t ignore_index = -100;
  Reduction reduction = Reduction::mean;  // mean: Σ w[t]·loss / Σ w[t] over the non-ignored targets
  Tensor weight{};  // [C] or undefined
};
using NLLLossFuncOptions = NLLLossOptions;
// log_probs [N, C] (or [C], or [N, C, d1..dk]), target i64 [N] (or 0-d, or [N, d1..dk]).
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const NLLLossOptions& options = {});

struct MSELossOptions {
  Reduction reduction = Reduction::mean;
};
using MSELossFuncOptions = MSELossOptions;
struct L1LossOptions {
  Reduction reduction = Reduction::mean;
};
using L1LossFuncOptions = L1LossOptions;
// input and target of the same shape.
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossOptions& options = {});
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossOptions& options = {});

struct BCEWithLogitsOptions {
  Reduction reduction = Reduction::mean;
  Tensor weight{};      // broadcast to the input's shape (a rescaling per element), or undefined
  Tensor pos_weight{};  // [C] weights of the positive term, broadcast along the last dim, or undefined
};
using BinaryCrossEntropyWithLogitsFuncOptions = BCEWithLogitsOptions;
// Sigmoid + binary cross entropy, stable for large |logits| (PyTorch 1.13's formula, l = 1 + (p-1)·y):
//   loss = w · ((1 - y)·x + l·(log(1 + e^-|x|) + max(-x, 0)))
// logits and target of the same shape; gradients for both.
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                        const BCEWithLogitsOptions& options = {});

}  // namespace ember::nn::functional
