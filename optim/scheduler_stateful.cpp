// The schedulers that keep more than an epoch counter: OneCycleLR (the momentum it cycles), LinearWarmup
// (the scheduler it hands over to) and ReduceLROnPlateau (best metric, bad-epoch and cooldown counters).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "optim/scheduler.h"

namespace ember::optim {
namespace {

Tensor f64(double v) { return scalar_tensor(v, {.dtype = DType::f64}); }
Tensor i64(int64_t v) { return scalar_tensor(static_cast<double>(v), {.dtype = DType::i64}); }
std::string group_key(const std::string& prefix, size_t g) { return prefix + "group." + std::to_string(g) + ".momentum"; }

// PyTorch's OneCycleLR._annealing_cos / _annealing_linear: from `start` to `end` as pct goes 0 → 1.
double anneal(Anneal how, double start, double end, double pct) {
  if (how == Anneal::linear) return (end - start) * pct + start;
  const double cos_out = std::cos(std::numbers::pi * pct) + 1;
  return end + (start - end) / 2.0 * cos_out;
}

}  // namespace

// ---- OneCycleLR ----

OneCycleLR::OneCycleLR(Optimizer& optimizer, const std::vector<double>& max_lr, int64_t total_steps, const OneCycleOptions& o)
    : LRScheduler(optimizer, "OneCycleLR"),
      total_steps_(total_steps),
      o_(o),
      use_beta1_(optimizer.name() == "Adam" || optimizer.name() == "AdamW") {
  EMBER_CHECK(total_steps >= 1, "OneCycleLR: total_steps must be >= 1, got ", total_steps);
  EMBER_CHECK(o.pct_start > 0 && o.pct_start < 1, "OneCycleLR: pct_start must be in (0, 1), got ", o.pct_start);
  EMBER_CHECK(o.div_factor > 0, "OneCycleLR: div_factor must be > 0, got ", o.div_factor);
  EMBER_CHECK(o.final_div_factor > 0, "OneCycleLR: final_div_factor must be > 0, got ", o.final_div_factor);
  for (double m : {o.base_momentum, o.max_momentum})
    EMBER_CHECK(!o.cycle_momentum || (m >= 0 && m < 1), "OneCycleLR: base_momentum and max_momentum must be in [0, 1), got ", m);
  max_lrs_ = per_group(max_lr, "max_lr");
  auto& groups = optimizer.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    EMBER_CHECK(max_lrs_[g] > 0 && std::isfinite(max_lrs_[g]), "OneCycleLR: max_lr must be > 0, got ", max_lrs_[g]);
    groups[g].initial_lr = max_lrs_[g] / o.div_factor;
    min_lrs_.push_back(groups[g].initial_lr / o.final_div_factor);
    if (o.cycle_momentum) momentum(groups[g]) = o.max_momentum;
  }
  initial_step();
}

double& OneCycleLR::momentum(ParamGroup& group) const { return use_beta1_ ? group.hyper.beta1 : group.hyper.momentum; }

void OneCycleLR::step() {
  EMBER_CHECK(last_epoch_ < total_steps_, "OneCycleLR: step ", last_epoch_ + 1, " is past total_steps = ", total_steps_,
              "; build the scheduler with total_steps >= the number of steps you train for");
  LRScheduler::step();
}

