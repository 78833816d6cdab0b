#include "optim/scheduler.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ember::optim {
namespace {

constexpr double kPi = std::numbers::pi;  // == Python's math.pi

Tensor f64(double v) { return scalar_tensor(v, {.dtype = DType::f64}); }
Tensor i64(int64_t v) { return scalar_tensor(static_cast<double>(v), {.dtype = DType::i64}); }
std::string group_key(const std::string& prefix, size_t g, const char* field) {
  return prefix + "group." + std::to_string(g) + "." + field;
}

// One lambda for every group, or one per group (PyTorch's message when the count is wrong).
std::vector<LrLambda> lambdas_for(const char* who, const Optimizer& optimizer, std::vector<LrLambda> lambdas) {
  const size_t n = optimizer.param_groups().size();
  EMBER_CHECK(lambdas.size() == 1 || lambdas.size() == n, who, ": expected 1 or ", n,
              " lr_lambdas (one per parameter group), but got ", lambdas.size());
  for (size_t i = 0; i < lambdas.size(); ++i)
    EMBER_CHECK(static_cast<bool>(lambdas[i]), who, ": lr_lambda ", i, " is empty; pass a callable epoch -> factor");
  if (lambdas.size() != n) lambdas.assign(n, lambdas[0]);
  return lambdas;
}

// Each base learning rate times `factor`: the closed form of every multiplicative schedule.
std::vector<double> scaled(const std::vector<double>& base_lrs, double factor) {
  std::vector<double> lrs;
  for (double base : base_lrs) lrs.push_back(base * factor);
  return lrs;
}

}  // namespace

// ---- LRScheduler ----

LRScheduler::LRScheduler(Optimizer& optimizer, std::string name)
    : optimizer_(optimizer), name_(std::move(name)), last_lr_(current_lrs()) {}

void LRScheduler::take_base_lrs() {
  base_lrs_.clear();
  for (const ParamGroup& g : optimizer_.param_groups()) base_lrs_.push_back(g.initial_lr);
  optimizer_.scheduled_ = true;
}

void LRScheduler::initial_step() {
  take_base_lrs();
  last_epoch_ = -1;
  LRScheduler::step();
}

void LRScheduler::step() {
  ++last_epoch_;
  apply(get_lr());
}

std::vector<double> LRScheduler::current_lrs() const {
  std::vector<double> lrs;
  for (const ParamGroup& g : optimizer_.param_groups()) lrs.push_back(g.hyper.lr);
  return lrs;
}

void LRScheduler::step_to(int64_t epoch) {
  last_epoch_ = epoch;
  apply(closed_form_lr());
}

void LRScheduler::apply(const std::vector<double>& lrs) {
  auto& groups = optimizer_.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) groups[g].hyper.lr = lrs[g];
  last_lr_ = lrs;
}

std::vector<double> LRScheduler::per_group(const std::vector<double>& values, const char* what) const {
  const size_t n = optimizer_.param_groups().size();
  EMBER_CHECK(values.size() == 1 || values.size() == n, name_, ": ", what, " needs one value or one per parameter group (",
              n, "), got ", values.size());
  return values.size() == n ? values : std::vector<double>(n, values[0]);
}

NamedTensors LRScheduler::state_dict() const {
  NamedTensors out;
  save_state("scheduler.", out);
  return out;
}

void LRScheduler::load_state_dict(const NamedTensors& state) {
  KeyMap given(state.begin(), state.end());
  load_state("scheduler.", given);
  EMBER_CHECK(given.empty(), name_, ".load_state_dict: unexpected key '", given.begin()->first,
              "'; the state was saved from a different scheduler");
}

void LRScheduler::save_state(const std::string& prefix, NamedTensors& out) const {
  out.emplace_back(prefix + "last_epoch", i64(last_epoch_));
  for (size_t g = 0; g < last_lr_.size(); ++g) {
    if (g < base_lrs_.size()) out.emplace_back(group_key(prefix, g, "base_lr"), f64(base_lrs_[g]));
    out.emplace_back(group_key(prefix, g, "last_lr"), f64(last_lr_[g]));
  }
}

Tensor LRScheduler::take(KeyMap& given, const std::string& key) const {
  const auto it = given.find(key);
  EMBER_CHECK(it != given.end(), name_, ".load_state_dict: missing '", key,
              "'; the state was saved from a different scheduler or number of parameter groups");
  Tensor t = it->second;
  given.erase(it);
  EMBER_CHECK(t.numel() == 1, name_, ".load_state_dict: '", key, "' should hold one value, has shape ", t.shape());
  return t;
}

