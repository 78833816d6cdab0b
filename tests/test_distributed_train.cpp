// ember-train under `mpirun -np 2` (label mpi): two processes × batch 32 track one × batch 64, only rank 0
// writes, kill -9 of one rank ends the job within seconds naming it, after which --resume finishes the run
// exactly as an uninterrupted one, and a rank that hangs (stopped, alive) ends the job after the collective
// timeout.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <thread>

#include <ember/ember.h>

#include "apps/run_dir.h"
#include "test_train_util.h"

using namespace ember;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;
using namespace ember::test;

namespace {

// mpirun -np 2 [options] ember-train (the arguments follow), as root where needed, one thread per process.
std::string mpirun_words(const std::string& options = "") {
  return std::string(EMBER_MPIEXEC) + " -np 2 --allow-run-as-root --oversubscribe -x EMBER_NUM_THREADS=1 " +
         "-x OMP_WAIT_POLICY=passive " + options + " " + EMBER_TRAIN_APP;
}

Result train_mpi(const std::string& args) {
  return run("env -u EMBER_FAULT_INJECT timeout -k 5 " + std::to_string(kTrainWatchdogSeconds) + " " + mpirun_words() +
             " " + args);
}

// The pid of the ember-train process of rank `rank` whose command line names `marker` (its run directory).
pid_t find_rank(int rank, const std::string& marker) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream cmd(entry.path() / "cmdline"), env(entry.path() / "environ");
    const std::string cmdline((std::istreambuf_iterator<char>(cmd)), {});
    const std::string environ((std::istreambuf_iterator<char>(env)), {});
    if (cmdline.find(marker) == std::string::npos || cmdline.find("ember-train") == std::string::npos) continue;
    if (cmdline.find("mpirun") != std::string::npos || cmdline.find("orterun") != std::string::npos) continue;
    if (environ.find(std::string("OMPI_COMM_WORLD_RANK=") + std::to_string(rank) + '\0') != std::string::npos)
      return static_cast<pid_t>(std::stol(name));
  }
  return -1;
}

MlpConfig small_run() {
  MlpConfig c;
  c.batch_size = 32;
  c.limit = 2048;
  c.dropout = "";  // dropout masks depend on the per-process batch: no exact match with one process
  c.workers = 1;
  c.optimizer = "{type: sgd, lr: 0.05, momentum: 0.9}";
  return c;
}

