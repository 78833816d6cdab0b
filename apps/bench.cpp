#include "apps/bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include <ember/ember.h>

#include "apps/session.h"
#include "base/format.h"

namespace ember::app {
namespace {

// Distinct synthetic batches, used in turn: enough that a step does not see the same batch twice in a
// row, few enough to stay in memory (64 × 128 Fashion-MNIST images are 25 MiB).
constexpr int64_t kBatchPool = 16;

struct Batch {
  Tensor input, target;  // on the CPU: [N, sample_shape...] f32 (or i64 token ids), [N] i64 (see synthetic_batches)
};

double peak_rss_mib() {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux: KiB
}

// The model's output for one example of the synthetic input: [1, classes] (classification), [1, T, V]
// (language_model) or [1, outputs] (regression).
Shape output_shape(nn::Module& model, const Shape& sample_shape, DType dtype, Device device) {
  NoGradGuard no_grad;
  model.eval();  // no dropout mask drawn, no batch-norm statistics updated
  Shape one{1};
  for (int64_t d : sample_shape) one.push_back(d);
  const Tensor out = model.forward(zeros(one, {.dtype = dtype}).to(device));
  model.train();
  return out.shape();
}

// Uniform integers in [0, n), shaped `shape`.
Tensor random_ids(const Shape& shape, int64_t n, Generator& gen) {
  std::vector<int64_t> ids;
  for (float u : rand(shape, {}, &gen).to_vector<float>())
    ids.push_back(std::min<int64_t>(static_cast<int64_t>(u * static_cast<float>(n)), n - 1));
  return from_vector(ids).reshape(shape);
}

// Batches of the shapes and dtypes the config's data has: f32 inputs from a normal distribution, or token
// ids in [0, vocab); class labels, next-token ids, or normal regression targets of the output's shape.
std::vector<Batch> synthetic_batches(const TrainConfig& config, const TrainShape& shape, const Shape& output,
                                     int64_t count) {
  Generator gen(config.seed);
  const int64_t n = config.data.batch_size;
  Shape input_shape{n};
  for (int64_t d : shape.sample_shape) input_shape.push_back(d);
  std::vector<Batch> out;
  for (int64_t i = 0; i < count; ++i) {
    Batch b;
    b.input = shape.input_dtype == DType::i64 ? random_ids(input_shape, shape.vocab_size, gen)
                                              : randn(input_shape, {}, &gen);
    if (config.task == "regression") {
      Shape target{n};
      for (int j = 1; j < output.size(); ++j) target.push_back(output[j]);
      b.target = randn(target, {}, &gen);
    } else if (config.task == "language_model") {
      b.target = random_ids(Shape{n, output[1]}, output[2], gen);
    } else {
      b.target = random_ids(Shape{n}, output[1], gen);
    }
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace

DeviceResult run_bench(const TrainConfig& config, Device device, const BenchOptions& o) {
  backend(device).reset_peak_memory_stats(device.index);
  const TrainShape shape = train_shape(config);
  auto session = make_model_session(config, device, shape);
  Session& s = *session;
  DeviceResult r;
  r.device = device;
  r.description = describe(device);
  r.batch_size = config.data.batch_size;
  r.sample_shape = shape.sample_shape;
  const Shape output = output_shape(*s.model, shape.sample_shape, shape.input_dtype, device);
  if (config.task == "classification" && output.size() != 2)
    throw ConfigError("ember-bench: the model's output is " + output.str() +
                      " for one example; cross entropy needs [N, classes] (end the model with a linear layer)");
  r.classes = output[output.size() - 1];
  const std::vector<Batch> batches = synthetic_batches(config, shape, output, std::min(kBatchPool, o.warmup + o.steps));

  std::vector<double> ms;
  double epoch_loss = 0;
  using clock = std::chrono::steady_clock;
  for (int64_t step = 0; step < o.warmup + o.steps; ++step) {
    const Batch& b = batches[static_cast<size_t>(step % static_cast<int64_t>(batches.size()))];
    const auto started = clock::now();
    const Tensor input = b.input.to(device), target = b.target.to(device);
    s.optimizer->zero_grad();
    Tensor loss = task_loss(config, s.model->forward(input), target);
    const double value = loss.item<double>();
    if (!std::isfinite(value))
      detail::throw_error("ember-bench: step ", step + 1, " on ", device.str(), ": the loss is ", value,
                          "; try a lower optimizer.lr or optimizer.clip_grad_norm");
    apply_update(s, loss);
    backend(device).synchronize(device.index);
    if (step >= o.warmup) ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - started).count());
    r.losses.push_back(value);
    epoch_loss += value;
    if (s.steps_per_epoch > 0 && (step + 1) % s.steps_per_epoch == 0) {  // epoch end
      end_epoch_schedule(s, epoch_loss / static_cast<double>(s.steps_per_epoch));  // no evaluation: the train loss
      epoch_loss = 0;
    }
  }

  double total_ms = 0;
  for (double t : ms) total_ms += t;
  r.samples_per_sec = static_cast<double>(r.batch_size * o.steps) / (total_ms / 1000.0);
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  r.ms_median = n % 2 == 1 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  r.ms_min = ms.front();
  r.ms_max = ms.back();
  r.allocator_peak_mib = static_cast<double>(memory_stats(device).peak_allocated) / kBytesPerMiB;
  r.peak_memory_kind = device.is_cpu() ? "rss" : "allocator";
  r.peak_memory_mib = device.is_cpu() ? peak_rss_mib() : r.allocator_peak_mib;
  return r;
}

MaxBatchResult find_max_batch(const TrainConfig& config, Device device, int64_t limit, int64_t steps) {
  EMBER_CHECK(limit >= 1, "find_max_batch: the limit is ", limit, "; it must be >= 1");
  MaxBatchResult r;
  const auto fits = [&](int64_t batch) {
    TrainConfig c = config;
    c.data.batch_size = batch;
    bool ok = true;
    try {
      r.peak_mib = run_bench(c, device, {.steps = steps, .warmup = 0}).allocator_peak_mib;
    } catch (const Error& e) {
      if (std::string(e.what()).find("out of memory") == std::string::npos) throw;
      ok = false;
      r.failure = e.what();
    }
    backend(device).empty_cache(device.index);  // the next trial starts from what the device has free
    r.trials.emplace_back(batch, ok);
    return ok;
  };
  int64_t good = 0, bad = 0;  // the largest size that fit, the smallest that did not (0: none yet)
  for (int64_t b = std::min(std::max<int64_t>(config.data.batch_size, 1), limit); bad == 0; b = std::min(2 * b, limit)) {
    if (fits(b)) good = b;
    else bad = b;
    if (b == limit) break;
  }
  double good_peak = good > 0 ? r.peak_mib : 0;
  while (bad != 0 && bad - good > 1) {  // the answer lies in [good, bad)
    const int64_t mid = good + (bad - good) / 2;
    if (fits(mid)) {
      good = mid;
      good_peak = r.peak_mib;
    } else {
      bad = mid;
    }
  }
  r.batch_size = good;
  r.failed_batch_size = bad;
  r.peak_mib = good_peak;
  return r;
}

}  // namespace ember::app
