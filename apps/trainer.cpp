#include "apps/trainer.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include <ember/ember.h>

#include "apps/data_parallel.h"
#include "apps/run_dir.h"
#include "apps/run_log.h"
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
// --- the run: its state and its steps ---------------------------------------------------------------------

// One training run of a session, in named steps that run_training calls in order:
//   open()                       resume or start the run directory, open the logs
//   per epoch: start_epoch(), then per batch micro_step() (forward and backward), and end_step() when the
//   micro-batch completes an optimizer step (the update, the logs, checkpoints, signals); end_epoch()
//   (evaluation, the scheduler, the metrics row, the epoch's checkpoint)
//   data_failure()               the data failed: checkpoint what is complete and stop
//   finish()                     the end of a completed run
class Run {
 public:
  Run(const TrainOptions& o, Session& s, DataParallel& dp, std::string hash, std::FILE* out)
      : o_(o), cfg_(o.config), s_(s), dp_(dp), dir_(o.run_dir), hash_(std::move(hash)), out_(out),
        accumulate_(cfg_.optimizer.accumulate_steps), batches_(s.train_loader->num_batches()) {}

  void open() {
    if (dp_.root())
      for (const auto& name : remove_stale_temporaries(dir_))
        logger().info("removed {}, left by a process killed while writing it", (dir_ / name).string());
    if (o_.resume) {
      std::vector<std::string> problems;
      const auto ckpt = newest_valid_checkpoint(dir_, problems);
      for (const auto& problem : problems) logger().warn("resume: skipping {}", problem);
      if (!ckpt) throw ConfigError("--resume " + dir_.string() + ": no usable checkpoint in the run directory");
      p_ = restore(s_, *ckpt, hash_);
      last_checkpoint_ = ckpt->source();
      checkpoint_is_current_ = true;
      logger().info("resumed from {} (epochs done: {}, step {})", ckpt->source(), p_.epoch, p_.step);
    } else {
      if (dp_.root() && !list_checkpoints(dir_).empty())
        throw ConfigError("the run directory " + dir_.string() + " already holds checkpoints: continue it with --resume " +
                          dir_.string() + ", or choose another with --out");
      if (dp_.root()) {
        fs::create_directories(dir_);
        ember::save(*s_.model, (dir_ / "init.safetensors").string());  // the weights before the first step
        if (s_.tokenizer) s_.tokenizer->save((dir_ / "vocab.json").string());
      }
    }
    // The class names (image folders, CIFAR-10): ember-eval names classes by them; a resumed run must see the same.
    if (dp_.root() && !s_.class_names.empty()) {
      const fs::path classes = dir_ / "classes.json";
      if (o_.resume && fs::exists(classes) && read_class_names(classes) != s_.class_names)
        throw ConfigError("--resume " + dir_.string() + ": the dataset's classes are now [" + join(s_.class_names) +
                          "], but the run was started with those in " + classes.string() +
                          "; a class folder was added, removed or renamed");
      write_class_names(classes, s_.class_names);
    }
    if (dp_.root()) write_file_atomic(dir_ / "config.yaml", to_yaml(cfg_));
    open_logs();
    logger().info("training on {}: {} train / {} test examples, {} steps per epoch, {} epochs, run directory {}",
                  o_.device.str(), s_.train_set->size(), s_.test_set->size(), s_.steps_per_epoch, cfg_.epochs,
                  dir_.string());
  }

  bool done() const { return p_.epoch >= cfg_.epochs; }

  void start_epoch() {
    started_ = clock::now();
    seconds_before_ = p_.seconds;
    // Where a resume would continue: the loader's position after the last completed step. A loader whose
    // epoch failed no longer has one (its state() moves on to the next epoch), so it is kept here.
    position_ = s_.train_loader->state();
    // New random windows every epoch, drawn from the loader's epoch so that a resume draws the same ones.
    if (s_.train_windows) s_.train_windows->set_epoch(position_.epoch);
    in_epoch_ = position_.batch / accumulate_;
    micro_ = group_examples_ = 0;
    group_bad_ = false;
    group_loss_ = 0;
    group_indices_.clear();
  }

