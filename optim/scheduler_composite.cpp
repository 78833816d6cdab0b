// Schedulers of schedulers: SequentialLR (one after another at milestones) and ChainedScheduler (all of
// them at every step), as PyTorch 1.13's.
#include <algorithm>

#include "optim/scheduler.h"

namespace ember::optim {
namespace {

std::string child_prefix(const std::string& prefix, size_t i) { return prefix + "schedulers." + std::to_string(i) + "."; }

Optimizer& first_optimizer(const std::vector<std::shared_ptr<LRScheduler>>& schedulers) {
  EMBER_CHECK(!schedulers.empty(), "ChainedScheduler: needs at least one scheduler");
  EMBER_CHECK(schedulers[0] != nullptr, "ChainedScheduler: scheduler 0 is null");
  return schedulers[0]->optimizer();
}

}  // namespace

// ---- SchedulerList ----

SchedulerList::SchedulerList(Optimizer& optimizer, std::string name,
                             std::vector<std::shared_ptr<LRScheduler>>&& schedulers)
    : LRScheduler(optimizer, std::move(name)), schedulers_(std::move(schedulers)) {}

void SchedulerList::save_state(const std::string& prefix, NamedTensors& out) const {
  LRScheduler::save_state(prefix, out);
  for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->save_state(child_prefix(prefix, i), out);
}

void SchedulerList::load_state(const std::string& prefix, KeyMap& given) {
  for (size_t i = 0; i < schedulers_.size(); ++i) schedulers_[i]->load_state(child_prefix(prefix, i), given);
  LRScheduler::load_state(prefix, given);  // last: its lrs are the schedulers', now the groups'
}

// ---- SequentialLR ----

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : SchedulerList(optimizer, "SequentialLR", std::move(schedulers)), milestones_(std::move(milestones)) {
  EMBER_CHECK(!schedulers_.empty(), "SequentialLR: needs at least one scheduler");
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    EMBER_CHECK(schedulers_[i] != nullptr, "SequentialLR: scheduler ", i, " is null");
    EMBER_CHECK(&schedulers_[i]->optimizer() == &optimizer, "SequentialLR: scheduler ", i, " (", schedulers_[i]->name(),
                ") belongs to a different optimizer than the one passed in; build every scheduler on it");
    EMBER_CHECK(schedulers_[i]->can_restart(), "SequentialLR: scheduler ", i, " cannot be a ", schedulers_[i]->name(),
                " (not ReduceLROnPlateau, SequentialLR, ChainedScheduler or LinearWarmup: each must restart at epoch 0)");
  }
  EMBER_CHECK(milestones_.size() + 1 == schedulers_.size(), "SequentialLR: expects one milestone fewer than schedulers, got ",
              schedulers_.size(), " schedulers and ", milestones_.size(), " milestones");
  for (size_t i = 0; i < milestones_.size(); ++i)
    EMBER_CHECK(milestones_[i] >= 1 && (i == 0 || milestones_[i - 1] < milestones_[i]),
                "SequentialLR: milestones must be increasing and >= 1 (scheduler i + 1 takes over at milestone i), got ",
                milestones_[i], i == 0 ? "" : " after ", i == 0 ? "" : std::to_string(milestones_[i - 1]));
  // PyTorch's constructor: back to the initial lrs, undo every scheduler's initial step, redo the first's.
  for (ParamGroup& g : optimizer_.param_groups()) g.hyper.lr = g.initial_lr;
  for (auto& s : schedulers_) s->last_epoch_ -= 1;
  schedulers_[0]->step();
  last_epoch_ = 0;
  last_lr_ = schedulers_[0]->last_lr();
}

void SequentialLR::step() {
  ++last_epoch_;
  const size_t idx = std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  LRScheduler& s = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_) s.step_to(0);
  else s.step();
  last_lr_ = s.last_lr();
}

// ---- ChainedScheduler ----

ChainedScheduler::ChainedScheduler(std::vector<std::shared_ptr<LRScheduler>> schedulers)
    : SchedulerList(first_optimizer(schedulers), "ChainedScheduler", std::move(schedulers)) {
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    EMBER_CHECK(schedulers_[i] != nullptr, "ChainedScheduler: scheduler ", i, " is null");
    EMBER_CHECK(&schedulers_[i]->optimizer() == &optimizer_, "ChainedScheduler: schedulers 0 and ", i,
                " belong to different optimizers; build every scheduler on the same one");
    EMBER_CHECK(dynamic_cast<const ReduceLROnPlateau*>(schedulers_[i].get()) == nullptr, "ChainedScheduler: scheduler ", i,
                " is a ReduceLROnPlateau, which steps on a metric; step it yourself with step(metric)");
  }
  last_epoch_ = 0;
  last_lr_ = current_lrs();
}

void ChainedScheduler::step() {
  for (auto& s : schedulers_) s->step();
  ++last_epoch_;
  last_lr_ = current_lrs();
}

}  // namespace ember::optim
