#pragma once
// What CUDA can do in this process, without any CUDA header: usable from plain C++ everywhere.
#include <string>

namespace ember::cuda {

// True when this build has CUDA and a driver and at least one GPU are usable.
bool is_available();
// Number of usable GPUs (0 when !is_available()).
int device_count();
// Why CUDA is unusable, as a sentence naming the cause: this build lacks CUDA, no driver, no GPU,
// driver too old for this runtime. Empty when is_available().
std::string unavailable_reason();
// Whether this build of Ember was compiled with CUDA support.
bool built_with_cuda();

}  // namespace ember::cuda
