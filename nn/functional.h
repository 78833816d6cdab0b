#pragma once
// nn::functional — the stateless layer and loss functions (torch.nn.functional). Each records the
// autograd graph; the heavy ones (conv2d, pooling, normalisation, cross entropy) run as fused Backend ops
// with fused backward passes, the rest are compositions of differentiable tensor ops.
//
// Shapes: N batch, C channels, H/W spatial, O output channels, K kernel, D features.
#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <tuple>
#include <vector>

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

// --- convolution and pooling, round 2 (PyTorch 1.13 semantics; composites of the fused ops above, so
// both backends and autograd run them) ------------------------------------------------------------------
// conv1d/conv2d take padding nn::kSame / "same" (stride 1 only, as PyTorch: the output keeps the input's
// size; an odd total padding dilation·(K-1) puts its extra element on the right/bottom) and nn::kValid /
// "valid" (no padding). The Conv Modules' padding_mode (reflect, replicate, circular) pads through F::pad.
using nn::ConvTranspose1dOptions;
using nn::ConvTranspose2dOptions;
using nn::InterpolateFuncOptions;
using nn::InterpolateMode;
using nn::MaxUnpool1dOptions;
using nn::MaxUnpool2dOptions;
using nn::Pool1dOptions;
using nn::ConvTranspose1dFuncOptions;
using nn::ConvTranspose2dFuncOptions;
using nn::MaxUnpool1dFuncOptions;
using nn::MaxUnpool2dFuncOptions;
using nn::AvgPool1dOptions;
using nn::MaxPool1dOptions;
using nn::AvgPool1dFuncOptions;
using nn::AvgPool2dFuncOptions;
using nn::Conv1dFuncOptions;
using nn::Conv2dFuncOptions;
using nn::MaxPool1dFuncOptions;
using nn::MaxPool2dFuncOptions;

// Transposed convolution (the gradient of conv2d with respect to its input): x [N, C_in, H, W] (or
// [C_in, H, W]), weight [C_in, C_out/groups, KH, KW], bias [C_out] or undefined → [N, C_out, OH, OW],
// OH = (H - 1)·stride - 2·padding + dilation·(KH - 1) + output_padding + 1. One autograd node over the
// backends' conv2d entries: forward is conv2d's data gradient, backward conv2d itself (input) and conv2d's
// filter gradient (weight). output_padding must be smaller than stride or dilation (PyTorch's rule).
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
                        const ConvTranspose2dOptions& options = {});
inline Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                               const ConvTranspose2dOptions::Fields& options) {
  return conv_transpose2d(x, weight, bias, ConvTranspose2dOptions(options));
}
// x [N, C_in, L] (or [C_in, L]), weight [C_in, C_out/groups, K] → [N, C_out, OL]: conv_transpose2d of unit height.
Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
                        const ConvTranspose1dOptions& options = {});
inline Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias,
                               const ConvTranspose1dOptions::Fields& options) {
  return conv_transpose1d(x, weight, bias, ConvTranspose1dOptions(options));
}

// max_pool2d with its indices (i64, the output's shape: h·W + w of each window's maximum within its H×W
// plane, as PyTorch's return_indices=True), for max_unpool2d. dilation (max pooling only) spaces a
// window's elements: a window spans dilation·(kernel - 1) + 1 input rows/columns; the output size is
// PyTorch's pooling_output_shape with it. avg_pool2d's divisor_override divides each window's sum (of the
// input elements it covers) by that number instead of the window size.
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, const Pool2dOptions& options);
inline std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, const Pool2dOptions::Fields& o) {
  return max_pool2d_with_indices(x, Pool2dOptions(o));
}
// 1-D pooling of x [N, C, L] (or [C, L]) → [N, C, OL]: the 2-D pooling of unit height (ceil_mode,
// count_include_pad, dilation and indices as there; indices are positions in L). PyTorch's avg_pool1d has
// no divisor_override: setting one throws.
Tensor max_pool1d(const Tensor& x, const Pool1dOptions& options);
Tensor avg_pool1d(const Tensor& x, const Pool1dOptions& options);
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, const Pool1dOptions& options);
inline Tensor max_pool1d(const Tensor& x, const Pool1dOptions::Fields& o) { return max_pool1d(x, Pool1dOptions(o)); }
inline Tensor avg_pool1d(const Tensor& x, const Pool1dOptions::Fields& o) { return avg_pool1d(x, Pool1dOptions(o)); }

