#include "optim/optimizer.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "core/raw.h"

namespace ember::optim {

Optimizer::Optimizer(std::string name, OptimizerOp op, bool decoupled)
    : name_(std::move(name)), op_(op), decoupled_(decoupled) {}

Optimizer::Optimizer(std::string name, OptimizerOp op, bool decoupled, std::vector<ParamGroup> groups)
    : Optimizer(std::move(name), op, decoupled) {
  for (auto& g : groups) add_param_group(std::move(g.params), g.hyper);
}

void Optimizer::check_hyper(const Hyper& h) const {
  EMBER_CHECK(h.lr >= 0 && std::isfinite(h.lr), name(), ": invalid learning rate ", h.lr);
  EMBER_CHECK(h.weight_decay >= 0, name(), ": invalid weight_decay ", h.weight_decay);
  EMBER_CHECK(h.momentum >= 0, name(), ": invalid momentum ", h.momentum);
  EMBER_CHECK(h.eps >= 0, name(), ": invalid eps ", h.eps);
  if (op_ == OptimizerOp::rmsprop)
    EMBER_CHECK(h.beta2 >= 0 && h.beta2 < 1, name(), ": alpha must be in [0, 1), got ", h.beta2);
  else
    EMBER_CHECK(h.beta1 >= 0 && h.beta1 < 1 && h.beta2 >= 0 && h.beta2 < 1, name(), ": betas must be in [0, 1), got ",
                h.beta1, " and ", h.beta2);
  EMBER_CHECK(!h.nesterov || (h.momentum > 0 && h.dampening == 0), name(),
              ": nesterov momentum needs momentum > 0 and dampening = 0");
}

void Optimizer::add_param_group(std::vector<Tensor> params, const Hyper& h) {
  check_hyper(h);
  for (const Tensor& p : params) {
    EMBER_CHECK(p.defined() && is_floating(p.dtype()), name(), ": parameters must be floating tensors");
    EMBER_CHECK(p.is_leaf(), name(), ": can only optimize leaf tensors (parameters), not results of operations");
  }
  groups_.push_back(ParamGroup{std::move(params), h, h.lr});
}

std::vector<const char*> Optimizer::buffer_names(const Hyper& h) const {
  switch (op_) {
    case OptimizerOp::sgd: return {h.momentum != 0 ? "momentum_buffer" : nullptr, nullptr, nullptr};
    case OptimizerOp::adam: return {"exp_avg", "exp_avg_sq", h.amsgrad ? "max_exp_avg_sq" : nullptr};
    case OptimizerOp::rmsprop:
      return {"square_avg", h.momentum > 0 ? "momentum_buffer" : nullptr, h.centered ? "grad_avg" : nullptr};
  }
  return {nullptr, nullptr, nullptr};
}

Optimizer::State& Optimizer::state_for(size_t index, const Tensor& param, const Hyper& h) {
  State& s = state_[index];
  const auto names = buffer_names(h);
  for (int k = 0; k < 3; ++k)
    if (names[k] != nullptr && !s.buffers[k].defined()) s.buffers[k] = zeros_like(param);
  return s;
}

void Optimizer::step() {
  NoGradGuard no_grad;
  size_t index = 0;
  for (ParamGroup& group : groups_) {
    const Hyper& h = group.hyper;
    for (const Tensor& p : group.params) {
      const size_t i = index++;
      const Tensor grad = p.grad();
      if (!grad.defined()) continue;
      EMBER_CHECK(p.is_contiguous(), name(), ": parameter ", i, " is not contiguous");
      EMBER_CHECK(grad.shape() == p.shape() && grad.device() == p.device(), name(), ": the gradient of parameter ", i,
                  " does not match it");
      State& s = state_for(i, p, h);
      // The model moved (Module::to) after the state was made: the state follows its parameter.
      for (Tensor& b : s.buffers)
        if (b.defined() && b.device() != p.device()) b = raw::to(b, p.device());
      ++s.step;
      OptimizerParams op;
      op.lr = h.lr;
      op.weight_decay = h.weight_decay;
      op.decoupled_weight_decay = decoupled_;
      op.maximize = h.maximize;
      op.step = s.step;
      op.momentum = h.momentum;
      op.dampening = h.dampening;
      op.nesterov = h.nesterov;
      op.beta1 = h.beta1;
      op.beta2 = h.beta2;
      op.eps = h.eps;
      op.amsgrad = h.amsgrad;
      op.centered = h.centered;
      TensorArg args[3];
      const TensorArg* ptrs[3] = {};
      for (int k = 0; k < 3; ++k)
        if (s.buffers[k].defined()) ptrs[k] = &(args[k] = s.buffers[k].arg());
      const Tensor g = raw::contiguous(raw::to(grad, p.dtype()));
      backend(p.device()).optimizer_step(op_, op, p.arg(), g.arg(), ptrs[0], ptrs[1], ptrs[2]);
      p.impl().storage->bump_version();
    }
  }
}

void Optimizer::zero_grad(bool set_to_none) {
  for (ParamGroup& group : groups_)
    for (Tensor& p : group.params) {
      if (!p.grad().defined()) continue;
      if (set_to_none) p.set_grad(Tensor());
      else p.grad().zero_();
    }
}

NamedTensors Optimizer::state_dict() const {
  NamedTensors out;
  for (size_t g = 0; g < groups_.size(); ++g) {
    out.emplace_back("group." + std::to_string(g) + ".lr", scalar_tensor(groups_[g].hyper.lr, {.dtype = DType::f64}));
    out.emplace_back("group." + std::to_string(g) + ".initial_lr",
                     scalar_tensor(groups_[g].initial_lr, {.dtype = DType::f64}));
  }
  size_t index = 0;
  for (const ParamGroup& group : groups_) {
    const auto names = buffer_names(group.hyper);
    for (size_t k = 0; k < group.params.size(); ++k, ++index) {
      const auto it = state_.find(index);
      if (it == state_.end()) continue;
      const std::string prefix = "state." + std::to_string(index) + ".";
      out.emplace_back(prefix + "step", scalar_tensor(static_cast<double>(it->second.step), {.dtype = DType::i64}));
      for (int b = 0; b < 3; ++b)
        if (names[b] != nullptr && it->second.buffers[b].defined()) out.emplace_back(prefix + names[b], it->second.buffers[b]);
    }
  }
  return out;
}

void Optimizer::load_state_dict(const NamedTensors& state) {
  std::map<std::string, Tensor> given(state.begin(), state.end());
  const auto take = [&](const std::string& key) -> Tensor {
    const auto it = given.find(key);
    if (it == given.end()) return {};
    Tensor t = it->second;
    given.erase(it);
    return t;
  };
  for (size_t g = 0; g < groups_.size(); ++g) {
    const Tensor lr = take("group." + std::to_string(g) + ".lr"), lr0 = take("group." + std::to_string(g) + ".initial_lr");
    EMBER_CHECK(lr.defined() && lr0.defined(), name(), ".load_state_dict: missing group.", g,
                ".lr; the state was saved for a different number of parameter groups");
    groups_[g].hyper.lr = lr.item<double>();
    groups_[g].initial_lr = lr0.item<double>();
  }
  std::map<size_t, State> restored;
  size_t index = 0;
  for (const ParamGroup& group : groups_) {
    const auto names = buffer_names(group.hyper);
    for (const Tensor& p : group.params) {
      const std::string prefix = "state." + std::to_string(index) + ".";
      const Tensor step = take(prefix + "step");
      if (step.defined()) {
        State s;
        s.step = step.item<int64_t>();
        for (int b = 0; b < 3; ++b) {
          if (names[b] == nullptr) continue;
          const Tensor buf = take(prefix + names[b]);
          EMBER_CHECK(buf.defined(), name(), ".load_state_dict: missing ", prefix, names[b]);
          EMBER_CHECK(buf.shape() == p.shape(), name(), ".load_state_dict: ", prefix, names[b], " has shape ",
                      buf.shape(), " but parameter ", index, " has ", p.shape());
          s.buffers[b] = raw::clone(raw::to(raw::to(buf, p.dtype()), p.device()));
        }
        restored[index] = std::move(s);
      }
      ++index;
    }
  }
  EMBER_CHECK(given.empty(), name(), ".load_state_dict: unexpected key '", given.begin()->first,
              "'; the state was saved for a different model or optimizer");
  state_ = std::move(restored);
}

// ---- options <-> Hyper ----
// Fields an optimizer does not have stay at Hyper's (neutral) values.

Hyper to_hyper(const SGDOptions& o) {
  return Hyper{.lr = o.lr, .weight_decay = o.weight_decay, .momentum = o.momentum, .dampening = o.dampening,
               .nesterov = o.nesterov, .maximize = o.maximize};
}
Hyper to_hyper(const AdamOptions& o) {
  return Hyper{.lr = o.lr, .weight_decay = o.weight_decay, .beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps,
               .amsgrad = o.amsgrad, .maximize = o.maximize};
}
Hyper to_hyper(const AdamWOptions& o) {
  return Hyper{.lr = o.lr, .weight_decay = o.weight_decay, .beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps,
               .amsgrad = o.amsgrad, .maximize = o.maximize};
}
Hyper to_hyper(const RMSpropOptions& o) {
  return Hyper{.lr = o.lr, .weight_decay = o.weight_decay, .momentum = o.momentum, .beta2 = o.alpha, .eps = o.eps,
               .centered = o.centered, .maximize = o.maximize};
}
void from_hyper(const Hyper& h, SGDOptions& o) {
  o = SGDOptions{.lr = h.lr, .momentum = h.momentum, .dampening = h.dampening, .weight_decay = h.weight_decay,
                 .nesterov = h.nesterov, .maximize = h.maximize};
}
void from_hyper(const Hyper& h, AdamOptions& o) {
  o = AdamOptions{.lr = h.lr, .beta1 = h.beta1, .beta2 = h.beta2, .eps = h.eps, .weight_decay = h.weight_decay,
                  .amsgrad = h.amsgrad, .maximize = h.maximize};
}
void from_hyper(const Hyper& h, AdamWOptions& o) {
  o = AdamWOptions{.lr = h.lr, .beta1 = h.beta1, .beta2 = h.beta2, .eps = h.eps, .weight_decay = h.weight_decay,
                   .amsgrad = h.amsgrad, .maximize = h.maximize};
}
void from_hyper(const Hyper& h, RMSpropOptions& o) {
  o = RMSpropOptions{.lr = h.lr, .alpha = h.beta2, .eps = h.eps, .weight_decay = h.weight_decay, .momentum = h.momentum,
                     .centered = h.centered, .maximize = h.maximize};
}

// ---- TypedOptimizer ----

namespace {
template <class O>
std::vector<OptimizerParamGroup<O>> one_group(std::vector<Tensor> params) {
  std::vector<OptimizerParamGroup<O>> groups;
  groups.emplace_back(std::move(params));
  return groups;
}
}  // namespace

template <class O>
TypedOptimizer<O>::TypedOptimizer(std::vector<Tensor> params, const O& options)
    : TypedOptimizer(one_group<O>(std::move(params)), options) {}

template <class O>
TypedOptimizer<O>::TypedOptimizer(std::vector<Group> groups, const O& defaults)
    : Optimizer(Algorithm<O>::name, Algorithm<O>::op, Algorithm<O>::decoupled), defaults_(defaults) {
  for (Group& g : groups) add_param_group(std::move(g));
}

template <class O>
TypedOptimizer<O>::TypedOptimizer(std::vector<ParamGroup> groups, int)
    : Optimizer(Algorithm<O>::name, Algorithm<O>::op, Algorithm<O>::decoupled, std::move(groups)) {}

template <class O>
void TypedOptimizer<O>::add_param_group(Group group) {
  Optimizer::add_param_group(std::move(group.params), to_hyper(group.options.value_or(defaults_)));
}

template <class O>
O TypedOptimizer<O>::options(size_t group) const {
  EMBER_CHECK(group < param_groups().size(), name(), ".options: no parameter group ", group, " (there are ",
              param_groups().size(), ")");
  O o;
  from_hyper(param_groups()[group].hyper, o);
  return o;
}

template <class O>
void TypedOptimizer<O>::set_options(size_t group, const O& options) {
  EMBER_CHECK(group < param_groups().size(), name(), ".set_options: no parameter group ", group, " (there are ",
              param_groups().size(), ")");
  const Hyper h = to_hyper(options);
  check_hyper(h);
  param_groups()[group].hyper = h;
}

template class TypedOptimizer<SGDOptions>;
template class TypedOptimizer<AdamOptions>;
template class TypedOptimizer<AdamWOptions>;
template class TypedOptimizer<RMSpropOptions>;

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type) {
  NoGradGuard no_grad;
  double total = 0;
  bool any = false;
  for (const Tensor& p : params) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    any = true;
    const Tensor a = abs(g.to(DType::f64));
    if (std::isinf(norm_type)) total = std::max(total, max(a).item<double>());
    else total += sum(pow(a, norm_type)).item<double>();
  }
  if (!any) return 0.0;
  if (!std::isinf(norm_type)) total = std::pow(total, 1.0 / norm_type);
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1)
    for (const Tensor& p : params)
      if (p.grad().defined()) p.grad().mul_(coef);
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip) {
  NoGradGuard no_grad;
  for (const Tensor& p : params)
    if (p.grad().defined()) raw::copy_(p.grad(), clamp(p.grad(), -clip, clip));
}

}  // namespace ember::optim