  // One micro-batch: its forward and backward (the gradients accumulate over the step's micro-batches, each
  // loss weighted by its share of the step's examples). True when it completes an optimizer step.
  bool micro_step(const data::Batch& batch) {
    // tools/startup_time.py times exec → this line (debug level: EMBER_LOG_LEVEL=debug).
    if (first_step_) logger().debug("first training step: its batch is ready"), first_step_ = false;
    const int64_t batch_index = in_epoch_ * accumulate_ + micro_;  // of the epoch
    checkpoint_is_current_ = false;
    if (micro_ == 0) {
      s_.optimizer->zero_grad();
      group_examples_ = step_examples(batch_index, accumulate_, batches_, cfg_.data.batch_size,
                                      s_.train_loader->epoch_size());
      group_bad_ = false;
      group_loss_ = 0;
      group_indices_.clear();
    }
    if (trace_examples_) {
      const std::vector<int64_t> idx = s_.train_loader->batch_indices();
      group_indices_.insert(group_indices_.end(), idx.begin(), idx.end());
    }
    const int64_t n = batch.target.size(0);
    if (!group_bad_) {
      const Tensor input = batch.input.to(o_.device), target = batch.target.to(o_.device);
      const Tensor output = dp_.train_module().forward(input);
      const Tensor loss = task_loss(cfg_, output, target);
      double value = loss.item<double>();
      // With skip_nonfinite every rank must take the same branch (a backward on some ranks only would wait
      // for the others' gradients): a non-finite loss anywhere is non-finite everywhere. Without it, the
      // rank that meets one throws, and the job ends with it.
      if (cfg_.skip_nonfinite && dp_.any(!std::isfinite(value)) && std::isfinite(value))
        value = std::numeric_limits<double>::quiet_NaN();
      if (!std::isfinite(value)) {
        if (!cfg_.skip_nonfinite)
          detail::throw_error("step ", p_.step + 1, " (epoch ", p_.epoch + 1, "): the loss is ", value, ". ",
                              last_checkpoint_.empty() ? std::string("No checkpoint was written yet")
                                                       : "The last good checkpoint is " + last_checkpoint_,
                              ". Try a lower optimizer.lr (now ", format_shortest(current_lr(s_)),
                              "), gradient clipping (optimizer.clip_grad_norm: 1.0), or skip_nonfinite: true to "
                              "skip such steps");
        group_bad_ = true;
        group_loss_ = value;
      } else {
        // Weighted by the micro-batch's share of the step's examples: the accumulated gradient is that of
        // the mean loss over all of them (one batch of accumulate × batch_size).
        // Gradients are averaged across ranks on the step's last micro-batch only.
        const bool last_micro = micro_ + 1 == accumulate_ || batch_index + 1 == batches_;
        const auto local_only = last_micro ? std::nullopt : dp_.no_sync();
        if (accumulate_ == 1) loss.backward();
        else (loss * (static_cast<double>(n) / static_cast<double>(group_examples_))).backward();
        group_loss_ += value * static_cast<double>(n) / static_cast<double>(group_examples_);
        // Summed on the device; read into p_.correct by flush_correct() where p_ is used.
        if (const Tensor correct = correct_count(cfg_, output, target); correct.defined())
          correct_pending_ = correct_pending_.defined() ? correct_pending_ + correct : correct;
        p_.predictions += target.numel();
        p_.loss_sum += value * static_cast<double>(n);
        p_.seen += n;
      }
    }
    ++micro_;
    return micro_ == accumulate_ || batch_index + 1 == batches_;  // else the step needs more micro-batches
  }

  // The optimizer step of the micro-batches so far, then the logs, a checkpoint when one is due, and a
  // signal's stop. Returns the exit code when a signal stops the run (after checkpointing), else 0.
  int end_step() {
    micro_ = 0;
    ++p_.step;
    ++in_epoch_;
    if (group_bad_) {
      ++p_.skipped;
      logger().warn("step {}: the loss is {}; step skipped (skip_nonfinite: true)", p_.step, group_loss_);
      s_.optimizer->zero_grad();
    } else {
      finish_update(s_);
    }
    p_.seconds = seconds_before_ + std::chrono::duration<double>(clock::now() - started_).count();
    StepEvent e{.epoch = p_.epoch + 1, .in_epoch = in_epoch_, .step = p_.step, .loss = group_loss_,
                .lr = current_lr(s_), .seen = p_.seen, .seconds = p_.seconds, .skipped = group_bad_,
                .logged = std::nullopt, .examples = &group_indices_};
    if (dp_.root() && p_.step % cfg_.output.log_every_steps == 0)
      e.logged = StepRow{.step = p_.step, .epoch = p_.epoch + 1, .loss = group_loss_, .lr = e.lr,
                         .samples_per_sec = static_cast<double>(p_.seen) / std::max(p_.seconds, 1e-9),
                         .memory_mib = static_cast<double>(memory_stats(o_.device).allocated) / (1 << 20)};
    for (const auto& log : logs_) log->on_step(e);
    position_ = s_.train_loader->state();
    const bool stop = dp_.any(g_signal.load() != 0);  // a signal to any rank stops all at the same step
    if (stop || (cfg_.output.checkpoint_every_steps > 0 && p_.step % cfg_.output.checkpoint_every_steps == 0)) {
      flush_correct();
      last_checkpoint_ = checkpoint(p_, position_);
      checkpoint_is_current_ = true;
    }
    if (!stop) return 0;
    const int sig = dp_.any(g_signal.load() == SIGINT) ? SIGINT : SIGTERM;
    end(RunEnd{.signal = sig, .step = p_.step, .skipped = p_.skipped, .checkpoint = last_checkpoint_});
    return 128 + sig;
  }