// The partial inverse of max pooling: x and indices [N, C, H, W] (or [C, H, W]; indices i64 as
// max_pool2d_with_indices gives them) → [N, C, OH, OW] of zeros with x's values at the indices of each
// plane. An index outside [0, OH·OW) throws. Backward: the output gradient gathered at the indices.
Tensor max_unpool2d(const Tensor& x, const Tensor& indices, const MaxUnpool2dOptions& options);
inline Tensor max_unpool2d(const Tensor& x, const Tensor& indices, const MaxUnpool2dOptions::Fields& o) {
  return max_unpool2d(x, indices, MaxUnpool2dOptions(o));
}
Tensor max_unpool1d(const Tensor& x, const Tensor& indices, const MaxUnpool1dOptions& options);

// --- padding and resampling (nn/functional_resample.cpp) -------------------------------------------------
// F::pad (torch.nn.functional.pad): pad lists (left, right) pairs starting from the LAST dim:
// {1, 2} pads the last dim by 1 before and 2 after, {1, 1, 2, 2} also the dim before it by 2.
//   constant: any number of dims (at most x.dim() pairs), `value` fills; negative padding crops.
//   reflect (mirrored without repeating the edge; padding < that dim's size), replicate (the edge repeated),
//   circular (wrapping around: padding <= the dim's size): the last 1, 2 or 3 dims of a [C, *] or [N, C, *]
//   input (circular: batched [N, C, *] only, as PyTorch 1.13), negative padding crops. They take no value.
enum class PadMode : uint8_t { constant, reflect, replicate, circular };
struct PadFuncFields {
  std::vector<int64_t> pad;
  PadMode mode = PadMode::constant;
  double value = 0.0;
};
class PadFuncOptions : public PadFuncFields {
 public:
  using Fields = PadFuncFields;
  PadFuncOptions(std::vector<int64_t> pad) : Fields{std::move(pad)} {}  // NOLINT: F::pad(x, {1, 1})
  auto& mode(PadMode m) {
    Fields::mode = m;
    return *this;
  }
  PadMode mode() const { return Fields::mode; }
  auto& value(double v) {
    Fields::value = v;
    return *this;
  }
  double value() const { return Fields::value; }
  const std::vector<int64_t>& pad() const { return Fields::pad; }
};
// F::pad(x, F::PadFuncOptions({1, 1, 2, 0}).mode(F::PadMode::reflect)) or F::pad(x, {1, 1}, PadMode::constant, 0.5).
Tensor pad(const Tensor& x, const PadFuncOptions& options);
inline Tensor pad(const Tensor& x, std::vector<int64_t> padding, PadMode mode = PadMode::constant, double value = 0.0) {
  return pad(x, PadFuncOptions(std::move(padding)).mode(mode).value(value));
}

// torch.nn.functional.interpolate on x [N, C, *spatial] (3-D: 1 spatial dim, 4-D: 2, 5-D: 3):
//   nearest: source index ⌊dst · scale⌋ (PyTorch's legacy rule, not rounding to the closest; nearest_exact
//     is ⌊(dst + ½)·scale⌋); linear (3-D), bilinear (4-D), trilinear (5-D): source position
//     scale·(dst + ½) - ½ clamped at 0 (align_corners false) or dst·(in - 1)/(out - 1) (true), blending the
//     two neighbours; area (adaptive average pooling, 3-D/4-D).
//   scale is in/out, or 1/scale_factor when scale_factor is given (unless recompute_scale_factor); the
//   output size is size, or ⌊in · scale_factor⌋. Backward: the gradient goes back along the same weights.
Tensor interpolate(const Tensor& x, const InterpolateFuncOptions& options);
inline Tensor interpolate(const Tensor& x, const InterpolateFuncOptions::Fields& o) {
  return interpolate(x, InterpolateFuncOptions(o));
}
// [*, C·r², H, W] → [*, C, H·r, W·r] (sub-pixel convolution's rearrangement), and its inverse
// [*, C, H·r, W·r] → [*, C·r², H, W], as torch.nn.functional.pixel_shuffle / pixel_unshuffle.
Tensor pixel_shuffle(const Tensor& x, int64_t upscale_factor);
Tensor pixel_unshuffle(const Tensor& x, int64_t downscale_factor);

