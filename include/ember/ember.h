#pragma once
// Everything a user program needs: #include <ember/ember.h>. It includes only the public headers
// (cmake/public_headers.cmake: the installed ones) and pulls in no third-party header (no spdlog,
// no fmt): Ember's log is internal (base/log.h, `ember::logger()`, level from EMBER_LOG_LEVEL).
#include "autograd/gradcheck.h"
#include "autograd/hooks.h"
#include "autograd/node.h"
#include "autograd/ops.h"
#include "backends/cuda_info.h"
#include "core/atomic_file.h"
#include "core/checkpoint.h"
#include "core/safetensors.h"
#include "core/tensor.h"
#include "data/data.h"
#include "distributed/distributed.h"
#include "nn/functional.h"
#include "nn/causal_lm.h"
#include "nn/generation.h"
#include "nn/init.h"
#include "nn/layers.h"
#include "nn/registry.h"
#include "nn/resnet.h"
#include "nn/rnn.h"
#include "nn/serialize.h"
#include "nn/transformer.h"
#include "nn/vit.h"
#include "observe/summary_writer.h"
#include "optim/optimizer.h"
#include "optim/param_groups.h"
#include "optim/scheduler.h"

namespace ember {
// Memory statistics of a device's allocator (bytes).
inline MemoryStats memory_stats(Device device = kCPU) { return backend(device).memory_stats(device.index); }
inline void empty_cache(Device device = kCPU) { backend(device).empty_cache(device.index); }
// One line on what the device runs with (CPU model, SIMD, threads, GEMM kernel).
inline std::string describe(Device device = kCPU) { return backend(device).describe(); }
}  // namespace ember
