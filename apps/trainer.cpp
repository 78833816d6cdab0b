#include "apps/trainer.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include <ember/ember.h>

#include "apps/data_parallel.h"
#include "apps/progress.h"
#include "apps/report.h"
#include "apps/run_dir.h"
#include "base/log.h"
#include "apps/session.h"
#include "base/format.h"
#include "core/atomic_file.h"

namespace ember::app {
namespace fs = std::filesystem;
namespace {

std::atomic<int> g_signal{0};
// The first signal asks the loop to checkpoint and stop; a second one (an impatient Ctrl-C) kills at once.
extern "C" void on_signal(int sig) {
  if (g_signal.exchange(sig) != 0) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

// Installs the SIGINT/SIGTERM handlers for the lifetime of a run and restores the previous ones.
class SignalScope {
 public:
  SignalScope() {
    g_signal.store(0);
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~SignalScope() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

// Where the run stands; the part of it that is not in the model/optimizer/loader goes into the checkpoint
// metadata (doubles in exact text, so a resumed epoch sums to the same bits).
struct Progress {
  int64_t epoch = 0;  // epochs completed
  int64_t step = 0;   // optimizer steps (and skipped non-finite steps) so far
  double loss_sum = 0, seconds = 0;  // of the epoch in progress (loss_sum: per example, weighted by examples)
  int64_t correct = 0, seen = 0, skipped = 0;
  int64_t predictions = 0;  // accuracy's denominator: examples, or tokens for language_model
};

double current_lr(const Session& s) { return s.optimizer->param_groups()[0].hyper.lr; }

// The examples of one optimizer step, for --trace-batches: window starts (text) or dataset indices.
void trace_step(std::ofstream& out, const Session& s, int64_t step, const std::vector<int64_t>& indices) {
  if (!out.is_open()) return;
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

// `loader`: the train loader's position to resume from — its state() after the step `p` ends with.
std::string save_checkpoint(Session& s, const Progress& p, const data::LoaderState& loader, const std::string& hash,
                            const fs::path& dir) {
  Checkpoint c;
  c.put("model.", s.model->state_dict());
  c.put("optimizer.", s.optimizer->state_dict());
  if (s.scheduler) c.put("", s.scheduler->state_dict());  // its keys carry the "scheduler." prefix already
  c.put_generator("global", default_generator());
  c.put_generator("model", s.model_gen);
  c.set("loader", loader.str());
  c.set("epoch", std::to_string(p.epoch));
  c.set("step", std::to_string(p.step));
  c.set("epoch_loss_sum", format_shortest(p.loss_sum));
  c.set("epoch_seconds", format_shortest(p.seconds));
  c.set("epoch_correct", std::to_string(p.correct));
  c.set("epoch_seen", std::to_string(p.seen));
  c.set("epoch_predictions", std::to_string(p.predictions));
  c.set("skipped", std::to_string(p.skipped));
  c.set("config_hash", hash);
  c.set("world_size", std::to_string(distributed::world_size()));
  if (!s.corpus_fingerprint.empty()) c.set("corpus", s.corpus_fingerprint);
  const fs::path path = dir / checkpoint_name(p.step);
  try {
    c.save(path.string());  // atomic: a failed write leaves the previous checkpoint as it was
  } catch (const Error& e) {
    const auto previous = list_checkpoints(dir);
    throw Error("could not write the checkpoint of step " + std::to_string(p.step) + " (" + e.what() + "); " +
                (previous.empty() ? std::string("no earlier checkpoint exists")
                                  : "the previous checkpoint " + previous.back().second.string() + " is intact") +
                ". Free space in " + dir.string() + " and continue with: ember-train --resume " + dir.string());
  }
  prune_checkpoints(dir, s.config.output.keep_last);
  return path.string();
}

Progress restore(Session& s, const Checkpoint& c, const std::string& hash) {
  if (c.get("config_hash") != hash)
    throw ConfigError(c.source() + " was written by a run with another config (hash " + c.get("config_hash") +
                      ", this config " + hash + "): resume with the run's own config.yaml (drop --config and any "
                      "--set that changes data, model, loss, optimizer, scheduler, seed or epochs)");
  check_corpus(s, c);
  s.model->load_state_dict(c.take("model."));
  s.optimizer->load_state_dict(c.take("optimizer."));
  if (s.scheduler) {
    optim::NamedTensors sched;
    for (auto& [name, t] : c.take("scheduler.")) sched.emplace_back("scheduler." + name, t);
    s.scheduler->load_state_dict(sched);
  }
  c.restore_generator("global", default_generator());
  c.restore_generator("model", s.model_gen);
  const data::LoaderState position = data::LoaderState::parse(c.get("loader"));
  const int64_t saved_world = c.has("world_size") ? std::stoll(c.get("world_size")) : 1;
  // Mid-epoch, a loader position counts batches of this world size's shards: another one reads other examples.
  if (saved_world != distributed::world_size() && position.batch != 0)
    throw ConfigError(c.source() + " was written by " + std::to_string(saved_world) + " process(es) in the middle of "
                      "an epoch (" + position.str() + "); resume it with " + std::to_string(saved_world) +
                      " process(es), or resume from a checkpoint written at the end of an epoch "
                      "(output.checkpoint_every_epochs), where any number of processes can take over");
  s.train_loader->load_state(position);
  Progress p;
  p.epoch = std::stoll(c.get("epoch"));
  p.step = std::stoll(c.get("step"));
  p.loss_sum = std::stod(c.get("epoch_loss_sum"));
  p.seconds = std::stod(c.get("epoch_seconds"));
  p.correct = std::stoll(c.get("epoch_correct"));
  p.seen = std::stoll(c.get("epoch_seen"));
  p.predictions = c.has("epoch_predictions") ? std::stoll(c.get("epoch_predictions")) : p.seen;
  p.skipped = std::stoll(c.get("skipped"));
  if (distributed::rank() != 0) {  // the checkpoint holds every rank's sums together: rank 0 carries them on
    p.loss_sum = 0;
    p.correct = p.seen = p.predictions = 0;
  }
  return p;
}

// The data failed (a dataset read, a loader worker): checkpoints the last completed step — `p` with the
// train loader at `position` — unless the newest checkpoint already holds exactly that, and returns the
// message ember-train stops with (exit 1).
std::string stop_on_data_failure(Session& s, const Progress& p, const data::LoaderState& position,
                                 const std::string& hash, const fs::path& dir, const std::string& last_checkpoint,
                                 bool checkpoint_is_current, const DataError& failure) {
  std::string where = "step " + std::to_string(p.step + 1) + " (epoch " + std::to_string(p.epoch + 1) + ")";
  if (position.batch == s.train_loader->num_batches()) where = "the evaluation after epoch " + std::to_string(p.epoch + 1);
  std::string msg = where + " could not get its data: " + failure.what() + ". ";
  const std::string resume = "continue with: ember-train --resume " + dir.string();
  if (checkpoint_is_current)
    return msg + "The checkpoint of the last completed step (" + std::to_string(p.step) + ") is " + last_checkpoint +
           "; once the data reads again, " + resume;
  try {
    const std::string written = save_checkpoint(s, p, position, hash, dir);
    logger().info("data failure: wrote {} (step {}, loader at {})", written, p.step, position.str());
    return msg + "Wrote " + written + " (the last completed step, " + std::to_string(p.step) +
           "); once the data reads again, " + resume;
  } catch (const Error& e) {
    return msg + "The checkpoint of the last completed step (" + std::to_string(p.step) +
           ") could not be written either: " + e.what();
  }
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

// classification: the final evaluation's confusion matrix, for the run report (apps/report.h).
void write_confusion(const fs::path& dir, const EvalResult& r) {
  nlohmann::ordered_json j = {{"rows", "true class"}, {"columns", "predicted class"}, {"matrix", r.confusion}};
  write_file_atomic(dir / "confusion.json", j.dump() + "\n");
}

}  // namespace

// The examples of the micro-batches [first, first + accumulate) of an epoch of `batches` batches of
// `batch_size` over `size` examples (the last batch may be smaller): what a step's losses are weighted by.
int64_t step_examples(int64_t first, int64_t accumulate, int64_t batches, int64_t batch_size, int64_t size) {
  const int64_t last = std::min(first + accumulate, batches);  // exclusive
  return std::min(last * batch_size, size) - first * batch_size;
}

namespace {
// The running sums of every rank together (the same on all), for metrics and checkpoints.
Progress global_progress(const DataParallel& dp, const Progress& p) {
  if (dp.world() == 1) return p;
  const std::vector<double> sums = dp.sum({p.loss_sum, static_cast<double>(p.correct), static_cast<double>(p.seen),
                                           static_cast<double>(p.predictions)});
  Progress g = p;
  g.loss_sum = sums[0];
  g.correct = static_cast<int64_t>(sums[1]);
  g.seen = static_cast<int64_t>(sums[2]);
  g.predictions = static_cast<int64_t>(sums[3]);
  return g;
}
}  // namespace

int run_training(const TrainOptions& o) {
  const TrainConfig& cfg = o.config;
  const fs::path dir = o.run_dir;
  if (!o.dry_run) ensure_writable_dir(dir);  // before loading anything: an unwritable --out fails at once
  const bool text = cfg.data.dataset == "text";
  // A resumed text run reads its vocabulary back; a fresh one fits it (and writes vocab.json below).
  auto session = make_session(cfg, o.device, true, o.resume && text ? (dir / "vocab.json").string() : "");
  Session& s = *session;
  if (o.dry_run) {
    std::fprintf(o.out, "%s", dry_run_report(s).c_str());
    return 0;
  }
  const std::string hash = config_hash(cfg);
  DataParallel dp(s);  // one of several processes under a launcher (apps/data_parallel.h); else a no-op
  dp.check_same_config(hash);
  if (!dp.root()) logger().set_level(spdlog::level::warn);  // rank 0 logs for the job
  // Files are rank 0's; the others print nothing but warnings and errors.
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> null_out(dp.root() ? nullptr : std::fopen("/dev/null", "w"), &std::fclose);
  std::FILE* const out = dp.root() ? o.out : null_out.get();
  if (dp.world() > 1) logger().info("data parallel: {}", dp.describe(cfg.data.batch_size));
  Progress p;
  std::string last_checkpoint;  // the newest good one, for the NaN message
  bool checkpoint_is_current = false;  // last_checkpoint holds the state as it is now (no step since)
  if (dp.root())
    for (const auto& name : remove_stale_temporaries(dir))
      logger().info("removed {}, left by a process killed while writing it", (dir / name).string());
  if (o.resume) {
    std::vector<std::string> problems;
    const auto ckpt = newest_valid_checkpoint(dir, problems);
    for (const auto& problem : problems) logger().warn("resume: skipping {}", problem);
    if (!ckpt) throw ConfigError("--resume " + dir.string() + ": no usable checkpoint in the run directory");
    p = restore(s, *ckpt, hash);
    last_checkpoint = ckpt->source();
    checkpoint_is_current = true;
    logger().info("resumed from {} (epochs done: {}, step {})", ckpt->source(), p.epoch, p.step);
  } else {
    if (dp.root() && !list_checkpoints(dir).empty())
      throw ConfigError("the run directory " + dir.string() + " already holds checkpoints: continue it with --resume " +
                        dir.string() + ", or choose another with --out");
    if (dp.root()) {
      fs::create_directories(dir);
      ember::save(*s.model, (dir / "init.safetensors").string());  // the weights before the first step
      if (s.tokenizer) s.tokenizer->save((dir / "vocab.json").string());
    }
  }
  // The class names (image folders, CIFAR-10): ember-eval names classes by them; a resumed run must see the same.
  if (dp.root() && !s.class_names.empty()) {
    const fs::path classes = dir / "classes.json";
    if (o.resume && fs::exists(classes) && read_class_names(classes) != s.class_names)
      throw ConfigError("--resume " + dir.string() + ": the dataset's classes are now [" + join(s.class_names) +
                        "], but the run was started with those in " + classes.string() +
                        "; a class folder was added, removed or renamed");
    write_class_names(classes, s.class_names);
  }
  if (dp.root()) write_file_atomic(dir / "config.yaml", to_yaml(cfg));
  const std::string bits_unit = !s.tokenizer ? "bits_per_token"
                                : s.tokenizer->type() == data::Tokenizer::Type::Char ? "bits_per_char"
                                                                                      : "bits_per_byte";
  std::optional<MetricsWriter> metrics;
  if (dp.root()) metrics.emplace(dir, o.resume ? std::optional<int64_t>(p.epoch) : std::nullopt, bits_unit);
  std::optional<StepWriter> step_log;
  if (dp.root()) step_log.emplace(dir, o.resume ? std::optional<int64_t>(p.step) : std::nullopt);
  std::unique_ptr<SummaryWriter> tb;
  if (dp.root() && cfg.output.tensorboard) tb = open_tensorboard(dir, o.resume, p.step, s);
  std::ofstream trace = open_trace(dp.root() ? o.trace_batches : "", o.resume, p.step);
  // Checkpoints hold every rank's running sums (collective: called at the same step on every rank).
  const auto checkpoint = [&](const Progress& at, const data::LoaderState& position) {
    const Progress all = global_progress(dp, at);
    return dp.root() ? save_checkpoint(s, all, position, hash, dir) : std::string("(rank 0's)");
  };
  logger().info("training on {}: {} train / {} test examples, {} steps per epoch, {} epochs, run directory {}",
             o.device.str(), s.train_set->size(), s.test_set->size(), s.steps_per_epoch, cfg.epochs, dir.string());

  SignalScope signals;
  ProgressDisplay display(out, o.progress_bar, cfg.output.log_every_steps, s.steps_per_epoch, cfg.epochs, o.device);
  const int64_t accumulate = cfg.optimizer.accumulate_steps;
  const int64_t batches = s.train_loader->num_batches();
  using clock = std::chrono::steady_clock;
  bool first_step = true;
  Tensor correct_pending;  // correct predictions of the steps not yet added to p.correct (0-d i64, on the device)
  const auto flush_correct = [&] {
    if (correct_pending.defined()) p.correct += correct_pending.item<int64_t>();
    correct_pending = Tensor();
  };
  while (p.epoch < cfg.epochs) {
    auto started = clock::now();
    const double seconds_before = p.seconds;
    // Where a resume would continue: the loader's position after the last completed step. A loader whose
    // epoch failed no longer has one (its state() moves on to the next epoch), so it is kept here.
    data::LoaderState position = s.train_loader->state();
    // New random windows every epoch, drawn from the loader's epoch so that a resume draws the same ones.
    if (s.train_windows) s.train_windows->set_epoch(position.epoch);
    int64_t in_epoch = position.batch / accumulate;  // optimizer steps of this epoch done
    // The optimizer step being accumulated: its micro-batches so far, whether one was non-finite, its
    // examples (the weights' denominator) and the examples' dataset indices (for the trace).
    int64_t micro = 0, group_examples = 0;
    bool group_bad = false;
    double group_loss = 0;
    std::vector<int64_t> group_indices;
    try {
      for (auto it = first_batch(*s.train_loader, "training"); it != s.train_loader->end();
           next_batch(it, "training")) {
        const data::Batch& batch = *it;
        // tools/startup_time.py times exec → this line (debug level: EMBER_LOG_LEVEL=debug).
        if (first_step) logger().debug("first training step: its batch is ready"), first_step = false;
        const int64_t batch_index = in_epoch * accumulate + micro;  // of the epoch
        checkpoint_is_current = false;
        if (micro == 0) {
          s.optimizer->zero_grad();
          group_examples = step_examples(batch_index, accumulate, batches, cfg.data.batch_size,
                                         s.train_loader->epoch_size());
          group_bad = false;
          group_loss = 0;
          group_indices.clear();
        }
        if (trace.is_open()) {
          const std::vector<int64_t> idx = s.train_loader->batch_indices();
          group_indices.insert(group_indices.end(), idx.begin(), idx.end());
        }
        const int64_t n = batch.target.size(0);
        if (!group_bad) {
          const Tensor input = batch.input.to(o.device), target = batch.target.to(o.device);
          const Tensor output = dp.train_module().forward(input);
          const Tensor loss = task_loss(cfg, output, target);
          double value = loss.item<double>();
          // With skip_nonfinite every rank must take the same branch (a backward on some ranks only would wait
          // for the others' gradients): a non-finite loss anywhere is non-finite everywhere. Without it, the
          // rank that meets one throws, and the job ends with it.
          if (cfg.skip_nonfinite && dp.any(!std::isfinite(value)) && std::isfinite(value))
            value = std::numeric_limits<double>::quiet_NaN();
          if (!std::isfinite(value)) {
            if (!cfg.skip_nonfinite)
              detail::throw_error("step ", p.step + 1, " (epoch ", p.epoch + 1, "): the loss is ", value, ". ",
                                  last_checkpoint.empty() ? std::string("No checkpoint was written yet")
                                                          : "The last good checkpoint is " + last_checkpoint,
                                  ". Try a lower optimizer.lr (now ", format_shortest(current_lr(s)),
                                  "), gradient clipping (optimizer.clip_grad_norm: 1.0), or skip_nonfinite: true to "
                                  "skip such steps");
            group_bad = true;
            group_loss = value;
          } else {
            // Weighted by the micro-batch's share of the step's examples: the accumulated gradient is that of
            // the mean loss over all of them (one batch of accumulate × batch_size).
            // Gradients are averaged across ranks on the step's last micro-batch only.
            const bool last_micro = micro + 1 == accumulate || batch_index + 1 == batches;
            const auto local_only = last_micro ? std::nullopt : dp.no_sync();
            if (accumulate == 1) loss.backward();
            else (loss * (static_cast<double>(n) / static_cast<double>(group_examples))).backward();
            group_loss += value * static_cast<double>(n) / static_cast<double>(group_examples);
            // Summed on the device; read into p.correct by flush_correct() where p is used.
            if (const Tensor correct = correct_count(cfg, output, target); correct.defined())
              correct_pending = correct_pending.defined() ? correct_pending + correct : correct;
            p.predictions += target.numel();
            p.loss_sum += value * static_cast<double>(n);
            p.seen += n;
          }
        }
        ++micro;
        if (micro < accumulate && batch_index + 1 < batches) continue;  // the step needs more micro-batches
        micro = 0;
        ++p.step;
        ++in_epoch;
        if (group_bad) {
          ++p.skipped;
          logger().warn("step {}: the loss is {}; step skipped (skip_nonfinite: true)", p.step, group_loss);
          s.optimizer->zero_grad();
        } else {
          finish_update(s);
        }
        trace_step(trace, s, p.step, group_indices);
        p.seconds = seconds_before + std::chrono::duration<double>(clock::now() - started).count();
        display.step(p.epoch + 1, in_epoch, p.step, group_loss, current_lr(s), p.seen, p.seconds);
        if (step_log && p.step % cfg.output.log_every_steps == 0) {
          const StepRow row{.step = p.step, .epoch = p.epoch + 1, .loss = group_loss, .lr = current_lr(s),
                            .samples_per_sec = static_cast<double>(p.seen) / std::max(p.seconds, 1e-9),
                            .memory_mib = static_cast<double>(memory_stats(o.device).allocated) / (1 << 20)};
          step_log->append(row);
          if (tb) {
            for (const auto& [name, value] : step_scalars(row)) tb->add_scalar("train/" + name, value, p.step);
            tb->flush();
          }
        }
        if (tb && cfg.output.histograms_every_steps > 0 && p.step % cfg.output.histograms_every_steps == 0)
          add_histograms(*tb, *s.model, p.step, !group_bad);
        position = s.train_loader->state();
        const bool stop = dp.any(g_signal.load() != 0);  // a signal to any rank stops all at the same step
        if (stop || (cfg.output.checkpoint_every_steps > 0 && p.step % cfg.output.checkpoint_every_steps == 0)) {
          flush_correct();
          last_checkpoint = checkpoint(p, position);
          checkpoint_is_current = true;
        }
        if (stop) {
          display.clear();
          const int sig = dp.any(g_signal.load() == SIGINT) ? SIGINT : SIGTERM;
          std::fprintf(out, "%s at step %lld: wrote %s; continue with: ember-train --resume %s\n",
                       sig == SIGINT ? "interrupted (SIGINT)" : "terminated (SIGTERM)",
                       static_cast<long long>(p.step), last_checkpoint.c_str(), dir.string().c_str());
          std::fflush(out);
          return 128 + sig;
        }
      }
      display.clear();
      flush_correct();
      const Progress all = global_progress(dp, p);
      const double seen = static_cast<double>(std::max<int64_t>(all.seen, 1));
      MetricsRow row;
      row.epoch = p.epoch + 1;
      row.step = p.step;
      row.lr = current_lr(s);
      row.train_loss = all.loss_sum / seen;
      row.samples_per_sec = static_cast<double>(all.seen) / std::max(p.seconds, 1e-9);
      row.seconds = p.seconds;
      if (cfg.task != "regression")
        row.train_accuracy = static_cast<double>(all.correct) / static_cast<double>(std::max<int64_t>(all.predictions, 1));
      const bool last = p.epoch + 1 == cfg.epochs;
      if (cfg.eval_every_epochs > 0 && ((p.epoch + 1) % cfg.eval_every_epochs == 0 || last)) {
        const EvalResult r = evaluate(*s.model, *s.test_loader, o.device, cfg);
        if (last && dp.root() && !r.confusion.empty()) write_confusion(dir, r);
        row.test_loss = r.loss;
        row.test_accuracy = r.accuracy;
        if (cfg.task == "language_model") {
          row.test_bits = r.loss / std::log(2.0);
          row.test_perplexity = std::exp(r.loss);
        }
      }
      end_epoch_schedule(s, dp.from_root(row.test_loss.value_or(row.train_loss)));  // the same LR on every rank
      if (metrics) metrics->append(row);
      if (tb) {
        for (const auto& [name, value] : metrics_scalars(row, "test_" + bits_unit)) tb->add_scalar("epoch/" + name, value, row.step);
        tb->flush();
      }
      display.epoch_summary(row, cfg.task, bits_unit == "bits_per_char" ? "bits/char" : bits_unit == "bits_per_byte" ? "bits/byte" : "bits/token");
      p = Progress{.epoch = p.epoch + 1, .step = p.step, .skipped = p.skipped};
      const int64_t every = cfg.output.checkpoint_every_epochs;
      checkpoint_is_current = last || (every > 0 && p.epoch % every == 0);
      if (checkpoint_is_current) last_checkpoint = checkpoint(p, s.train_loader->state());
    } catch (const DataError& e) {
      // A dataset read or a loader worker failed (training batches or the evaluation). The loader stopped
      // and joined its workers before the error got here; p and `position` are the last completed step.
      display.clear();
      flush_correct();
      // Several processes: this rank's data failed while the others go on; the job ends (ember-train aborts
      // it) and resumes from the last checkpoint — no collective checkpoint is possible from here.
      if (dp.world() > 1)
        throw Error("rank " + std::to_string(dp.rank()) + ": " + e.what() + "; the job stops: once the data reads " +
                    "again, continue with: ember-train --resume " + dir.string() +
                    (last_checkpoint.empty() ? std::string(" (no checkpoint was written yet: start over)") : ""));
      throw Error(stop_on_data_failure(s, p, position, hash, dir, last_checkpoint, checkpoint_is_current, e));
    }
  }
  std::fprintf(out, "done: %lld steps%s; checkpoint %s, metrics %s\n", static_cast<long long>(p.step),
               p.skipped > 0 ? (", " + std::to_string(p.skipped) + " skipped (non-finite loss)").c_str() : "",
               last_checkpoint.c_str(), (dir / "metrics.jsonl").string().c_str());
  if (dp.root()) {
    // The report is a view of files already written: failing to write it loses nothing of the run.
    try {
      write_report(dir);
      std::fprintf(out, "report %s\n", (dir / "report.html").string().c_str());
    } catch (const std::exception& e) {
      logger().warn("could not write the run report (the run itself is complete): {}; retry with: ember-report {}",
                    e.what(), dir.string());
    }
  }
  return 0;
}

}  // namespace ember::app
