#pragma once
// Helpers for the app tests: run ember-train/-eval/-devices as subprocesses (their paths come from
// compile definitions), write configs into a scratch directory, read metrics back.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ember::test {

namespace fs = std::filesystem;

struct Result {
  int rc = -1;
  std::string output;  // stdout and stderr together
};

// Runs a shell command line, capturing its output; rc is the exit code (128 + signal when killed).
inline Result run(const std::string& command) {
  Result r;
  std::FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = ::pclose(pipe);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

inline std::string quoted(const std::string& s) { return "'" + s + "'"; }

// A fresh scratch directory per test, removed afterwards.
class Scratch {
 public:
  Scratch() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("ember_apps_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~Scratch() { fs::remove_all(dir_); }
  const fs::path& dir() const { return dir_; }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }

 private:
  fs::path dir_;
};

inline std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream s(text);
  for (std::string line; std::getline(s, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// The value of "key": in one metrics.jsonl line (as text, e.g. "0.4123" or "null").
inline std::string json_field(const std::string& line, const std::string& key) {
  const size_t at = line.find("\"" + key + "\":");
  if (at == std::string::npos) return "";
  const size_t start = at + key.size() + 3;
  return line.substr(start, line.find_first_of(",}", start) - start);
}

// A metrics.jsonl line without the timing fields, which differ between runs.
inline std::string without_timing(const std::string& line) {
  return line.substr(0, line.find(",\"samples_per_sec\""));
}

}  // namespace ember::test
