#pragma once
// What a training run reports to, each behind one interface (RunLog): the metrics files (metrics.jsonl/.csv),
// the step log (steps.jsonl), TensorBoard, the --trace-batches file, the console and the run report. The
// trainer's Run (apps/trainer.cpp) builds them with the factories below and calls each in turn.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apps/run_dir.h"

namespace ember::app {

struct Session;
struct TrainOptions;

// One optimizer step, as the run's logs see it.
struct StepEvent {
  int64_t epoch = 0;     // the step's epoch, from 1
  int64_t in_epoch = 0;  // the epoch's steps done, this one included
  int64_t step = 0;      // every step so far, this one included
  double loss = 0;       // its micro-batches' weighted mean; non-finite for a skipped step (skip_nonfinite)
  double lr = 0;         // after the step
  int64_t seen = 0;      // the epoch's examples so far (this process's)
  double seconds = 0;    // the epoch's time so far
  bool skipped = false;  // a non-finite loss: no update and no gradients
  std::optional<StepRow> logged;  // every output.log_every_steps steps (rank 0): the steps.jsonl row
  const std::vector<int64_t>* examples = nullptr;  // the step's dataset indices (with --trace-batches)
};

// How a run ended: every epoch done (signal 0), or stopped by SIGINT/SIGTERM after writing `checkpoint`.
struct RunEnd {
  int signal = 0;
  int64_t step = 0, skipped = 0;
  std::string checkpoint;  // the newest checkpoint
};

// One writer of what a run reports. The run calls each log in turn: after every optimizer step, before
// output that is not the logs' (the evaluation, a failure's message), after every epoch (its metrics row)
// and at the end. A log that cannot write throws; the run stops with that error.
class RunLog {
 public:
  virtual ~RunLog() = default;
  virtual void on_step(const StepEvent&) {}
  virtual void on_pause() {}
  virtual void on_epoch(const MetricsRow&) {}
  virtual void on_end(const RunEnd&) {}
};

// metrics.jsonl and metrics.csv: a row per epoch; on resume, rows past `resume_epochs` are dropped.
std::unique_ptr<RunLog> metrics_log(const std::filesystem::path& dir, std::optional<int64_t> resume_epochs, const std::string& bits_unit);
// steps.jsonl: a row every output.log_every_steps steps; on resume, rows past `resume_step` are dropped.
std::unique_ptr<RunLog> step_log(const std::filesystem::path& dir, std::optional<int64_t> resume_step);
// TensorBoard (output.tensorboard), purged from `step` and refilled from the metrics files on resume.
std::unique_ptr<RunLog> tensorboard_log(const std::filesystem::path& dir, bool resume, int64_t step, const Session& s,
                                        const std::string& bits_unit);
// --trace-batches PATH: null when `path` is empty; on resume it keeps the lines of steps <= `step`.
std::unique_ptr<RunLog> trace_log(const std::string& path, bool resume, int64_t step, const Session& s);
// What ember-train prints: progress, a line per epoch, and how the run ended.
std::unique_ptr<RunLog> console_log(std::FILE* out, const TrainOptions& o, int64_t steps_per_epoch,
                                    std::string bits_label, std::filesystem::path dir);
// report.html at the end of a completed run.
std::unique_ptr<RunLog> report_log(std::FILE* out, std::filesystem::path dir);

}  // namespace ember::app