// x [N, C] or [N, C, *]; running_mean/var [C] (updated in place when training; may be undefined only when
// training); weight/bias [C] or undefined.
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum = 0.1, double eps = 1e-5);
// Normalises over the trailing dims `normalized_shape`; weight/bias have that shape or are undefined.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);
// Root-mean-square norm over the trailing dims `normalized_shape` (torch.nn.functional.rms_norm, PyTorch 2.4):
// y = x / sqrt(mean(x²) + eps) · weight; weight has that shape or is undefined; eps defaults to the machine
// epsilon of x's dtype (torch.finfo(x.dtype).eps).
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = {},
                std::optional<double> eps = std::nullopt);
// rms_norm's eps when none is given: torch.finfo(dtype).eps.
double rms_norm_default_eps(DType dtype);
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
  bool enable_gqa = false;      // grouped-query attention: k, v may have fewer heads (dim -3) than q
};
// torch.nn.functional.scaled_dot_product_attention: softmax(q·kᵀ·scale + mask) · v, with the dropout on the
// softmax. q [..., L, E], k [..., S, E], v [..., S, Ev] (the same leading dims) → [..., L, Ev]. One fused
// op (FlashAttention-2's blocked algorithm): memory linear in L and S. A fully masked row gives 0 and passes
// no gradient, as PyTorch's math kernel since 2.5 (_safe_softmax; 2.0-2.4 gave NaN).
// enable_gqa (PyTorch 2.5): q [..., H, L, E], k [..., Hkv, S, E], v [..., Hkv, S, Ev] with H a multiple of
// Hkv; query head h attends with kv head h / (H / Hkv), as k and v repeat_interleave'd H / Hkv times along
// dim -3, but without the copies (the fused op indexes the shared heads; their gradients sum the group's).
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                   const AttentionOptions& options = {});

struct RotaryOptions {
  double theta = 10000.0;       // the frequencies' base
  bool interleaved = false;     // false: pairs (i, i + R/2) (GPT-NeoX, Llama); true: pairs (2i, 2i+1) (GPT-J)
  int64_t position_offset = 0;  // the position of x's first token (decoding with a KV cache: the cache's length)
  std::optional<int64_t> rotary_dim{};  // R: rotate the first R dims (even; partial rotary), the rest pass; default E
};
// Rotary position embedding (RoPE) as Hugging Face's LlamaRotaryEmbedding + apply_rotary_pos_emb (interleaved:
// GPT-J's rotate_every_two): x [..., L, E] → x·cos + rotate(x)·sin over the first R dims, where pair i of token l
// turns by (position_offset + l)·inv_freq[i], inv_freq[i] = 1 / theta^(2i/R). The cos/sin tables [L, R/2] are
// computed in x's dtype: for f32 exactly HF's f32 inv_freq and angles; f64 in f64 (HF rounds them to f32).
// One fused op, nothing of x's size besides the output; the backward is the inverse rotation.
Tensor apply_rotary(const Tensor& x, const RotaryOptions& options = {});

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
// Each takes one options aggregate (designated initialisers: {.reduction = Reduction::sum}) and, as LibTorch,
// its builder *FuncOptions (F::CrossEntropyFuncOptions().weight(w).ignore_index(3); the builders are below,
// after the losses of round 3). `weight` and `pos_weight` are constants (no gradient flows into them, as PyTorch).

// Class targets: input [N, C] (or [C] with a 0-d target, or [N, C, d1, ..., dk] with target
// [N, d1, ..., dk]), target i64 class indices; or probability targets: a floating target of the input's
// shape (each row a distribution over C; no ignore_index).
struct CrossEntropyOptions {
  int64_t ignore_index = -100;  // class targets only
  double label_smoothing = 0.0;  // in [0, 1]: target (1-ε)·target + ε/C
  Reduction reduction = Reduction::mean;
  Tensor weight{};  // [C] per-class weights, or undefined
};
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
// log_probs [N, C] (or [C], or [N, C, d1..dk]), target i64 [N] (or 0-d, or [N, d1..dk]).
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const NLLLossOptions& options = {});

