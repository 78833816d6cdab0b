#pragma once
// Learning-rate schedulers (torch.optim.lr_scheduler, PyTorch 1.13): each sets the lr of every parameter
// group of an Optimizer, with PyTorch's formulas in PyTorch's order of operations, so the sequences match
// PyTorch's to the last bit (tests/test_scheduler.cpp, golden values from tools/make_scheduler_golden.py).
//
//   optim::SGD opt(model->parameters(), {.lr = 0.1, .momentum = 0.9});
//   optim::CosineAnnealingLR sched(opt, /*T_max=*/100);
//   for (...) { opt.zero_grad(); loss.backward(); opt.step(); sched.step(); }
//
// Like PyTorch, constructing a scheduler performs its initial step (last_epoch() becomes 0 and the groups'
// lr are set for epoch 0); the base lr of group g is param_groups()[g].initial_lr, the lr the group was
// created with (NOTE: PyTorch takes the lr at the first scheduler's construction, so an lr edited by hand
// in between is not the base here). The recursive ("chainable") schedulers scale the group's current lr,
// as PyTorch's do, so changes made outside the scheduler carry on.
// Invalid arguments throw ember::Error naming the scheduler, the argument and the allowed range.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "optim/optimizer.h"

namespace ember::optim {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // Advances one epoch (or batch) and sets every group's lr. Call it after optimizer.step().
  virtual void step();
  // Each group's lr after the last step (or construction).
  const std::vector<double>& last_lr() const { return last_lr_; }
  // Steps taken since construction: 0 right after it.
  int64_t last_epoch() const { return last_epoch_; }
  Optimizer& optimizer() const { return optimizer_; }
  const std::string& name() const { return name_; }

  // Everything a resumed run needs, as 0-d tensors (safetensors-ready), keys prefixed "scheduler.":
  // "scheduler.last_epoch" (i64), per group g "scheduler.group.g.base_lr" and ".last_lr" (f64), and each
  // scheduler's own counters. Construction arguments are not saved: build the same scheduler, then load.
  NamedTensors state_dict() const;
  // Restores it and writes the saved lr (and OneCycleLR's momentum, which Optimizer::state_dict does not
  // hold) back into the groups, so the run continues exactly whichever of optimizer and scheduler state
  // is loaded first. Throws naming the key when one is missing or unexpected (a different scheduler or
  // number of groups).
  void load_state_dict(const NamedTensors& state);

 protected:
  LRScheduler(Optimizer& optimizer, std::string name);
  // PyTorch's _initial_step: takes the base lrs from the groups and steps to epoch 0. Derived
  // constructors call it last (virtual calls do not reach them from the base constructor).
  void initial_step();
  // The lrs for last_epoch_ (PyTorch's get_lr): the recursive form, from the groups' current lr.
  virtual std::vector<double> get_lr() = 0;
  // The closed form for last_epoch_ where PyTorch has one (_get_closed_form_lr), else get_lr().
  virtual std::vector<double> closed_form_lr() { return get_lr(); }
  // PyTorch's step(epoch): jumps to `epoch` through the closed form (SequentialLR does this at milestones).
  void step_to(int64_t epoch);
  // Every group's lr now (PyTorch's [group['lr'] for group in param_groups]).
  std::vector<double> current_lrs() const;
  // Sets every group's lr and last_lr_.
  void apply(const std::vector<double>& lrs);

  using KeyMap = std::map<std::string, Tensor>;
  virtual void save_state(const std::string& prefix, NamedTensors& out) const;
  // Takes this scheduler's keys out of `given`.
  virtual void load_state(const std::string& prefix, KeyMap& given);
  Tensor take(KeyMap& given, const std::string& key) const;
  // One value, or one per group, as a vector of one per group; throws naming `what` otherwise.
  std::vector<double> per_group(const std::vector<double>& values, const char* what) const;

  Optimizer& optimizer_;
  std::string name_;
  int64_t last_epoch_ = -1;
  std::vector<double> base_lrs_, last_lr_;

  friend class LinearWarmup;
};

// lr = lr·gamma every step_size steps (base_lr·gamma^⌊epoch/step_size⌋). torch StepLR.
// Throws when step_size < 1 or gamma <= 0.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() override;
  std::vector<double> closed_form_lr() override;

 private:
  int64_t step_size_;
  double gamma_;
};

// lr = lr·gamma^k at an epoch listed k times in milestones (non-decreasing). torch MultiStepLR.
// Throws when gamma <= 0, a milestone is negative, or milestones decrease.
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() override;
  std::vector<double> closed_form_lr() override;

 private:
  std::vector<int64_t> milestones_;
  double gamma_;
};

// lr = lr·gamma every step (base_lr·gamma^epoch). torch ExponentialLR. Throws when gamma <= 0.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 protected:
  std::vector<double> get_lr() override;
  std::vector<double> closed_form_lr() override;

 private:
  double gamma_;
};

