// The layer registry's table: every {type: ...} with its key rows and factory (nn/registry_table.h).
#include "nn/registry_table.h"

#include <algorithm>

#include "nn/resnet.h"
#include "nn/rnn.h"
#include "nn/transformer.h"
#include "nn/vit.h"

namespace ember::nn::registry {
namespace {


int64_t need_channels(const Args& a, const char* what) {
  if (a.in.size() != 3) a.error(std::string(what) + " needs image input [C, H, W], but the input here is " + a.in.str() +
                                " (one sample, no batch dim)");
  return a.in[0];
}

ExpandingArray<2> hw(std::pair<int64_t, int64_t> p) { return ExpandingArray<2>{p.first, p.second}; }

Pool2dOptions pool_options(const Args& a) {
  return Pool2dOptions(hw(a.pair("kernel_size")))
      .stride(hw(a.pair("stride", 0)))  // 0: Pool2dOptions' "the kernel size", as the row's default says
      .padding(hw(a.pair("padding")))
      .ceil_mode(a.boolean("ceil_mode"));
}
Pool1dOptions pool1d_options(const Args& a) {
  return Pool1dOptions(a.integer("kernel_size"))
      .stride(a.integer("stride", 0))  // 0: the kernel size, as above
      .padding(a.integer("padding"))
      .ceil_mode(a.boolean("ceil_mode"));
}
// A conv's padding: the row's ints, or "same" / "valid".
template <size_t D>
ConvPadding<D> conv_padding(const Args& a) {
  if (const auto named = a.named("padding")) return ConvPadding<D>(named->c_str());
  if constexpr (D == 2) return ConvPadding<2>(hw(a.pair("padding")));
  else return ConvPadding<1>(a.integer("padding"));
}


// lstm / gru on a sequence [T, C] (batches [N, T, C]: batch_first), output [T, D·H].
template <typename Layer>
std::shared_ptr<Module> make_recurrent(const Args& a, Generator* gen) {
  if (a.in.size() != 2 || a.dtype == DType::i64)
    a.error("a recurrent layer needs a floating sequence [T, features], but the input here is " +
            std::string(dtype_name(a.dtype)) + " " + a.in.str() + (a.dtype == DType::i64 ? "; put an embedding before it" : ""));
  const auto o = RNNOptions(a.in[1], a.integer("hidden_size"))
                     .num_layers(a.integer("num_layers"))
                     .dropout(a.number("dropout"))
                     .bidirectional(a.boolean("bidirectional"))
                     .bias(a.boolean("bias"))
                     .batch_first(true);
  return std::make_shared<Layer>(o, gen);
}

// --- the key rows that several types share ---
Row bias_row(bool fallback) { return Row("bias", Kind::boolean).def(fallback).doc("Learn an additive bias."); }
Row window_row(const char* key, int64_t fallback, const char* what) {
  return Row(key, Kind::pair).def(fallback).doc(what);
}
std::vector<Row> conv_rows(Kind size) {
  const auto row = [&](const char* key) { return Row(key, size); };
  return {Row("out_channels", Kind::integer).req().doc("Output channels (the input's are inferred)."),
          row("kernel_size").req().doc(size == Kind::pair ? "The window: n (n × n) or [h, w]." : "The window's length."),
          row("stride").def(1).doc("The window's step."),
          row("padding").def(0).doc(size == Kind::pair
                                        ? "Added on each side: n, [h, w], \"same\" (stride 1: the output keeps the input's size; an odd extra goes right/bottom) or \"valid\" (none)."
                                        : "Added on each side: n, \"same\" (stride 1: the output keeps the input's length; an odd extra goes right) or \"valid\" (none)."),
          row("dilation").def(1).doc("The spacing of the window's taps."),
          Row("groups", Kind::integer).def(1).doc("Blocked connections: in and out channels split into this many groups."),
          bias_row(true),
          Row("padding_mode", Kind::choice).def("zeros").one_of({"zeros", "reflect", "replicate", "circular"})
              .doc("What the padding holds: zeros, the mirrored input (reflect), its edge (replicate) or the other side (circular).")};
}
PaddingMode padding_mode(const Args& a) {
  const std::string m = a.text("padding_mode");
  return m == "reflect" ? PaddingMode::reflect : m == "replicate" ? PaddingMode::replicate
       : m == "circular" ? PaddingMode::circular : PaddingMode::zeros;
}

// A D-d layer's spatial key: a pair for 2-D, one integer for 1-D.
template <size_t D>
ExpandingArray<D> dims(const Args& a, const char* key) {
  if constexpr (D == 2) return hw(a.pair(key));
  else return ExpandingArray<1>(a.integer(key));
}

// A D-d conv layer's input channels: of an image [C, H, W] for 2-D, of a sequence [C, L] for 1-D.
template <size_t D>
int64_t conv_channels(const Args& a, const char* type) {
  if constexpr (D == 2) return need_channels(a, type);
  if (a.in.size() != 2)
    a.error(std::string(type) + " needs sequence input [C, L], but the input here is " + a.in.str() +
            " (one sample, no batch dim)");
  return a.in[0];
}

// conv1d / conv2d.
template <size_t D>
std::shared_ptr<Module> make_conv(const Args& a, Generator* gen) {
  const auto o = ConvOptions<D>(conv_channels<D>(a, D == 1 ? "conv1d" : "conv2d"), a.integer("out_channels"),
                                dims<D>(a, "kernel_size"))
                     .stride(dims<D>(a, "stride"))
                     .padding(conv_padding<D>(a))
                     .dilation(dims<D>(a, "dilation"))
                     .groups(a.integer("groups"))
                     .bias(a.boolean("bias"))
                     .padding_mode(padding_mode(a));
  return std::make_shared<std::conditional_t<D == 1, Conv1d, Conv2d>>(o, gen);
}
// conv_transpose1d / conv_transpose2d.
template <size_t D>
std::shared_ptr<Module> make_conv_transpose(const Args& a, Generator* gen) {
  const auto o = ConvTransposeOptions<D>(conv_channels<D>(a, D == 1 ? "conv_transpose1d" : "conv_transpose2d"),
                                         a.integer("out_channels"), dims<D>(a, "kernel_size"))
                     .stride(dims<D>(a, "stride"))
                     .padding(dims<D>(a, "padding"))
                     .output_padding(dims<D>(a, "output_padding"))
                     .groups(a.integer("groups"))
                     .bias(a.boolean("bias"))
                     .dilation(dims<D>(a, "dilation"));
  return std::make_shared<std::conditional_t<D == 1, ConvTranspose1d, ConvTranspose2d>>(o, gen);
}

// conv_transpose1d / conv_transpose2d: ints or pairs.
std::vector<Row> conv_transpose_rows(Kind size) {
  const auto row = [&](const char* key) { return Row(key, size); };
  return {Row("out_channels", Kind::integer).req().doc("Output channels (the input's are inferred)."),
          row("kernel_size").req().doc(size == Kind::pair ? "The window: n (n × n) or [h, w]." : "The window's length."),
          row("stride").def(1).doc("The step of the input over the output."),
          row("padding").def(0).doc("dilation · (kernel_size - 1) - padding zeros are added on each side of the input."),
          row("output_padding").def(0).doc("Added to one side of the output (less than stride or dilation)."),
          Row("groups", Kind::integer).def(1).doc("Blocked connections: in and out channels split into this many groups."),
          bias_row(true),
          row("dilation").def(1).doc("The spacing of the window's taps.")};
}
// max (dilation) or average (count_include_pad, divisor_override) pooling; pairs (2-D) or ints (1-D).
std::vector<Row> pool_rows(bool average, Kind size = Kind::pair) {
  const bool two_d = size == Kind::pair;
  std::vector<Row> rows = {
      Row("kernel_size", size).req().doc(two_d ? "The window: n (n × n) or [h, w]." : "The window's length."),
      Row("stride", size).default_is("`kernel_size`").doc("The window's step."),
      Row("padding", size).def(0).doc("Padding on each side (at most half the kernel): -inf for max, 0 for average.")};
  if (!average) rows.push_back(Row("dilation", size).def(1).doc("The spacing of the window's taps."));
  rows.push_back(Row("ceil_mode", Kind::boolean).def(false).doc("Round the output size up (a last partial window)."));
  if (average) {
    rows.push_back(Row("count_include_pad", Kind::boolean).def(true).doc("Count the padding zeros in the average."));
    if (two_d)
      rows.push_back(Row("divisor_override", Kind::integer).default_is("the window's size").in("> 0")
                         .doc("Divide each window's sum by this instead."));
  }
  return rows;
}
std::vector<Row> recurrent_rows() {
  return {Row("hidden_size", Kind::integer).req().in("> 0").doc("Features of the hidden state (per direction)."),
          Row("num_layers", Kind::integer).def(1).in("> 0").doc("Stacked layers."),
          Row("dropout", Kind::number).def(0.0).in("in [0, 1)").doc("Dropout on each layer's output but the last (training)."),
          Row("bidirectional", Kind::boolean).def(false).doc("Also run backwards; the output doubles its features."),
          bias_row(true)};
}
Row dropout_row(double fallback, const char* what) {
  return Row("dropout", Kind::number).def(fallback).in("in [0, 1)").doc(what);
}

}  // namespace

const std::map<std::string, Entry>& table() {
  static const RNNLMOptions rnn_lm;  // its defaults are the rows'
  static const GPTOptions gpt;
  static const VisionTransformerOptions vit;  // its defaults (ViT-B/16's sizes) are the rows'
  static const std::map<std::string, Entry> t = {
      {"linear",
       {{Row("out_features", Kind::integer).req().doc("Output features (the input's are inferred)."), bias_row(true)},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          // [features], or [T, features] (a sequence: applied to each step, as PyTorch's Linear on the last dim)
          if (a.in.size() != 1 && a.in.size() != 2)
            a.error("linear needs input [features] or [T, features], but the input here is " + a.in.str() +
                    "; add {type: flatten} before it");
          return std::make_shared<Linear>(a.in.back(), a.integer("out_features"), a.boolean("bias"), gen);
        }}},
      {"conv2d", {conv_rows(Kind::pair), make_conv<2>}},
      {"conv1d", {conv_rows(Kind::integer), make_conv<1>}},
      {"max_pool2d",
       {pool_rows(/*average=*/false),
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          return std::make_shared<MaxPool2d>(pool_options(a).dilation(hw(a.pair("dilation"))));
        }}},
      {"avg_pool2d",
       {pool_rows(/*average=*/true),
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          auto o = pool_options(a).count_include_pad(a.boolean("count_include_pad"));
          if (a.has("divisor_override")) o.divisor_override(a.integer("divisor_override", 0));
          return std::make_shared<AvgPool2d>(o);
        }}},
      {"adaptive_avg_pool2d",
       {{window_row("output_size", 1, "The output's size: n (n × n) or [h, w], whatever the input's.")},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          const auto [h, w] = a.pair("output_size");
          return std::make_shared<AdaptiveAvgPool2d>(h, w);
        }}},
      {"adaptive_max_pool2d",
       {{Row("output_size", Kind::pair).req().doc("The output's size: n (n × n) or [h, w], whatever the input's.")},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          const auto [h, w] = a.pair("output_size");
          return std::make_shared<AdaptiveMaxPool2d>(h, w);
        }}},
      {"batch_norm",
       {{Row("eps", Kind::number).def(1e-5).doc("Added to the variance."),
         Row("momentum", Kind::number).def(0.1).doc("The running statistics' update factor."),
         Row("affine", Kind::boolean).def(true).doc("Learn a scale and shift per channel.")},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          const double eps = a.number("eps"), momentum = a.number("momentum");
          const bool affine = a.boolean("affine");
          if (a.in.size() == 3) return std::make_shared<BatchNorm2d>(a.in[0], eps, momentum, affine);
          if (a.in.size() == 1 || a.in.size() == 2) return std::make_shared<BatchNorm1d>(a.in[0], eps, momentum, affine);
          a.error("batch_norm needs input [features], [C, L] or [C, H, W], got " + a.in.str());
        }}},
      {"layer_norm",
       {{Row("eps", Kind::number).def(1e-5).doc("Added to the variance."),
         Row("affine", Kind::boolean).def(true).doc("Learn a scale and shift per feature.")},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          if (a.in.empty()) a.error("layer_norm needs at least one input dim");
          return std::make_shared<LayerNorm>(Shape{a.in.back()}, a.number("eps"), a.boolean("affine"));
        }}},
      {"rms_norm",
       {{Row("eps", Kind::number).default_is("the machine epsilon of the input's dtype").in(">= 0")
             .doc("Added to the mean square."),
         Row("elementwise_affine", Kind::boolean).def(true).doc("Learn a scale per feature.")},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          if (a.in.empty()) a.error("rms_norm needs at least one input dim");
          return std::make_shared<RMSNorm>(Shape{a.in.back()}, a.optional_number("eps"), a.boolean("elementwise_affine"));
        }}},
      {"group_norm",
       {{Row("num_groups", Kind::integer).req().in("> 0").doc("Groups the channels split into (a divisor of the input's channels)."),
         Row("eps", Kind::number).def(1e-5).doc("Added to the variance."),
         Row("affine", Kind::boolean).def(true).doc("Learn a scale and shift per channel.")},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          if (a.in.empty()) a.error("group_norm needs input [C, *] (channels first), got a scalar sample");
          const int64_t groups = a.integer("num_groups");
          if (a.in[0] % groups != 0)
            a.error("num_groups = " + std::to_string(groups) + " does not divide the input's " + std::to_string(a.in[0]) +
                    " channels (input " + a.in.str() + "); choose a divisor");
          return std::make_shared<GroupNorm>(groups, a.in[0], a.number("eps"), a.boolean("affine"));
        }}},
      {"instance_norm",
       {{Row("eps", Kind::number).def(1e-5).doc("Added to the variance."),
         Row("momentum", Kind::number).def(0.1).doc("The running statistics' update factor."),
         Row("affine", Kind::boolean).def(false).doc("Learn a scale and shift per channel."),
         Row("track_running_stats", Kind::boolean).def(false).doc("Keep running statistics (training) and use them in eval.")},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          if (a.in.size() != 2 && a.in.size() != 3)
            a.error("instance_norm needs input [C, L] (InstanceNorm1d) or [C, H, W] (InstanceNorm2d), got " + a.in.str());
          const auto o = InstanceNormOptions(a.in[0])
                             .eps(a.number("eps"))
                             .momentum(a.number("momentum"))
                             .affine(a.boolean("affine"))
                             .track_running_stats(a.boolean("track_running_stats"));
          if (a.in.size() == 2) return std::make_shared<InstanceNorm1d>(o);
          return std::make_shared<InstanceNorm2d>(o);
        }}},
      {"local_response_norm",
       {{Row("size", Kind::integer).req().in("> 0").doc("Neighbouring channels summed over (the channel's own included)."),
         Row("alpha", Kind::number).def(1e-4).doc("The scale of the sum of squares."),
         Row("beta", Kind::number).def(0.75).doc("The exponent."),
         Row("k", Kind::number).def(1.0).doc("The additive constant.")},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          if (a.in.size() < 2)
            a.error("local_response_norm needs input [C, L] or [C, H, W] (channels first, one sample), got " + a.in.str());
          return std::make_shared<LocalResponseNorm>(a.integer("size"), a.number("alpha"), a.number("beta"), a.number("k"));
        }}},
      {"embedding_bag",
       // One input: each sample [L] of token ids is one bag (the batch [B, L], without offsets); PyTorch's
       // include_last_offset concerns offsets, which a model spec never passes, so it has no row.
       {{Row("embedding_dim", Kind::integer).req().doc("Features per token (the vocabulary size comes from the data)."),
         Row("mode", Kind::choice).def("mean").one_of({"sum", "mean", "max"}).doc("How a bag's vectors combine."),
         Row("max_norm", Kind::number).default_is("none").doc("Vectors looked up with a larger norm are renormalised to this (in place)."),
         Row("norm_type", Kind::number).def(2.0).doc("The p of max_norm's p-norm."),
         Row("scale_grad_by_freq", Kind::boolean).def(false).doc("Divide each token's gradient by its count in the batch (not with mode max)."),
         Row("padding_idx", Kind::integer).default_is("none").doc("A token that leaves its bag: its vector stays zero and gets no gradient.")},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          a.need_tokens("embedding_bag");
          if (a.in.size() != 1) a.error("embedding_bag needs one bag of token ids [L] per sample, got " + a.in.str());
          const int64_t vocab = a.vocab("embedding_bag");
          EmbeddingBagOptions o{.norm_type = a.number("norm_type"), .scale_grad_by_freq = a.boolean("scale_grad_by_freq"),
                                .mode = a.text("mode")};
          if (o.mode == "max" && o.scale_grad_by_freq) a.error("scale_grad_by_freq does not apply to mode max (as PyTorch)");
          if (a.has("max_norm")) o.max_norm = a.number("max_norm", 0.0);
          if (a.has("padding_idx")) o.padding_idx = a.integer("padding_idx", 0);
          return std::make_shared<EmbeddingBag>(vocab, a.integer("embedding_dim"), o, gen);
        }}},
      {"embedding",
       {{Row("embedding_dim", Kind::integer).req().doc("Features per token (the vocabulary size comes from the data)."),
         Row("padding_idx", Kind::integer).default_is("none").doc("A token whose vector stays zero and gets no gradient.")},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          a.need_tokens("embedding");
          const int64_t vocab = a.vocab("embedding");
          if (!a.has("padding_idx")) return std::make_shared<Embedding>(vocab, a.integer("embedding_dim"), gen);
          return std::make_shared<Embedding>(vocab, a.integer("embedding_dim"),
                                             functional::EmbeddingFuncOptions{.padding_idx = a.integer("padding_idx", 0)},
                                             gen);
        }}},
      {"dropout",
       {{Row("p", Kind::number).def(0.5).in("in [0, 1)").doc("The probability that an element is zeroed (training).")},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> { return std::make_shared<Dropout>(a.number("p"), gen); }}},
      {"flatten",
       {{Row("start_dim", Kind::integer).def(1).doc("The first dim flattened (0: the batch dim)."),
         Row("end_dim", Kind::integer).def(-1).doc("The last dim flattened.")},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          return std::make_shared<Flatten>(a.integer("start_dim"), a.integer("end_dim"));
        }}},
