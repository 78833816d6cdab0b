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
//
// The schedulers: StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR, LambdaLR, MultiplicativeLR,
// ConstantLR, LinearLR, PolynomialLR, CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR (per batch),
// SequentialLR and ChainedScheduler (of others), LinearWarmup (SequentialLR of a LinearLR and one
// other), ReduceLROnPlateau (on a metric).
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
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
  // Whether SequentialLR (and LinearWarmup) can hand over to it at a milestone, restarting it at epoch 0:
  // not ReduceLROnPlateau (it steps on a metric) nor a scheduler of schedulers.
  virtual bool can_restart() const { return true; }

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
  // Its first half: base_lrs_ from the groups' initial_lr, and the optimizer marked as scheduled.
  void take_base_lrs();
  // The lrs for last_epoch_ (PyTorch's get_lr): the recursive form, from the groups' current lr.
  virtual std::vector<double> get_lr() = 0;
  // The closed form for last_epoch_ where PyTorch has one (_get_closed_form_lr), else get_lr().
  virtual std::vector<double> closed_form_lr() { return get_lr(); }
  // PyTorch's step(epoch): jumps to `epoch` through the closed form (SequentialLR does this at milestones).
  virtual void step_to(int64_t epoch);
  // Whether an lr scheduler was built on the optimizer before this one (torch: its groups already have
  // 'initial_lr', which a later scheduler keeps).
  bool optimizer_was_scheduled() const { return optimizer_.scheduled_; }
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
  friend class SchedulerList;
  friend class SequentialLR;
};

// A factor of the epoch (last_epoch()), for LambdaLR and MultiplicativeLR: e.g. [](int64_t e) { return
// std::pow(0.95, e); } (Python's `lambda e: 0.95 ** e`).
using LrLambda = std::function<double(int64_t epoch)>;

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

// lr = base_lr·lr_lambda(epoch), one lambda for every group or one per group. torch LambdaLR. The
// lambdas are not part of state_dict (as PyTorch saves none of a plain function's): build the scheduler
// with the same ones before loading. Throws when a lambda is empty or their count is not 1 or the
// number of groups.
class LambdaLR : public LRScheduler {
 public:
  LambdaLR(Optimizer& optimizer, LrLambda lr_lambda);
  LambdaLR(Optimizer& optimizer, std::vector<LrLambda> lr_lambdas);

 protected:
  std::vector<double> get_lr() override;

 private:
  std::vector<LrLambda> lambdas_;
};

// lr = lr·lr_lambda(epoch) at each step after the first (recursive: changes made outside carry on).
// torch MultiplicativeLR. Lambdas as LambdaLR's.
class MultiplicativeLR : public LRScheduler {
 public:
  MultiplicativeLR(Optimizer& optimizer, LrLambda lr_lambda);
  MultiplicativeLR(Optimizer& optimizer, std::vector<LrLambda> lr_lambdas);

 protected:
  std::vector<double> get_lr() override;

 private:
  std::vector<LrLambda> lambdas_;
};

// lr = base_lr·factor until epoch total_iters, then base_lr (recursive: lr·factor at epoch 0 and
// lr/factor at total_iters). torch ConstantLR. Throws when factor is outside [0, 1] or total_iters < 0,
// and (as PyTorch, which divides by zero there) at step total_iters when factor is 0.
class ConstantLR : public LRScheduler {
 public:
  ConstantLR(Optimizer& optimizer, double factor = 1.0 / 3, int64_t total_iters = 5);

 protected:
  std::vector<double> get_lr() override;
  std::vector<double> closed_form_lr() override;

 private:
  double factor_;
  int64_t total_iters_;
};

