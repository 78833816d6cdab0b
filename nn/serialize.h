#pragma once
// Weights on disk: a module's state_dict as a safetensors file that PyTorch reads with
// safetensors.torch.load_file (keys as PyTorch names them: "features.0.weight"). Atomic writes.
#include <map>
#include <string>

#include "nn/module.h"

namespace ember {

// Throws ember::Error naming the path when it cannot be written (the previous file then stays intact).
void save(const nn::Module& module, const std::string& path, const std::map<std::string, std::string>& metadata = {});
// Loads into `module` (converting to its devices); strict: keys must match exactly. Throws ember::Error
// naming the file and, for a mismatch, the missing/unexpected/mis-shaped keys and dtype mismatches (file dtype vs
// the model's).
void load(nn::Module& module, const std::string& path, bool strict = true);

}  // namespace ember
