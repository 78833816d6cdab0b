#include "nn/registry.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include "autograd/grad_mode.h"
#include "nn/transformer.h"
#include "nn/rnn.h"

namespace ember::nn {
namespace {

// What one spec gives a layer factory: typed access that records which keys were used and reports
// wrong types with the spec's location.
class Args {
 public:
  Args(const LayerSpec& spec, const Shape& in, DType dtype, int64_t vocab_size)
      : in(in), dtype(dtype), spec_(spec), vocab_size_(vocab_size) {}

  const Shape in;     // the sample shape entering this layer (no batch dim)
  const DType dtype;  // and its dtype (i64: token ids)

  // The data's vocabulary size, for layers that take or predict token ids; an error without text data.
  int64_t vocab(const char* what) const {
    if (vocab_size_ <= 0)
      error(std::string(what) + " needs a vocabulary size, which only text data has (data.dataset: text, whose "
            "tokenizer gives it)");
    return vocab_size_;
  }
  // Checks that the input is token ids (i64), as embeddings need.
  void need_tokens(const char* what) const {
    if (dtype != DType::i64)
      error(std::string(what) + " takes token ids (i64), but the input here is " + std::string(dtype_name(dtype)) + " " + in.str() +
            "; it goes first, on text data");
  }

  bool has(const std::string& key) const { return find(key) != nullptr; }
  int64_t integer(const std::string& key, std::optional<int64_t> fallback = std::nullopt) const {
    const SpecValue* v = find(key);
    if (v == nullptr) return required(key, fallback);
    if (const auto* i = std::get_if<int64_t>(v)) return *i;
    fail(key, "an integer");
  }
  double number(const std::string& key, double fallback) const {
    const SpecValue* v = find(key);
    if (v == nullptr) return fallback;
    if (const auto* d = std::get_if<double>(v)) return *d;
    if (const auto* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
    fail(key, "a number");
  }
  bool boolean(const std::string& key, bool fallback) const {
    const SpecValue* v = find(key);
    if (v == nullptr) return fallback;
    if (const auto* b = std::get_if<bool>(v)) return *b;
    fail(key, "true or false");
  }
  std::string text(const std::string& key, const std::string& fallback) const {
    const SpecValue* v = find(key);
    if (v == nullptr) return fallback;
    if (const auto* t = std::get_if<std::string>(v)) return *t;
    fail(key, "a string");
  }
  // An int n means (n, n); a list of two ints (h, w).
  std::pair<int64_t, int64_t> pair(const std::string& key, std::optional<int64_t> fallback = std::nullopt) const {
    const SpecValue* v = find(key);
    if (v == nullptr) {
      const int64_t n = required(key, fallback);
      return {n, n};
    }
    if (const auto* i = std::get_if<int64_t>(v)) return {*i, *i};
    if (const auto* l = std::get_if<std::vector<int64_t>>(v); l != nullptr && l->size() == 2) return {(*l)[0], (*l)[1]};
    fail(key, "an integer or a list of two integers [h, w]");
  }
  [[noreturn]] void error(const std::string& what) const {
    detail::throw_error(spec_.where, " (", spec_.type, "): ", what);
  }

 private:
  const SpecValue* find(const std::string& key) const {
    for (const auto& [k, v] : spec_.args)
      if (k == key) return &v;
    return nullptr;
  }
  int64_t required(const std::string& key, std::optional<int64_t> fallback) const {
    if (fallback) return *fallback;
    error("missing required key '" + key + "'");
  }
  [[noreturn]] void fail(const std::string& key, const char* expected) const {
    error("'" + key + "' must be " + expected);
  }

  const LayerSpec& spec_;
  int64_t vocab_size_;
};

struct Entry {
  std::vector<std::string> keys;  // required first
  std::function<std::shared_ptr<Module>(const Args&, Generator*)> make;
  bool whole_model = false;  // a complete model: the only spec, built unwrapped (build_model)
};

int64_t need_channels(const Args& a, const char* what) {
  if (a.in.size() != 3) a.error(std::string(what) + " needs image input [C, H, W], but the input here is " + a.in.str() +
                                " (one sample, no batch dim)");
  return a.in[0];
}

Pool2dOptions pool_options(const Args& a) {
  const auto pair = [&](const char* key, std::optional<int64_t> fallback = std::nullopt) {
    const auto [h, w] = a.pair(key, fallback);
    return ExpandingArray<2>{h, w};
  };
  return Pool2dOptions(pair("kernel_size"))
      .stride(pair("stride", 0))
      .padding(pair("padding", 0))
      .ceil_mode(a.boolean("ceil_mode", false));
}

// The input-size keys of PyTorch's constructors that a spec does not take: the registry infers them from
// the shape the previous layer produces. (type, key, the input dim that gives it.)
struct InferredKey {
  const char* type;
  const char* key;
  const char* from;
};
constexpr InferredKey kInferredKeys[] = {
    {"linear", "in_features", "the input's features"},     {"conv2d", "in_channels", "the input's channels"},
    {"conv1d", "in_channels", "the input's channels"},     {"batch_norm", "num_features", "the input's channels"},
    {"layer_norm", "normalized_shape", "the input's last dim"}, {"embedding", "num_embeddings", "the vocabulary size"},
    {"lstm", "input_size", "the input's features"},     {"gru", "input_size", "the input's features"},
};

// --- helpers of the recurrent entries ---
int64_t positive(const Args& a, const std::string& key, std::optional<int64_t> fallback) {
  const int64_t v = a.integer(key, fallback);
  if (v <= 0) a.error("'" + key + "' must be positive, got " + std::to_string(v));
  return v;
}
double unit_interval(const Args& a, const std::string& key, double fallback) {
  const double v = a.number(key, fallback);
  if (!(v >= 0 && v < 1)) a.error("'" + key + "' must be in [0, 1), got " + std::to_string(v));
  return v;
}
// lstm / gru on a sequence [T, C] (batches [N, T, C]: batch_first), output [T, D·H].
template <typename Layer>
std::shared_ptr<Module> make_recurrent(const Args& a, Generator* gen) {
  if (a.in.size() != 2 || a.dtype == DType::i64)
    a.error("a recurrent layer needs a floating sequence [T, features], but the input here is " +
            std::string(dtype_name(a.dtype)) + " " + a.in.str() + (a.dtype == DType::i64 ? "; put an embedding before it" : ""));
  const auto o = RNNOptions(a.in[1], positive(a, "hidden_size", std::nullopt))
                     .num_layers(positive(a, "num_layers", 1))
                     .dropout(unit_interval(a, "dropout", 0.0))
                     .bidirectional(a.boolean("bidirectional", false))
                     .bias(a.boolean("bias", true))
                     .batch_first(true);
  return std::make_shared<Layer>(o, gen);
}

const std::map<std::string, Entry>& table() {
  static const std::map<std::string, Entry> t = {
      {"linear",
       {{"out_features", "bias"},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          // [features], or [T, features] (a sequence: applied to each step, as PyTorch's Linear on the last dim)
          if (a.in.size() != 1 && a.in.size() != 2)
            a.error("linear needs input [features] or [T, features], but the input here is " + a.in.str() +
                    "; add {type: flatten} before it");
          return std::make_shared<Linear>(a.in.back(), a.integer("out_features"), a.boolean("bias", true), gen);
        }}},
      {"conv2d",
       {{"out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias"},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          const auto pair = [&](const char* key, std::optional<int64_t> fallback = std::nullopt) {
            const auto [h, w] = a.pair(key, fallback);
            return ExpandingArray<2>{h, w};
          };
          const auto o = Conv2dOptions(need_channels(a, "conv2d"), a.integer("out_channels"), pair("kernel_size"))
                             .stride(pair("stride", 1))
                             .padding(pair("padding", 0))
                             .dilation(pair("dilation", 1))
                             .groups(a.integer("groups", 1))
                             .bias(a.boolean("bias", true));
          return std::make_shared<Conv2d>(o, gen);
        }}},
      {"conv1d",
       {{"out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias"},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          if (a.in.size() != 2)
            a.error("conv1d needs sequence input [C, L], but the input here is " + a.in.str() + " (one sample, no batch dim)");
          const auto o = Conv1dOptions(a.in[0], a.integer("out_channels"), a.integer("kernel_size"))
                             .stride(a.integer("stride", 1))
                             .padding(a.integer("padding", 0))
                             .dilation(a.integer("dilation", 1))
                             .groups(a.integer("groups", 1))
                             .bias(a.boolean("bias", true));
          return std::make_shared<Conv1d>(o, gen);
        }}},
      {"max_pool2d",
       {{"kernel_size", "stride", "padding", "ceil_mode"},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> { return std::make_shared<MaxPool2d>(pool_options(a)); }}},
      {"avg_pool2d",
       {{"kernel_size", "stride", "padding", "count_include_pad", "ceil_mode"},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          return std::make_shared<AvgPool2d>(pool_options(a).count_include_pad(a.boolean("count_include_pad", true)));
        }}},
      {"adaptive_avg_pool2d",
       {{"output_size"},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          const auto [h, w] = a.pair("output_size", 1);
          return std::make_shared<AdaptiveAvgPool2d>(h, w);
        }}},
      {"adaptive_max_pool2d",
       {{"output_size"},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          const auto [h, w] = a.pair("output_size");
          return std::make_shared<AdaptiveMaxPool2d>(h, w);
        }}},
      {"batch_norm",
       {{"eps", "momentum", "affine"},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          const double eps = a.number("eps", 1e-5), momentum = a.number("momentum", 0.1);
          const bool affine = a.boolean("affine", true);
          if (a.in.size() == 3) return std::make_shared<BatchNorm2d>(a.in[0], eps, momentum, affine);
          if (a.in.size() == 1 || a.in.size() == 2) return std::make_shared<BatchNorm1d>(a.in[0], eps, momentum, affine);
          a.error("batch_norm needs input [features], [C, L] or [C, H, W], got " + a.in.str());
        }}},
      {"layer_norm",
       {{"eps", "affine"},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          if (a.in.empty()) a.error("layer_norm needs at least one input dim");
          return std::make_shared<LayerNorm>(Shape{a.in.back()}, a.number("eps", 1e-5), a.boolean("affine", true));
        }}},
      {"embedding",
       {{"embedding_dim", "padding_idx"},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          a.need_tokens("embedding");
          const int64_t vocab = a.vocab("embedding");
          if (!a.has("padding_idx")) return std::make_shared<Embedding>(vocab, a.integer("embedding_dim"), gen);
          return std::make_shared<Embedding>(vocab, a.integer("embedding_dim"),
                                             functional::EmbeddingFuncOptions{.padding_idx = a.integer("padding_idx")}, gen);
        }}},
      {"dropout",
       {{"p"},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          const double p = a.number("p", 0.5);
          if (!(p >= 0 && p < 1)) a.error("'p' must be in [0, 1), got " + std::to_string(p));
          return std::make_shared<Dropout>(p, gen);
        }}},
      {"flatten",
       {{"start_dim", "end_dim"},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          return std::make_shared<Flatten>(a.integer("start_dim", 1), a.integer("end_dim", -1));
        }}},
