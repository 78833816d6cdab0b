#pragma once
// The optimizers, LR schedulers and data transforms ember-train builds, by name: each is one entry of a
// table in apps/session.cpp (name → factory), and the config's rows (apps/config.cpp: optimizer.type,
// scheduler.type, data.transforms' type) take their choices from these lists, so that a name cannot be
// accepted by the config without something to build, or built without the config accepting it. Adding
// one: an entry in its table, then regenerate docs/config.md (tests/test_config.cpp says how).
#include <string>
#include <vector>

namespace ember::app {

// In table order (the order the docs list them).
std::vector<std::string> optimizer_types();  // sgd, adam, adamw, rmsprop
std::vector<std::string> scheduler_types();  // none, step, ...
std::vector<std::string> transform_types();  // normalize, random_crop, ...

}  // namespace ember::app
