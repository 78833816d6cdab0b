// ember-train end to end, as a subprocess on a subset of Fashion-MNIST: the loss falls; a resumed run
// (from a mid-epoch checkpoint, with the newest checkpoint corrupt) equals an uninterrupted one in metrics
// and weights; SIGINT/SIGTERM write a checkpoint that resumes; a NaN loss stops with advice (or is
// skipped); metrics.jsonl stays JSON with NaN and Infinity values; every optimizer and scheduler trains;
// ember-eval and ember-devices report.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <thread>

#include <ember/ember.h>

#include "apps/run_dir.h"
#include "test_train_util.h"

using namespace ember;
using test::Result;
namespace fs = std::filesystem;

namespace {

// 1000 training examples in batches of 50 (two workers): 20 steps per epoch, with dropout and a per-step
// cosine schedule.
const std::string kConfig =
    test::yaml({.epochs = 3, .seed = 7, .batch_size = 50, .limit = 1000, .test_limit = 500, .hidden = 64,
                .output = "{checkpoint_every_steps: 7, keep_last: 100, log_every_steps: 5}"});

using test::metrics_rows;
using test::metrics_rows_without_timing;
using test::train;

}  // namespace

TEST(Train, ShortRunLossFallsAndWritesItsFiles) {
  test::Scratch s;
  const std::string cfg = s.write("cfg.yaml", kConfig);
  const fs::path run = s.dir() / "run";
  const Result r = train("--config " + cfg + " --out " + run.string() + " --set epochs=12 output.checkpoint_every_steps=0 output.keep_last=3");
  ASSERT_EQ(r.rc, 0) << r.output;
  EXPECT_NE(r.output.find("epoch 12/12: train loss"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("epoch 1/12 step 5/20 (total 5): loss"), std::string::npos) << r.output;  // plain lines
  const auto rows = metrics_rows(run);
  ASSERT_EQ(rows.size(), 12u);  // 240 steps
  const double first = test::metric(rows.front(), "train_loss"), last = test::metric(rows.back(), "train_loss");
  EXPECT_LT(last, 0.6 * first) << "the loss did not fall: " << first << " -> " << last;
  EXPECT_GT(test::metric(rows.back(), "test_accuracy"), 0.7);
  EXPECT_EQ(rows.back().at("step").get<int64_t>(), 240);
  const auto csv = test::lines(test::read_text(run / "metrics.csv"));
  ASSERT_EQ(csv.size(), 13u);
  EXPECT_EQ(csv[0], "epoch,step,lr,train_loss,train_accuracy,test_loss,test_accuracy,test_bits_per_token,"
                    "test_perplexity,samples_per_sec,seconds");
  EXPECT_TRUE(rows.back().at("test_perplexity").is_null());  // language-model columns: empty for classification
  EXPECT_TRUE(fs::exists(run / "init.safetensors"));
  EXPECT_TRUE(fs::exists(run / "checkpoint-00000240.safetensors"));
  size_t checkpoints = 0;  // keep_last: 3
  for (const auto& e : fs::directory_iterator(run))
    checkpoints += e.path().filename().string().rfind("checkpoint-", 0) == 0;
  EXPECT_EQ(checkpoints, 3u);
  // The resolved config is complete and loads back.
  EXPECT_NE(test::read_text(run / "config.yaml").find("keep_last: 3"), std::string::npos);
  // A second run into the same directory is refused.
  const Result again = train("--config " + cfg + " --out " + run.string());
  EXPECT_EQ(again.rc, 2);
  EXPECT_NE(again.output.find("already holds checkpoints"), std::string::npos) << again.output;
}

// Copies the run `from` to `to` as it would be if the process had died after step `step`: the
// checkpoints after it are gone (metrics.* still hold later rows: the resume must drop them).
static void cut_after(const fs::path& from, const fs::path& to, int64_t step) {
  fs::copy(from, to);
  for (const auto& e : fs::directory_iterator(to)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("checkpoint-", 0) == 0 && name > app::checkpoint_name(step)) fs::remove(e.path());
  }
}

