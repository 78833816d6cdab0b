// kill -9 at random moments: ember-train is started on a small run with a checkpoint every other step,
// killed with SIGKILL at least kMinKills times (delays from a seeded generator; some kills aimed at the
// moment a checkpoint's temporary file appears, so they land inside the write), and resumed with --resume
// each time until it finishes. After every kill each checkpoint in the run directory must load; at the
// end the last checkpoint's tensors equal an uninterrupted run's bit for bit, the metrics rows equal its
// rows, and no temporary file is left. A watchdog bounds every child and the whole test.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>

#include <ember/ember.h>

#include "apps/run_dir.h"
#include "test_train_util.h"

using namespace ember;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

// 600 examples in batches of 20: 30 steps per epoch, 90 steps. A checkpoint every 2 steps (keep 3), so a
// large share of the run is spent writing checkpoints. An exact resume depends on every part of the
// checkpoint (weights, AdamW moments, scheduler, generators, the loader's position, the epoch's sums).
const std::string kConfig =
    test::yaml({.epochs = 3, .seed = 11, .output = "{checkpoint_every_steps: 2, keep_last: 3, log_every_steps: 10}"});
constexpr int64_t kFinalStep = 90;
constexpr int kMinKills = 24;
constexpr int kMaxKills = 48;  // then the run may finish: on a loaded machine few delays outlast the startup
constexpr int kMinKillsInWrites = 4;   // kills that left a checkpoint's temporary file behind
constexpr double kWatchdogSeconds = 240;

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

// Whether `pid` has ended (without reaping it).
bool has_exited(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

// Waits until `count` checkpoint files (their temporaries) have been created in the watched folder
// (inotify), or `pid` exits, or `deadline` passes. Returns false when `pid` exited: true means kill now,
// mid-write when the count was reached.
bool wait_for_checkpoint_writes(int inotify_fd, pid_t pid, int count, clock_type::time_point deadline) {
  alignas(inotify_event) char buf[4096];
  while (count > 0 && clock_type::now() < deadline) {
    if (has_exited(pid)) return false;
    pollfd p{inotify_fd, POLLIN, 0};
    if (::poll(&p, 1, 5) <= 0) continue;
    const ssize_t n = ::read(inotify_fd, buf, sizeof buf);
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
      if (e->len > 0 && std::strncmp(e->name, "checkpoint-", 11) == 0) --count;  // (a rename is not a create)
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
  return !has_exited(pid);
}

// Whether a file whose name holds `part` is in `dir`.
bool has_file_with(const fs::path& dir, const std::string& part) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(part) != std::string::npos) return true;
  return false;
}

// Every checkpoint file in `dir` loads (none is half written); the failures otherwise.
std::string unloadable_checkpoints(const fs::path& dir) {
  std::string out;
  for (const auto& [step, path] : app::list_checkpoints(dir)) {
    try {
      (void)Checkpoint::load(path.string());
    } catch (const Error& e) {
      out += path.string() + ": " + e.what() + "\n";
    }
  }
  return out;
}

// Compares the finished run in `run` with the uninterrupted one in `straight`: the last checkpoint's tensors
// bit for bit, the metrics rows, no temporary file left, every checkpoint loads, keep_last held.
void expect_equal_runs(const fs::path& run, const fs::path& straight) {
  const fs::path last = run / app::checkpoint_name(kFinalStep);
  ASSERT_TRUE(fs::exists(last));
  test::expect_same_tensors(last, straight / app::checkpoint_name(kFinalStep));
  EXPECT_EQ(test::metrics_rows_without_timing(run), test::metrics_rows_without_timing(straight));
  test::expect_no_temporaries(run);
  EXPECT_TRUE(unloadable_checkpoints(run).empty());
  EXPECT_LE(app::list_checkpoints(run).size(), 3u);  // keep_last survives the kills
}

}  // namespace

