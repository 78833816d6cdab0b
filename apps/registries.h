#pragma once
// The optimizers, LR schedulers and data transforms ember-train builds, by name: each is one entry of a
// table in apps/registries.cpp (name → factory), and the config's rows (apps/config.cpp: optimizer.type,
// scheduler.type, data.transforms' type) take their choices from these lists, so that a name cannot be
// accepted by the config without something to build, or built without the config accepting it. Adding
// one: an entry in its table, then regenerate docs/config.md (tests/test_config.cpp says how).
#include <memory>
#include <string>
#include <vector>

#include "apps/config.h"
#include "optim/optimizer.h"
#include "optim/scheduler.h"

namespace ember::app {

// In table order (the order the docs list them).
std::vector<std::string> optimizer_types();  // sgd, adam, adamw, rmsprop
std::vector<std::string> scheduler_types();  // none, step, ...
std::vector<std::string> transform_types();  // normalize, random_crop, ...

// optimizer.type's optimizer over the model's parameters: one group of every parameter, or with
// optimizer.no_decay two (the decayed ones, then those of the listed kinds with weight_decay 0).
std::unique_ptr<optim::Optimizer> make_optimizer(const OptimizerConfig& o, const nn::Module& model);
// scheduler.type's schedule (nullptr for none), after scheduler.warmup_steps of linear warmup when there
// are any; steps_per_epoch counts optimizer steps.
std::unique_ptr<optim::LRScheduler> make_scheduler(const TrainConfig& c, optim::Optimizer& opt, int64_t steps_per_epoch);
// How many tensors of state optimizer.type keeps per parameter (for the --dry-run memory estimate).
double optimizer_state_per_param(const OptimizerConfig& o);

}  // namespace ember::app
