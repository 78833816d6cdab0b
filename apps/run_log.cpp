#include "apps/run_log.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include <ember/ember.h>

#include "apps/progress.h"
#include "apps/report.h"
#include "apps/session.h"
#include "apps/trainer.h"
#include "base/log.h"

namespace ember::app {
namespace fs = std::filesystem;
namespace {

// The examples of one optimizer step, for --trace-batches: window starts (text) or dataset indices.
void trace_step(std::ofstream& out, const Session& s, int64_t step, const std::vector<int64_t>& indices) {
  nlohmann::ordered_json line = {{"step", step}};
  if (s.train_windows) {
    std::vector<int64_t> starts;
    starts.reserve(indices.size());
    for (int64_t i : indices) starts.push_back(s.train_windows->start(i));  // data.limit's Subset keeps indices
    line["starts"] = starts;
  } else {
    line["indices"] = indices;
  }
  out << line.dump() << "\n";
  out.flush();
  EMBER_CHECK(out.good(), "--trace-batches: cannot write the trace (disk full or no permission?)");
}

// Opens the trace file: fresh (truncated), or on resume keeping the lines of steps <= `step`.
std::ofstream open_trace(const std::string& path, bool resume, int64_t step) {
  if (path.empty()) return {};
  std::string kept;
  if (resume) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
      const size_t at = line.find("\"step\":");
      if (at != std::string::npos && std::stoll(line.substr(at + 7)) <= step) kept += line + "\n";
    }
  }
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw ConfigError("--trace-batches " + path + ": cannot write the file (" + std::strerror(errno) + ")");
  out << kept;
  return out;
}

// Histograms of every parameter ("weights/<name>") and, with `grads`, of its gradient ("grads/<name>").
// A tensor with no value a histogram can hold (all NaN or beyond ±1e20: a diverged run going on under
// skip_nonfinite) is left out with a warning: the histograms are for looking, not a reason to stop.
void add_histograms(SummaryWriter& tb, const nn::Module& model, int64_t step, bool grads) {
  const auto add = [&](const std::string& tag, const Tensor& t) {
    Histogram h;
    try {
      h = make_histogram(t);
    } catch (const Error& e) {
      logger().warn("step {}: no histogram of {}: {}", step, tag, e.what());
      return;
    }
    tb.add_histogram(tag, h, step);  // a write failure (disk full) is an error, as for the metrics files
  };
  for (const auto& [name, param] : model.named_parameters()) {
    add("weights/" + name, param);
    if (grads && param.grad().defined()) add("grads/" + name, param.grad());
  }
}

// TensorBoard's record of the run (output.tensorboard): "train/<name>" scalars of steps.jsonl's rows,
// "epoch/<name>" scalars of metrics.jsonl's rows, at their steps. A resumed run's writer purges every record
// of steps >= the checkpoint's step C (a SessionLog START at C, as PyTorch's SummaryWriter(purge_step=C))
// and writes again what the metrics files keep of step C: its steps.jsonl row and an epoch row that ended
// at C, and the weight histograms when C is a histogram step. Purging from C rather than C + 1 is what
// keeps the two in step when the checkpoint was written after step C's log line but before its epoch's
// evaluation (a step checkpoint on an epoch's last batch): the old epoch row at C goes, as it goes from
// metrics.jsonl. The gradient histograms of step C are not rewritten (the checkpoint has no gradients).
// Call after the metrics writers have dropped the rows past the checkpoint.
std::unique_ptr<SummaryWriter> open_tensorboard(const fs::path& dir, bool resume, int64_t step, const Session& s) {
  SummaryWriterOptions options;
  if (resume) options.purge_step = step;
  auto tb = std::make_unique<SummaryWriter>(dir.string(), options);
  if (resume) {
    for (const auto& [name, value] : jsonl_scalars_at_step(dir / "steps.jsonl", step)) tb->add_scalar("train/" + name, value, step);
    for (const auto& [name, value] : jsonl_scalars_at_step(dir / "metrics.jsonl", step)) tb->add_scalar("epoch/" + name, value, step);
    const int64_t every = s.config.output.histograms_every_steps;
    if (every > 0 && step > 0 && step % every == 0) add_histograms(*tb, *s.model, step, false);
    tb->flush();
  }
  return tb;
}

// --trace-batches: a JSON line per step with its examples.
class TraceLog final : public RunLog {
 public:
  TraceLog(std::ofstream out, const Session& s) : out_(std::move(out)), s_(s) {}
  void on_step(const StepEvent& e) override { trace_step(out_, s_, e.step, *e.examples); }

 private:
  std::ofstream out_;
  const Session& s_;
};