// lr_t = eta_min + (base_lr - eta_min)·(1 + cos(π·t/T_max))/2, computed recursively as PyTorch does
// (lr_t = (1 + cos(π·t/T))/(1 + cos(π·(t-1)/T))·(lr_{t-1} - eta_min) + eta_min), so past T_max it rises
// again like PyTorch's. torch CosineAnnealingLR. Throws when T_max < 1 or eta_min < 0.
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);

 protected:
  std::vector<double> get_lr() override;
  std::vector<double> closed_form_lr() override;

 private:
  int64_t T_max_;
  double eta_min_;
};

enum class Anneal { cos, linear };

struct OneCycleOptions {
  double pct_start = 0.3;  // the fraction of total_steps spent raising the lr, in (0, 1)
  Anneal anneal_strategy = Anneal::cos;
  bool cycle_momentum = true;
  double base_momentum = 0.85, max_momentum = 0.95;  // each in [0, 1)
  double div_factor = 25, final_div_factor = 1e4;    // each > 0
  bool three_phase = false;
};
// The 1cycle policy (torch OneCycleLR): the lr goes from initial_lr = max_lr/div_factor up to max_lr over
// pct_start·total_steps steps, then down to initial_lr/final_div_factor (with three_phase: back to
// initial_lr over as many steps, then down), annealing by cosine or linearly. With cycle_momentum the
// momentum moves inversely between max_momentum and base_momentum: hyper.beta1 for Adam/AdamW,
// hyper.momentum for SGD and RMSprop. Sets each group's initial_lr to max_lr/div_factor, as PyTorch does.
// max_lr: one value or one per group. Like PyTorch, step() may be called total_steps times; one more
// throws (and leaves the scheduler as it was); so do total_steps < 1 and options outside the ranges above.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, const std::vector<double>& max_lr, int64_t total_steps, const OneCycleOptions& o = {});
  void step() override;

 protected:
  std::vector<double> get_lr() override;
  void save_state(const std::string& prefix, NamedTensors& out) const override;
  void load_state(const std::string& prefix, KeyMap& given) override;

 private:
  double& momentum(ParamGroup& group) const;
  int64_t total_steps_;
  OneCycleOptions o_;
  bool use_beta1_;
  std::vector<double> max_lrs_, min_lrs_;
};

// Linear warmup, then `after` (torch SequentialLR([LinearLR(start_factor, 1.0, total_iters=warmup_steps),
// after], milestones=[warmup_steps])): the lr starts at initial_lr·start_factor, rises linearly to
// initial_lr at step warmup_steps, where `after` restarts from its epoch 0 and runs on. `after` must be
// built on the same optimizer just before (its initial step is undone here, as SequentialLR does).
// Throws when warmup_steps < 1, start_factor is outside (0, 1], or `after` is a ReduceLROnPlateau or
// another LinearWarmup. state_dict holds `after`'s state under "scheduler.after.".
class LinearWarmup : public LRScheduler {
 public:
  LinearWarmup(std::unique_ptr<LRScheduler> after, int64_t warmup_steps, double start_factor = 1.0 / 3);
  void step() override;
  LRScheduler& after() const { return *after_; }

 protected:
  std::vector<double> get_lr() override;
  void save_state(const std::string& prefix, NamedTensors& out) const override;
  void load_state(const std::string& prefix, KeyMap& given) override;

 private:
  std::unique_ptr<LRScheduler> after_;
  int64_t warmup_steps_;
  double start_factor_;
};

enum class PlateauMode { min, max };
enum class ThresholdMode { rel, abs };

struct PlateauOptions {
  PlateauMode mode = PlateauMode::min;  // min: lower metric is better; max: higher
  double factor = 0.1;                  // new lr = lr·factor, in (0, 1)
  int64_t patience = 10;                // bad steps tolerated before reducing, >= 0
  double threshold = 1e-4;              // >= 0; improvement means beating best·(1 ∓ threshold) or best ∓ threshold
  ThresholdMode threshold_mode = ThresholdMode::rel;
  int64_t cooldown = 0;                 // steps after a reduction during which bad steps are not counted, >= 0
  std::vector<double> min_lr = {0};     // one lower bound, or one per group; each >= 0
  double eps = 1e-8;                    // reductions smaller than this are skipped, >= 0
};
// Reduces the lr by `factor` (not below min_lr) when the metric has not improved for more than `patience`
// steps (torch ReduceLROnPlateau). It has no initial step: the lrs are untouched until step(metric), and
// last_lr() is the groups' lr at construction until then. Throws for options outside the ranges above.
class ReduceLROnPlateau : public LRScheduler {
 public:
  explicit ReduceLROnPlateau(Optimizer& optimizer, const PlateauOptions& o = {});
  void step(double metric);
  // Throws: this scheduler needs the metric.
  void step() override;
  double best() const { return best_; }

 protected:
  std::vector<double> get_lr() override;
  void save_state(const std::string& prefix, NamedTensors& out) const override;
  void load_state(const std::string& prefix, KeyMap& given) override;

 private:
  bool is_better(double metric) const;
  PlateauOptions o_;
  std::vector<double> min_lrs_;
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0;
};

}  // namespace ember::optim