void LRScheduler::load_state(const std::string& prefix, KeyMap& given) {
  last_epoch_ = take(given, prefix + "last_epoch").item<int64_t>();
  auto& groups = optimizer_.param_groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    if (g < base_lrs_.size()) base_lrs_[g] = take(given, group_key(prefix, g, "base_lr")).item<double>();
    last_lr_[g] = take(given, group_key(prefix, g, "last_lr")).item<double>();
    groups[g].hyper.lr = last_lr_[g];
  }
  // A state saved with more groups leaves their keys behind: load_state_dict reports the first one.
}

// ---- StepLR, MultiStepLR, ExponentialLR, CosineAnnealingLR ----
// Each recursive form is PyTorch's get_lr, each closed form its _get_closed_form_lr, operation for operation.

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer, "StepLR"), step_size_(step_size), gamma_(gamma) {
  EMBER_CHECK(step_size >= 1, "StepLR: step_size must be >= 1, got ", step_size);
  EMBER_CHECK(gamma > 0, "StepLR: gamma must be > 0, got ", gamma);
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ != 0 && last_epoch_ % step_size_ == 0)
    for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

std::vector<double> StepLR::closed_form_lr() {
  return scaled(base_lrs_, std::pow(gamma_, static_cast<double>(last_epoch_ / step_size_)));
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer, "MultiStepLR"), milestones_(std::move(milestones)), gamma_(gamma) {
  EMBER_CHECK(gamma > 0, "MultiStepLR: gamma must be > 0, got ", gamma);
  for (size_t i = 0; i < milestones_.size(); ++i) {
    EMBER_CHECK(milestones_[i] >= 0, "MultiStepLR: milestones must be >= 0, got ", milestones_[i]);
    EMBER_CHECK(i == 0 || milestones_[i - 1] <= milestones_[i], "MultiStepLR: milestones must be non-decreasing, got ",
                milestones_[i - 1], " before ", milestones_[i]);
  }
  initial_step();
}

std::vector<double> MultiStepLR::get_lr() {
  // A milestone listed k times multiplies by gamma^k (PyTorch keeps them in a Counter).
  const auto hits = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  std::vector<double> lrs = current_lrs();
  if (hits > 0)
    for (double& lr : lrs) lr *= std::pow(gamma_, static_cast<double>(hits));
  return lrs;
}

std::vector<double> MultiStepLR::closed_form_lr() {
  const auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  return scaled(base_lrs_, std::pow(gamma_, static_cast<double>(passed)));
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma) : LRScheduler(optimizer, "ExponentialLR"), gamma_(gamma) {
  EMBER_CHECK(gamma > 0, "ExponentialLR: gamma must be > 0, got ", gamma);
  initial_step();
}

std::vector<double> ExponentialLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ != 0)
    for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

std::vector<double> ExponentialLR::closed_form_lr() {
  return scaled(base_lrs_, std::pow(gamma_, static_cast<double>(last_epoch_)));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer, "CosineAnnealingLR"), T_max_(T_max), eta_min_(eta_min) {
  EMBER_CHECK(T_max >= 1, "CosineAnnealingLR: T_max must be >= 1, got ", T_max);
  EMBER_CHECK(eta_min >= 0, "CosineAnnealingLR: eta_min must be >= 0, got ", eta_min);
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0) return lrs;
  const double e = static_cast<double>(last_epoch_), T = static_cast<double>(T_max_);
  // NOTE: at t - 1 = T (mod 2T) the recursive ratio divides by 1 + cos(π) = 0; PyTorch adds the step instead.
  if ((last_epoch_ - 1 - T_max_) % (2 * T_max_) == 0) {
    for (size_t g = 0; g < lrs.size(); ++g) lrs[g] = lrs[g] + (base_lrs_[g] - eta_min_) * (1 - std::cos(kPi / T)) / 2;
    return lrs;
  }
  const double ratio = (1 + std::cos(kPi * e / T)) / (1 + std::cos(kPi * (e - 1) / T));
  for (double& lr : lrs) lr = ratio * (lr - eta_min_) + eta_min_;
  return lrs;
}

std::vector<double> CosineAnnealingLR::closed_form_lr() {
  std::vector<double> lrs;
  const double e = static_cast<double>(last_epoch_), T = static_cast<double>(T_max_);
  for (double base : base_lrs_) lrs.push_back(eta_min_ + (base - eta_min_) * (1 + std::cos(kPi * e / T)) / 2);
  return lrs;
}

// ---- LambdaLR, MultiplicativeLR ----