TEST(Train, ResumeEqualsAnUninterruptedRun) {
  test::Scratch s;
  const std::string cfg = s.write("cfg.yaml", kConfig);
  const fs::path straight = s.dir() / "straight";
  const Result r = train("--config " + cfg + " --out " + straight.string());
  ASSERT_EQ(r.rc, 0) << r.output;
  ASSERT_EQ(metrics_rows(straight).size(), 3u);

  // Died after step 28 (mid epoch 2), with the newest checkpoint (28) corrupt: the resume must report it
  // and start from step 21.
  const fs::path resumed = s.dir() / "resumed";
  cut_after(straight, resumed, 28);
  std::ofstream(resumed / "checkpoint-00000028.safetensors", std::ios::binary | std::ios::trunc) << "not a checkpoint";
  const Result again = train("--resume " + resumed.string());
  ASSERT_EQ(again.rc, 0) << again.output;
  EXPECT_NE(again.output.find("checkpoint-00000028.safetensors is unusable"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("checkpoint-00000021.safetensors (epochs done: 1, step 21)"), std::string::npos) << again.output;
  EXPECT_EQ(metrics_rows_without_timing(resumed), metrics_rows_without_timing(straight));
  test::expect_same_tensors(resumed / app::checkpoint_name(60), straight / app::checkpoint_name(60), "model.");

  // A config that changes the trajectory is refused.
  fs::remove(resumed / "checkpoint-00000060.safetensors");
  const Result other = train("--resume " + resumed.string() + " --set optimizer.lr=0.1");
  EXPECT_EQ(other.rc, 2);
  EXPECT_NE(other.output.find("another config"), std::string::npos) << other.output;
}

// A step checkpoint on an epoch's last batch is taken before that epoch's evaluation and metrics row:
// the resume must finish the epoch (and not repeat its row).
TEST(Train, ResumeFromTheLastStepOfAnEpoch) {
  test::Scratch s;
  const std::string cfg = s.write("cfg.yaml", kConfig);
  const fs::path straight = s.dir() / "straight", resumed = s.dir() / "resumed";
  const std::string cadence = " --set output.checkpoint_every_steps=10 output.checkpoint_every_epochs=0";
  ASSERT_EQ(train("--config " + cfg + " --out " + straight.string() + cadence).rc, 0);
  cut_after(straight, resumed, 40);
  const Result again = train("--resume " + resumed.string());
  ASSERT_EQ(again.rc, 0) << again.output;
  EXPECT_NE(again.output.find("checkpoint-00000040.safetensors (epochs done: 1, step 40)"), std::string::npos) << again.output;
  EXPECT_EQ(metrics_rows_without_timing(resumed), metrics_rows_without_timing(straight));
  test::expect_same_tensors(resumed / app::checkpoint_name(60), straight / app::checkpoint_name(60), "model.");
}

// Starts a 100-epoch run into `s`/run and sends it `sig` once its first epoch's metrics row exists; it
// must stop with exit code 128 + sig, saying `message`. No periodic checkpoints: any checkpoint is the
// signal's. Returns the run directory and the output.
static std::pair<fs::path, std::string> run_until_signal(const test::Scratch& s, int sig, const std::string& message) {
  const fs::path run = s.dir() / "run", log = s.dir() / "log.txt";
  const pid_t pid = test::start_train({"--config", s.write("cfg.yaml", kConfig), "--out", run.string(), "--set",
                                       "epochs=100", "output.checkpoint_every_steps=0", "output.checkpoint_every_epochs=0"},
                                      log);
  for (int i = 0; i < 3000 && test::lines(test::read_text(run / "metrics.jsonl")).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ::kill(pid, sig);
  const int rc = test::wait_until(pid, std::chrono::steady_clock::now() + std::chrono::seconds(test::kTrainWatchdogSeconds));
  const std::string output = test::read_text(log);
  EXPECT_EQ(rc, 128 + sig) << output;
  EXPECT_NE(output.find(message), std::string::npos) << output;
  return {run, output};
}

TEST(Train, SigintWritesACheckpointThatResumes) {
  test::Scratch s;
  const auto [run, output] = run_until_signal(s, SIGINT, "interrupted (SIGINT) at step");
  std::vector<std::string> problems;
  const auto ckpt = app::newest_valid_checkpoint(run, problems);
  ASSERT_TRUE(ckpt.has_value()) << output;
  const int64_t stopped_at = std::stoll(ckpt->get("step"));
  EXPECT_GT(stopped_at, 0);
  EXPECT_LT(stopped_at, 100 * 20) << "the run finished before the signal";

  const Result resumed = train("--resume " + run.string());
  ASSERT_EQ(resumed.rc, 0) << resumed.output;
  const auto rows = metrics_rows(run);
  ASSERT_EQ(rows.size(), 100u);
  for (size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(rows[i].at("epoch").get<size_t>(), i + 1);
}

TEST(Train, SigtermWritesACheckpoint) {
  test::Scratch s;
  const auto [run, output] = run_until_signal(s, SIGTERM, "terminated (SIGTERM) at step");
  EXPECT_EQ(app::list_checkpoints(run).size(), 1u) << output;
}

TEST(Train, NonFiniteLossStopsWithAdviceOrIsSkipped) {
  test::Scratch s;
  const std::string cfg = s.write("cfg.yaml", kConfig);
  const Result stop = train("--config " + cfg + " --out " + (s.dir() / "b").string() +
                            " --set 'optimizer={type: sgd, lr: 1e30}' scheduler.type=none output.checkpoint_every_steps=1");
  EXPECT_EQ(stop.rc, 1) << stop.output;
  test::expect_in(stop.output, {"the loss is", "The last good checkpoint is", "checkpoint-0000000", "lower optimizer.lr",
                                "clip_grad_norm", "skip_nonfinite: true"});
  const Result skip = train("--config " + cfg + " --out " + (s.dir() / "c").string() +
                            " --set 'optimizer={type: sgd, lr: 1e30}' scheduler.type=none skip_nonfinite=true epochs=1");
  EXPECT_EQ(skip.rc, 0) << skip.output;
  EXPECT_NE(skip.output.find("skipped (non-finite loss)"), std::string::npos) << skip.output;
  // The weights are ~1e30 by then: the evaluation's loss is not finite, and metrics.jsonl must still be
  // JSON (metrics_rows parses every line), with metrics.csv spelling the value the same way.
  const auto rows = metrics_rows(s.dir() / "c");
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_TRUE(rows[0].at("test_loss").is_string()) << rows[0].dump();
  EXPECT_FALSE(std::isfinite(test::metric(rows[0], "test_loss"))) << rows[0].dump();
  const auto csv = test::lines(test::read_text(s.dir() / "c" / "metrics.csv"));
  ASSERT_EQ(csv.size(), 2u);
  std::string field = ",";  // (in steps: one "," + s + "," draws a false GCC 12 -Wrestrict warning)
  field += rows[0].at("test_loss").get<std::string>();
  field += ",";
  EXPECT_NE(csv[1].find(field), std::string::npos) << csv[1];
}

// metrics.jsonl is JSON on every line whatever the values: a non-finite metric is the string "NaN",
// "Infinity" or "-Infinity" (JSON has no such numbers), a missing evaluation null, a finite value a number
// that reads back exactly. metrics.csv spells them the same way and leaves a missing one empty. A writer
// opened for a resume after epoch 1 drops the later rows and keeps the first as it was.
TEST(Train, MetricsFilesAreValidJsonWithNaNAndInfinity) {
  test::Scratch s;
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  {
    app::MetricsWriter metrics(s.dir(), std::nullopt);
    metrics.append({.epoch = 1, .step = 10, .lr = 0.1, .train_loss = nan, .train_accuracy = 0.25, .test_loss = inf,
                    .test_accuracy = 0.5, .test_bits = 2.5, .test_perplexity = inf, .samples_per_sec = 100,
                    .seconds = 1.5});
    metrics.append({.epoch = 2, .step = 20, .lr = 1e-4, .train_loss = -inf, .train_accuracy = -nan,
                    .test_loss = std::nullopt, .test_accuracy = std::nullopt, .test_bits = std::nullopt,
                    .test_perplexity = std::nullopt, .samples_per_sec = 0, .seconds = 3});
  }
  const auto jsonl = test::lines(test::read_text(s.dir() / "metrics.jsonl"));
  ASSERT_EQ(jsonl.size(), 2u);
  for (const std::string& line : jsonl) EXPECT_TRUE(nlohmann::json::accept(line)) << line;
  const auto rows = test::metrics_rows(s.dir());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].at("epoch").get<int64_t>(), 1);
  EXPECT_EQ(rows[0].at("train_loss").dump(), "\"NaN\"");
  EXPECT_EQ(rows[0].at("test_loss").dump(), "\"Infinity\"");
  EXPECT_EQ(rows[1].at("train_loss").dump(), "\"-Infinity\"");
  EXPECT_EQ(rows[1].at("train_accuracy").dump(), "\"NaN\"");  // a negative NaN too
  EXPECT_TRUE(rows[1].at("test_loss").is_null());
  EXPECT_TRUE(rows[0].at("lr").is_number());
  EXPECT_TRUE(std::isnan(test::metric(rows[0], "train_loss")));
  EXPECT_EQ(test::metric(rows[0], "test_loss"), inf);
  EXPECT_EQ(test::metric(rows[1], "train_loss"), -inf);
  EXPECT_EQ(test::metric(rows[1], "lr"), 1e-4);
  EXPECT_EQ(test::metric(rows[0], "seconds"), 1.5);
  const auto csv = test::lines(test::read_text(s.dir() / "metrics.csv"));
  EXPECT_EQ(rows[0].at("test_bits_per_token").get<double>(), 2.5);
  EXPECT_EQ(rows[0].at("test_perplexity").dump(), "\"Infinity\"");
  EXPECT_TRUE(rows[1].at("test_bits_per_token").is_null());
  EXPECT_EQ(csv, (std::vector<std::string>{"epoch,step,lr,train_loss,train_accuracy,test_loss,test_accuracy,"
                                           "test_bits_per_token,test_perplexity,samples_per_sec,seconds",
                                           "1,10,0.1,NaN,0.25,Infinity,0.5,2.5,Infinity,100,1.5",
                                           "2,20,1e-04,-Infinity,NaN,,,,,0,3"}));

  { app::MetricsWriter resumed(s.dir(), 1); }
  EXPECT_EQ(test::lines(test::read_text(s.dir() / "metrics.jsonl")), std::vector<std::string>{jsonl[0]});
  EXPECT_EQ(test::lines(test::read_text(s.dir() / "metrics.csv")), (std::vector<std::string>{csv[0], csv[1]}));
}

TEST(Train, EvalAndDevicesReport) {
  test::Scratch s;
  const std::string cfg = s.write("cfg.yaml", kConfig);
  const fs::path run = s.dir() / "run";
  ASSERT_EQ(train("--config " + cfg + " --out " + run.string() + " --set epochs=1").rc, 0);
  const auto rows = metrics_rows(run);
  ASSERT_EQ(rows.size(), 1u);
  const Result eval = test::run(std::string(EMBER_EVAL_APP) + " --config " + cfg + " --checkpoint " +
                                (run / "checkpoint-00000020.safetensors").string() + " --device cpu");
  ASSERT_EQ(eval.rc, 0) << eval.output;
  char expected[64];
  std::snprintf(expected, sizeof expected, "test accuracy %.2f%%", 100 * test::metric(rows[0], "test_accuracy"));
  EXPECT_NE(eval.output.find(expected), std::string::npos) << expected << " missing in\n" << eval.output;
  test::expect_in(eval.output, {"examples 500", "per-class accuracy", "Ankle boot", "confusion matrix"});
  const Result missing = test::run(std::string(EMBER_EVAL_APP) + " --config " + cfg + " --checkpoint /nonexistent");
  EXPECT_EQ(missing.rc, 2) << missing.output;

  const Result devices = test::run(EMBER_DEVICES_APP);
  EXPECT_EQ(devices.rc, 0) << devices.output;
  test::expect_in(devices.output, {"cpu: ", "threads", "cuda: this build", "--device cuda: ", "default device (--device auto): "});
  if (!cuda::is_available()) {
    EXPECT_NE(devices.output.find(cuda::unavailable_reason()), std::string::npos);
  }
}

// ember-eval names a device from the YAML (or --set) as that key, as ember-train does; --device as --device.
TEST(Train, EvalNamesTheConfigDeviceAsItsKey) {
  test::Scratch s;
  const std::string cfg = s.write("dev.yaml", kConfig + "device: cuda:63\n");
  const std::string ckpt = (s.dir() / "unused.safetensors").string();  // the device is checked first
  const Result r = test::run(std::string(EMBER_EVAL_APP) + " --config " + cfg + " --checkpoint " + ckpt);
  EXPECT_EQ(r.rc, 2) << r.output;
  test::expect_in(r.output, {"dev.yaml:", ": device: device 'cuda:63' requested", "device: cpu works on every machine"});
  EXPECT_EQ(r.output.find("--device"), std::string::npos) << r.output;
  const Result set = test::run(std::string(EMBER_EVAL_APP) + " --config " + s.write("plain.yaml", kConfig) +
                               " --checkpoint " + ckpt + " --set device=cuda:63");
  EXPECT_EQ(set.rc, 2) << set.output;
  test::expect_in(set.output, {"--set device=cuda:63: device: device 'cuda:63' requested"});
  const Result flag = test::run(std::string(EMBER_EVAL_APP) + " --config " + cfg + " --checkpoint " + ckpt +
                                " --device cuda:63");
  EXPECT_EQ(flag.rc, 2) << flag.output;
  test::expect_in(flag.output, {"--device cuda:63: device 'cuda:63' requested", "--device cpu works"});
}

// Every optimizer and scheduler the config offers builds and trains (2 epochs of 20 steps), and the lr
// each epoch reports (the one its last step used) is the one its schedule gives.
TEST(Train, EveryOptimizerAndSchedulerRuns) {
  test::Scratch s;
  const std::string cfg = s.write("cfg.yaml", kConfig);
  struct Case {
    std::string sets;
    std::optional<double> lr_epoch1, lr_epoch2;  // exactly (the metrics hold the double that was used)
  };
  const std::vector<Case> cases = {
      {"optimizer={type: sgd, lr: 0.1, momentum: 0.9, nesterov: true} scheduler={type: step, step_size: 1, gamma: 0.5}",
       0.1, 0.05},
      {"optimizer={type: rmsprop, lr: 0.001, centered: true} scheduler={type: multistep, milestones: [1], gamma: 0.1}",
       0.001, 1e-04},
      {"optimizer={type: adam, lr: 0.001, amsgrad: true} scheduler={type: exponential, gamma: 0.5}", 0.001, 5e-04},
      {"optimizer={type: adamw, lr: 0.001, clip_grad_norm: 1} scheduler={type: plateau, patience: 0, factor: 0.5}",
       0.001, std::nullopt},
      {"optimizer={type: adam, lr: 0.01} scheduler={type: onecycle, pct_start: 0.25}", std::nullopt, std::nullopt},
      {"optimizer={type: sgd, lr: 0.1} scheduler={type: cosine, interval: step, warmup_steps: 10}", std::nullopt, 0.0},
  };
  int i = 0;
  for (const Case& c : cases) {
    const fs::path run = s.dir() / ("run" + std::to_string(i++));
    const Result r = train("--config " + cfg + " --out " + run.string() + " --set epochs=2 'loss={label_smoothing: 0.1}' " +
                           [&] {
                             std::string quoted;  // each "key=value" of c.sets, quoted for the shell
                             for (size_t at = 0; at < c.sets.size();) {
                               size_t end = c.sets.find("} ", at);
                               end = end == std::string::npos ? c.sets.size() : end + 1;
                               quoted += test::quoted(c.sets.substr(at, end - at)) + " ";
                               at = end + 1;
                             }
                             return quoted;
                           }());
    ASSERT_EQ(r.rc, 0) << c.sets << "\n" << r.output;
    const auto rows = metrics_rows(run);
    ASSERT_EQ(rows.size(), 2u) << c.sets;
    if (c.lr_epoch1) {
      EXPECT_EQ(test::metric(rows[0], "lr"), *c.lr_epoch1) << c.sets;
    }
    if (c.lr_epoch2) {
      EXPECT_EQ(test::metric(rows[1], "lr"), *c.lr_epoch2) << c.sets;
    }
  }
}
