#include "nn/module.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "autograd/grad_mode.h"
#include "core/raw.h"

namespace ember::nn {

Tensor Module::forward(const Tensor&) {
  detail::throw_error(type_name(), ": this module has no single-tensor forward(); call its own forward "
                      "signature (or give the class a forward(const Tensor&) override)");
}

void Module::check_input_dtype(const Tensor& x, const Tensor& like) const {
  if (!x.defined() || !like.defined() || x.dtype() == like.dtype() || !is_floating(x.dtype())) return;
  ember::detail::throw_error(type_name(), ": the input is ", dtype_name(x.dtype()), " but the layer's parameters are ",
                             dtype_name(like.dtype()), "; convert the input with .to(DType::", dtype_name(like.dtype()),
                             ") or the layer with .to(DType::", dtype_name(x.dtype()), ")");
}

void Module::check_name(const std::string& name, const char* what) const {
  EMBER_CHECK(!name.empty() && name.find('.') == std::string::npos, type_name(), ": ", what, " name '", name,
              "' must be non-empty and contain no '.'");
  const auto taken = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& e) { return e.first == name; });
  };
  EMBER_CHECK(!taken(parameters_) && !taken(buffers_) && !taken(children_), type_name(), ": the name '", name,
              "' is already registered in this module");
}

Tensor& Module::register_parameter(const std::string& name, Tensor value, bool requires_grad) {
  check_name(name, "parameter");
  EMBER_CHECK(value.defined(), type_name(), ": parameter '", name, "' is an undefined tensor");
  if (requires_grad) value.requires_grad_(true);
  parameters_.emplace_back(name, std::move(value));
  return parameters_.back().second;
}

Tensor& Module::register_buffer(const std::string& name, Tensor value, bool persistent) {
  check_name(name, "buffer");
  EMBER_CHECK(value.defined(), type_name(), ": buffer '", name, "' is an undefined tensor");
  if (!persistent) non_persistent_.push_back(name);
  buffers_.emplace_back(name, std::move(value));
  return buffers_.back().second;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_name(name, "module");
  EMBER_CHECK(module != nullptr, type_name(), ": module '", name, "' is null");
  module->train(training_);
  children_.emplace_back(name, std::move(module));
}

void Module::collect(const std::string& prefix, bool recurse, Kind kind, NamedTensors& out,
                     std::vector<const TensorImpl*>* seen) const {
  for (const auto& [name, t] : kind == Kind::parameters ? parameters_ : buffers_) {
    if (kind == Kind::persistent_buffers &&
        std::find(non_persistent_.begin(), non_persistent_.end(), name) != non_persistent_.end())
      continue;
    if (seen != nullptr) {
      const TensorImpl* impl = t.impl_ptr().get();
      if (std::find(seen->begin(), seen->end(), impl) != seen->end()) continue;  // tied: listed under its first name
      seen->push_back(impl);
    }
    out.emplace_back(prefix + name, t);
  }
  if (!recurse) return;
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", true, kind, out, seen);
}

NamedTensors Module::named_parameters(bool recurse) const {
  NamedTensors out;
  std::vector<const TensorImpl*> seen;
  collect("", recurse, Kind::parameters, out, &seen);
  return out;
}

NamedTensors Module::named_buffers(bool recurse) const {
  NamedTensors out;
  std::vector<const TensorImpl*> seen;
  collect("", recurse, Kind::buffers, out, &seen);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [name, child] : children_) out.push_back(child);
  return out;
}

