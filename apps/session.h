#pragma once
// Session: everything a TrainConfig describes, built and ready to train or evaluate on one device —
// datasets and loaders, the model (through nn::build_model), optimizer and LR scheduler.
//
//   auto s = app::make_session(config, Device::parse("cpu"));
//   for (auto& batch : *s->train_loader) { ... s->model->forward(batch.input.to(s->device)) ... }
//
// Randomness: the global generator is seeded with config.seed before anything is built; the model's
// initial weights, then its dropout masks, come from `model_gen` (seeded with config.seed too); the
// loaders' shuffle order and transforms from their own generators (seed config.seed). A checkpoint that
// saves these (trainer.cpp) resumes the run exactly.
#include <memory>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "apps/config.h"

namespace ember::app {

struct Session {
  TrainConfig config;
  Device device;
  data::DatasetPtr train_set, test_set;
  std::unique_ptr<data::DataLoader> train_loader, test_loader;
  Generator model_gen;  // NOTE: the model's dropout layers point at it: a Session never moves
  std::shared_ptr<nn::Module> model;  // a Sequential of the layer specs, or a whole model (nn::build_model)
  Shape sample_shape;  // one example's input after the transforms, e.g. {1, 28, 28}
  DType input_dtype = DType::f32;  // i64 for token ids
  int64_t vocab_size = 0;          // text data: the tokenizer's vocabulary; 0 otherwise
  std::unique_ptr<optim::Optimizer> optimizer;
  std::unique_ptr<optim::LRScheduler> scheduler;  // null for scheduler.type: none
  int64_t steps_per_epoch = 0;

  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};

// Builds the session. `for_training` false skips the training split, optimizer and scheduler (ember-eval).
// Throws ConfigError when the model specs do not fit the data (shapes that do not connect, bad layer
// arguments), ember::Error when a dataset cannot be read.
std::unique_ptr<Session> make_session(const TrainConfig& config, Device device, bool for_training = true);

// What a training step sees, known without reading the data: one example's input shape after the
// transforms, and the steps per epoch (for per-step schedulers). fashion_mnist is [1, 28, 28] × 60000 (the
// files are not opened); an idx dataset's are read from its training files.
struct TrainShape {
  Shape sample_shape;
  int64_t steps_per_epoch = 0;
};
TrainShape train_shape(const TrainConfig& config);

// The model, optimizer and scheduler of `config` for `shape`, exactly as make_session builds them, without
// datasets or loaders (those stay null): ember-bench trains them on synthetic batches. Throws ConfigError
// like make_session.
std::unique_ptr<Session> make_model_session(const TrainConfig& config, Device device, const TrainShape& shape);

// What a DataLoader threw while an app iterated it — a dataset read, a loader worker, a transform — as
// opposed to an error of the model or the optimizer: ember-train writes a checkpoint and stops on it.
// The message is "reading the <data> data: " and the loader's ("DataLoader: batch B of epoch E failed in
// worker W: <the dataset's message, naming the file and example>").
class DataError : public Error {
 public:
  using Error::Error;
};

// loader.begin() and ++it, with what they throw rethrown as DataError; `data` names the split ("training").
data::DataLoader::Iterator first_batch(data::DataLoader& loader, const std::string& data);
void next_batch(data::DataLoader::Iterator& it, const std::string& data);

// Mean loss and accuracy over a loader, and the confusion matrix (rows: true class, columns: predicted).
// The loss is plain cross entropy (no label smoothing). Runs the model in eval mode without a graph and
// leaves it in train mode. What the loader throws is a DataError (the test data).
struct EvalResult {
  double loss = 0, accuracy = 0;
  int64_t examples = 0;
  std::vector<std::vector<int64_t>> confusion;
};
EvalResult evaluate(nn::Module& model, data::DataLoader& loader, Device device);

// One training update after a finite loss: backward, gradient clipping (optimizer.clip_grad_norm), the
// optimizer step, and the scheduler step when it runs per batch (scheduler.interval: step).
void apply_update(Session& session, const Tensor& loss);
// The end-of-epoch scheduler step, for schedules that run per epoch; ReduceLROnPlateau gets `metric`.
void end_epoch_schedule(Session& session, double metric);

// The --dry-run report: nn::summary of the model for one batch, then an estimate of the memory a training
// step needs (parameters, gradients, optimizer state, activations and their gradients for one batch).
std::string dry_run_report(Session& session);

}  // namespace ember::app