struct MSELossOptions {
  Reduction reduction = Reduction::mean;
};
struct L1LossOptions {
  Reduction reduction = Reduction::mean;
};
// input and target of the same shape.
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossOptions& options = {});
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossOptions& options = {});

struct BCEWithLogitsOptions {
  Reduction reduction = Reduction::mean;
  Tensor weight{};      // broadcast to the input's shape (a rescaling per element), or undefined
  Tensor pos_weight{};  // [C] weights of the positive term, broadcast along the last dim, or undefined
};
// Sigmoid + binary cross entropy, stable for large |logits| (PyTorch 1.13's formula, l = 1 + (p-1)·y):
//   loss = w · ((1 - y)·x + l·(log(1 + e^-|x|) + max(-x, 0)))
// logits and target of the same shape; gradients for both.
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target,
                                        const BCEWithLogitsOptions& options = {});


// --- losses, round 3 (nn/functional_loss.cpp, functional_ctc.cpp) ----------------------------------------
// PyTorch 1.13's formulas, composed of differentiable ops (so they run on every backend, autograd included),
// except binary_cross_entropy (PyTorch's exact gradient) and ctc_loss (its own alpha-beta recursion).
// Where PyTorch errors or warns on a target of another shape (smooth_l1, huber, binary_cross_entropy) the
// shapes must match; elsewhere the operands broadcast as in PyTorch, and a pair that does not throws naming
// the loss. Every error names the loss.

struct SmoothL1LossOptions {
  Reduction reduction = Reduction::mean;
  double beta = 1.0;  // >= 0; 0 gives l1_loss
};
// z = |input - target|: 0.5·z²/beta where z < beta, else z - 0.5·beta. input and target of one shape.
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossOptions& options = {});

struct HuberLossOptions {
  Reduction reduction = Reduction::mean;
  double delta = 1.0;  // > 0
};
// z = |input - target|: 0.5·z² where z < delta, else delta·(z - 0.5·delta). input and target of one shape.
Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossOptions& options = {});

// kl_div's reduction: Reduction's three and batchmean (the sum divided by input.size(0), the mathematically
// right KL divergence; mean divides by every element, as PyTorch). {.reduction = Reduction::sum} converts.
struct KLDivReduction {
  enum Kind { none, batchmean, sum, mean };
  Kind kind = mean;
  KLDivReduction(Kind k = mean) : kind(k) {}  // NOLINT: implicit, KLDivReduction::batchmean
  KLDivReduction(Reduction r)                 // NOLINT: implicit, Reduction::sum
      : kind(r == Reduction::none ? none : r == Reduction::sum ? sum : mean) {}
  bool operator==(const KLDivReduction&) const = default;
};
struct KLDivOptions {
  KLDivReduction reduction = KLDivReduction::mean;
  bool log_target = false;  // target holds log-probabilities
};
// input: log-probabilities; target: probabilities (or log-probabilities with log_target). Per element
// target·(log target - input) (0 where target = 0), or e^target·(target - input) with log_target.
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivOptions& options = {});

struct CosineSimilarityOptions {
  int64_t dim = 1;
  double eps = 1e-8;
};
// Σ_dim (x1/‖x1‖)·(x2/‖x2‖), each ‖x‖² clamped to at least eps² (PyTorch 1.13's formula: the clamp changes the
// value, not the gradient's path). x1 and x2 broadcast; the result drops `dim`.
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityOptions& options = {});

struct PairwiseDistanceOptions {
  double p = 2.0;
  double eps = 1e-6;
  bool keepdim = false;
};
// ‖x1 - x2 + eps‖_p over the last dim (x1 and x2 broadcast), as torch.pairwise_distance.
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, const PairwiseDistanceOptions& options = {});