TEST(Kill, SigkillAtRandomMomentsThenResumeEqualsAnUninterruptedRun) {
  test::Scratch s;
  const std::string cfg = s.write("cfg.yaml", kConfig);
  const fs::path straight = s.dir() / "straight", log = s.dir() / "log.txt";
  const auto started = clock_type::now();
  const auto watchdog = started + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(kWatchdogSeconds));

  // The startup (a --dry-run builds everything a run does before its first step) and the reference run,
  // uninterrupted: their durations scale the kill delays to this machine's speed.
  ASSERT_EQ(test::wait_until(test::start_train({"--config", cfg, "--dry-run"}, log), watchdog), 0)
      << test::read_text(log);
  const double startup_seconds = seconds_since(started);
  const auto reference_started = clock_type::now();
  ASSERT_EQ(test::wait_until(test::start_train({"--config", cfg, "--out", straight.string()}, log), watchdog), 0)
      << test::read_text(log);
  const double run_seconds = seconds_since(reference_started);

  const int inotify_fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ASSERT_GE(inotify_fd, 0);
  std::mt19937_64 gen(20261130);
  // About half the random kills land in the startup (config.yaml, metrics, loading), the others cost a
  // tenth of the training on average. The kills go on until a delay outlasts the rest of the run.
  const double training_seconds = std::max(run_seconds - startup_seconds, 0.1);
  std::uniform_real_distribution<double> delay(0.0, startup_seconds + training_seconds / 4);
  int kills = 0, kills_in_writes = 0, fresh_starts = 0, resumes = 0, finished_runs = 0;
  std::string steps_at_kills;  // the newest checkpoint's step after each kill
  const fs::path killed = s.dir() / "killed";
  while (true) {
    ASSERT_LT(seconds_since(started), kWatchdogSeconds) << "the watchdog fired after " << kills << " kills";
    // Resume when there is a checkpoint; a kill before the first one leaves nothing to resume: start over.
    std::vector<std::string> args{"--resume", killed.string()};
    if (app::list_checkpoints(killed).empty()) {
      args = {"--config", cfg, "--out", killed.string()};
      ++fresh_starts;
    } else {
      ++resumes;
    }
    fs::create_directories(killed);
    const int watch = ::inotify_add_watch(inotify_fd, killed.c_str(), IN_CREATE);
    const pid_t pid = test::start_train(args, log);
    bool kill_now = false;
    if (kills >= kMaxKills) {
      // Let it finish.
    } else if (kills % 3 == 2) {  // every third kill: as the 1st..3rd checkpoint write begins
      const auto give_up = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(2 * run_seconds));
      kill_now = wait_for_checkpoint_writes(inotify_fd, pid, 1 + static_cast<int>(gen() % 3), give_up);
    } else {
      const auto until = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(delay(gen)));
      while (clock_type::now() < until && !has_exited(pid)) std::this_thread::sleep_for(std::chrono::microseconds(200));
      kill_now = !has_exited(pid);
    }
    if (kill_now) ::kill(pid, SIGKILL);
    const int rc = test::wait_until(pid, watchdog);
    ::inotify_rm_watch(inotify_fd, watch);
    char drain[4096];
    while (::read(inotify_fd, drain, sizeof drain) > 0) {
    }
    if (rc == 128 + SIGKILL) {
      ++kills;
      // Its own temporary file is there only when it died between creating and renaming a checkpoint.
      kills_in_writes += has_file_with(killed, ".safetensors.tmp." + std::to_string(pid));
      const auto checkpoints = app::list_checkpoints(killed);
      if (!steps_at_kills.empty()) steps_at_kills += ' ';
      steps_at_kills += checkpoints.empty() ? std::string("-") : std::to_string(checkpoints.back().first);
      const std::string bad = unloadable_checkpoints(killed);
      ASSERT_TRUE(bad.empty()) << "after kill " << kills << ", checkpoints that do not load:\n" << bad;
      continue;
    }
    ASSERT_EQ(rc, 0) << "ember-train failed after " << kills << " kills:\n" << test::read_text(log);
    ++finished_runs;
    expect_equal_runs(killed, straight);
    if (kills >= kMinKills && kills_in_writes >= kMinKillsInWrites) break;
    // It finished (a delay outlasted the rest of the run) before the test had killed it enough: run it
    // again from the start.
    fs::rename(killed, s.dir() / ("finished" + std::to_string(finished_runs)));
  }
  ::close(inotify_fd);
  std::printf("[ kill    ] %d SIGKILLs survived (%d inside a checkpoint write), %d resumes, %d fresh starts, %d finished "
              "runs, %.1f s (startup %.2f s, an uninterrupted run %.2f s)\n[ kill    ] step reached at each kill: %s\n",
              kills, kills_in_writes, resumes, fresh_starts, finished_runs, seconds_since(started), startup_seconds,
              run_seconds, steps_at_kills.c_str());
}
