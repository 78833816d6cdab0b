#pragma once
// Helpers for the app tests: run ember-train/-eval/-devices/-bench as subprocesses (their paths come from
// compile definitions), write small configs into a scratch directory, and read back what a run leaves:
// metrics rows (parsed as JSON) and checkpoint tensors (as raw bytes, to compare runs bit for bit).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <ember/ember.h>

#include "scratch.h"

namespace ember::test {

namespace fs = std::filesystem;

struct Result {
  int rc = -1;
  std::string output;  // stdout and stderr together
};

// The exit code of a waitpid/pclose status: the program's code, or 128 + the signal that killed it.
inline int exit_code(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

// Runs a shell command line, capturing its output; rc is the exit code (128 + signal when killed).
inline Result run(const std::string& command) {
  Result r;
  std::FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  r.rc = exit_code(::pclose(pipe));
  return r;
}

inline std::string quoted(const std::string& s) { return "'" + s + "'"; }

inline std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The non-empty lines of `text`.
inline std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream s(text);
  for (std::string line; std::getline(s, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// Expects every one of `pieces` in `output`, naming the missing ones.
inline void expect_in(const std::string& output, const std::vector<std::string>& pieces) {
  for (const std::string& piece : pieces) EXPECT_NE(output.find(piece), std::string::npos) << piece << " missing in\n" << output;
}

// --- configs ----------------------------------------------------------------------------------------------

// A small Fashion-MNIST MLP run — flatten, linear(hidden), relu, [dropout], linear(10) — as ember-train
// YAML. The defaults are the tests' common case; an unset optional or an empty string leaves the key out
// (ember-train's default then). Dropout, a per-step cosine schedule and loader workers make an exact
// resume depend on every part of a checkpoint.
struct MlpConfig {
  int epochs = 2;
  int seed = 3;
  std::string data_dir = "";  // data.dir
  int batch_size = 20;
  std::optional<int> workers = 2;
  std::optional<int> limit = 600, test_limit = 200;  // examples of the train / test split used
  bool normalize = true;
  int hidden = 32;
  std::string dropout = "0.2";  // p
  std::string optimizer = "{type: adamw, lr: 0.003}";
  std::string scheduler = "{type: cosine, interval: step}";
  std::string output = "";  // e.g. "{checkpoint_every_steps: 5, keep_last: 100, log_every_steps: 10}"
};

inline std::string yaml(const MlpConfig& c) {
  std::ostringstream y;
  y << "epochs: " << c.epochs << "\nseed: " << c.seed << "\ndata:\n";
  if (!c.data_dir.empty()) y << "  dir: " << c.data_dir << "\n";
  y << "  batch_size: " << c.batch_size << "\n";
  if (c.workers) y << "  workers: " << *c.workers << "\n";
  if (c.limit) y << "  limit: " << *c.limit << "\n";
  if (c.test_limit) y << "  test_limit: " << *c.test_limit << "\n";
  if (c.normalize) y << "  transforms: [{type: normalize, mean: [0.286], std: [0.353]}]\n";
  y << "model:\n  - {type: flatten}\n  - {type: linear, out_features: " << c.hidden << "}\n  - {type: relu}\n";
  if (!c.dropout.empty()) y << "  - {type: dropout, p: " << c.dropout << "}\n";
  y << "  - {type: linear, out_features: 10}\n";
  y << "optimizer: " << c.optimizer << "\n";
  if (!c.scheduler.empty()) y << "scheduler: " << c.scheduler << "\n";
  if (!c.output.empty()) y << "output: " << c.output << "\n";
  return y.str();
}

// --- running ember-train ---------------------------------------------------------------------------------

#ifdef EMBER_TRAIN_APP
// The watchdog of one ember-train run: a run here takes seconds (a minute under ASan); a hung one is
// killed and fails the test instead of hanging it.
constexpr int kTrainWatchdogSeconds = 300;

// ember-train with `args` (shell words), under `timeout`. `env`: "NAME=value ..." set for it; the fault
// injection of data/fault.h is never inherited from the test's environment.
inline Result train(const std::string& args, const std::string& env = "") {
  Result r = run("env -u EMBER_FAULT_INJECT " + env + " timeout -k 5 " + std::to_string(kTrainWatchdogSeconds) + " " +
                 EMBER_TRAIN_APP + " " + args);
  EXPECT_NE(r.rc, 124) << "the watchdog stopped ember-train " << args << " after " << kTrainWatchdogSeconds << " s:\n"
                       << r.output;
  EXPECT_NE(r.rc, 137) << "the watchdog killed ember-train " << args << ":\n" << r.output;
  return r;
}

// Starts ember-train with `args` in the background, its stdout and stderr appended to `log`; returns its pid.
inline pid_t start_train(const std::vector<std::string>& args, const fs::path& log) {
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
#endif

// The exit code (128 + signal when killed) once child `pid` ends, or -1 when `deadline` passes first (then
// the child is killed and reaped).
inline int wait_until(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return exit_code(status);
}

// --- what a run leaves -----------------------------------------------------------------------------------

// The rows of `run`/metrics.jsonl, each parsed; a line that is not JSON fails the test (and is skipped).
inline std::vector<nlohmann::json> metrics_rows(const fs::path& run) {
  std::vector<nlohmann::json> rows;
  for (const std::string& line : lines(read_text(run / "metrics.jsonl"))) {
    nlohmann::json row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (row.is_discarded()) ADD_FAILURE() << "a line of " << (run / "metrics.jsonl") << " is not JSON: " << line;
    else rows.push_back(std::move(row));
  }
  return rows;
}

// The rows without the timing fields, which differ between runs: what a resumed run must reproduce.
inline std::vector<nlohmann::json> metrics_rows_without_timing(const fs::path& run) {
  std::vector<nlohmann::json> rows = metrics_rows(run);
  for (auto& row : rows) {
    row.erase("samples_per_sec");
    row.erase("seconds");
  }
  return rows;
}

// A metric of a row as a double: its number, or NaN/±inf from the "NaN"/"Infinity"/"-Infinity" strings
// that stand for them (JSON has no such numbers).
inline double metric(const nlohmann::json& row, const std::string& key) {
  const nlohmann::json& v = row.at(key);
  return v.is_string() ? std::stod(v.get<std::string>()) : v.get<double>();
}

// Expects no temporary file ("*.tmp*") in `dir`: every write finished or was cleaned up.
inline void expect_no_temporaries(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path() << " left behind";
}

// A tensor of a safetensors file as its name, dtype and raw bytes.
struct TensorBytes {
  std::string name, dtype, bytes;
};

// The tensors of the safetensors file (a checkpoint, weights) whose names start with `prefix`, in file order.
inline std::vector<TensorBytes> tensor_bytes(const fs::path& file, const std::string& prefix = "") {
  std::vector<TensorBytes> out;
  for (const auto& [name, t] : safetensors::load(file.string()).tensors) {
    if (name.rfind(prefix, 0) != 0) continue;
    const Tensor c = t.contiguous();
    out.push_back({name, std::string(dtype_name(c.dtype())),
                   std::string(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.numel()) * c.element_size())});
  }
  return out;
}

// Expects the tensors of `got` whose names start with `prefix` equal to those of `expected` bit for bit
// (names, dtypes, bytes, order), naming each one that differs; an empty selection fails.
inline void expect_same_tensors(const fs::path& got, const fs::path& expected, const std::string& prefix = "") {
  const std::vector<TensorBytes> a = tensor_bytes(got, prefix), b = tensor_bytes(expected, prefix);
  ASSERT_FALSE(b.empty()) << expected << " holds no tensor named " << prefix << "*";
  ASSERT_EQ(a.size(), b.size()) << got << " and " << expected << " hold different numbers of " << prefix << "* tensors";
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].dtype, b[i].dtype) << a[i].name;
    EXPECT_TRUE(a[i].bytes == b[i].bytes) << a[i].name << " in " << got << " differs from " << expected;
  }
}

}  // namespace ember::test
