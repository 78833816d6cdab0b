#pragma once
// Splitting a model's parameters into optimizer groups by what they are (GPT-style training: weight decay
// on the matrices only, none on biases, normalisation parameters and embeddings).
//
//   auto groups = optim::weight_decay_groups(*model, {optim::ParamKind::bias, optim::ParamKind::norm},
//                                            optim::AdamWOptions(3e-4).weight_decay(0.1));
//   optim::AdamW opt(std::move(groups));   // group 0: decayed (wd 0.1), group 1: the rest (wd 0)
//
// PyTorch equivalent: torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
//                                        {"params": no_decay, "weight_decay": 0.0}], lr=3e-4).
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "nn/module.h"
#include "optim/optimizer.h"

namespace ember::optim {

// What a parameter is, decided by the module that registers it and the parameter's own name:
//   bias       a parameter named "bias", "bias_*" or "*_bias" (Linear/Conv bias, LSTM's bias_ih_l0,
//              MultiheadAttention's in_proj_bias), in any module;
//   norm       every parameter of a normalisation module: type_name() ends with "Norm", "Norm1d" or
//              "Norm2d" (LayerNorm, BatchNorm1d/2d, GroupNorm, RMSNorm);
//   embedding  every parameter of a module whose type_name() contains "Embedding" (token and learned
//              position embeddings; a weight tied to an output projection is the embedding's weight).
// A parameter can be several kinds (a LayerNorm's bias is bias and norm).
enum class ParamKind { bias, norm, embedding };

// "bias" / "norm" / "embedding"; parse_param_kind is its inverse (nullopt for any other text).
const char* param_kind_name(ParamKind kind);
std::optional<ParamKind> parse_param_kind(const std::string& name);
// The kinds of parameter `name` (its last dotted component is the parameter's own name) of a module of
// type `module_type`.
std::vector<ParamKind> param_kinds(const std::string& module_type, const std::string& name);

inline const std::vector<ParamKind> kAllNoDecay = {ParamKind::bias, ParamKind::norm, ParamKind::embedding};

// Two groups over every parameter of `model`, each once (a parameter shared by two modules is listed once,
// where it first appears, with the union of its kinds): group 0 holds those of none of the `no_decay`
// kinds with `options`; group 1 the others with `options` and weight_decay 0. Both keep the model's
// parameter order (Module::parameters()). Either group may be empty. The names of each group's
// parameters, for logs and tests, go to `names` when given. `options` is an optimizer's own options
// (SGDOptions, AdamWOptions, ...; the groups then build that optimizer) or, for compatibility, a complete
// generic Hyper.
template <class Options>
std::vector<OptimizerParamGroup<Options>> weight_decay_groups(const nn::Module& model, const std::vector<ParamKind>& no_decay,
                                                              const Options& options,
                                                              std::vector<std::vector<std::string>>* names = nullptr);
std::vector<ParamGroup> weight_decay_groups(const nn::Module& model, const std::vector<ParamKind>& no_decay,
                                            const Hyper& hyper,
                                            std::vector<std::vector<std::string>>* names = nullptr);

// The two parameter lists weight_decay_groups puts in its groups: decayed, then the rest.
std::array<std::vector<Tensor>, 2> split_weight_decay(const nn::Module& model, const std::vector<ParamKind>& no_decay,
                                                      std::vector<std::vector<std::string>>* names = nullptr);

template <class Options>
std::vector<OptimizerParamGroup<Options>> weight_decay_groups(const nn::Module& model, const std::vector<ParamKind>& no_decay,
                                                              const Options& options,
                                                              std::vector<std::vector<std::string>>* names) {
  auto [decayed, rest] = split_weight_decay(model, no_decay, names);
  Options without = options;
  without.weight_decay = 0;
  std::vector<OptimizerParamGroup<Options>> groups;
  groups.push_back({std::move(decayed), options});
  groups.push_back({std::move(rest), without});
  return groups;
}

}  // namespace ember::optim