#define EMBER_X(Name, type, expr) \
  {type, {{}, [](const Args&, Generator*) -> std::shared_ptr<Module> { return std::make_shared<Name>(); }}},
      EMBER_ACTIVATION_LAYERS(EMBER_X)
#undef EMBER_X
      {"gelu",
       {{"approximate"},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          const std::string approximate = a.text("approximate", "none");
          if (approximate != "none" && approximate != "tanh")
            a.error("'approximate' must be none or tanh, got '" + approximate + "'");
          return std::make_shared<GELU>(approximate);
        }}},
      {"leaky_relu",
       {{"negative_slope"},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          return std::make_shared<LeakyReLU>(a.number("negative_slope", 0.01));
        }}},
      {"elu", {{"alpha"}, [](const Args& a, Generator*) -> std::shared_ptr<Module> { return std::make_shared<ELU>(a.number("alpha", 1.0)); }}},
      {"softplus",
       {{"beta", "threshold"},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          const double beta = a.number("beta", 1.0);
          if (beta == 0) a.error("'beta' must not be 0");
          return std::make_shared<Softplus>(beta, a.number("threshold", 20.0));
        }}},
      {"hardtanh",
       {{"min_val", "max_val"},
        [](const Args& a, Generator*) -> std::shared_ptr<Module> {
          const double lo = a.number("min_val", -1.0), hi = a.number("max_val", 1.0);
          if (lo > hi) a.error("'min_val' must not exceed 'max_val'");
          return std::make_shared<Hardtanh>(lo, hi);
        }}},
      {"softmax",
       {{"dim"}, [](const Args& a, Generator*) -> std::shared_ptr<Module> { return std::make_shared<Softmax>(a.integer("dim", -1)); }}},
      // --- sequence models: transformer layers over [T, D], and the whole GPT over token ids [T] ---
      {"position_embedding",
       {{"kind"},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          if (a.in.size() != 2)
            a.error("position_embedding needs a sequence [T, D] (after an embedding), but the input here is " + a.in.str());
          const std::string kind = a.text("kind", "learned");
          // max_len is the input's T: the data's context
          if (kind == "learned") return std::make_shared<LearnedPositionalEmbedding>(a.in[0], a.in[1], gen);
          if (kind == "sinusoidal") return std::make_shared<SinusoidalPositionalEncoding>(a.in[0], a.in[1]);
          a.error("'kind' must be learned or sinusoidal, got '" + kind + "'");
        }}},
      {"transformer_block",
       {{"heads", "dim_feedforward", "dropout", "activation", "norm_first", "causal"},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          if (a.in.size() != 2)
            a.error("transformer_block needs a sequence [T, D] (after an embedding), but the input here is " + a.in.str());
          const int64_t d = a.in[1], heads = a.integer("heads");
          if (heads <= 0 || d % heads != 0)
            a.error("'heads' (" + std::to_string(heads) + ") must be positive and divide the input's dim " + std::to_string(d));
          const double p = a.number("dropout", 0.1);
          if (!(p >= 0 && p < 1)) a.error("'dropout' must be in [0, 1), got " + std::to_string(p));
          const std::string activation = a.text("activation", "gelu");
          if (activation != "relu" && activation != "gelu") a.error("'activation' must be relu or gelu, got '" + activation + "'");
          const int64_t ff = a.integer("dim_feedforward", 4 * d);
          if (ff <= 0) a.error("'dim_feedforward' must be positive, got " + std::to_string(ff));
          return std::make_shared<TransformerBlock>(TransformerEncoderLayerOptions{.d_model = d,
                                                                                   .nhead = heads,
                                                                                   .dim_feedforward = ff,
                                                                                   .dropout = p,
                                                                                   .activation = activation,
                                                                                   .batch_first = true,
                                                                                   .norm_first = a.boolean("norm_first", true)},
                                                    a.boolean("causal", true), gen);
        }}},
      {"lm_head",
       {{"bias"},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          if (a.in.size() != 1 && a.in.size() != 2)
            a.error("lm_head needs [T, D] or [D], but the input here is " + a.in.str());
          return std::make_shared<Linear>(a.in.back(), a.vocab("lm_head"), a.boolean("bias", false), gen);
        }}},
      {"gpt",
       {{"layers", "heads", "dim", "context", "dropout", "mlp_ratio", "position", "tie_weights", "bias"},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          a.need_tokens("gpt");
          if (a.in.size() != 1) a.error("gpt takes token windows [T], but the input here is " + a.in.str());
          const int64_t context = a.integer("context", a.in[0]);
          if (context != a.in[0])
            a.error("'context' (" + std::to_string(context) + ") must equal the data's context (its windows have " +
                    std::to_string(a.in[0]) + " tokens): set data.context to the same value, or leave context out");
          GPTOptions o{.vocab_size = a.vocab("gpt"),
                       .context = context,
                       .dim = a.integer("dim", 128),
                       .layers = a.integer("layers", 4),
                       .heads = a.integer("heads", 4),
                       .mlp_ratio = a.integer("mlp_ratio", 4),
                       .dropout = a.number("dropout", 0.1),
                       .position = a.text("position", "learned"),
                       .tie_weights = a.boolean("tie_weights", true),
                       .bias = a.boolean("bias", true)};
          try {
            return std::make_shared<GPT>(o, gen);
          } catch (const Error& e) {
            a.error(e.what());
          }
          },
          /*whole_model=*/true}},
      // --- recurrent layers (nn/rnn.h): [T, C] → [T, D·H] (batch_first), and the recurrent language model ---
      {"lstm", {{"hidden_size", "num_layers", "dropout", "bidirectional", "bias"}, make_recurrent<LSTM>}},
      {"gru", {{"hidden_size", "num_layers", "dropout", "bidirectional", "bias"}, make_recurrent<GRU>}},
      {"rnn_lm",
       {{"cell", "embedding_dim", "hidden_size", "num_layers", "dropout", "tie_weights"},
        [](const Args& a, Generator* gen) -> std::shared_ptr<Module> {
          a.need_tokens("rnn_lm");
          if (a.in.size() != 1) a.error("rnn_lm takes a window of token ids [T], but the input here is " + a.in.str());
          RNNLMOptions o;
          o.vocab_size = a.vocab("rnn_lm");
          o.cell = a.text("cell", o.cell);
          if (o.cell != "lstm" && o.cell != "gru") a.error("'cell' must be lstm or gru, got '" + o.cell + "'");
          o.embedding_dim = positive(a, "embedding_dim", o.embedding_dim);
          o.hidden_size = positive(a, "hidden_size", o.hidden_size);
          o.num_layers = positive(a, "num_layers", o.num_layers);
          o.dropout = unit_interval(a, "dropout", o.dropout);
          o.tie_weights = a.boolean("tie_weights", false);
          if (o.tie_weights && o.embedding_dim != o.hidden_size)
            a.error("'tie_weights: true' needs embedding_dim == hidden_size (the head reuses the embedding), got " +
                    std::to_string(o.embedding_dim) + " and " + std::to_string(o.hidden_size));
          return std::make_shared<RNNLanguageModel>(o, gen);
        },
        /*whole_model=*/true}},
  };
  return t;
}

}  // namespace