struct CosineEmbeddingLossOptions {
  double margin = 0.0;
  Reduction reduction = Reduction::mean;
};
// x1, x2 [N, D] with target [N] (or [D] with a 0-d target) of 1 or -1: 1 - cos where target = 1,
// max(0, cos - margin) where target = -1 (0 for other values), cos = x1·x2 / √((‖x1‖² + 1e-12)(‖x2‖² + 1e-12)).
Tensor cosine_embedding_loss(const Tensor& x1, const Tensor& x2, const Tensor& target,
                             const CosineEmbeddingLossOptions& options = {});

struct MarginRankingLossOptions {
  double margin = 0.0;
  Reduction reduction = Reduction::mean;
};
// max(0, -target·(x1 - x2) + margin); x1, x2 and target have one number of dims and broadcast.
Tensor margin_ranking_loss(const Tensor& x1, const Tensor& x2, const Tensor& target,
                           const MarginRankingLossOptions& options = {});

struct TripletMarginLossOptions {
  double margin = 1.0;
  double p = 2.0;
  double eps = 1e-6;
  bool swap = false;  // use min(d(a, n), d(p, n)) as the negative distance
  Reduction reduction = Reduction::mean;
};
// max(0, margin + d(anchor, positive) - d(anchor, negative)), d = pairwise_distance(·, ·, p, eps); the three
// inputs have one number of dims ([N, D] or [D]).
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           const TripletMarginLossOptions& options = {});

struct PoissonNLLLossOptions {
  bool log_input = true;  // input is log(rate): e^input - target·input; else input - target·log(input + eps)
  bool full = false;      // add Stirling's target·log(target) - target + ½·log(2π·target) where target > 1
  double eps = 1e-8;
  Reduction reduction = Reduction::mean;
};
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, const PoissonNLLLossOptions& options = {});

struct GaussianNLLLossOptions {
  bool full = false;  // add ½·log(2π)
  double eps = 1e-6;  // var is clamped to at least eps (the value only; its gradient passes, as PyTorch)
  Reduction reduction = Reduction::mean;
};
// ½·(log var + (input - target)²/var). var has the input's shape, or its shape without the last dim, or with
// the last dim 1 (one variance for every feature: homoscedastic); a negative var throws.
Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var,
                         const GaussianNLLLossOptions& options = {});

struct BinaryCrossEntropyOptions {
  Tensor weight{};  // broadcast to the input's shape, or undefined
  Reduction reduction = Reduction::mean;
};
// On probabilities: -w·(t·log x + (1 - t)·log(1 - x)), each log clamped at -100 (PyTorch's). input in [0, 1]
// (else throws) and target of one shape. Gradients (PyTorch's): w·(x - t)/max(x(1 - x), 1e-12) for the
// input, w·(log(1 - x) - log x) for the target.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyOptions& options = {});

struct MultiLabelSoftMarginLossOptions {
  Tensor weight{};  // [C] (broadcast along the class dim), or undefined
  Reduction reduction = Reduction::mean;
};
// input [N, C] (or [C]), target of 0/1 of its shape: -(t·logσ(x) + (1 - t)·logσ(-x))·w averaged over C,
// then reduced over N.
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   const MultiLabelSoftMarginLossOptions& options = {});

struct CTCLossOptions {
  int64_t blank = 0;
  Reduction reduction = Reduction::mean;  // mean: each loss divided by its target length, then the mean
  bool zero_infinity = false;             // infinite losses (impossible alignments) and their gradients to 0
};
// Connectionist temporal classification, as torch.nn.functional.ctc_loss: log_probs [T, N, C] (or [T, C]
// unbatched) log-softmax outputs; targets i64 padded [N, S] or all concatenated 1-D (sum of target_lengths);
// input_lengths and target_lengths i64 [N] (or 0-d / [1] unbatched). Returns the negative log-likelihoods
// [N] (none) or their reduction. Gradient for log_probs only. Runs on the host (a CUDA input is copied to
// the CPU and the gradient back).
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, const CTCLossOptions& options = {});
// The lengths as lists, as LibTorch's IntArrayRef overload.
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const std::vector<int64_t>& input_lengths,
                const std::vector<int64_t>& target_lengths, const CTCLossOptions& options = {});

