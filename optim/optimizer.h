#pragma once
// Optimizers (torch.optim): SGD, Adam, AdamW, RMSprop over parameter groups. Each step is one fused
// Backend update per parameter (backends/kernels.h OptimizerStep), PyTorch's single-tensor algorithm in
// its order of operations, so trajectories match PyTorch's (tests/test_optim.cpp).
//
//   optim::Adam opt(model->parameters(), {.lr = 1e-3});
//   opt.zero_grad(); loss.backward(); opt.step();
//
// Each optimizer has its own options type with torch.optim's defaults for it (optim/options.h:
// SGDOptions, AdamOptions, AdamWOptions, RMSpropOptions), in designated or LibTorch builder form.
//
// Parameter groups (torch.optim's `[{"params": ...}, {"params": ..., "lr": ...}]`) as LibTorch's
// OptimizerParamGroup: each group has that optimizer's options, or none and takes the optimizer's
// defaults (the options given to the constructor):
//
//   optim::AdamW opt({{decayed}, {no_decay, optim::AdamWOptions(3e-4).weight_decay(0)}},
//                    optim::AdamWOptions(3e-4).weight_decay(0.1));
//   optim::AdamW opt2(optim::weight_decay_groups(*model, optim::kAllNoDecay, optim::AdamWOptions(3e-4).weight_decay(0.1)));
//   // (optim/param_groups.h: biases, norm parameters and embeddings in a group with weight_decay 0)
//
// NOTE: as LibTorch's, a group's options are complete: AdamWOptions(1e-2) in a group has AdamW's own
// weight_decay 1e-2, not the constructor's. (torch.optim's Python dicts take each missing key from the
// constructor instead.)
//
// The generic `Hyper`/`ParamGroup` spelling (one struct for every optimizer) stays for compatibility: it
// is what param_groups() holds, and a ParamGroup list still builds any optimizer, but Hyper's defaults
// are nobody's in particular (weight_decay 0 also for AdamW; RMSprop's alpha is beta2, default 0.999):
// set every field, or use the optimizer's own options.
#include <concepts>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/named_tensors.h"
#include "core/tensor.h"
#include "optim/options.h"

namespace ember::optim {

using ember::NamedTensors;

// The hyper-parameters of one group as the optimizers run them (the union of every optimizer's fields).
// Building groups from it is the compatibility path: its defaults are generic, not the optimizer's.
struct Hyper {
  double lr = 1e-3;
  double weight_decay = 0;
  double momentum = 0, dampening = 0;  // SGD; momentum also RMSprop
  bool nesterov = false;               // SGD
  double beta1 = 0.9, beta2 = 0.999;   // Adam/AdamW; RMSprop's alpha is beta2
  double eps = 1e-8;
  bool amsgrad = false;                // Adam/AdamW
  bool centered = false;               // RMSprop
  bool maximize = false;
};

struct ParamGroup {
  std::vector<Tensor> params;
  Hyper hyper;
  double initial_lr = 0;  // the lr the group started with (schedulers scale from it); set by the optimizer
};

// A parameter group with an optimizer's own options (LibTorch's OptimizerParamGroup). Without options
// the group takes the optimizer's defaults.
template <class Options>
struct OptimizerParamGroup {
  OptimizerParamGroup(std::vector<Tensor> params) : params(std::move(params)) {}  // NOLINT: {params} in a list
  OptimizerParamGroup(std::vector<Tensor> params, const Options& options) : params(std::move(params)), options(options) {}

  std::vector<Tensor> params;
  std::optional<Options> options;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient (others are skipped, as in PyTorch).
  void step();
  // Clears the gradients: to undefined (PyTorch's default) or to zeros.
  void zero_grad(bool set_to_none = true);

  // Every group's current hyper-parameters (schedulers write hyper.lr), in the generic Hyper form; each
  // optimizer's options(g) reads a group in its own type.
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  // Adds a group with a complete generic Hyper (compatibility; fields left at Hyper's defaults are not
  // the optimizer's). Prefer the optimizer's add_param_group(Group).
  void add_param_group(std::vector<Tensor> params, const Hyper& hyper);

  // Everything a resumed run needs, as tensors (safetensors-ready): per parameter i "state.i.step" (i64)
  // and its buffers ("state.i.exp_avg", ...); per group g "group.g.lr" and "group.g.initial_lr" (f64).
  NamedTensors state_dict() const;
  // Restores it; the parameters must be the same (count and shapes). Throws naming the key that differs.
  void load_state_dict(const NamedTensors& state);

  const std::string& name() const { return name_; }

 protected:
  // decoupled: AdamW's weight decay.
  Optimizer(std::string name, OptimizerOp op, bool decoupled);
  Optimizer(std::string name, OptimizerOp op, bool decoupled, std::vector<ParamGroup> groups);
  // Throws naming the optimizer and the field when a group's hyper-parameters are invalid.
  void check_hyper(const Hyper& h) const;

 private:
  friend class LRScheduler;
  struct State {
    int64_t step = 0;
    Tensor buffers[3];  // see Backend::optimizer_step for each optimizer's buffers
  };
  std::vector<const char*> buffer_names(const Hyper& h) const;
  State& state_for(size_t index, const Tensor& param, const Hyper& h);