std::vector<double> OneCycleLR::get_lr() {
  // Phase boundaries as PyTorch computes them (floats: pct_start·total_steps need not be whole).
  enum Which { initial, max, min };
  struct Phase {
    double end_step;
    Which start_lr, end_lr;
    double start_momentum, end_momentum;
  };
  const double total = static_cast<double>(total_steps_), lo = o_.base_momentum, hi = o_.max_momentum;
  std::vector<Phase> phases;
  if (o_.three_phase)
    phases = {{o_.pct_start * total - 1, initial, max, hi, lo},
              {2 * o_.pct_start * total - 2, max, initial, lo, hi},
              {total - 1, initial, min, hi, hi}};
  else
    phases = {{o_.pct_start * total - 1, initial, max, hi, lo}, {total - 1, max, min, lo, hi}};

  const double step_num = static_cast<double>(last_epoch_);
  auto& groups = optimizer_.param_groups();
  std::vector<double> lrs;
  for (size_t g = 0; g < groups.size(); ++g) {
    const double value[] = {base_lrs_[g], max_lrs_[g], min_lrs_[g]};
    double start_step = 0;
    for (size_t i = 0; i < phases.size(); ++i) {
      const Phase& p = phases[i];
      if (step_num <= p.end_step || i + 1 == phases.size()) {
        const double pct = (step_num - start_step) / (p.end_step - start_step);
        lrs.push_back(anneal(o_.anneal_strategy, value[p.start_lr], value[p.end_lr], pct));
        if (o_.cycle_momentum) momentum(groups[g]) = anneal(o_.anneal_strategy, p.start_momentum, p.end_momentum, pct);
        break;
      }
      start_step = p.end_step;
    }
  }
  return lrs;
}

void OneCycleLR::save_state(const std::string& prefix, NamedTensors& out) const {
  LRScheduler::save_state(prefix, out);
  if (!o_.cycle_momentum) return;
  for (size_t g = 0; g < optimizer_.param_groups().size(); ++g)
    out.emplace_back(group_key(prefix, g), f64(momentum(optimizer_.param_groups()[g])));
}

void OneCycleLR::load_state(const std::string& prefix, KeyMap& given) {
  LRScheduler::load_state(prefix, given);
  if (!o_.cycle_momentum) return;
  for (size_t g = 0; g < optimizer_.param_groups().size(); ++g)
    momentum(optimizer_.param_groups()[g]) = take(given, group_key(prefix, g)).item<double>();
}

// ---- LinearWarmup ----

namespace {
Optimizer& optimizer_of(const std::unique_ptr<LRScheduler>& after) {
  EMBER_CHECK(after != nullptr, "LinearWarmup: `after` must be a scheduler, got null");
  EMBER_CHECK(after->can_restart(), "LinearWarmup: `after` cannot be a ", after->name(),
              " (it must be a scheduler that steps by epoch and restarts at epoch 0: not ReduceLROnPlateau, "
              "LinearWarmup, SequentialLR or ChainedScheduler)");
  return after->optimizer();
}
}  // namespace

LinearWarmup::LinearWarmup(std::unique_ptr<LRScheduler> after, int64_t warmup_steps, double start_factor)
    : LRScheduler(optimizer_of(after), "LinearWarmup"),
      after_(std::move(after)),
      warmup_steps_(warmup_steps),
      start_factor_(start_factor) {
  EMBER_CHECK(warmup_steps >= 1, "LinearWarmup: warmup_steps must be >= 1, got ", warmup_steps);
  EMBER_CHECK(start_factor > 0 && start_factor <= 1, "LinearWarmup: start_factor must be in (0, 1], got ", start_factor);
  // SequentialLR's constructor: back to the initial lrs, undo `after`'s initial step, warm up from epoch 0.
  for (ParamGroup& g : optimizer_.param_groups()) g.hyper.lr = g.initial_lr;
  after_->last_epoch_ -= 1;
  initial_step();
}

std::vector<double> LinearWarmup::get_lr() {
  // PyTorch's LinearLR(start_factor, end_factor = 1, total_iters = warmup_steps), recursive form.
  std::vector<double> lrs = current_lrs();
  const double sf = start_factor_, ef = 1.0;
  for (double& lr : lrs) {
    if (last_epoch_ == 0) lr = lr * sf;
    else if (last_epoch_ <= warmup_steps_)
      lr = lr * (1. + (ef - sf) / (static_cast<double>(warmup_steps_) * sf + static_cast<double>(last_epoch_ - 1) * (ef - sf)));
  }
  return lrs;
}

void LinearWarmup::step() {
  ++last_epoch_;
  if (last_epoch_ < warmup_steps_) {
    apply(get_lr());
    return;
  }
  if (last_epoch_ == warmup_steps_) after_->step_to(0);  // SequentialLR: scheduler.step(0) at the milestone
  else after_->step();
  last_lr_ = after_->last_lr();
}