#define EMBER_X(Name, type, expr) \
  {type, {{}, [](const Args&, Generator*) -> std::shared_ptr<Module> { return std::make_shared<Name>(); }}},
      EMBER_ACTIVATION_LAYERS(EMBER_X)
#undef EMBER_X
      {"gelu",
       {{Row("approximate", Kind::choice).def("none").one_of({"none", "tanh"}).doc("none: the exact erf form; tanh: its tanh approximation.")},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> { return std::make_shared<GELU>(a.text("approximate")); }}},
      {"leaky_relu",
       {{Row("negative_slope", Kind::number).def(0.01).doc("The slope below 0.")},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          return std::make_shared<LeakyReLU>(a.number("negative_slope"));
        }}},
      {"elu",
       {{Row("alpha", Kind::number).def(1.0).doc("The value approached below 0 is -alpha.")},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> { return std::make_shared<ELU>(a.number("alpha")); }}},
      {"softplus",
       {{Row("beta", Kind::number).def(1.0).doc("log(1 + exp(beta · x)) / beta; not 0."),
         Row("threshold", Kind::number).def(20.0).doc("Where beta · x exceeds it, the output is x (linear there).")},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          const double beta = a.number("beta");
          if (beta == 0) a.error("'beta' must not be 0");
          return std::make_shared<Softplus>(beta, a.number("threshold"));
        }}},
      {"hardtanh",
       {{Row("min_val", Kind::number).def(-1.0).doc("The lower clamp."),
         Row("max_val", Kind::number).def(1.0).doc("The upper clamp (at least min_val).")},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          const double lo = a.number("min_val"), hi = a.number("max_val");
          if (lo > hi) a.error("'min_val' must not exceed 'max_val'");
          return std::make_shared<Hardtanh>(lo, hi);
        }}},
      {"softmax",
       {{Row("dim", Kind::integer).def(-1).doc("The dim that sums to 1 (counting the batch dim).")},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> { return std::make_shared<Softmax>(a.integer("dim")); }}},
      // --- sequence models: transformer layers over [T, D], and the whole GPT over token ids [T] ---
      {"position_embedding",
       {{Row("kind", Kind::choice).def("learned").one_of({"learned", "sinusoidal"})
             .doc("learned: a trained [T, D] table; sinusoidal: the fixed sines and cosines (no parameters).")},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          if (a.in.size() != 2)
            a.error("position_embedding needs a sequence [T, D] (after an embedding), but the input here is " + a.in.str());
          // max_len is the input's T: the data's context
          if (a.text("kind") == "learned") return std::make_shared<LearnedPositionalEmbedding>(a.in[0], a.in[1], gen);
          return std::make_shared<SinusoidalPositionalEncoding>(a.in[0], a.in[1]);
        }}},
      {"transformer_block",
       {{Row("heads", Kind::integer).req().doc("Attention heads; they divide the input's dim."),
         Row("dim_feedforward", Kind::integer).default_is("4 × the input's dim").in("> 0").doc("The MLP's hidden features."),
         dropout_row(0.1, "Dropout on the attention weights and after the attention and the MLP (training)."),
         Row("activation", Kind::choice).def("gelu").one_of({"relu", "gelu"}).doc("The MLP's activation."),
         Row("norm_first", Kind::boolean).def(true).doc("Layer norm before attention and MLP (pre-norm, GPT-2's), else after."),
         Row("causal", Kind::boolean).def(true).doc("Each position attends to itself and earlier ones only.")},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          if (a.in.size() != 2)
            a.error("transformer_block needs a sequence [T, D] (after an embedding), but the input here is " + a.in.str());
          const int64_t d = a.in[1], heads = a.integer("heads");
          if (heads <= 0 || d % heads != 0)
            a.error("'heads' (" + std::to_string(heads) + ") must be positive and divide the input's dim " + std::to_string(d));
          return std::make_shared<TransformerBlock>(TransformerEncoderLayerOptions{.d_model = d,
                                                                                   .nhead = heads,
                                                                                   .dim_feedforward = a.integer("dim_feedforward", 4 * d),
                                                                                   .dropout = a.number("dropout"),
                                                                                   .activation = a.text("activation"),
                                                                                   .batch_first = true,
                                                                                   .norm_first = a.boolean("norm_first")},
                                                    a.boolean("causal"), gen);
        }}},
      {"swiglu",
       {{Row("hidden", Kind::integer).req().in("> 0").doc("The inner features of gate_proj and up_proj (the input's are inferred)."),
         bias_row(false)},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          if (a.in.size() != 1 && a.in.size() != 2)
            a.error("swiglu needs input [features] or [T, features], but the input here is " + a.in.str());
          return std::make_shared<SwiGLU>(
              SwiGLUOptions{.dim = a.in.back(), .hidden = a.integer("hidden"), .bias = a.boolean("bias")}, gen);
        }}},
      {"lm_head",
       {{bias_row(false)},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          if (a.in.size() != 1 && a.in.size() != 2)
            a.error("lm_head needs [T, D] or [D], but the input here is " + a.in.str());
          return std::make_shared<Linear>(a.in.back(), a.vocab("lm_head"), a.boolean("bias"), gen);
        }}},
      {"gpt",
       {{Row("layers", Kind::integer).def(gpt.layers).doc("Transformer blocks."),
         Row("heads", Kind::integer).def(gpt.heads).doc("Attention heads per block; they divide dim."),
         Row("dim", Kind::integer).def(gpt.dim).doc("Features per token."),
         Row("context", Kind::integer).default_is("data.context").doc("The most positions; must equal data.context."),
         Row("dropout", Kind::number).def(gpt.dropout).doc("Dropout on the embeddings and in every block (training)."),
         Row("mlp_ratio", Kind::integer).def(gpt.mlp_ratio).doc("The blocks' MLP has mlp_ratio × dim hidden features."),
         Row("position", Kind::choice).def(gpt.position).one_of({"learned", "sinusoidal", "rotary"})
             .doc("The position embedding: learned or sinusoidal absolute positions, or rotary (RoPE in every attention, no pos_emb)."),
         Row("kv_heads", Kind::integer).def(gpt.kv_heads).in(">= 0 (0: heads)")
             .doc("Key/value heads (grouped-query attention: they divide heads; 1: multi-query)."),
         Row("tie_weights", Kind::boolean).def(gpt.tie_weights).doc("The head reuses the token embedding's weights."),
         Row("bias", Kind::boolean).def(gpt.bias).doc("Biases in the linears, attention and layer norms.")},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          a.need_tokens("gpt");
          if (a.in.size() != 1) a.error("gpt takes token windows [T], but the input here is " + a.in.str());
          const int64_t context = a.integer("context", a.in[0]);
          if (context != a.in[0])
            a.error("'context' (" + std::to_string(context) + ") must equal the data's context (its windows have " +
                    std::to_string(a.in[0]) + " tokens): set data.context to the same value, or leave context out");
          GPTOptions o{.vocab_size = a.vocab("gpt"),
                       .context = context,
                       .dim = a.integer("dim"),
                       .layers = a.integer("layers"),
                       .heads = a.integer("heads"),
                       .mlp_ratio = a.integer("mlp_ratio"),
                       .dropout = a.number("dropout"),
                       .position = a.text("position"),
                       .tie_weights = a.boolean("tie_weights"),
                       .bias = a.boolean("bias"),
                       .kv_heads = a.integer("kv_heads")};
          try {
            return std::make_shared<GPT>(o, gen);
          } catch (const Error& e) {
            a.error(e.what());
          }
          },
          /*whole_model=*/true}},
      // --- recurrent layers (nn/rnn.h): [T, C] → [T, D·H] (batch_first), and the recurrent language model ---
      {"lstm", {recurrent_rows(), make_recurrent<LSTM>}},
      {"gru", {recurrent_rows(), make_recurrent<GRU>}},
      {"rnn_lm",
       {{Row("cell", Kind::choice).def(rnn_lm.cell).one_of({"lstm", "gru"}).doc("The recurrent layers' kind."),
         Row("embedding_dim", Kind::integer).def(rnn_lm.embedding_dim).in("> 0").doc("Features per token."),
         Row("hidden_size", Kind::integer).def(rnn_lm.hidden_size).in("> 0").doc("Features of the hidden state."),
         Row("num_layers", Kind::integer).def(rnn_lm.num_layers).in("> 0").doc("Stacked recurrent layers."),
         dropout_row(rnn_lm.dropout, "Dropout on the embeddings, between the layers and on the last output (training)."),
         Row("tie_weights", Kind::boolean).def(rnn_lm.tie_weights)
             .doc("The head reuses the embedding's weights (needs embedding_dim == hidden_size).")},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          a.need_tokens("rnn_lm");
          if (a.in.size() != 1) a.error("rnn_lm takes a window of token ids [T], but the input here is " + a.in.str());
          RNNLMOptions o;
          o.vocab_size = a.vocab("rnn_lm");
          o.cell = a.text("cell");
          o.embedding_dim = a.integer("embedding_dim");
          o.hidden_size = a.integer("hidden_size");
          o.num_layers = a.integer("num_layers");
          o.dropout = a.number("dropout");
          o.tie_weights = a.boolean("tie_weights");
          if (o.tie_weights && o.embedding_dim != o.hidden_size)
            a.error("'tie_weights: true' needs embedding_dim == hidden_size (the head reuses the embedding), got " +
                    std::to_string(o.embedding_dim) + " and " + std::to_string(o.hidden_size));
          return std::make_shared<RNNLanguageModel>(o, gen);
        },
        /*whole_model=*/true}},
      // --- conv/pool round 3 ---
      {"conv_transpose2d", {conv_transpose_rows(Kind::pair), make_conv_transpose<2>}},
      {"conv_transpose1d", {conv_transpose_rows(Kind::integer), make_conv_transpose<1>}},
      {"max_pool1d",
       {pool_rows(/*average=*/false, Kind::integer),
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          return std::make_shared<MaxPool1d>(pool1d_options(a).dilation(a.integer("dilation")));
        }}},
      {"avg_pool1d",
       {pool_rows(/*average=*/true, Kind::integer),
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          return std::make_shared<AvgPool1d>(pool1d_options(a).count_include_pad(a.boolean("count_include_pad")));
        }}},
      {"upsample",
       {{Row("size", Kind::integers).default_is("none").in("> 0")
             .doc("The output's spatial size: n (every spatial dim) or one per dim ([h, w]); this or scale_factor."),
         Row("scale_factor", Kind::number).default_is("none").in("> 0")
             .doc("The output's spatial size as a multiple of the input's (every spatial dim); this or size."),
         Row("mode", Kind::choice).def("nearest").one_of({"nearest", "nearest-exact", "linear", "bilinear", "trilinear", "area"})
             .doc("linear, bilinear, trilinear: for [C, L], [C, H, W], [C, D, H, W] inputs."),
         Row("align_corners", Kind::boolean).default_is("none (false)")
             .doc("The linear modes only: the corner samples of input and output align."),
         Row("recompute_scale_factor", Kind::boolean).default_is("none (false)")
             .doc("With scale_factor: sample at the ratio of the computed output size instead of the factor.")},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          if (a.in.size() < 2 || a.in.size() > 4)
            a.error("upsample needs input [C, L], [C, H, W] or [C, D, H, W] (one sample, no batch dim), but the input here is " + a.in.str());
          const size_t spatial = a.in.size() - 1;
          if (a.has("size") == a.has("scale_factor")) a.error("give exactly one of 'size' and 'scale_factor'");
          UpsampleOptions o;
          if (a.has("size")) {
            std::vector<int64_t> size = a.integers("size");
            if (size.size() == 1) size.assign(spatial, size[0]);
            if (size.size() != spatial)
              a.error("'size' has " + std::to_string(size.size()) + " values, but the input " + a.in.str() + " has " +
                      std::to_string(spatial) + " spatial dims: give one value or one per dim");
            o.size(size);
          } else {
            o.scale_factor(std::vector<double>(spatial, *a.optional_number("scale_factor")));
          }
          const std::string m = a.text("mode");
          o.mode(m == "nearest-exact" ? InterpolateMode::nearest_exact : m == "linear" ? InterpolateMode::linear
                 : m == "bilinear" ? InterpolateMode::bilinear : m == "trilinear" ? InterpolateMode::trilinear
                 : m == "area" ? InterpolateMode::area : InterpolateMode::nearest);
          if (const auto ac = a.optional_boolean("align_corners")) {
            if (m != "linear" && m != "bilinear" && m != "trilinear")
              a.error("'align_corners' goes with the linear modes (linear, bilinear, trilinear) only, not mode " + m);
            o.align_corners(*ac);
          }
          if (const auto r = a.optional_boolean("recompute_scale_factor")) o.recompute_scale_factor(*r);
          return std::make_shared<Upsample>(o);
        }}},
      {"pixel_shuffle",
       {{Row("upscale_factor", Kind::integer).req().in("> 0").doc("[C·r², H, W] → [C, H·r, W·r].")},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          return std::make_shared<PixelShuffle>(a.integer("upscale_factor"));
        }}},
      {"pixel_unshuffle",
       {{Row("downscale_factor", Kind::integer).req().in("> 0").doc("[C, H·r, W·r] → [C·r², H, W].")},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          return std::make_shared<PixelUnshuffle>(a.integer("downscale_factor"));
        }}},
      // --- vision models (nn/resnet.h): images [C, H, W] → logits [num_classes] ---
      {"resnet",
       {{Row("num_classes", Kind::integer).req().in("> 0").doc("The classes: the logits' size (10 for Fashion-MNIST and CIFAR-10)."),
         Row("depth", Kind::integer).def(18).doc("torchvision's resnet<depth>: 18 or 34 (BasicBlock), 50, 101 or 152 (Bottleneck)."),
         Row("width", Kind::integer).def(64).in("> 0").doc("Channels of the stem and layer1 (torchvision: 64); layer2..4 double it each."),
         Row("stem", Kind::choice).def("imagenet").one_of({"imagenet", "small"})
             .doc("imagenet: 7x7 stride-2 conv and 3x3 stride-2 max pool (torchvision's); small: 3x3 stride-1 conv, no pool (28x28, 32x32 images)."),
         Row("zero_init_residual", Kind::boolean).def(false).doc("Start each block's last batch norm weight at 0 (each block an identity).")},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          const int64_t depth = a.integer("depth");
          if (depth != 18 && depth != 34 && depth != 50 && depth != 101 && depth != 152)
            a.error("'depth' must be one of torchvision's 18, 34, 50, 101, 152, got " + std::to_string(depth));
          ResNetOptions o = resnet_options(depth);
          o.in_channels = need_channels(a, "resnet");
          o.num_classes = a.integer("num_classes");
          o.width = a.integer("width");
          o.stem = a.text("stem") == "small" ? ResNetStem::small : ResNetStem::imagenet;
          o.zero_init_residual = a.boolean("zero_init_residual");
          return std::make_shared<ResNet>(o, gen);
        },
        /*whole_model=*/true}},
      // --- the Vision Transformer (nn/vit.h), a whole model over images [C, S, S] ---
      {"vit",
       {{Row("patch_size", Kind::integer).req().in("> 0").doc("Patches of patch_size × patch_size pixels; it divides the image size."),
         Row("num_classes", Kind::integer).req().in("> 0").doc("Classes of the head (the logits' size)."),
         Row("layers", Kind::integer).def(vit.num_layers).in("> 0").doc("Encoder blocks."),
         Row("heads", Kind::integer).def(vit.num_heads).in("> 0").doc("Attention heads per block; they divide hidden_dim."),
         Row("hidden_dim", Kind::integer).def(vit.hidden_dim).in("> 0").doc("Features per token."),
         Row("mlp_dim", Kind::integer).def(vit.mlp_dim).in("> 0").doc("Hidden features of each block's MLP."),
         dropout_row(vit.dropout, "Dropout after the position embedding, the attention and in the MLPs (training)."),
         Row("attention_dropout", Kind::number).def(vit.attention_dropout).in("in [0, 1)")
             .doc("Dropout on the attention weights (training)."),
         Row("representation_size", Kind::integer).def(vit.representation_size).in(">= 0 (0: none)")
             .doc("A tanh pre-logits layer of this many features before the head.")},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          const int64_t channels = need_channels(a, "vit");
          if (a.in[1] != a.in[2]) a.error("vit needs square images, but the input here is " + a.in.str());
          const int64_t patch = a.integer("patch_size");
          if (a.in[1] % patch != 0)
            a.error("'patch_size' " + std::to_string(patch) + " does not divide the image size " + std::to_string(a.in[1]) +
                    " (input " + a.in.str() + "); choose a divisor");
          const VisionTransformerOptions o{.image_size = a.in[1],
                                           .patch_size = patch,
                                           .num_layers = a.integer("layers"),
                                           .num_heads = a.integer("heads"),
                                           .hidden_dim = a.integer("hidden_dim"),
                                           .mlp_dim = a.integer("mlp_dim"),
                                           .dropout = a.number("dropout"),
                                           .attention_dropout = a.number("attention_dropout"),
                                           .num_classes = a.integer("num_classes"),
                                           .representation_size = a.integer("representation_size"),
                                           .in_channels = channels};
          try {
            return std::make_shared<VisionTransformer>(o, gen);
          } catch (const Error& e) {
            a.error(e.what());
          }
        },
        /*whole_model=*/true}},
  };
  return t;
}


}  // namespace ember::nn::registry