// --- norms, round 3 (nn/functional_norm.cpp): group, instance and local response norm, normalize --------
// x [N, C, *]: normalised over each group of C/num_groups channels and *, then weight/bias [C] (undefined:
// none) per channel. Runs as layer_norm over [N, num_groups, C/num_groups·*] (its fused kernels).
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5);
// x [N, C, *]: each (sample, channel) normalised over * with its own statistics (use_input_stats), or with
// running_mean/var [C] (eval). With use_input_stats the running statistics (when defined) are updated with
// momentum from the batch's mean over N of each channel's statistics (unbiased var), as PyTorch.
Tensor instance_norm(const Tensor& x, const Tensor& running_mean = {}, const Tensor& running_var = {},
                     const Tensor& weight = {}, const Tensor& bias = {}, bool use_input_stats = true,
                     double momentum = 0.1, double eps = 1e-5);
// x [N, C, *] (at least 3 dims): x / (k + alpha/size · Σ x²)^beta, the sum over the `size` channels
// c - size/2 .. c + (size-1)/2 (zero beyond the edges), as PyTorch's avg-pool formula.
Tensor local_response_norm(const Tensor& x, int64_t size, double alpha = 1e-4, double beta = 0.75, double k = 1.0);
// x / max(‖x‖_p, eps) along dim (p > 0 or INFINITY; p = 0 counts non-zeros).
Tensor normalize(const Tensor& x, double p = 2.0, int64_t dim = 1, double eps = 1e-12);

// --- LibTorch's builders for the loss and norm options ---------------------------------------------------
// Each *FuncOptions is its options aggregate (so it passes wherever that does) with LibTorch's accessors:
// F::SmoothL1LossFuncOptions().beta(0.5).reduction(F::Reduction::sum); o.beta() reads.
#define EMBER_LOSS_BUILDER(Name, Agg)                  \
  using Fields = Agg;                                  \
  Name() = default;                                    \
  Name(const Fields& fields) : Fields(fields) {}  // NOLINT: implicit, from the aggregate

