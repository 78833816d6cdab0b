#pragma once
// ember-bench's measurement: trains a config's model, loss and optimizer (built by make_model_session,
// exactly as ember-train builds them) for warmup + N steps on synthetic batches and times each step.
//
// The batches are the dataset's shape (TrainShape) with inputs ~ N(0, 1) and labels uniform over the
// model's outputs, generated on the CPU from config.seed — every device gets the same ones, and the same
// initial weights and dropout masks (Philox), so the losses of two devices are comparable step by step.
// A step is what ember-train's is, without the data loader (bench_data measures that) and the accuracy:
// the batch to the device, zero_grad, forward, cross entropy (with label smoothing), loss.item() (which
// waits for the device, so a step's time is the device's), backward, gradient clipping, optimizer step,
// the scheduler (per step, or at each epoch boundary).
#include <cstdint>
#include <string>
#include <vector>

#include "apps/config.h"
#include "base/device.h"
#include "core/shape.h"

namespace ember::app {

struct BenchOptions {
  int64_t steps = 50;   // timed steps
  int64_t warmup = 5;   // untimed steps before them
};

struct DeviceResult {
  Device device;
  std::string description;     // ember::describe(device): CPU model, threads, GEMM kernel
  int64_t batch_size = 0;
  double samples_per_sec = 0;  // batch_size × steps / the timed steps' total time
  double ms_median = 0, ms_min = 0, ms_max = 0;
  double peak_memory_mib = 0;  // peak RSS of the process (CPU) or the device allocator's peak (CUDA)
  std::string peak_memory_kind;  // "rss" or "allocator"
  double allocator_peak_mib = 0;  // the device allocator's high-water mark during the run
  Shape sample_shape;           // one example's input, e.g. [1, 28, 28]
  int64_t classes = 0;          // the model's output size per prediction: the synthetic labels' range
                                // (language_model: the vocabulary; regression: the outputs per example)
  std::vector<double> losses;   // every step's loss, warmup included
};

// Runs the benchmark on `device`. Throws ConfigError (model specs that do not fit) and ember::Error
// (a non-finite loss, naming the step; anything the backend throws).
DeviceResult run_bench(const TrainConfig& config, Device device, const BenchOptions& options);

// The largest batch size whose training steps fit in `device`'s memory: batch sizes double from the
// config's until one runs out of memory (or `limit` is reached), then a binary search between the last
// that fit and the first that did not. Each trial runs `steps` steps (the first step allocates the
// optimizer state, the second reuses the memory as every later step does) and then empties the cache.
struct MaxBatchResult {
  int64_t batch_size = 0;         // the largest that fit (0: not even batch 1)
  int64_t failed_batch_size = 0;  // the smallest that ran out of memory (0: none up to `limit`)
  double peak_mib = 0;            // the allocator's peak at batch_size
  std::string failure;            // the out-of-memory error at failed_batch_size
  std::vector<std::pair<int64_t, bool>> trials;  // (batch size, fit), in the order tried
};
MaxBatchResult find_max_batch(const TrainConfig& config, Device device, int64_t limit, int64_t steps = 2);

}  // namespace ember::app