// What ember-train prints: the progress bar or lines, a line per epoch, and how the run ended.
class ConsoleLog final : public RunLog {
 public:
  ConsoleLog(std::FILE* out, const TrainOptions& o, int64_t steps_per_epoch, std::string bits_label, fs::path dir)
      : out_(out),
        display_(out, o.progress_bar, o.config.output.log_every_steps, steps_per_epoch, o.config.epochs, o.device),
        task_(o.config.task),
        bits_label_(std::move(bits_label)),
        dir_(std::move(dir)) {}
  void on_step(const StepEvent& e) override {
    display_.step(e.epoch, e.in_epoch, e.step, e.loss, e.lr, e.seen, e.seconds);
  }
  void on_pause() override { display_.clear(); }
  void on_epoch(const MetricsRow& row) override { display_.epoch_summary(row, task_, bits_label_); }
  void on_end(const RunEnd& end) override {
    if (end.signal != 0) {
      display_.clear();
      std::fprintf(out_, "%s at step %lld: wrote %s; continue with: ember-train --resume %s\n",
                   end.signal == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)",
                   static_cast<long long>(end.step), end.checkpoint.c_str(), dir_.string().c_str());
      std::fflush(out_);
      return;
    }
    std::fprintf(out_, "done: %lld steps%s; checkpoint %s, metrics %s\n", static_cast<long long>(end.step),
                 end.skipped > 0 ? (", " + std::to_string(end.skipped) + " skipped (non-finite loss)").c_str() : "",
                 end.checkpoint.c_str(), (dir_ / "metrics.jsonl").string().c_str());
  }

 private:
  std::FILE* out_;
  ProgressDisplay display_;
  std::string task_, bits_label_;
  fs::path dir_;
};

// steps.jsonl: a row every output.log_every_steps steps.
class StepLog final : public RunLog {
 public:
  StepLog(const fs::path& dir, std::optional<int64_t> resume_step) : writer_(dir, resume_step) {}
  void on_step(const StepEvent& e) override {
    if (e.logged) writer_.append(*e.logged);
  }

 private:
  StepWriter writer_;
};

// metrics.jsonl and metrics.csv: a row per epoch.
class MetricsLog final : public RunLog {
 public:
  MetricsLog(const fs::path& dir, std::optional<int64_t> resume_epochs, const std::string& bits_unit)
      : writer_(dir, resume_epochs, bits_unit) {}
  void on_epoch(const MetricsRow& row) override { writer_.append(row); }

 private:
  MetricsWriter writer_;
};

// TensorBoard (output.tensorboard): the steps.jsonl rows as "train/<name>", the metrics rows as
// "epoch/<name>", and the histograms every output.histograms_every_steps steps.
class TensorBoardLog final : public RunLog {
 public:
  TensorBoardLog(std::unique_ptr<SummaryWriter> tb, const Session& s, std::string bits_unit)
      : tb_(std::move(tb)), model_(*s.model), histograms_every_(s.config.output.histograms_every_steps),
        bits_unit_(std::move(bits_unit)) {}
  void on_step(const StepEvent& e) override {
    if (e.logged) {
      for (const auto& [name, value] : step_scalars(*e.logged)) tb_->add_scalar("train/" + name, value, e.step);
      tb_->flush();
    }
    if (histograms_every_ > 0 && e.step % histograms_every_ == 0) add_histograms(*tb_, model_, e.step, !e.skipped);
  }
  void on_epoch(const MetricsRow& row) override {
    for (const auto& [name, value] : metrics_scalars(row, "test_" + bits_unit_)) tb_->add_scalar("epoch/" + name, value, row.step);
    tb_->flush();
  }

 private:
  std::unique_ptr<SummaryWriter> tb_;
  const nn::Module& model_;
  int64_t histograms_every_;
  std::string bits_unit_;
};

// report.html, at the end of a completed run. It is a view of files already written: failing to write it
// loses nothing of the run.
class ReportLog final : public RunLog {
 public:
  ReportLog(std::FILE* out, fs::path dir) : out_(out), dir_(std::move(dir)) {}
  void on_end(const RunEnd& end) override {
    if (end.signal != 0) return;
    try {
      write_report(dir_);
      std::fprintf(out_, "report %s\n", (dir_ / "report.html").string().c_str());
    } catch (const std::exception& e) {
      logger().warn("could not write the run report (the run itself is complete): {}; retry with: ember-report {}",
                    e.what(), dir_.string());
    }
  }

 private:
  std::FILE* out_;
  fs::path dir_;
};

}  // namespace

std::unique_ptr<RunLog> metrics_log(const fs::path& dir, std::optional<int64_t> resume_epochs, const std::string& bits_unit) {
  return std::make_unique<MetricsLog>(dir, resume_epochs, bits_unit);
}

std::unique_ptr<RunLog> step_log(const fs::path& dir, std::optional<int64_t> resume_step) {
  return std::make_unique<StepLog>(dir, resume_step);
}

std::unique_ptr<RunLog> tensorboard_log(const fs::path& dir, bool resume, int64_t step, const Session& s,
                                        const std::string& bits_unit) {
  return std::make_unique<TensorBoardLog>(open_tensorboard(dir, resume, step, s), s, bits_unit);
}

std::unique_ptr<RunLog> trace_log(const std::string& path, bool resume, int64_t step, const Session& s) {
  std::ofstream file = open_trace(path, resume, step);
  if (!file.is_open()) return nullptr;
  return std::make_unique<TraceLog>(std::move(file), s);
}

std::unique_ptr<RunLog> console_log(std::FILE* out, const TrainOptions& o, int64_t steps_per_epoch,
                                    std::string bits_label, fs::path dir) {
  return std::make_unique<ConsoleLog>(out, o, steps_per_epoch, std::move(bits_label), std::move(dir));
}

std::unique_ptr<RunLog> report_log(std::FILE* out, fs::path dir) { return std::make_unique<ReportLog>(out, std::move(dir)); }

}  // namespace ember::app