class CrossEntropyFuncOptions : public CrossEntropyOptions {
 public:
  EMBER_LOSS_BUILDER(CrossEntropyFuncOptions, CrossEntropyOptions)
  EMBER_OPTION(int64_t, ignore_index)
  EMBER_OPTION(double, label_smoothing)
  EMBER_OPTION(Reduction, reduction)
  EMBER_OPTION(Tensor, weight)
};
class NLLLossFuncOptions : public NLLLossOptions {
 public:
  EMBER_LOSS_BUILDER(NLLLossFuncOptions, NLLLossOptions)
  EMBER_OPTION(int64_t, ignore_index)
  EMBER_OPTION(Reduction, reduction)
  EMBER_OPTION(Tensor, weight)
};
class MSELossFuncOptions : public MSELossOptions {
 public:
  EMBER_LOSS_BUILDER(MSELossFuncOptions, MSELossOptions)
  EMBER_OPTION(Reduction, reduction)
};
class L1LossFuncOptions : public L1LossOptions {
 public:
  EMBER_LOSS_BUILDER(L1LossFuncOptions, L1LossOptions)
  EMBER_OPTION(Reduction, reduction)
};
class BinaryCrossEntropyWithLogitsFuncOptions : public BCEWithLogitsOptions {
 public:
  EMBER_LOSS_BUILDER(BinaryCrossEntropyWithLogitsFuncOptions, BCEWithLogitsOptions)
  EMBER_OPTION(Reduction, reduction)
  EMBER_OPTION(Tensor, weight)
  EMBER_OPTION(Tensor, pos_weight)
};
class SmoothL1LossFuncOptions : public SmoothL1LossOptions {
 public:
  EMBER_LOSS_BUILDER(SmoothL1LossFuncOptions, SmoothL1LossOptions)
  EMBER_OPTION(Reduction, reduction)
  EMBER_OPTION(double, beta)
};
class HuberLossFuncOptions : public HuberLossOptions {
 public:
  EMBER_LOSS_BUILDER(HuberLossFuncOptions, HuberLossOptions)
  EMBER_OPTION(Reduction, reduction)
  EMBER_OPTION(double, delta)
};
class KLDivFuncOptions : public KLDivOptions {
 public:
  EMBER_LOSS_BUILDER(KLDivFuncOptions, KLDivOptions)
  EMBER_OPTION(KLDivReduction, reduction)
  EMBER_OPTION(bool, log_target)
};
class CosineSimilarityFuncOptions : public CosineSimilarityOptions {
 public:
  EMBER_LOSS_BUILDER(CosineSimilarityFuncOptions, CosineSimilarityOptions)
  EMBER_OPTION(int64_t, dim)
  EMBER_OPTION(double, eps)
};
class PairwiseDistanceFuncOptions : public PairwiseDistanceOptions {
 public:
  EMBER_LOSS_BUILDER(PairwiseDistanceFuncOptions, PairwiseDistanceOptions)
  EMBER_OPTION(double, p)
  EMBER_OPTION(double, eps)
  EMBER_OPTION(bool, keepdim)
};
class CosineEmbeddingLossFuncOptions : public CosineEmbeddingLossOptions {
 public:
  EMBER_LOSS_BUILDER(CosineEmbeddingLossFuncOptions, CosineEmbeddingLossOptions)
  EMBER_OPTION(double, margin)
  EMBER_OPTION(Reduction, reduction)
};
class MarginRankingLossFuncOptions : public MarginRankingLossOptions {
 public:
  EMBER_LOSS_BUILDER(MarginRankingLossFuncOptions, MarginRankingLossOptions)
  EMBER_OPTION(double, margin)
  EMBER_OPTION(Reduction, reduction)
};
class TripletMarginLossFuncOptions : public TripletMarginLossOptions {
 public:
  EMBER_LOSS_BUILDER(TripletMarginLossFuncOptions, TripletMarginLossOptions)
  EMBER_OPTION(double, margin)
  EMBER_OPTION(double, p)
  EMBER_OPTION(double, eps)
  EMBER_OPTION(bool, swap)
  EMBER_OPTION(Reduction, reduction)
};
class PoissonNLLLossFuncOptions : public PoissonNLLLossOptions {
 public:
  EMBER_LOSS_BUILDER(PoissonNLLLossFuncOptions, PoissonNLLLossOptions)
  EMBER_OPTION(bool, log_input)
  EMBER_OPTION(bool, full)
  EMBER_OPTION(double, eps)
  EMBER_OPTION(Reduction, reduction)
};
class GaussianNLLLossFuncOptions : public GaussianNLLLossOptions {
 public:
  EMBER_LOSS_BUILDER(GaussianNLLLossFuncOptions, GaussianNLLLossOptions)
  EMBER_OPTION(bool, full)
  EMBER_OPTION(double, eps)
  EMBER_OPTION(Reduction, reduction)
};
class BinaryCrossEntropyFuncOptions : public BinaryCrossEntropyOptions {
 public:
  EMBER_LOSS_BUILDER(BinaryCrossEntropyFuncOptions, BinaryCrossEntropyOptions)
  EMBER_OPTION(Tensor, weight)
  EMBER_OPTION(Reduction, reduction)
};
class MultiLabelSoftMarginLossFuncOptions : public MultiLabelSoftMarginLossOptions {
 public:
  EMBER_LOSS_BUILDER(MultiLabelSoftMarginLossFuncOptions, MultiLabelSoftMarginLossOptions)
  EMBER_OPTION(Tensor, weight)
  EMBER_OPTION(Reduction, reduction)
};
using MultilabelSoftMarginLossFuncOptions = MultiLabelSoftMarginLossFuncOptions;  // LibTorch's spelling
class CTCLossFuncOptions : public CTCLossOptions {
 public:
  EMBER_LOSS_BUILDER(CTCLossFuncOptions, CTCLossOptions)
  EMBER_OPTION(int64_t, blank)
  EMBER_OPTION(Reduction, reduction)
  EMBER_OPTION(bool, zero_infinity)
};
#undef EMBER_LOSS_BUILDER

