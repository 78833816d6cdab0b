// The data failing mid-run: ember-train on Fashion-MNIST with EMBER_FAULT_INJECT (data/fault.h) making one
// example's read fail — in a loader worker, on the training thread (workers: 0), or in the test split at
// the evaluation. The run must stop (exit 1) with a message naming the file, the example and the loader
// batch, having written a checkpoint of the last completed step that loads and points the loader at the
// failed batch, with no temporary file left and nothing hanging: every child runs under `timeout` (the
// watchdog). Resumed once the data reads again, the run ends with the weights and metrics of an
// uninterrupted run.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include "apps/run_dir.h"
#include "test_train_util.h"

using namespace ember;
using test::Result;
namespace fs = std::filesystem;

namespace {

// 600 shuffled examples in batches of 20 (two workers): 30 steps per epoch, 60 in all, with dropout, a
// per-step cosine schedule and AdamW. A run here takes 1-3 s (15 s under ASan).
const std::string kConfig =
    test::yaml({.seed = 5, .output = "{checkpoint_every_steps: 5, keep_last: 100, log_every_steps: 10}"});
constexpr int64_t kStepsPerEpoch = 30, kFinalStep = 60;
constexpr int64_t kBadExample = 250;  // of the training split (among the first 600)

// ember-train `args` with EMBER_FAULT_INJECT=`fault` (data/fault.h); test::train runs it without.
Result train_with_fault(const std::string& args, const std::string& fault) {
  return test::train(args, "EMBER_FAULT_INJECT=" + test::quoted(fault));
}

// The batch (0-based) of epoch 0 that holds example `index`: the loader's order depends only on the seed,
// the dataset size and the batch size, so a loader over a dataset of the example indices shows it.
int64_t batch_holding(int64_t index) {
  std::vector<int64_t> ids(600);
  for (int64_t i = 0; i < 600; ++i) ids[static_cast<size_t>(i)] = i;
  auto ds = std::make_shared<data::TensorDataset>(zeros({600, 1}), from_vector(ids));
  data::DataLoader loader(ds, {.batch_size = 20, .shuffle = true, .seed = 5});
  int64_t b = 0;
  for (auto& batch : loader) {
    for (int64_t id : batch.target.to_vector<int64_t>())
      if (id == index) return b;
    ++b;
  }
  return -1;
}

// The run that never fails, for the final weights and metrics.
class Faults : public ::testing::Test {
 protected:
  void SetUp() override {
    cfg_ = scratch_.write("cfg.yaml", kConfig);
    straight_ = scratch_.dir() / "straight";
    const Result r = test::train("--config " + cfg_ + " --out " + straight_.string());
    ASSERT_EQ(r.rc, 0) << r.output;
  }
  // The run in `run` finished as the uninterrupted one did: final tensors bit for bit, metrics rows.
  void expect_like_uninterrupted(const fs::path& run) {
    const fs::path last = run / app::checkpoint_name(kFinalStep);
    ASSERT_TRUE(fs::exists(last));
    test::expect_same_tensors(last, straight_ / app::checkpoint_name(kFinalStep));
    EXPECT_EQ(test::metrics_rows_without_timing(run), test::metrics_rows_without_timing(straight_));
    test::expect_no_temporaries(run);
  }
  test::Scratch scratch_;
  std::string cfg_;
  fs::path straight_;
};

}  // namespace