LambdaLR::LambdaLR(Optimizer& optimizer, LrLambda lr_lambda)
    : LambdaLR(optimizer, std::vector<LrLambda>{std::move(lr_lambda)}) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<LrLambda> lr_lambdas)
    : LRScheduler(optimizer, "LambdaLR"), lambdas_(lambdas_for("LambdaLR", optimizer, std::move(lr_lambdas))) {
  initial_step();
}

std::vector<double> LambdaLR::get_lr() {
  std::vector<double> lrs;
  for (size_t g = 0; g < base_lrs_.size(); ++g) lrs.push_back(base_lrs_[g] * lambdas_[g](last_epoch_));
  return lrs;
}

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, LrLambda lr_lambda)
    : MultiplicativeLR(optimizer, std::vector<LrLambda>{std::move(lr_lambda)}) {}

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, std::vector<LrLambda> lr_lambdas)
    : LRScheduler(optimizer, "MultiplicativeLR"),
      lambdas_(lambdas_for("MultiplicativeLR", optimizer, std::move(lr_lambdas))) {
  initial_step();
}

std::vector<double> MultiplicativeLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ > 0)
    for (size_t g = 0; g < lrs.size(); ++g) lrs[g] = lrs[g] * lambdas_[g](last_epoch_);
  return lrs;
}

// ---- ConstantLR, LinearLR, PolynomialLR ----

ConstantLR::ConstantLR(Optimizer& optimizer, double factor, int64_t total_iters)
    : LRScheduler(optimizer, "ConstantLR"), factor_(factor), total_iters_(total_iters) {
  EMBER_CHECK(factor >= 0 && factor <= 1, "ConstantLR: factor must be in [0, 1], got ", factor);
  EMBER_CHECK(total_iters >= 0, "ConstantLR: total_iters must be >= 0, got ", total_iters);
  initial_step();
}

std::vector<double> ConstantLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr = lr * factor_;
  } else if (last_epoch_ == total_iters_) {
    EMBER_CHECK(factor_ != 0, "ConstantLR: cannot restore the lr at total_iters = ", total_iters_,
                " after scaling it by factor 0 (PyTorch divides by zero here too); use a factor > 0");
    for (double& lr : lrs) lr = lr * (1.0 / factor_);
  }
  return lrs;
}

std::vector<double> ConstantLR::closed_form_lr() {
  const double after = last_epoch_ >= total_iters_ ? 1.0 : 0.0;  // Python's bool·float
  return scaled(base_lrs_, factor_ + after * (1 - factor_));
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(optimizer, "LinearLR"), start_factor_(start_factor), end_factor_(end_factor), total_iters_(total_iters) {
  EMBER_CHECK(start_factor > 0 && start_factor <= 1, "LinearLR: start_factor must be in (0, 1], got ", start_factor);
  EMBER_CHECK(end_factor >= 0 && end_factor <= 1, "LinearLR: end_factor must be in [0, 1], got ", end_factor);
  EMBER_CHECK(total_iters >= 1, "LinearLR: total_iters must be >= 1, got ", total_iters);
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  const double sf = start_factor_, ef = end_factor_;
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr = lr * sf;
  } else if (last_epoch_ <= total_iters_) {
    const double ratio =
        1. + (ef - sf) / (static_cast<double>(total_iters_) * sf + static_cast<double>(last_epoch_ - 1) * (ef - sf));
    for (double& lr : lrs) lr = lr * ratio;
  }
  return lrs;
}

std::vector<double> LinearLR::closed_form_lr() {
  const double t = static_cast<double>(std::min(total_iters_, last_epoch_)), T = static_cast<double>(total_iters_);
  return scaled(base_lrs_, start_factor_ + (end_factor_ - start_factor_) * t / T);
}

PolynomialLR::PolynomialLR(Optimizer& optimizer, int64_t total_iters, double power)
    : LRScheduler(optimizer, "PolynomialLR"), total_iters_(total_iters), power_(power) {
  EMBER_CHECK(total_iters >= 1, "PolynomialLR: total_iters must be >= 1, got ", total_iters);
  EMBER_CHECK(power >= 0, "PolynomialLR: power must be >= 0, got ", power);
  initial_step();
}

std::vector<double> PolynomialLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0 || last_epoch_ > total_iters_) return lrs;
  const double e = static_cast<double>(last_epoch_), T = static_cast<double>(total_iters_);
  const double decay = std::pow((1.0 - e / T) / (1.0 - (e - 1) / T), power_);
  for (double& lr : lrs) lr = lr * decay;
  return lrs;
}

std::vector<double> PolynomialLR::closed_form_lr() {
  const double t = static_cast<double>(std::min(total_iters_, last_epoch_)), T = static_cast<double>(total_iters_);
  return scaled(base_lrs_, std::pow(1.0 - t / T, power_));
}

}  // namespace ember::optim
