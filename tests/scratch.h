#pragma once
// test::Scratch — the one temporary directory of the tests: fresh for each instance, removed with
// everything in it at scope exit, and named after the running test so that a leftover says whose it is.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace ember::test {

class Scratch {
 public:
  // <system temp dir>/ember_<suite>_<test>_<pid>_<n>: unique per process and per instance.
  Scratch() {
    static std::atomic<int> instances{0};
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info != nullptr ? std::string(info->test_suite_name()) + "_" + info->name() : "outside_a_test";
    std::replace(name.begin(), name.end(), '/', '_');  // parameterized tests: "Suite/Name/0"
    dir_ = std::filesystem::temp_directory_path() /
           ("ember_" + name + "_" + std::to_string(::getpid()) + "_" + std::to_string(instances++));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~Scratch() {
    std::error_code ignored;  // NOTE: never throw from here (a test may have left a read-only directory)
    std::filesystem::remove_all(dir_, ignored);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  // The path of `name` in the directory.
  std::string file(const std::string& name) const { return (dir_ / name).string(); }
  // Writes `text` to `name` in the directory; returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ / name) << text;
    return file(name);
  }

 private:
  std::filesystem::path dir_;
};

}  // namespace ember::test
