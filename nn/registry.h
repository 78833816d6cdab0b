#pragma once
// The layer registry: builds a model from layer specs such as the YAML
//   model:
//     - {type: conv2d, out_channels: 32, kernel_size: 3, padding: 1}
//     - {type: relu}
//     - {type: max_pool2d, kernel_size: 2}
//     - {type: flatten}
//     - {type: linear, out_features: 10}
// Input sizes (in_features, in_channels, num_features) are inferred from the sample shape flowing through
// the layers, so specs stay short. Unknown types and keys, wrong value types and shapes that do not
// connect are errors naming the spec's location and listing the valid choices; giving an inferred size
// (in_features: 784) is an error that says it is inferred.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "nn/layers.h"

namespace ember::nn {

using SpecValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;

struct LayerSpec {
  std::string type;
  std::vector<std::pair<std::string, SpecValue>> args;  // in the order written
  std::string where;  // prefixes every error about this spec, e.g. "cfg.yaml:14: model[2]"
};

// The registered layer types and, for one type, its keys (required ones first).
std::vector<std::string> layer_types();
std::vector<std::string> layer_keys(const std::string& type);

// For a key that PyTorch's constructor takes but a spec does not because the registry infers it
// (in_features of linear, in_channels of conv1d/conv2d, ...): the sentence saying so, naming the input
// shape when given. Empty for any other key.
std::string inferred_key_message(const std::string& type, const std::string& key, const Shape* input = nullptr);

// What the model's input is, known before any layer is built.
struct ModelInput {
  Shape sample_shape;        // one example without the batch dim: {1, 28, 28} for images, {T} for token windows
  DType dtype = DType::f32;  // i64 for token ids
  int64_t vocab_size = 0;    // the tokenizer's vocabulary size with text data; 0 when the data has none
};

// Builds the model of `specs` for `input`: a Sequential of the layers, or, for a whole-model type (one that
// is a complete model such as {type: gpt, ...}, which must then be the only spec), that module itself, so
// its state_dict keys carry no "0." prefix. Layers are checked as build_sequential does.
std::shared_ptr<Module> build_model(const std::vector<LayerSpec>& specs, const ModelInput& input,
                                    Generator* gen = nullptr);
// True for the whole-model types.
bool is_whole_model(const std::string& type);

// Builds the layers in order. `sample_shape` is one example without the batch dim ({1, 28, 28} for
// Fashion-MNIST images). Each layer is built for the shape the previous one produces, checked by running
// it on a zero batch of one (in eval mode). Throws ember::Error on any bad spec.
std::shared_ptr<Sequential> build_sequential(const std::vector<LayerSpec>& specs, const Shape& sample_shape,
                                             Generator* gen = nullptr);
std::shared_ptr<Sequential> build_sequential(const std::vector<LayerSpec>& specs, const ModelInput& input,
                                             Generator* gen = nullptr);

}  // namespace ember::nn