  // The epoch's metrics row (with the evaluation when one is due), the per-epoch scheduler step, and the
  // epoch's checkpoint when one is due.
  void end_epoch() {
    pause();
    flush_correct();
    const Progress all = global_progress(dp_, p_);
    const double seen = static_cast<double>(std::max<int64_t>(all.seen, 1));
    MetricsRow row;
    row.epoch = p_.epoch + 1;
    row.step = p_.step;
    row.lr = current_lr(s_);
    row.train_loss = all.loss_sum / seen;
    row.samples_per_sec = static_cast<double>(all.seen) / std::max(p_.seconds, 1e-9);
    row.seconds = p_.seconds;
    if (cfg_.task != "regression")
      row.train_accuracy = static_cast<double>(all.correct) / static_cast<double>(std::max<int64_t>(all.predictions, 1));
    const bool last = p_.epoch + 1 == cfg_.epochs;
    if (cfg_.eval_every_epochs > 0 && ((p_.epoch + 1) % cfg_.eval_every_epochs == 0 || last)) {
      const EvalResult r = evaluate(*s_.model, *s_.test_loader, o_.device, cfg_);
      if (last && dp_.root() && !r.confusion.empty()) write_confusion(dir_, r);
      row.test_loss = r.loss;
      row.test_accuracy = r.accuracy;
      if (cfg_.task == "language_model") {
        row.test_bits = bits_per_unit(s_, r.loss);
        row.test_perplexity = std::exp(r.loss);
      }
    }
    end_epoch_schedule(s_, dp_.from_root(row.test_loss.value_or(row.train_loss)));  // the same LR on every rank
    for (const auto& log : logs_) log->on_epoch(row);
    p_ = Progress{.epoch = p_.epoch + 1, .step = p_.step, .skipped = p_.skipped};
    const int64_t every = cfg_.output.checkpoint_every_epochs;
    checkpoint_is_current_ = last || (every > 0 && p_.epoch % every == 0);
    if (checkpoint_is_current_) last_checkpoint_ = checkpoint(p_, s_.train_loader->state());
  }

  // A dataset read or a loader worker failed (training batches or the evaluation). The loader stopped and
  // joined its workers before the error got here; p_ and position_ are the last completed step.
  [[noreturn]] void data_failure(const DataError& e) {
    pause();
    flush_correct();
    // Several processes: this rank's data failed while the others go on; the job ends (ember-train aborts
    // it) and resumes from the last checkpoint — no collective checkpoint is possible from here.
    if (dp_.world() > 1)
      throw Error("rank " + std::to_string(dp_.rank()) + ": " + e.what() + "; the job stops: once the data reads " +
                  "again, continue with: ember-train --resume " + dir_.string() +
                  (last_checkpoint_.empty() ? std::string(" (no checkpoint was written yet: start over)") : ""));
    throw Error(stop_on_data_failure(s_, p_, position_, hash_, dir_, last_checkpoint_, checkpoint_is_current_, e));
  }

  int finish() {
    end(RunEnd{.signal = 0, .step = p_.step, .skipped = p_.skipped, .checkpoint = last_checkpoint_});
    return 0;
  }

 private:
  using clock = std::chrono::steady_clock;