  std::string name_;
  OptimizerOp op_;
  bool decoupled_;
  std::vector<ParamGroup> groups_;
  std::map<size_t, State> state_;  // by the parameter's position across all groups
  bool scheduled_ = false;         // an lr scheduler has been built on it (torch: groups have 'initial_lr')
};

// Conversions between an optimizer's options and the generic Hyper it runs with.
Hyper to_hyper(const SGDOptions& o);
Hyper to_hyper(const AdamOptions& o);
Hyper to_hyper(const AdamWOptions& o);
Hyper to_hyper(const RMSpropOptions& o);
void from_hyper(const Hyper& h, SGDOptions& o);
void from_hyper(const Hyper& h, AdamOptions& o);
void from_hyper(const Hyper& h, AdamWOptions& o);
void from_hyper(const Hyper& h, RMSpropOptions& o);

// Each algorithm's name and kernel, by its options type.
template <class O>
struct Algorithm;
template <>
struct Algorithm<SGDOptions> {
  static constexpr const char* name = "SGD";
  static constexpr OptimizerOp op = OptimizerOp::sgd;
  static constexpr bool decoupled = false;
};
template <>
struct Algorithm<AdamOptions> {
  static constexpr const char* name = "Adam";
  static constexpr OptimizerOp op = OptimizerOp::adam;
  static constexpr bool decoupled = false;
};
template <>
struct Algorithm<AdamWOptions> {
  static constexpr const char* name = "AdamW";
  static constexpr OptimizerOp op = OptimizerOp::adam;
  static constexpr bool decoupled = true;  // p ← p·(1 - lr·wd)
};
template <>
struct Algorithm<RMSpropOptions> {
  static constexpr const char* name = "RMSprop";
  static constexpr OptimizerOp op = OptimizerOp::rmsprop;
  static constexpr bool decoupled = false;
};

// What SGD, Adam, AdamW and RMSprop share: groups in the optimizer's own options type, and their
// constructors: parameters with one options value, groups (each with its own options or the defaults),
// or, for compatibility, a std::vector<ParamGroup> of complete Hypers (a variable or a function's result,
// not a braced list, which would be ambiguous with the Group form: `{{params}, {.lr = 0.1}}` fits both).
template <class O>
class TypedOptimizer : public Optimizer {
 public:
  using Options = O;
  using Group = OptimizerParamGroup<O>;

  TypedOptimizer(std::vector<Tensor> params, const O& options = {});
  TypedOptimizer(std::vector<Group> groups, const O& defaults = {});
  template <class V>
    requires std::same_as<std::remove_cvref_t<V>, std::vector<ParamGroup>>
  explicit TypedOptimizer(V&& groups) : TypedOptimizer(std::vector<ParamGroup>(std::forward<V>(groups)), 0) {}

  // The options groups without their own take (the constructor's).
  const O& defaults() const { return defaults_; }
  // Group g's hyper-parameters now (lr as the scheduler left it). Throws when there is no group g.
  O options(size_t group) const;
  // Replaces group g's hyper-parameters, checked as a new group's; initial_lr stays.
  void set_options(size_t group, const O& options);

  using Optimizer::add_param_group;
  // Adds a group: its own options, or the defaults.
  void add_param_group(Group group);

 private:
  TypedOptimizer(std::vector<ParamGroup> groups, int /* the compatibility form */);

  O defaults_;
};
extern template class TypedOptimizer<SGDOptions>;
extern template class TypedOptimizer<AdamOptions>;
extern template class TypedOptimizer<AdamWOptions>;
extern template class TypedOptimizer<RMSpropOptions>;

// SGD with momentum, dampening, Nesterov and weight decay (SGDOptions). The compatibility form's Hyper
// fields: lr, weight_decay, momentum, dampening, nesterov, maximize.
class SGD : public TypedOptimizer<SGDOptions> {
 public:
  using TypedOptimizer::TypedOptimizer;
};

// Adam (L2 weight decay added to the gradient; AdamOptions). Hyper fields: lr, weight_decay, beta1, beta2,
// eps, amsgrad, maximize.
class Adam : public TypedOptimizer<AdamOptions> {
 public:
  using TypedOptimizer::TypedOptimizer;
};

// AdamW: decoupled weight decay (p ← p·(1 - lr·wd)); AdamWOptions, weight_decay 1e-2 by default. Hyper
// fields: as Adam's. NOTE: Hyper's weight_decay defaults to 0, not AdamW's 1e-2.
class AdamW : public TypedOptimizer<AdamWOptions> {
 public:
  using TypedOptimizer::TypedOptimizer;
};

// RMSprop (RMSpropOptions: alpha 0.99, lr 1e-2 by default). Hyper fields: lr, weight_decay, momentum,
// centered, eps, maximize, and alpha as beta2 (NOTE: Hyper's beta2 defaults to Adam's 0.999, not 0.99).
class RMSprop : public TypedOptimizer<RMSpropOptions> {
 public:
  using TypedOptimizer::TypedOptimizer;
};

// Scales all gradients so their joint norm is at most max_norm; returns the norm before clipping (as
// torch.nn.utils.clip_grad_norm_). norm_type: 2, 1, or INFINITY.
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0);
// Clamps every gradient element to [-clip, clip].
void clip_grad_value_(const std::vector<Tensor>& params, double clip);

}  // namespace ember::optim
