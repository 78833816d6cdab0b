#pragma once
// The ember-train loop: trains a Session epoch by epoch, evaluates, writes metrics and checkpoints, and
// resumes from a run directory exactly (the resumed run's metrics and weights equal an uninterrupted run's).
//
// Files of a fresh run besides checkpoints and metrics: init.safetensors (the model's state_dict before the
// first step, nn::save), and for text data vocab.json (the tokenizer, read back on resume and by ember-eval).
//
// Tasks (config.task): classification, language_model (cross entropy over every token of a window; the
// evaluation on the validation windows adds bits per token and perplexity), regression (mse/l1).
// Gradient accumulation (optimizer.accumulate_steps N): N micro-batches per optimizer step, each loss
// weighted by its share of the step's examples; steps, checkpoints, signals and metrics act at step
// boundaries only.
//
// Checkpoints (core/checkpoint.h, "checkpoint-<step>.safetensors", atomic) hold the model ("model."),
// optimizer ("optimizer."), scheduler ("scheduler."), the global and model generators, the train loader's
// position, epoch/step, the current epoch's running sums, and config_hash() — a resume with a config that
// changes the trajectory is refused. They are written every output.checkpoint_every_epochs epochs and/or
// output.checkpoint_every_steps steps, at the end, and on SIGINT/SIGTERM; only the newest
// output.keep_last are kept.
//
// SIGINT/SIGTERM: the current step finishes, a checkpoint is written and run_training returns 130 (SIGINT)
// or 143 (SIGTERM), the shell's codes for those signals; --resume continues the run. A second signal
// before that kills the process at once.
// A NaN/Inf loss throws ember::Error naming the step, the last good checkpoint and what to try, unless
// config.skip_nonfinite (then the step is skipped with a warning).
//
// In trainer.cpp the loop is a Run's named steps (open the run; per epoch: start, a micro step per batch and
// an end step per optimizer step, end of epoch; a data failure; finish), and everything a run reports goes
// through one interface, RunLog (on_step, on_pause, on_epoch, on_end), implemented once per writer: the
// --trace-batches file, steps.jsonl, metrics.jsonl/csv, TensorBoard, the console and the run report.
#include <cstdio>
#include <string>

#include "apps/config.h"
#include "base/device.h"

namespace ember::app {

struct TrainOptions {
  TrainConfig config;
  Device device;
  std::string run_dir;        // where config.yaml, checkpoints and metrics go
  bool resume = false;        // continue from run_dir's newest valid checkpoint
  bool dry_run = false;       // print the summary and memory estimate, then return 0
  bool progress_bar = false;  // one rewritten line (a terminal) instead of periodic log lines
  // --trace-batches: one JSON line per optimizer step, {"step": s, "starts": [...]} (text data: the
  // token-window starts of the step's examples, micro-batches in order) or {"step": s, "indices": [...]}
  // (other data: dataset indices). Appended on resume (lines past the checkpoint are dropped first).
  std::string trace_batches;
  std::FILE* out = stdout;
};

// Returns the exit code: 0 done, 130/143 stopped by a signal after checkpointing. Throws ConfigError
// (exit 2: bad model specs, config differing from the resumed run's, a run directory that already has
// checkpoints without resume, resume without a checkpoint) and ember::Error (exit 1: NaN loss, I/O).
int run_training(const TrainOptions& options);

}  // namespace ember::app