std::vector<std::string> layer_types() {
  std::vector<std::string> out;
  for (const auto& [name, e] : table()) out.push_back(name);
  return out;
}

std::vector<std::string> layer_keys(const std::string& type) {
  const auto it = table().find(type);
  return it == table().end() ? std::vector<std::string>{} : it->second.keys;
}

std::string inferred_key_message(const std::string& type, const std::string& key, const Shape* input) {
  for (const InferredKey& k : kInferredKeys)
    if (type == k.type && key == k.key)
      return "'" + key + "' is not set by hand: input sizes are inferred from the previous layer (" + key + " = " +
             k.from + (input != nullptr ? ", here " + input->str() : std::string()) + "); remove the key";
  return {};
}

namespace {

// Builds one spec for input `shape`/`dtype`, checks it on a zero batch of one and moves them to its output.
std::shared_ptr<Module> build_layer(const LayerSpec& spec, Shape& shape, DType& dtype, int64_t vocab_size,
                                    Generator* gen) {
  const auto it = table().find(spec.type);
  EMBER_CHECK(it != table().end(), spec.where, ": unknown layer type '", spec.type, "'",
              did_you_mean(spec.type, layer_types()), "; valid types: ", join(layer_types()));
  const Entry& entry = it->second;
  for (const auto& [key, value] : spec.args) {
    if (const std::string why = inferred_key_message(spec.type, key, &shape); !why.empty())
      detail::throw_error(spec.where, " (", spec.type, "): ", why);
    EMBER_CHECK(std::find(entry.keys.begin(), entry.keys.end(), key) != entry.keys.end(), spec.where, " (",
                spec.type, "): unknown key '", key, "'", did_you_mean(key, entry.keys), "; valid keys: ",
                entry.keys.empty() ? std::string("none") : join(entry.keys));
  }
  const Args args(spec, shape, dtype, vocab_size);
  std::shared_ptr<Module> layer;
  try {
    layer = entry.make(args, gen);
    // The output shape for one sample, from a zero batch of one, without recording or side effects.
    NoGradGuard no_grad;
    layer->eval();
    Shape batch{1};
    for (int64_t s : shape) batch.push_back(s);
    const Tensor y = layer->forward(zeros(batch, {.dtype = dtype}));
    layer->train();
    EMBER_CHECK(y.dim() >= 1 && y.size(0) == 1, "the layer changes the batch dim");
    shape = Shape(std::span<const int64_t>(y.shape().data() + 1, y.dim() - 1));
    dtype = y.dtype();
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (msg.rfind(spec.where, 0) == 0) throw;  // already located
    args.error(std::string("does not fit the input ") + shape.str() + ": " + msg);
  }
  return layer;
}

}  // namespace