// The norms' options, LibTorch's: F::group_norm(x, F::GroupNormFuncOptions(2).weight(w).eps(1e-3)), or the
// fields: F::group_norm(x, {.num_groups = 2, .weight = w}).
struct GroupNormFuncFields {
  int64_t num_groups = 1;
  Tensor weight{}, bias{};
  double eps = 1e-5;
};
class GroupNormFuncOptions : public GroupNormFuncFields {
 public:
  using Fields = GroupNormFuncFields;
  GroupNormFuncOptions() = default;
  template <std::same_as<Fields> F>
  GroupNormFuncOptions(const F& fields) : Fields(fields) {}  // NOLINT: implicit, as ConvOptions
  explicit GroupNormFuncOptions(int64_t num_groups) : Fields{num_groups} {}
  EMBER_OPTION(int64_t, num_groups)
  EMBER_OPTION(Tensor, weight)
  EMBER_OPTION(Tensor, bias)
  EMBER_OPTION(double, eps)
};
inline Tensor group_norm(const Tensor& x, const GroupNormFuncOptions& o) {
  return group_norm(x, o.num_groups(), o.weight(), o.bias(), o.eps());
}
inline Tensor group_norm(const Tensor& x, const GroupNormFuncFields& o) { return group_norm(x, GroupNormFuncOptions(o)); }

struct InstanceNormFuncFields {
  Tensor running_mean{}, running_var{}, weight{}, bias{};
  bool use_input_stats = true;
  double momentum = 0.1;
  double eps = 1e-5;
};
class InstanceNormFuncOptions : public InstanceNormFuncFields {
 public:
  using Fields = InstanceNormFuncFields;
  InstanceNormFuncOptions() = default;
  template <std::same_as<Fields> F>
  InstanceNormFuncOptions(const F& fields) : Fields(fields) {}  // NOLINT: implicit
  EMBER_OPTION(Tensor, running_mean)
  EMBER_OPTION(Tensor, running_var)
  EMBER_OPTION(Tensor, weight)
  EMBER_OPTION(Tensor, bias)
  EMBER_OPTION(bool, use_input_stats)
  EMBER_OPTION(double, momentum)
  EMBER_OPTION(double, eps)
};
inline Tensor instance_norm(const Tensor& x, const InstanceNormFuncOptions& o) {
  return instance_norm(x, o.running_mean(), o.running_var(), o.weight(), o.bias(), o.use_input_stats(), o.momentum(),
                       o.eps());
}
inline Tensor instance_norm(const Tensor& x, const InstanceNormFuncFields& o) {
  return instance_norm(x, InstanceNormFuncOptions(o));
}

struct LocalResponseNormFuncFields {
  int64_t size = 1;
  double alpha = 1e-4, beta = 0.75, k = 1.0;
};
class LocalResponseNormFuncOptions : public LocalResponseNormFuncFields {
 public:
  using Fields = LocalResponseNormFuncFields;
  LocalResponseNormFuncOptions() = default;
  template <std::same_as<Fields> F>
  LocalResponseNormFuncOptions(const F& fields) : Fields(fields) {}  // NOLINT: implicit
  explicit LocalResponseNormFuncOptions(int64_t size) : Fields{size} {}
  EMBER_OPTION(int64_t, size)
  EMBER_OPTION(double, alpha)
  EMBER_OPTION(double, beta)
  EMBER_OPTION(double, k)
};
inline Tensor local_response_norm(const Tensor& x, const LocalResponseNormFuncOptions& o) {
  return local_response_norm(x, o.size(), o.alpha(), o.beta(), o.k());
}
inline Tensor local_response_norm(const Tensor& x, const LocalResponseNormFuncFields& o) {
  return local_response_norm(x, LocalResponseNormFuncOptions(o));
}

struct NormalizeFuncFields {
  double p = 2.0;
  int64_t dim = 1;
  double eps = 1e-12;
};
class NormalizeFuncOptions : public NormalizeFuncFields {
 public:
  using Fields = NormalizeFuncFields;
  NormalizeFuncOptions() = default;
  template <std::same_as<Fields> F>
  NormalizeFuncOptions(const F& fields) : Fields(fields) {}  // NOLINT: implicit
  EMBER_OPTION(double, p)
  EMBER_OPTION(int64_t, dim)
  EMBER_OPTION(double, eps)
};
inline Tensor normalize(const Tensor& x, const NormalizeFuncOptions& o) { return normalize(x, o.p(), o.dim(), o.eps()); }
inline Tensor normalize(const Tensor& x, const NormalizeFuncFields& o) { return normalize(x, NormalizeFuncOptions(o)); }

}  // namespace ember::nn::functional
