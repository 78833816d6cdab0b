#pragma once
// NamedTensors: tensors with their names, in order — what state_dict() returns, load_state_dict() takes,
// a checkpoint holds and a safetensors file stores ("fc1.weight", "optimizer.state.0.exp_avg", ...).
// nn::NamedTensors and optim::NamedTensors name this same type.
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace ember {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

}  // namespace ember
