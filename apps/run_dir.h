#pragma once
// The files of a run directory:
//   config.yaml                         the resolved config (every key) the run was started with
//   checkpoint-<step, 8 digits>.safetensors   core/checkpoint.h files, newest = highest step
//   metrics.jsonl, metrics.csv           one row per epoch (MetricsRow)
//   steps.jsonl                          one row every output.log_every_steps steps (StepRow)
//   events.out.tfevents.*                TensorBoard event files (output.tensorboard; observe/summary_writer.h)
//   confusion.json                       classification: the final evaluation's confusion matrix
//   report.html                          the run report (apps/report.h)
//   init.safetensors                     the model before the first step (a fresh run writes it)
//   vocab.json                           text data: the tokenizer (data::Tokenizer::save)
//   tokenizer.model                      text data, data.tokenizer: sentencepiece: the model vocab.json names
//   classes.json                         {"classes": [names in label order]}, for datasets that name them
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/checkpoint.h"

namespace ember::app {

// "checkpoint-00000100.safetensors"
std::string checkpoint_name(int64_t step);
// The run's checkpoints as (step, path), oldest first. Other files are ignored.
std::vector<std::pair<int64_t, std::filesystem::path>> list_checkpoints(const std::filesystem::path& dir);
// Deletes all but the newest `keep_last` checkpoints.
void prune_checkpoints(const std::filesystem::path& dir, int64_t keep_last);
// The newest checkpoint that loads; each newer one that does not is described in `problems` (the file
// and the error) and skipped. nullopt when there is none that loads.
std::optional<Checkpoint> newest_valid_checkpoint(const std::filesystem::path& dir, std::vector<std::string>& problems);
// A `--checkpoint` argument of the apps that read a run (ember-export, ember-generate): a checkpoint file, or a
// run directory for its newest checkpoint that loads (newer unusable ones are logged as warnings and skipped).
// Throws ConfigError naming the argument when the directory holds none.
Checkpoint checkpoint_from_arg(const std::string& arg);

// Deletes the temporary files that a writer killed mid-write left in `dir` (write_file_atomic's
// "<name>.tmp.<pid>", core/atomic_file.h: checkpoints, config.yaml, metrics files) when process <pid> is
// gone; returns their names. They are never read (list_checkpoints ignores them): this only reclaims the space.
std::vector<std::string> remove_stale_temporaries(const std::filesystem::path& dir);

// Creates `dir` if needed and checks that a file can be written there, before any work: throws
// ConfigError naming the directory and the reason (exit code 2) when it cannot.
void ensure_writable_dir(const std::filesystem::path& dir);

// classes.json: writes it (atomically); reads it back, throwing ConfigError naming the file when it is not
// such a file.
void write_class_names(const std::filesystem::path& file, const std::vector<std::string>& names);
std::vector<std::string> read_class_names(const std::filesystem::path& file);

struct MetricsRow {
  int64_t epoch = 0, step = 0;  // epoch counts from 1; step: optimizer steps so far
  double lr = 0;  // after the epoch's last step (and any per-step scheduler step)
  double train_loss = 0;  // over the epoch's steps (dropout on, as trained); language_model: per token
  std::optional<double> train_accuracy;  // classification, language_model (next token); absent for regression
  std::optional<double> test_loss, test_accuracy;  // absent in epochs without evaluation (accuracy: and regression)
  // language_model evaluations: test_loss / ln 2 (bits per character or byte) and exp(test_loss).
  std::optional<double> test_bits, test_perplexity;
  double samples_per_sec = 0, seconds = 0;
};

// Appends rows to metrics.jsonl and metrics.csv (flushed after each row). Each metrics.jsonl line is a JSON
// object (written by nlohmann-json) with the MetricsRow fields in order; a value without evaluation is
// null, and a non-finite one, which JSON has no literal for, is the string "NaN", "Infinity" or
// "-Infinity" — distinct from null, and read back by Python's float() and JavaScript's Number().
// metrics.csv spells them the same way and leaves a missing value empty. Opening for a resumed run keeps
// the rows of the first `resume_epochs` epochs (those the checkpoint had completed) and drops later ones,
// so the files of a resumed run equal an uninterrupted run's. Throws ember::Error when a file cannot be
// written. The columns, in order: epoch, step, lr, train_loss, train_accuracy, test_loss, test_accuracy,
// test_<bits_unit> (test_bits_per_char, test_bits_per_byte, or test_bits_per_token for runs that are not
// language models: empty there), test_perplexity, samples_per_sec, seconds.
class MetricsWriter {
 public:
  MetricsWriter(const std::filesystem::path& dir, std::optional<int64_t> resume_epochs,
                const std::string& bits_unit = "bits_per_token");
  void append(const MetricsRow& row);

 private:
  std::filesystem::path jsonl_, csv_;
  std::string bits_key_;  // "test_bits_per_char"
};

// A metrics row's values as (name, value) pairs: every field that is present, but epoch and step, with
// metrics.jsonl's names (test_bits as `bits_key`) — what TensorBoard gets as "epoch/<name>" scalars.
using Scalars = std::vector<std::pair<std::string, double>>;
Scalars metrics_scalars(const MetricsRow& row, const std::string& bits_key);

// One line of steps.jsonl, written every output.log_every_steps optimizer steps (the steps the log prints):
// the step's loss (its micro-batches' weighted mean; NaN for a skipped non-finite step), the learning rate
// after it, the epoch's samples per second so far and the device allocator's live memory in MiB.
struct StepRow {
  int64_t step = 0, epoch = 0;  // epoch counts from 1
  double loss = 0, lr = 0, samples_per_sec = 0, memory_mib = 0;
};
Scalars step_scalars(const StepRow& row);  // loss, lr, samples_per_sec, memory_mib

// Appends StepRows to steps.jsonl as JSON objects {"step", "epoch", "loss", "lr", "samples_per_sec",
// "memory_mib"} (non-finite values as metrics.jsonl spells them). Opening for a resumed run keeps the
// rows of steps up to `resume_step` (the checkpoint's) and drops later ones.
class StepWriter {
 public:
  StepWriter(const std::filesystem::path& dir, std::optional<int64_t> resume_step);
  void append(const StepRow& row);

 private:
  std::filesystem::path path_;
};

// The numeric values of the rows of a metrics.jsonl or steps.jsonl file whose "step" is `step`, but epoch
// and step ("NaN"/"Infinity" strings read as such; nulls left out). Nothing when the file is absent.
Scalars jsonl_scalars_at_step(const std::filesystem::path& file, int64_t step);

}  // namespace ember::app
