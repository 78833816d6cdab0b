#include "optim/param_groups.h"

#include <algorithm>

namespace ember::optim {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

struct Entry {
  std::string name;
  Tensor param;
  std::vector<ParamKind> kinds;
};

// Depth first in registration order (own parameters, then children's), as Module::named_parameters().
void collect(const nn::Module& m, const std::string& prefix, std::vector<Entry>& out) {
  for (const auto& [name, param] : m.named_parameters(/*recurse=*/false)) {
    const std::vector<ParamKind> kinds = param_kinds(m.type_name(), name);
    const TensorImpl* impl = param.impl_ptr().get();
    auto same = std::find_if(out.begin(), out.end(), [impl](const Entry& e) { return e.param.impl_ptr().get() == impl; });
    if (same == out.end()) {
      out.push_back({prefix + name, param, kinds});
    } else {  // shared (tied): one entry, every kind it has anywhere
      for (ParamKind k : kinds)
        if (std::find(same->kinds.begin(), same->kinds.end(), k) == same->kinds.end()) same->kinds.push_back(k);
    }
  }
  for (const auto& [name, child] : m.named_children()) collect(*child, prefix + name + ".", out);
}

}  // namespace

const char* param_kind_name(ParamKind kind) {
  switch (kind) {
    case ParamKind::bias: return "bias";
    case ParamKind::norm: return "norm";
    case ParamKind::embedding: return "embedding";
  }
  return "?";
}

std::optional<ParamKind> parse_param_kind(const std::string& name) {
  for (ParamKind k : kAllNoDecay)
    if (name == param_kind_name(k)) return k;
  return std::nullopt;
}

std::vector<ParamKind> param_kinds(const std::string& module_type, const std::string& name) {
  const size_t dot = name.rfind('.');
  const std::string own = dot == std::string::npos ? name : name.substr(dot + 1);
  std::vector<ParamKind> kinds;
  if (own == "bias" || own.rfind("bias_", 0) == 0 || ends_with(own, "_bias")) kinds.push_back(ParamKind::bias);
  if (ends_with(module_type, "Norm") || ends_with(module_type, "Norm1d") || ends_with(module_type, "Norm2d"))
    kinds.push_back(ParamKind::norm);
  if (module_type.find("Embedding") != std::string::npos) kinds.push_back(ParamKind::embedding);
  return kinds;
}

std::array<std::vector<Tensor>, 2> split_weight_decay(const nn::Module& model, const std::vector<ParamKind>& no_decay,
                                                      std::vector<std::vector<std::string>>* names) {
  std::vector<Entry> entries;
  collect(model, "", entries);
  std::array<std::vector<Tensor>, 2> out;
  if (names) names->assign(2, {});
  for (const Entry& e : entries) {
    const bool exempt = std::any_of(e.kinds.begin(), e.kinds.end(), [&](ParamKind k) {
      return std::find(no_decay.begin(), no_decay.end(), k) != no_decay.end();
    });
    out[exempt ? 1 : 0].push_back(e.param);
    if (names) (*names)[exempt ? 1 : 0].push_back(e.name);
  }
  return out;
}

std::vector<ParamGroup> weight_decay_groups(const nn::Module& model, const std::vector<ParamKind>& no_decay,
                                            const Hyper& hyper, std::vector<std::vector<std::string>>* names) {
  auto [decayed, rest] = split_weight_decay(model, no_decay, names);
  Hyper without = hyper;
  without.weight_decay = 0;
  return {ParamGroup{std::move(decayed), hyper, hyper.lr}, ParamGroup{std::move(rest), without, hyper.lr}};
}

}  // namespace ember::optim