TEST_F(Faults, TrainingDataReadFailingMidEpochStopsWithACheckpointThatResumes) {
  const int64_t bad_batch = batch_holding(kBadExample);
  ASSERT_GT(bad_batch, 1);  // mid-epoch: steps completed before it, and
  ASSERT_LT(bad_batch, kStepsPerEpoch - 1);  // batches left after it
  ASSERT_NE(bad_batch % 5, 0);  // the failure's checkpoint is a new one, not a periodic one
  const std::string fault = "read:" + std::to_string(kBadExample) + "@train-images";
  for (int workers : {2, 0}) {  // the read fails in a loader worker / on the training thread
    SCOPED_TRACE("workers: " + std::to_string(workers));
    const fs::path run = scratch_.dir() / ("run" + std::to_string(workers));
    const std::string set = " --set data.workers=" + std::to_string(workers);
    const Result failed = train_with_fault("--config " + cfg_ + " --out " + run.string() + set, fault);
    EXPECT_EQ(failed.rc, 1) << failed.output;
    const fs::path checkpoint = run / app::checkpoint_name(bad_batch);
    test::expect_in(failed.output,
                    {"error: step " + std::to_string(bad_batch + 1) + " (epoch 1) could not get its data: reading the "
                     "training data: DataLoader: batch " + std::to_string(bad_batch) + " of epoch 0 failed" +
                     (workers > 0 ? " in worker " : ": "),
                     "train-images-idx3-ubyte", "example " + std::to_string(kBadExample) + " could not be read (fault "
                     "injected by EMBER_FAULT_INJECT=" + fault + ")",
                     "Wrote " + checkpoint.string() + " (the last completed step, " + std::to_string(bad_batch) + ")",
                     "continue with: ember-train --resume " + run.string()});
    EXPECT_EQ(failed.output.find("epoch 1/2: train loss"), std::string::npos) << "the epoch went on:\n" << failed.output;

    // The checkpoint loads and resumes at the failed batch.
    ASSERT_TRUE(fs::exists(checkpoint)) << failed.output;
    const Checkpoint c = Checkpoint::load(checkpoint.string());
    EXPECT_EQ(c.get("step"), std::to_string(bad_batch));
    EXPECT_EQ(c.get("epoch"), "0");
    EXPECT_EQ(c.get("loader").rfind("epoch=0 batch=" + std::to_string(bad_batch) + " ", 0), 0u) << c.get("loader");
    EXPECT_EQ(app::list_checkpoints(run).back().first, bad_batch);
    test::expect_no_temporaries(run);

    // Still unreadable: the resume stops at the same batch at once and names the same checkpoint.
    const Result again = train_with_fault("--resume " + run.string(), fault);
    EXPECT_EQ(again.rc, 1) << again.output;
    test::expect_in(again.output, {"batch " + std::to_string(bad_batch) + " of epoch 0 failed",
                                   "The checkpoint of the last completed step (" + std::to_string(bad_batch) + ") is " +
                                       checkpoint.string()});
    EXPECT_EQ(app::list_checkpoints(run).back().first, bad_batch);

    // Readable again: the run finishes as if nothing had happened.
    const Result resumed = test::train("--resume " + run.string());
    ASSERT_EQ(resumed.rc, 0) << resumed.output;
    test::expect_in(resumed.output, {app::checkpoint_name(bad_batch) + " (epochs done: 0, step " + std::to_string(bad_batch) + ")"});
    expect_like_uninterrupted(run);
  }
}

TEST_F(Faults, TestDataReadFailingInTheEvaluationStopsWithACheckpointThatResumes) {
  // The evaluation after epoch 1 reads example 5 of the test split; no periodic checkpoint at step 30.
  const fs::path run = scratch_.dir() / "run";
  const Result failed = train_with_fault("--config " + cfg_ + " --out " + run.string() +
                                             " --set output.checkpoint_every_steps=7", "read:5@t10k-images");
  EXPECT_EQ(failed.rc, 1) << failed.output;
  const fs::path checkpoint = run / app::checkpoint_name(kStepsPerEpoch);
  test::expect_in(failed.output, {"error: the evaluation after epoch 1 could not get its data: reading the test data: "
                                  "DataLoader: batch 0 of epoch 0 failed in worker ",
                                  "t10k-images-idx3-ubyte", "example 5 could not be read",
                                  "Wrote " + checkpoint.string() + " (the last completed step, 30)"});
  ASSERT_TRUE(fs::exists(checkpoint)) << failed.output;
  const Checkpoint c = Checkpoint::load(checkpoint.string());
  EXPECT_EQ(c.get("epoch"), "0");  // the epoch is not done: its evaluation, metrics row and schedule are not
  EXPECT_EQ(c.get("loader").rfind("epoch=0 batch=30 ", 0), 0u) << c.get("loader");
  EXPECT_TRUE(test::lines(test::read_text(run / "metrics.jsonl")).empty());

  const Result resumed = test::train("--resume " + run.string());
  ASSERT_EQ(resumed.rc, 0) << resumed.output;
  expect_like_uninterrupted(run);
}

TEST(FaultInjection, AMalformedSettingIsAnErrorNotASilentNoOp) {
  test::Scratch s;
  const std::string cfg = s.write("cfg.yaml", kConfig);
  const Result r = train_with_fault("--config " + cfg + " --out " + (s.dir() / "run").string(), "read:x");
  EXPECT_EQ(r.rc, 1) << r.output;
  test::expect_in(r.output, {"EMBER_FAULT_INJECT='read:x' is not a fault to inject; expected read:K or read:K@TEXT"});
  EXPECT_EQ(r.output.find("training on"), std::string::npos) << r.output;
}
