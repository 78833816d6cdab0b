#pragma once
// Optimizers (torch.optim): SGD, Adam, AdamW, RMSprop over parameter groups. Each step is one fused
// Backend update per parameter (backends/kernels.h OptimizerStep), PyTorch's single-tensor algorithm in
// its order of operations, so trajectories match PyTorch's (tests/test_optim.cpp).
//
//   optim::Adam opt(model->parameters(), {.lr = 1e-3});
//   opt.zero_grad(); loss.backward(); opt.step();
//
// Parameter groups (torch.optim's `[{"params": ..., "lr": ...}, ...]`): every constructor also takes a
// list of ParamGroup, each with its own complete Hyper (nothing is inherited from the options structs):
//
//   optim::AdamW opt(optim::weight_decay_groups(*model, optim::kAllNoDecay, {.lr = 1e-3, .weight_decay = 0.1}));
//   // (optim/param_groups.h: biases, norm parameters and embeddings in a group with weight_decay 0)
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/named_tensors.h"
#include "core/tensor.h"

namespace ember::optim {

using ember::NamedTensors;

// Hyperparameters of one group; every field applies to every optimizer that has it.
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

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter that has a gradient (others are skipped, as in PyTorch).
  void step();
  // Clears the gradients: to undefined (PyTorch's default) or to zeros.
  void zero_grad(bool set_to_none = true);

  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  // Adds a group; fields it leaves at their defaults are not inherited: pass the full Hyper.
  void add_param_group(std::vector<Tensor> params, const Hyper& hyper);

  // Everything a resumed run needs, as tensors (safetensors-ready): per parameter i "state.i.step" (i64)
  // and its buffers ("state.i.exp_avg", ...); per group g "group.g.lr" and "group.g.initial_lr" (f64).
  NamedTensors state_dict() const;
  // Restores it; the parameters must be the same (count and shapes). Throws naming the key that differs.
  void load_state_dict(const NamedTensors& state);

  const std::string& name() const { return name_; }

 protected:
  // decoupled: AdamW's weight decay.
  Optimizer(std::string name, OptimizerOp op, bool decoupled, std::vector<ParamGroup> groups);

 private:
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
};

// SGD with momentum, dampening, Nesterov and weight decay. PyTorch's defaults (lr 1e-3).
struct SGDOptions {
  double lr = 1e-3, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false, maximize = false;
};
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, const SGDOptions& o = {});
  // One group per entry, each with its Hyper's lr, weight_decay, momentum, dampening, nesterov, maximize.
  explicit SGD(std::vector<ParamGroup> groups);
};

struct AdamOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool amsgrad = false, maximize = false;
};
// Adam (L2 weight decay added to the gradient).
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, const AdamOptions& o = {});
  // Each group's Hyper: lr, weight_decay, beta1, beta2, eps, amsgrad, maximize.
  explicit Adam(std::vector<ParamGroup> groups);
};
// AdamW: decoupled weight decay (p ← p·(1 - lr·wd)); PyTorch's default weight_decay 1e-2.
struct AdamWOptions {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 1e-2;
  bool amsgrad = false, maximize = false;
};
class AdamW : public Optimizer {
 public:
  AdamW(std::vector<Tensor> params, const AdamWOptions& o = {});
  // As Adam's; NOTE: Hyper's weight_decay defaults to 0, not AdamW's 1e-2: set it in each group.
  explicit AdamW(std::vector<ParamGroup> groups);
};

struct RMSpropOptions {
  double lr = 1e-2, alpha = 0.99, eps = 1e-8, weight_decay = 0, momentum = 0;
  bool centered = false, maximize = false;
};
class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<Tensor> params, const RMSpropOptions& o = {});
  // Each group's Hyper: lr, weight_decay, momentum, centered, eps, maximize, and alpha as beta2 (Hyper's
  // default beta2 is Adam's 0.999, not RMSprop's 0.99: set it).
  explicit RMSprop(std::vector<ParamGroup> groups);
};

// Scales all gradients so their joint norm is at most max_norm; returns the norm before clipping (as
// torch.nn.utils.clip_grad_norm_). norm_type: 2, 1, or INFINITY.
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0);
// Clamps every gradient element to [-clip, clip].
void clip_grad_value_(const std::vector<Tensor>& params, double clip);

}  // namespace ember::optim
