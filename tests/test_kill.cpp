// kill -9 at random moments: ember-train is started on a small run with a checkpoint every other step,
// killed with SIGKILL at least kMinKills times (delays from a seeded generator; some kills aimed at the
// moment a checkpoint's temporary file appears, so they land inside the write), and resumed with --resume
// each time until it finishes. After every kill each checkpoint in the run directory must load; at the
// end the last checkpoint's tensors equal an uninterrupted run's bit for bit, the metrics rows equal its
// rows, and no temporary file is left. A watchdog bounds every child and the whole test.
#include <gtest/gtest.h>
#include <fcntl.h>
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
// large share of the run is spent writing checkpoints. Dropout, a per-step cosine schedule and two loader
// workers make an exact resume depend on every part of the checkpoint (weights, Adam moments, scheduler,
// generators, the loader's position, the epoch's running sums).
const std::string kConfig = R"(epochs: 3
seed: 11
data:
  batch_size: 20
  workers: 2
  limit: 600
  test_limit: 200
  transforms: [{type: normalize, mean: [0.286], std: [0.353]}]
model:
  - {type: flatten}
  - {type: linear, out_features: 32}
  - {type: relu}
  - {type: dropout, p: 0.2}
  - {type: linear, out_features: 10}
optimizer: {type: adamw, lr: 0.003}
scheduler: {type: cosine, interval: step}
output: {checkpoint_every_steps: 2, keep_last: 3, log_every_steps: 10}
)";
constexpr int64_t kFinalStep = 90;
constexpr int kMinKills = 24;
constexpr int kMaxKills = 48;  // then the run may finish: on a loaded machine few delays outlast the startup
constexpr int kMinKillsInWrites = 4;   // kills that left a checkpoint's temporary file behind
constexpr double kWatchdogSeconds = 240;

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

// ember-train with `args`, its output into `log`.
pid_t start_train(const std::vector<std::string>& args, const fs::path& log) {
  // NOTE: everything is allocated before fork: the child of a threaded process may only make
  // async-signal-safe calls until it execs.
  std::vector<char*> argv{const_cast<char*>(EMBER_TRAIN_APP)};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const std::string log_path = log.string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execv(EMBER_TRAIN_APP, argv.data());
    ::_exit(127);
  }
  return pid;
}

// The exit status (128 + signal when killed) once `pid` ends, or -1 when `deadline` passes first (then
// the child is killed and reaped).
int wait_until(pid_t pid, clock_type::time_point deadline) {
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (clock_type::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

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

// The checkpoint's tensors as (name, dtype, raw bytes).
std::vector<std::tuple<std::string, std::string, std::string>> tensors_of(const fs::path& checkpoint) {
  std::vector<std::tuple<std::string, std::string, std::string>> out;
  for (const auto& [name, t] : safetensors::load(checkpoint.string()).tensors) {
    const Tensor c = t.contiguous();
    out.emplace_back(name, std::string(dtype_name(c.dtype())),
                     std::string(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.numel()) * c.element_size()));
  }
  return out;
}

std::vector<std::string> metric_rows(const fs::path& run) {
  std::vector<std::string> out;
  for (const auto& line : test::lines(test::read_text(run / "metrics.jsonl"))) out.push_back(test::without_timing(line));
  return out;
}


// Compares the finished run in `run` with the uninterrupted one in `straight`: the last checkpoint's tensors
// bit for bit, the metrics rows, no temporary file left, every checkpoint loads, keep_last held.
void expect_equal_runs(const fs::path& run, const fs::path& straight) {
  const fs::path last = run / app::checkpoint_name(kFinalStep);
  ASSERT_TRUE(fs::exists(last));
  const auto expected = tensors_of(straight / app::checkpoint_name(kFinalStep)), got = tensors_of(last);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(std::get<0>(got[i]), std::get<0>(expected[i]));
    EXPECT_EQ(std::get<1>(got[i]), std::get<1>(expected[i])) << std::get<0>(got[i]);
    EXPECT_TRUE(std::get<2>(got[i]) == std::get<2>(expected[i])) << std::get<0>(got[i]) << " differs from the uninterrupted run's";
  }
  EXPECT_EQ(metric_rows(run), metric_rows(straight));
  EXPECT_FALSE(has_file_with(run, ".tmp")) << "a temporary file is left in " << run;
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
  ASSERT_EQ(wait_until(start_train({"--config", cfg, "--dry-run"}, log), watchdog), 0) << test::read_text(log);
  const double startup_seconds = seconds_since(started);
  const auto reference_started = clock_type::now();
  ASSERT_EQ(wait_until(start_train({"--config", cfg, "--out", straight.string()}, log), watchdog), 0) << test::read_text(log);
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
    const pid_t pid = start_train(args, log);
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
    const int rc = wait_until(pid, watchdog);
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