  // The logs, in the order they are called: the trace, steps.jsonl, the metrics files, TensorBoard, the
  // console, the report. Files are rank 0's, the console every rank's (the others' goes to /dev/null). Opening a resumed run's metrics writers drops their rows past the checkpoint, which
  // TensorBoard's writer then reads back: they open in that order.
  void open_logs() {
    const std::string bits_unit = app::bits_unit(s_);
    const std::string bits_label = bits_unit == "bits_per_char"   ? "bits/char"
                                   : bits_unit == "bits_per_byte" ? "bits/byte"
                                                                  : "bits/token";
    std::unique_ptr<RunLog> metrics, steps, tb, trace;
    if (dp_.root()) {
      metrics = metrics_log(dir_, o_.resume ? std::optional<int64_t>(p_.epoch) : std::nullopt, bits_unit);
      steps = step_log(dir_, o_.resume ? std::optional<int64_t>(p_.step) : std::nullopt);
      if (cfg_.output.tensorboard) tb = tensorboard_log(dir_, o_.resume, p_.step, s_, bits_unit);
      trace = trace_log(o_.trace_batches, o_.resume, p_.step, s_);
      trace_examples_ = trace != nullptr;
    }
    for (auto* log : {&trace, &steps, &metrics, &tb})
      if (*log) logs_.push_back(std::move(*log));
    // The console after the files: an epoch's line is printed once its row is written.
    logs_.push_back(console_log(out_, o_, s_.steps_per_epoch, bits_label, dir_));
    if (dp_.root()) logs_.push_back(report_log(out_, dir_));
  }

  void pause() {
    for (const auto& log : logs_) log->on_pause();
  }
  void end(const RunEnd& end) {
    for (const auto& log : logs_) log->on_end(end);
  }

  // Checkpoints hold every rank's running sums (collective: called at the same step on every rank).
  std::string checkpoint(const Progress& at, const data::LoaderState& position) {
    const Progress all = global_progress(dp_, at);
    return dp_.root() ? save_checkpoint(s_, all, position, hash_, dir_) : std::string("(rank 0's)");
  }

  // The correct predictions of the steps not yet added to p_.correct (a 0-d i64 on the device), read in.
  void flush_correct() {
    if (correct_pending_.defined()) p_.correct += correct_pending_.item<int64_t>();
    correct_pending_ = Tensor();
  }

  const TrainOptions& o_;
  const TrainConfig& cfg_;
  Session& s_;
  DataParallel& dp_;
  const fs::path dir_;
  const std::string hash_;
  std::FILE* const out_;
  const int64_t accumulate_, batches_;
  std::vector<std::unique_ptr<RunLog>> logs_;
  bool trace_examples_ = false;  // collect each step's dataset indices (--trace-batches)

  Progress p_;
  std::string last_checkpoint_;        // the newest good one, for the NaN message
  bool checkpoint_is_current_ = false;  // last_checkpoint_ holds the state as it is now (no step since)
  bool first_step_ = true;
  Tensor correct_pending_;
  // The epoch in progress: its start, its seconds before (a resumed epoch's), the loader position of its
  // last completed step, and its optimizer steps done.
  clock::time_point started_;
  double seconds_before_ = 0;
  data::LoaderState position_;
  int64_t in_epoch_ = 0;
  // The optimizer step being accumulated: its micro-batches so far, its examples (the weights'
  // denominator), whether one was non-finite, its loss and its examples' dataset indices (for the trace).
  int64_t micro_ = 0, group_examples_ = 0;
  bool group_bad_ = false;
  double group_loss_ = 0;
  std::vector<int64_t> group_indices_;
};

}  // namespace

int run_training(const TrainOptions& o) {
  const TrainConfig& cfg = o.config;
  const fs::path dir = o.run_dir;
  if (!o.dry_run) ensure_writable_dir(dir);  // before loading anything: an unwritable --out fails at once
  const bool text = cfg.data.dataset == "text";
  // A resumed text run reads its vocabulary back; a fresh one fits it (and writes vocab.json).
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

  Run run(o, s, dp, hash, out);
  run.open();
  SignalScope signals;
  while (!run.done()) {
    run.start_epoch();
    try {
      for (auto it = first_batch(*s.train_loader, "training"); it != s.train_loader->end(); next_batch(it, "training"))
        if (run.micro_step(*it))
          if (const int code = run.end_step(); code != 0) return code;
      run.end_epoch();
    } catch (const DataError& e) {
      run.data_failure(e);
    }
  }
  return run.finish();
}

}  // namespace ember::app