// A 15-epoch run of small_run() checkpointing every 10 steps, started under mpirun in the background
// (`mpirun_options` go before the program), its output to `log`; returns once its first checkpoint is
// written, with the job's pid (the shell that became mpirun) and rank 1's. Fails the test (victim -1) when
// rank 1 is not found running within 120 s.
struct Job {
  pid_t job = -1, rank1 = -1;
};
Job start_until_first_checkpoint(Scratch& scratch, const std::string& run_dir, const std::string& log,
                                 const std::string& mpirun_options = "") {
  MlpConfig c = small_run();
  c.epochs = 15;  // a few seconds: the fault lands after the first checkpoint (step 10 of 480)
  c.output = "{checkpoint_every_steps: 10, keep_last: 2}";
  const std::string config = scratch.write("mlp.yaml", yaml(c));
  ::setenv("EMBER_NUM_THREADS", "1", 1);
  const std::string command =
      "exec " + mpirun_words(mpirun_options) + " --config " + config + " --out " + run_dir + " >" + log + " 2>&1";
  Job j;
  j.job = ::fork();
  if (j.job == 0) {
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  if (j.job <= 0) return j;
  const auto give_up = clock_type::now() + std::chrono::seconds(120);
  while (clock_type::now() < give_up) {
    if (!app::list_checkpoints(run_dir).empty() && (j.rank1 = find_rank(1, run_dir)) > 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return j;
}

// Starts the job (start_until_first_checkpoint), sends `sig` to rank 1 and waits up to `limit` for the job to
// end. Fails the test when rank 1 was not found, could not be signalled or the job was still running after
// `limit` (then it and rank 1 are killed, so nothing is left behind); use it in ASSERT_NO_FATAL_FAILURE.
struct Ended {
  pid_t rank1 = -1;
  int rc = -1;         // the job's exit status
  double seconds = 0;  // from the signal to the job's end
  std::string output;  // the job's log
};
void signal_rank1_after_first_checkpoint(Scratch& scratch, const std::string& run_dir, int sig,
                                         std::chrono::seconds limit, const std::string& mpirun_options, Ended& e) {
  const std::string log = run_dir + ".log";
  const Job j = start_until_first_checkpoint(scratch, run_dir, log, mpirun_options);
  ASSERT_GT(j.job, 0);
  ASSERT_GT(j.rank1, 0) << "rank 1 was not found running with a checkpoint written:\n" << read_text(log);
  e.rank1 = j.rank1;
  ASSERT_EQ(::kill(j.rank1, sig), 0) << "kill(rank 1, " << sig << ") failed";
  const auto sent = clock_type::now();
  e.rc = wait_until(j.job, sent + limit);
  e.seconds = std::chrono::duration<double>(clock_type::now() - sent).count();
  e.output = read_text(log);
  if (e.rc == -1) {
    ::kill(j.rank1, SIGKILL);
    ::kill(j.job, SIGKILL);
    ::waitpid(j.job, nullptr, 0);
  }
  ASSERT_NE(e.rc, -1) << "the job was still running " << limit.count() << " s after the signal to rank 1:\n"
                      << e.output;
  EXPECT_NE(e.rc, 0);
  std::printf("[ signal %d ] rank 1 (pid %d): the job ended %.2f s later with exit code %d\n", sig,
              static_cast<int>(j.rank1), e.seconds, e.rc);
}

}  // namespace

TEST(DataParallelTrain, TwoProcessesOfBatch32TrackOneOfBatch64) {
  Scratch scratch;
  const std::string two = scratch.file("two"), one = scratch.file("one");
  MlpConfig c = small_run();
  const std::string config = scratch.write("mlp.yaml", yaml(c));
  const Result r2 = train_mpi("--config " + config + " --out " + two);
  ASSERT_EQ(r2.rc, 0) << r2.output;
  expect_in(r2.output, {"2 processes × batch 32 = global batch 64"});
  EXPECT_EQ(r2.output.find("global batch"), r2.output.rfind("global batch")) << "logged by rank 0 only:\n" << r2.output;
  const Result r1 = train("--config " + config + " --set data.batch_size=64 --out " + one, "EMBER_NUM_THREADS=1");
  ASSERT_EQ(r1.rc, 0) << r1.output;
  const auto rows2 = metrics_rows(two), rows1 = metrics_rows(one);
  ASSERT_EQ(rows2.size(), 2u);  // one writer: one row per epoch
  ASSERT_EQ(rows1.size(), 2u);
  for (size_t i = 0; i < rows1.size(); ++i) {
    EXPECT_EQ(metric(rows2[i], "step"), metric(rows1[i], "step"));
    // f32: the two processes sum each batch in two halves (measured differences ~1e-7).
    for (const char* key : {"train_loss", "test_loss", "train_accuracy", "test_accuracy"})
      EXPECT_NEAR(metric(rows2[i], key), metric(rows1[i], key), 1e-4) << key << " epoch " << i + 1;
  }
  EXPECT_EQ(app::list_checkpoints(two).size(), app::list_checkpoints(one).size());
}

TEST(DataParallelTrain, RanksWithDifferentConfigsAreRefused) {
  Scratch scratch;
  MlpConfig c = small_run();
  const std::string config = scratch.write("mlp.yaml", yaml(c));
  // Rank 1 gets another learning rate through its own --set (an MPMD command line: one per rank).
  const Result r = run("env -u EMBER_FAULT_INJECT timeout -k 5 120 " + std::string(EMBER_MPIEXEC) +
                       " --allow-run-as-root --oversubscribe -np 1 " + EMBER_TRAIN_APP + " --config " + config +
                       " --out " + scratch.file("run") + " : -np 1 " + EMBER_TRAIN_APP + " --config " + config +
                       " --out " + scratch.file("run") + " --set optimizer.lr=0.1");
  EXPECT_NE(r.rc, 0);
  expect_in(r.output, {"different configs", "rank(s) 1"});
}

TEST(DataParallelTrain, KillingOneRankEndsTheJobNamingItThenResumeFinishes) {
  Scratch scratch;
  const std::string run_dir = scratch.file("killed");
  // Once the first checkpoint is there, kill rank 1.
  Ended e;
  ASSERT_NO_FATAL_FAILURE(
      signal_rank1_after_first_checkpoint(scratch, run_dir, SIGKILL, std::chrono::seconds(10), "", e));
  EXPECT_LT(e.seconds, 10.0);
  expect_in(e.output, {"rank 1"});
  ASSERT_EQ(app::list_checkpoints(run_dir).empty(), false);

  // The uninterrupted reference, and the resumed run.
  const Result whole = train_mpi("--config " + scratch.file("mlp.yaml") + " --out " + scratch.file("whole"));
  ASSERT_EQ(whole.rc, 0) << whole.output;
  const Result resumed = train_mpi("--resume " + run_dir);
  ASSERT_EQ(resumed.rc, 0) << resumed.output;
  // Weights resume exactly (test metrics to the bit); the train loss of the epoch that was cut carries
  // rank 0's checkpointed sum plus the sums after it, added in another order.
  const auto got = metrics_rows_without_timing(run_dir), want = metrics_rows_without_timing(scratch.file("whole"));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i]["test_loss"], want[i]["test_loss"]) << "epoch " << i + 1;
    EXPECT_EQ(got[i]["test_accuracy"], want[i]["test_accuracy"]) << "epoch " << i + 1;
    EXPECT_NEAR(metric(got[i], "train_loss"), metric(want[i], "train_loss"), 1e-12) << "epoch " << i + 1;
  }
}

// A rank that stops answering without dying (SIGSTOP: a hang, which the launcher cannot see) must not hang
// the job: the other rank's collective runs past EMBER_COLLECTIVE_TIMEOUT, and its watchdog ends the job
// with a message naming that rank and the collective.
TEST(DataParallelTrain, AHungRankEndsTheJobAfterTheCollectiveTimeout) {
  Scratch scratch;
  Ended e;
  ASSERT_NO_FATAL_FAILURE(signal_rank1_after_first_checkpoint(scratch, scratch.file("hung"), SIGSTOP,
                                                              std::chrono::seconds(20),
                                                              "-x EMBER_COLLECTIVE_TIMEOUT=2", e));
  EXPECT_GT(e.seconds, 1.5) << "ended before the 2 s timeout could have passed:\n" << e.output;
  expect_in(e.output, {"rank 0: ", "has not completed after 2 s", "EMBER_COLLECTIVE_TIMEOUT"});
  ::kill(e.rank1, SIGKILL);  // (normally gone already, with the job)
}