void LinearWarmup::save_state(const std::string& prefix, NamedTensors& out) const {
  LRScheduler::save_state(prefix, out);
  after_->save_state(prefix + "after.", out);
}

void LinearWarmup::load_state(const std::string& prefix, KeyMap& given) {
  after_->load_state(prefix + "after.", given);
  LRScheduler::load_state(prefix, given);  // last: the lrs it writes into the groups are the current ones
}

// ---- ReduceLROnPlateau ----

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, const PlateauOptions& o)
    : LRScheduler(optimizer, "ReduceLROnPlateau"), o_(o) {
  EMBER_CHECK(o.factor > 0 && o.factor < 1, "ReduceLROnPlateau: factor must be in (0, 1), got ", o.factor);
  EMBER_CHECK(o.patience >= 0, "ReduceLROnPlateau: patience must be >= 0, got ", o.patience);
  EMBER_CHECK(o.threshold >= 0, "ReduceLROnPlateau: threshold must be >= 0, got ", o.threshold);
  EMBER_CHECK(o.cooldown >= 0, "ReduceLROnPlateau: cooldown must be >= 0, got ", o.cooldown);
  EMBER_CHECK(o.eps >= 0, "ReduceLROnPlateau: eps must be >= 0, got ", o.eps);
  min_lrs_ = per_group(o.min_lr, "min_lr");
  for (double m : min_lrs_) EMBER_CHECK(m >= 0, "ReduceLROnPlateau: min_lr must be >= 0, got ", m);
  best_ = o.mode == PlateauMode::min ? INFINITY : -INFINITY;
  last_epoch_ = 0;
}

bool ReduceLROnPlateau::is_better(double a) const {
  if (o_.mode == PlateauMode::min)
    return o_.threshold_mode == ThresholdMode::rel ? a < best_ * (1. - o_.threshold) : a < best_ - o_.threshold;
  return o_.threshold_mode == ThresholdMode::rel ? a > best_ * (o_.threshold + 1.) : a > best_ + o_.threshold;
}

void ReduceLROnPlateau::step(double metric) {
  ++last_epoch_;
  if (is_better(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;  // NaN is never better: it counts as a bad step
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // bad steps in cooldown do not count
  }
  if (num_bad_epochs_ > o_.patience) {
    auto& groups = optimizer_.param_groups();
    for (size_t g = 0; g < groups.size(); ++g) {
      const double old_lr = groups[g].hyper.lr, new_lr = std::max(old_lr * o_.factor, min_lrs_[g]);
      if (old_lr - new_lr > o_.eps) groups[g].hyper.lr = new_lr;
    }
    cooldown_counter_ = o_.cooldown;
    num_bad_epochs_ = 0;
  }
  last_lr_ = current_lrs();
}

void ReduceLROnPlateau::step() {
  EMBER_CHECK(false, "ReduceLROnPlateau.step: needs the monitored metric; call step(metric), e.g. step(val_loss)");
}

std::vector<double> ReduceLROnPlateau::get_lr() { return current_lrs(); }

void ReduceLROnPlateau::save_state(const std::string& prefix, NamedTensors& out) const {
  LRScheduler::save_state(prefix, out);
  out.emplace_back(prefix + "best", f64(best_));
  out.emplace_back(prefix + "num_bad_epochs", i64(num_bad_epochs_));
  out.emplace_back(prefix + "cooldown_counter", i64(cooldown_counter_));
}

void ReduceLROnPlateau::load_state(const std::string& prefix, KeyMap& given) {
  LRScheduler::load_state(prefix, given);
  best_ = take(given, prefix + "best").item<double>();
  num_bad_epochs_ = take(given, prefix + "num_bad_epochs").item<int64_t>();
  cooldown_counter_ = take(given, prefix + "cooldown_counter").item<int64_t>();
}

}  // namespace ember::optim