int64_t Module::parameter_count() const {
  int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::to(Device device) {
  NoGradGuard no_grad;
  for (auto* list : {&parameters_, &buffers_})
    for (auto& [name, t] : *list) {
      raw::set_data(t, raw::to(t, device));
      if (t.grad().defined()) raw::set_data(t.grad(), raw::to(t.grad(), device));
    }
  for (auto& [name, child] : children_) child->to(device);
}

void Module::to(DType dtype) {
  NoGradGuard no_grad;
  for (auto* list : {&parameters_, &buffers_})
    for (auto& [name, t] : *list) {
      if (!is_floating(t.dtype())) continue;  // counters and indices keep their type
      raw::set_data(t, raw::to(t, dtype));
      if (t.grad().defined()) raw::set_data(t.grad(), raw::to(t.grad(), dtype));
    }
  for (auto& [name, child] : children_) child->to(dtype);
}

void Module::zero_grad(bool set_to_none) {
  for (Tensor& p : parameters()) {
    if (!p.grad().defined()) continue;
    if (set_to_none) p.set_grad(Tensor());
    else p.grad().zero_();
  }
}

NamedTensors Module::state_dict() const {
  NamedTensors out;
  std::vector<const TensorImpl*> seen;
  collect("", true, Kind::parameters, out, &seen);
  collect("", true, Kind::persistent_buffers, out, &seen);
  return out;
}

std::vector<std::string> Module::load_state_dict(const NamedTensors& state, bool strict) {
  std::map<std::string, const Tensor*> given;
  for (const auto& [name, t] : state) given[name] = &t;
  std::vector<std::string> missing, misshaped, wrong_dtype;
  std::vector<std::pair<Tensor, const Tensor*>> copies;
  DType given_dtype = DType::f32, model_dtype = DType::f32;
  const NamedTensors own = state_dict();
  // The other names of tied tensors: accepted when given (with the tensor's shape), never required.
  NamedTensors every;
  collect("", true, Kind::parameters, every, nullptr);
  collect("", true, Kind::persistent_buffers, every, nullptr);
  for (const auto& entry : every) {
    const std::string& name = entry.first;  // NOTE: not a structured binding: clang 14 cannot capture those
    const Tensor& t = entry.second;
    const bool first_name = std::any_of(own.begin(), own.end(), [&](const auto& e) { return e.first == name; });
    const auto it = given.find(name);
    if (first_name || it == given.end()) continue;
    if (!(it->second->shape() == t.shape()))
      misshaped.push_back(name + " (tied; model " + t.shape().str() + ", given " + it->second->shape().str() + ")");
    given.erase(it);
  }
  for (const auto& [name, t] : own) {
    const auto it = given.find(name);
    if (it == given.end()) {
      missing.push_back(name);
      continue;
    }
    const Tensor& src = *it->second;
    if (!(src.shape() == t.shape())) {
      misshaped.push_back(name + " (model " + t.shape().str() + " " + std::string(dtype_name(t.dtype())) + ", given " +
                          src.shape().str() + " " + std::string(dtype_name(src.dtype())) + ")");
    } else if (src.dtype() != t.dtype()) {
      wrong_dtype.push_back(name + " (given " + std::string(dtype_name(src.dtype())) + ", the model's parameter is " +
                            std::string(dtype_name(t.dtype())) + ")");
      given_dtype = src.dtype(), model_dtype = t.dtype();
    } else {
      copies.emplace_back(t, &src);
    }
    given.erase(it);
  }
  std::vector<std::string> unexpected;
  for (const auto& [name, t] : given) unexpected.push_back(name);
  const auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (!misshaped.empty() || !wrong_dtype.empty() || (strict && (!missing.empty() || !unexpected.empty()))) {
    std::ostringstream msg;
    msg << "load_state_dict (" << type_name() << "): the state does not fit the model";
    if (!missing.empty()) msg << "; missing keys: " << join(missing);
    if (!unexpected.empty()) msg << "; unexpected keys: " << join(unexpected);
    if (!misshaped.empty()) msg << "; mis-shaped keys: " << join(misshaped);
    if (!wrong_dtype.empty()) msg << "; dtype mismatch: " << join(wrong_dtype);
    if (!missing.empty() || !unexpected.empty() || !misshaped.empty()) {
      msg << ". Check that the state was saved from a model of the same layers and sizes";
      if (!strict && missing.empty() && unexpected.empty()) msg << " (non-strict loading still needs matching shapes)";
    }
    if (!wrong_dtype.empty()) {
      const std::string g(dtype_name(given_dtype)), m(dtype_name(model_dtype));
      msg << (missing.empty() && unexpected.empty() && misshaped.empty() ? ". " : "; for the dtypes: ")
          << "convert the model first with model.to(DType::" << g << ") to load " << g
          << " values as they are, or convert the tensors with .to(DType::" << m << ") before loading";
    }
    throw Error(msg.str());
  }
  NoGradGuard no_grad;
  for (auto& [dst, src] : copies) raw::copy_(dst, *src);
  std::vector<std::string> unused = missing;
  unused.insert(unused.end(), unexpected.begin(), unexpected.end());
  return unused;
}

}  // namespace ember::nn