// The factor goes linearly from start_factor (epoch 0) to end_factor (epoch total_iters), then stays:
// lr = base_lr·(start + (end - start)·min(epoch, total_iters)/total_iters), computed recursively as
// PyTorch does. torch LinearLR. Throws when start_factor is outside (0, 1] (PyTorch 1.13 takes 0 and
// then divides by zero at the first step), end_factor outside [0, 1], or total_iters < 1.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5);

 protected:
  std::vector<double> get_lr() override;
  std::vector<double> closed_form_lr() override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

// lr = base_lr·(1 - min(epoch, total_iters)/total_iters)^power (0 from total_iters on), recursively as
// PyTorch: lr·((1 - t/T)/(1 - (t-1)/T))^power. torch PolynomialLR. Throws when total_iters < 1 or
// power < 0.
class PolynomialLR : public LRScheduler {
 public:
  PolynomialLR(Optimizer& optimizer, int64_t total_iters = 5, double power = 1.0);

 protected:
  std::vector<double> get_lr() override;
  std::vector<double> closed_form_lr() override;

 private:
  int64_t total_iters_;
  double power_;
};

// SGDR (torch CosineAnnealingWarmRestarts): lr = eta_min + (base_lr - eta_min)·(1 + cos(π·T_cur/T_i))/2,
// where T_cur counts the epochs since the last restart and the period T_i starts at T_0 and is
// multiplied by T_mult at each restart. step() advances one epoch; step(epoch) sets a fractional epoch
// (e.g. epoch + batch/batches_per_epoch, PyTorch's per-batch use) and the restarts it implies.
// last_epoch() is the epoch's floor. Throws when T_0 < 1, T_mult < 1, eta_min < 0 or epoch < 0.
// state_dict adds "scheduler.T_cur" (f64) and "scheduler.T_i" (i64).
class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult = 1, double eta_min = 0);
  void step() override;
  void step(double epoch);
  double T_cur() const { return T_cur_; }
  int64_t T_i() const { return T_i_; }

 protected:
  std::vector<double> get_lr() override;
  void step_to(int64_t epoch) override;
  void save_state(const std::string& prefix, NamedTensors& out) const override;
  void load_state(const std::string& prefix, KeyMap& given) override;

 private:
  void advance(std::optional<double> epoch);
  int64_t T_0_, T_mult_;
  double eta_min_;
  double T_cur_;
  int64_t T_i_;
};

enum class CyclicMode { triangular, triangular2, exp_range };
enum class CyclicScaleMode { cycle, iterations };

struct CyclicOptions {
  double step_size_up = 2000;               // steps from base_lr up to max_lr, > 0 (need not be whole)
  std::optional<double> step_size_down = std::nullopt;  // steps back down, >= 0; unset: step_size_up
  CyclicMode mode = CyclicMode::triangular; // amplitude per cycle: constant, halved each cycle, gamma^step
  double gamma = 1.0;                       // exp_range's factor per step
  // A scale function of the cycle (1-based) or of the step, replacing `mode`'s, and what it takes.
  std::function<double(int64_t)> scale_fn = nullptr;
  CyclicScaleMode scale_mode = CyclicScaleMode::cycle;
  bool cycle_momentum = true;               // SGD and RMSprop: momentum moves inversely to the lr
  std::vector<double> base_momentum = {0.8}, max_momentum = {0.9};  // one, or one per group
};
// The cyclical learning rate policy (torch CyclicLR): the lr goes linearly between base_lr and max_lr
// (one value or one per group) and back, each half cycle taking step_size_up / step_size_down steps,
// the amplitude scaled by `mode` (triangular: 1; triangular2: 1/2^(cycle-1); exp_range: gamma^step) or
// scale_fn. Meant to be stepped per batch. Sets each group's lr to base_lr (and, if no scheduler was
// built on the optimizer before, its initial_lr, as PyTorch's setdefault does). With cycle_momentum
// (the default, as PyTorch's) the group's momentum goes from max_momentum at base_lr to base_momentum at
// max_lr; Adam and AdamW have no momentum field (as in PyTorch 1.13, which refuses them too): pass
// cycle_momentum = false there. state_dict adds each group's momentum with cycle_momentum. Throws when
// step_size_up <= 0, step_size_down < 0, or a per-group list has the wrong length.
class CyclicLR : public LRScheduler {
 public:
  CyclicLR(Optimizer& optimizer, const std::vector<double>& base_lr, const std::vector<double>& max_lr,
           const CyclicOptions& o = {});