bool is_whole_model(const std::string& type) {
  const auto it = table().find(type);
  return it != table().end() && it->second.whole_model;
}

std::shared_ptr<Sequential> build_sequential(const std::vector<LayerSpec>& specs, const ModelInput& input,
                                             Generator* gen) {
  auto model = std::make_shared<Sequential>();
  Shape shape = input.sample_shape;
  DType dtype = input.dtype;
  for (const LayerSpec& spec : specs) {
    EMBER_CHECK(!is_whole_model(spec.type) || specs.size() == 1, spec.where, " (", spec.type, "): ", spec.type,
                " is a whole model: it must be the only entry of the model (model: {type: ", spec.type, ", ...})");
    model->push_back(build_layer(spec, shape, dtype, input.vocab_size, gen));
  }
  return model;
}

std::shared_ptr<Sequential> build_sequential(const std::vector<LayerSpec>& specs, const Shape& sample_shape,
                                             Generator* gen) {
  return build_sequential(specs, ModelInput{.sample_shape = sample_shape}, gen);
}

std::shared_ptr<Module> build_model(const std::vector<LayerSpec>& specs, const ModelInput& input, Generator* gen) {
  auto model = build_sequential(specs, input, gen);
  if (specs.size() == 1 && is_whole_model(specs[0].type)) return (*model)[0];
  return model;
}

}  // namespace ember::nn
