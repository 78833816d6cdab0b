#pragma once
// Session: everything a TrainConfig describes, built and ready to train or evaluate on one device —
// datasets and loaders, the model (through nn::build_model), optimizer and LR scheduler.
//
//   auto s = app::make_session(config, Device::parse("cpu"));
//   for (auto& batch : *s->train_loader) { ... s->model->forward(batch.input.to(s->device)) ... }
//
// Randomness: the global generator is seeded with config.seed before anything is built; the model's
// initial weights, then its dropout masks, come from `model_gen` (seeded with config.seed too); the
// loaders' shuffle order and transforms from their own generators (seed config.seed); text data's training
// windows from (config.seed, the loader's epoch) through TokenWindows::set_epoch. A checkpoint that saves
// these (trainer.cpp) resumes the run exactly.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "apps/config.h"
#include "data/text.h"

namespace ember::app {

struct Session {
  TrainConfig config;
  Device device;
  data::DatasetPtr train_set, test_set;
  std::unique_ptr<data::DataLoader> train_loader, test_loader;
  Generator model_gen;  // NOTE: the model's dropout layers point at it: a Session never moves
  std::shared_ptr<nn::Module> model;  // a Sequential of the layer specs, or a whole model (nn::build_model)
  Shape sample_shape;  // one example's input after the transforms, e.g. {1, 28, 28}; text: {context}
  DType input_dtype = DType::f32;  // i64 for token ids
  int64_t vocab_size = 0;          // text data: the tokenizer's vocabulary; 0 otherwise
  // Text data (data.dataset: text): the tokenizer (fitted on the corpus, or read from a run's vocab.json),
  // a fingerprint of the corpus ("<bytes> bytes, fnv1a <16 hex digits>", kept in checkpoints so that a
  // resume or an evaluation on other text is refused), and the windows behind train_set and test_set (the
  // validation text).
  std::optional<data::Tokenizer> tokenizer;
  std::string corpus_fingerprint;
  std::shared_ptr<data::TokenWindows> train_windows, test_windows;
  // The tokens the test windows predict and the bytes of text they stand for (data::Tokenizer::text_bytes).
  int64_t test_tokens = 0, test_bytes = 0;
  // The classes' names in label order, where the dataset has them (image_folder: its subfolders; cifar10);
  // empty otherwise. ember-train saves them as <run>/classes.json.
  std::vector<std::string> class_names;
  std::unique_ptr<optim::Optimizer> optimizer;
  std::unique_ptr<optim::LRScheduler> scheduler;  // null for scheduler.type: none
  int64_t steps_per_epoch = 0;  // optimizer steps: ceil(batches / optimizer.accumulate_steps)

  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};

// Builds the session. `for_training` false skips the training loader, optimizer and scheduler (ember-eval).
// Text data: `vocab_file` empty fits the tokenizer on the corpus (char) or takes the byte tokenizer; else
// the vocabulary is read from that file (a run's vocab.json) and must be of data.tokenizer's type.
// Throws ConfigError when the model specs do not fit the data (shapes that do not connect, bad layer
// arguments) or the vocabulary is missing or of another type, ember::Error when a dataset cannot be read
// (or holds a character outside the vocabulary).
std::unique_ptr<Session> make_session(const TrainConfig& config, Device device, bool for_training = true,
                                      const std::string& vocab_file = "");

// What a training step sees, known without reading the data: one example's input shape after the
// transforms, and the steps per epoch (for per-step schedulers). fashion_mnist is [1, 28, 28] × 60000 (the
// files are not opened); an idx dataset's are read from its training files.
struct TrainShape {
  Shape sample_shape;
  int64_t steps_per_epoch = 0;  // optimizer steps
  DType input_dtype = DType::f32;
  int64_t vocab_size = 0;  // text: the tokenizer's (the corpus is read and tokenized to know it)
};
TrainShape train_shape(const TrainConfig& config);

// data.transforms as the loaders' transforms: for training, or for evaluation (without the random
// augmentations; random_resized_crop becomes resize + center_crop to the same size).
std::vector<data::AnyTransform> make_transforms(const DataConfig& data, bool training);

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

// The training loss of `config`'s task for a model output and its batch's target, averaged over the
// batch (reduction mean) or summed (sum):
//   classification  cross entropy of [B, C] logits and [B] classes (loss.label_smoothing);
//   language_model  cross entropy over the B·T tokens of [B, T, V] logits and [B, T] next tokens;
//   regression      mse or l1 (loss.type) over the target's elements; a [B] target takes the output's
//                   shape when it has as many elements ([B, 1]).
// `smoothing` false: plain cross entropy (evaluation). Throws ConfigError when the output's shape does not
// fit the task (naming both shapes and what the model should end with).
Tensor task_loss(const TrainConfig& config, const Tensor& output, const Tensor& target, bool sum = false,
                 bool smoothing = true);
// Predictions that equal the target: classes (classification) or next tokens (language_model); 0 for
// regression. `predictions` receives how many there were (B, or B·T).
int64_t count_correct(const TrainConfig& config, const Tensor& output, const Tensor& target, int64_t& predictions);
// The same count as a 0-d i64 tensor on the output's device, not read back (undefined for regression): the
// train loop adds these up and reads the sum only when it needs it, so that a CUDA step waits for the GPU
// once (its loss), not twice.
Tensor correct_count(const TrainConfig& config, const Tensor& output, const Tensor& target);

// The evaluation over a loader: mean loss per prediction (per example; language_model: per token, in nats;
// regression: per target element), accuracy (classification: of the class, language_model: of the next
// token; absent for regression), and for classification the confusion matrix (rows: true class, columns:
// predicted). The loss has no label smoothing. Runs the model in eval mode without a graph and leaves it in
// train mode. What the loader throws is a DataError (the test data).
struct EvalResult {
  double loss = 0;
  std::optional<double> accuracy;
  int64_t examples = 0;
  int64_t predictions = 0;  // examples, or tokens for language_model
  std::vector<std::vector<int64_t>> confusion;
};
EvalResult evaluate(nn::Module& model, data::DataLoader& loader, Device device, const TrainConfig& config);

// One training update after a finite loss: backward, then finish_update.
void apply_update(Session& session, const Tensor& loss);
// After the gradients of one optimizer step are in (one backward, or several accumulated): gradient
// clipping (optimizer.clip_grad_norm), the optimizer step, and the scheduler step when it runs per step
// (scheduler.interval: step).
void finish_update(Session& session);
// The end-of-epoch scheduler step, for schedules that run per epoch; ReduceLROnPlateau gets `metric`.
void end_epoch_schedule(Session& session, double metric);

// A language model's validation loss (nats per token) in bits per character (char tokenizer: a token is a
// character) or per byte of text (the others, test_bytes: the tokens' bytes), so that models with different
// tokenizers compare on one scale; bits_unit names it: bits_per_char, bits_per_byte, or bits_per_token
// without a tokenizer.
double bits_per_unit(const Session& session, double nats_per_token);
std::string bits_unit(const Session& session);

// Text data: throws ConfigError unless checkpoint `c` was trained on the corpus this session read (its
// "corpus" metadata equals corpus_fingerprint). Nothing for other data.
void check_corpus(const Session& session, const Checkpoint& c);

// The --dry-run report: nn::summary of the model for one batch, then an estimate of the memory a training
// step needs (parameters, gradients, optimizer state, activations and their gradients for one batch).
std::string dry_run_report(Session& session);

}  // namespace ember::app
