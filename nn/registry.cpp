#include "nn/registry.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>

#include "autograd/grad_mode.h"
#include "nn/registry_table.h"

namespace ember::nn {
namespace {

using registry::Args;
using registry::Entry;
using registry::Kind;
using registry::Row;
using registry::table;

// The rows that also take a string: a convolution's padding "same" / "valid" (PyTorch's padding='same').
bool named_padding(const std::string& type, const std::string& key) {
  return key == "padding" && (type == "conv2d" || type == "conv1d");
}

// Checks the values a spec gives against its type's rows: the kind, then the range or the choices.
void check_args(const LayerSpec& spec, const std::vector<Row>& rows) {
  const auto fail = [&](const std::string& key, const std::string& what) {
    detail::throw_error(spec.where, " (", spec.type, "): '", key, "' must be ", what);
  };
  for (const auto& arg : spec.args) {
    const std::string& key = arg.first;  // NOTE: not a structured binding: clang 14 cannot capture one
    const auto& value = arg.second;
    const Row& row = *std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.path == key; });
    const auto* i = std::get_if<int64_t>(&value);
    const auto* d = std::get_if<double>(&value);
    const auto* list = std::get_if<std::vector<int64_t>>(&value);
    std::optional<double> number;  // the value a range applies to
    if (const auto* t = std::get_if<std::string>(&value); t != nullptr && named_padding(spec.type, key)) {
      if (*t != "same" && *t != "valid") fail(key, std::string(row.kind == Kind::pair ? "an integer, [h, w]" : "an integer") + ", \"same\" or \"valid\", got '" + *t + "'");
      continue;
    }
    switch (row.kind) {
      case Kind::integer:
        if (i == nullptr) fail(key, "an integer");
        number = static_cast<double>(*i);
        break;
      case Kind::number:
        if (i == nullptr && d == nullptr) fail(key, "a number");
        number = d != nullptr ? *d : static_cast<double>(*i);
        break;
      case Kind::boolean:
        if (!std::holds_alternative<bool>(value)) fail(key, "true or false");
        break;
      case Kind::choice: {
        const auto* t = std::get_if<std::string>(&value);
        if (t == nullptr) fail(key, "a string");
        if (std::find(row.choices.begin(), row.choices.end(), *t) == row.choices.end())
          fail(key, schema::choices_phrase(row.choices) + ", got '" + *t + "'");
        break;
      }
      case Kind::pair:
        if (i == nullptr && (list == nullptr || list->size() != 2))
          fail(key, "an integer or a list of two integers [h, w]");
        break;
      case Kind::integers:
        if (i == nullptr && list == nullptr) fail(key, "an integer or a list of integers");
        if (list != nullptr && list->empty()) fail(key, "a list of at least one integer");
        for (const int64_t n : list != nullptr ? *list : std::vector<int64_t>{*i})
          if (!schema::in_range(static_cast<double>(n), row.range))
            fail(key, "a list of integers " + schema::range_phrase(row.range) + ", got " + std::to_string(n));
        break;
      default: throw std::logic_error("layer registry: " + spec.type + "." + key + " has a kind specs cannot give");
    }
    // The value as it would print: integers as integers, numbers with six decimals (std::to_string).
    if (number && !schema::in_range(*number, row.range))
      fail(key, schema::range_phrase(row.range) + ", got " + (i != nullptr ? std::to_string(*i) : std::to_string(*number)));
  }
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
    {"group_norm", "num_channels", "the input's channels"}, {"instance_norm", "num_features", "the input's channels"},
    {"embedding_bag", "num_embeddings", "the vocabulary size"},
    {"conv_transpose2d", "in_channels", "the input's channels"}, {"conv_transpose1d", "in_channels", "the input's channels"},
    {"resnet", "in_channels", "the input's channels"},
    {"rms_norm", "normalized_shape", "the input's last dim"}, {"swiglu", "dim", "the input's features"},
};

}  // namespace

std::vector<std::string> layer_types() {
  std::vector<std::string> out;
  for (const auto& [name, e] : table()) out.push_back(name);
  return out;
}

std::vector<std::string> layer_keys(const std::string& type) {
  std::vector<std::string> out;
  for (const schema::Key* k : layer_key_rows(type)) out.push_back(k->path);
  return out;
}

std::vector<const schema::Key*> layer_key_rows(const std::string& type) {
  const auto it = table().find(type);
  if (it == table().end()) return {};
  return schema::keys_of(std::span<const Row>(it->second.keys));
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
  const std::vector<std::string> keys = layer_keys(spec.type);
  for (const auto& [key, value] : spec.args) {
    if (const std::string why = inferred_key_message(spec.type, key, &shape); !why.empty())
      detail::throw_error(spec.where, " (", spec.type, "): ", why);
    EMBER_CHECK(std::find(keys.begin(), keys.end(), key) != keys.end(), spec.where, " (", spec.type,
                "): unknown key '", key, "'", did_you_mean(key, keys), "; valid keys: ",
                keys.empty() ? std::string("none") : join(keys));
  }
  check_args(spec, entry.keys);
  const Args args(spec, entry.keys, shape, dtype, vocab_size);
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