 protected:
  std::vector<double> get_lr() override;
  void save_state(const std::string& prefix, NamedTensors& out) const override;
  void load_state(const std::string& prefix, KeyMap& given) override;

 private:
  double scale(int64_t cycle) const;
  CyclicOptions o_;
  std::vector<double> max_lrs_, base_momentums_, max_momentums_;
  double total_size_, step_ratio_;
};

// What SequentialLR and ChainedScheduler share: the schedulers they step, whose states their state_dict
// holds under "scheduler.schedulers.i.", and no lr of their own (get_lr: the groups' lrs now).
class SchedulerList : public LRScheduler {
 public:
  bool can_restart() const override { return false; }
  const std::vector<std::shared_ptr<LRScheduler>>& schedulers() const { return schedulers_; }

 protected:
  SchedulerList(Optimizer& optimizer, std::string name, std::vector<std::shared_ptr<LRScheduler>>&& schedulers);
  std::vector<double> get_lr() override { return current_lrs(); }
  void save_state(const std::string& prefix, NamedTensors& out) const override;
  void load_state(const std::string& prefix, KeyMap& given) override;

  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
};

// Schedulers in turn (torch SequentialLR): schedulers[0] until milestones[0], then schedulers[1] (which
// restarts at its epoch 0 on that step) until milestones[1], and so on. Build every scheduler on
// `optimizer`, in order, inside the braces (a braced list is evaluated left to right), e.g.
//   optim::SequentialLR s(opt, {std::make_shared<optim::LinearLR>(opt, 0.1, 1.0, 5),
//                               std::make_shared<optim::CosineAnnealingLR>(opt, 95)}, {5});
// As PyTorch's constructor it resets every group's lr to initial_lr, undoes each scheduler's initial
// step and redoes the first's. Throws when the milestones are not one fewer than the schedulers, not
// increasing from >= 1, or a scheduler is null, on another optimizer, or one that cannot restart at
// epoch 0 (ReduceLROnPlateau, SequentialLR, ChainedScheduler, LinearWarmup). state_dict holds each
// scheduler's state under "scheduler.schedulers.i.".
class SequentialLR : public SchedulerList {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers, std::vector<int64_t> milestones);
  void step() override;

 private:
  std::vector<int64_t> milestones_;
};

// Steps every scheduler in order at each step (torch ChainedScheduler): recursive schedulers compose
// (ConstantLR(0.1, 2) with ExponentialLR(0.9): 0.1·0.9^t·lr for t < 2, then 0.9^t·lr). No initial step of
// its own: each scheduler made its own when built (in order: build them inside the braces). last_epoch()
// counts its steps. Throws when the list is empty, holds a null, a ReduceLROnPlateau, or schedulers of
// different optimizers. state_dict holds each one's state under "scheduler.schedulers.i.".
class ChainedScheduler : public SchedulerList {
 public:
  explicit ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers);
  void step() override;
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
// Throws when warmup_steps < 1, start_factor is outside (0, 1], or `after` cannot restart at epoch 0
// (ReduceLROnPlateau, LinearWarmup, SequentialLR, ChainedScheduler). state_dict holds `after`'s state
// under "scheduler.after.". SequentialLR with LinearLR is the general form.
class LinearWarmup : public LRScheduler {
 public:
  LinearWarmup(std::unique_ptr<LRScheduler> after, int64_t warmup_steps, double start_factor = 1.0 / 3);
  void step() override;
  bool can_restart() const override { return false; }
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
  bool can_restart() const override { return false; }
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
