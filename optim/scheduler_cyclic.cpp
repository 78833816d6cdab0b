// The schedulers that cycle: CosineAnnealingWarmRestarts (restarts of a cosine, fractional epochs) and
// CyclicLR (a triangle wave, optionally moving the momentum). PyTorch 1.13's formulas operation for
// operation (torch/optim/lr_scheduler.py).
#include <cmath>
#include <numbers>

#include "optim/scheduler.h"

namespace ember::optim {
namespace {

Tensor f64(double v) { return scalar_tensor(v, {.dtype = DType::f64}); }
Tensor i64(int64_t v) { return scalar_tensor(static_cast<double>(v), {.dtype = DType::i64}); }
std::string momentum_key(const std::string& prefix, size_t g) { return prefix + "group." + std::to_string(g) + ".momentum"; }

int64_t ipow(int64_t base, int64_t exp) {
  int64_t r = 1;
  for (int64_t i = 0; i < exp; ++i) r *= base;
  return r;
}

}  // namespace

// ---- CosineAnnealingWarmRestarts ----

CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(Optimizer& optimizer, int64_t T_0, int64_t T_mult, double eta_min)
    : LRScheduler(optimizer, "CosineAnnealingWarmRestarts"),
      T_0_(T_0),
      T_mult_(T_mult),
      eta_min_(eta_min),
      T_cur_(-1),
      T_i_(T_0) {
  EMBER_CHECK(T_0 >= 1, "CosineAnnealingWarmRestarts: T_0 must be >= 1, got ", T_0);
  EMBER_CHECK(T_mult >= 1, "CosineAnnealingWarmRestarts: T_mult must be >= 1, got ", T_mult);
  EMBER_CHECK(eta_min >= 0, "CosineAnnealingWarmRestarts: eta_min must be >= 0, got ", eta_min);
  take_base_lrs();
  last_epoch_ = -1;
  advance(std::nullopt);  // PyTorch's _initial_step: its own step(), epoch 0
}

void CosineAnnealingWarmRestarts::step() { advance(std::nullopt); }

void CosineAnnealingWarmRestarts::step(double epoch) {
  EMBER_CHECK(epoch >= 0 && std::isfinite(epoch), "CosineAnnealingWarmRestarts.step: epoch must be >= 0, got ", epoch);
  advance(epoch);
}

void CosineAnnealingWarmRestarts::step_to(int64_t epoch) { step(static_cast<double>(epoch)); }

void CosineAnnealingWarmRestarts::advance(std::optional<double> epoch) {
  if (!epoch && last_epoch_ < 0) epoch = 0.0;
  double e;
  if (!epoch) {
    e = static_cast<double>(last_epoch_ + 1);
    T_cur_ = T_cur_ + 1;
    if (T_cur_ >= static_cast<double>(T_i_)) {
      T_cur_ = T_cur_ - static_cast<double>(T_i_);
      T_i_ = T_i_ * T_mult_;
    }
  } else {
    e = *epoch;
    const double T0 = static_cast<double>(T_0_);
    if (e >= T0) {
      if (T_mult_ == 1) {
        T_cur_ = std::fmod(e, T0);  // Python's % for e >= 0
      } else {
        const double m = static_cast<double>(T_mult_);
        // int(math.log(x, T_mult)): CPython's two-argument log is log(x) / log(base).
        const auto n = static_cast<int64_t>(std::log(e / T0 * (m - 1) + 1) / std::log(m));
        T_cur_ = e - static_cast<double>(T_0_ * (ipow(T_mult_, n) - 1)) / static_cast<double>(T_mult_ - 1);
        T_i_ = T_0_ * ipow(T_mult_, n);
      }
    } else {
      T_i_ = T_0_;
      T_cur_ = e;
    }
  }
  last_epoch_ = static_cast<int64_t>(std::floor(e));
  apply(CosineAnnealingWarmRestarts::get_lr());  // (also from the constructor: no virtual call)
}

std::vector<double> CosineAnnealingWarmRestarts::get_lr() {
  std::vector<double> lrs;
  const double c = std::cos(std::numbers::pi * T_cur_ / static_cast<double>(T_i_));
  for (double base : base_lrs_) lrs.push_back(eta_min_ + (base - eta_min_) * (1 + c) / 2);
  return lrs;
}

void CosineAnnealingWarmRestarts::save_state(const std::string& prefix, NamedTensors& out) const {
  LRScheduler::save_state(prefix, out);
  out.emplace_back(prefix + "T_cur", f64(T_cur_));
  out.emplace_back(prefix + "T_i", i64(T_i_));
}

void CosineAnnealingWarmRestarts::load_state(const std::string& prefix, KeyMap& given) {
  LRScheduler::load_state(prefix, given);
  T_cur_ = take(given, prefix + "T_cur").item<double>();
  T_i_ = take(given, prefix + "T_i").item<int64_t>();
}

// ---- CyclicLR ----

CyclicLR::CyclicLR(Optimizer& optimizer, const std::vector<double>& base_lr, const std::vector<double>& max_lr,
                   const CyclicOptions& o)
    : LRScheduler(optimizer, "CyclicLR"), o_(o) {
  EMBER_CHECK(o.step_size_up > 0 && std::isfinite(o.step_size_up), "CyclicLR: step_size_up must be > 0, got ",
              o.step_size_up);
  const double down = o.step_size_down.value_or(o.step_size_up);
  EMBER_CHECK(down >= 0 && std::isfinite(down), "CyclicLR: step_size_down must be >= 0, got ", down);
  const std::vector<double> base_lrs = per_group(base_lr, "base_lr");
  max_lrs_ = per_group(max_lr, "max_lr");
  for (size_t g = 0; g < base_lrs.size(); ++g)
    EMBER_CHECK(base_lrs[g] >= 0 && std::isfinite(base_lrs[g]) && std::isfinite(max_lrs_[g]),
                "CyclicLR: base_lr must be >= 0 and max_lr finite, got ", base_lrs[g], " and ", max_lrs_[g]);
  total_size_ = o.step_size_up + down;
  step_ratio_ = o.step_size_up / total_size_;

  auto& groups = optimizer.param_groups();
  if (o.cycle_momentum) {
    EMBER_CHECK(optimizer.name() == "SGD" || optimizer.name() == "RMSprop", "CyclicLR: ", optimizer.name(),
                " has no momentum to cycle (PyTorch 1.13 refuses it too); pass cycle_momentum = false");
    base_momentums_ = per_group(o.base_momentum, "base_momentum");
    max_momentums_ = per_group(o.max_momentum, "max_momentum");
    for (size_t g = 0; g < groups.size(); ++g) groups[g].hyper.momentum = base_momentums_[g];
  }
  // As PyTorch: the groups start at base_lr, which becomes initial_lr unless an earlier scheduler set
  // that (setdefault); the initial step then runs from initial_lr, and base_lr is the base after it.
  const bool keep_initial = optimizer_was_scheduled();
  for (size_t g = 0; g < groups.size(); ++g) {
    groups[g].hyper.lr = base_lrs[g];
    if (!keep_initial) groups[g].initial_lr = base_lrs[g];
  }
  initial_step();
  base_lrs_ = base_lrs;
}

double CyclicLR::scale(int64_t x) const {
  if (o_.scale_fn) return o_.scale_fn(x);
  switch (o_.mode) {
    case CyclicMode::triangular: return 1.;
    case CyclicMode::triangular2: return 1 / std::pow(2., static_cast<double>(x - 1));
    case CyclicMode::exp_range: return std::pow(o_.gamma, static_cast<double>(x));
  }
  return 1.;
}

std::vector<double> CyclicLR::get_lr() {
  const double e = static_cast<double>(last_epoch_);
  const double cycle = std::floor(1 + e / total_size_);
  const double x = 1. + e / total_size_ - cycle;
  const double scale_factor = x <= step_ratio_ ? x / step_ratio_ : (x - 1) / (step_ratio_ - 1);
  const bool by_cycle = o_.scale_fn ? o_.scale_mode == CyclicScaleMode::cycle : o_.mode != CyclicMode::exp_range;
  const double s = scale(by_cycle ? static_cast<int64_t>(cycle) : last_epoch_);

  std::vector<double> lrs;
  for (size_t g = 0; g < base_lrs_.size(); ++g) {
    const double base_height = (max_lrs_[g] - base_lrs_[g]) * scale_factor;
    lrs.push_back(base_lrs_[g] + base_height * s);
  }
  if (o_.cycle_momentum) {
    auto& groups = optimizer_.param_groups();
    for (size_t g = 0; g < groups.size(); ++g) {
      const double base_height = (max_momentums_[g] - base_momentums_[g]) * scale_factor;
      groups[g].hyper.momentum = max_momentums_[g] - base_height * s;
    }
  }
  return lrs;
}

void CyclicLR::save_state(const std::string& prefix, NamedTensors& out) const {
  LRScheduler::save_state(prefix, out);
  if (!o_.cycle_momentum) return;
  for (size_t g = 0; g < optimizer_.param_groups().size(); ++g)
    out.emplace_back(momentum_key(prefix, g), f64(optimizer_.param_groups()[g].hyper.momentum));
}

void CyclicLR::load_state(const std::string& prefix, KeyMap& given) {
  LRScheduler::load_state(prefix, given);
  if (!o_.cycle_momentum) return;
  for (size_t g = 0; g < optimizer_.param_groups().size(); ++g)
    optimizer_.param_groups()[g].hyper.momentum = take(given, momentum_key(prefix, g)).item<double>();
}

}  // namespace ember::optim
