#pragma once
// The test-only Python checkers (TensorBoard's reader, onnxruntime) live in .venv-test/, made by
// scripts/test_venv.sh from tools/test-requirements.txt. A test that needs one asks for the interpreter:
//
//   const std::string py = ember::test::checker_python();  // skips (or fails in CI) when it is missing
//   if (py.empty()) return;
//
// Where it is missing the test skips with a reason, unless EMBER_REQUIRE_PYTHON_CHECKS=1 (scripts/test.sh
// sets it): then the test fails, so CI cannot pass without having run the real checkers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#ifndef EMBER_SOURCE_DIR
#error "tests/CMakeLists.txt defines EMBER_SOURCE_DIR for every test"
#endif

namespace ember::test {

inline std::string checker_python() {
  std::filesystem::path py = EMBER_SOURCE_DIR "/.venv-test/bin/python";
  if (const char* env = std::getenv("EMBER_TEST_PYTHON"); env && *env) py = env;
  if (std::filesystem::exists(py)) return py.string();
  const std::string why = py.string() + " is missing: run scripts/test_venv.sh (installs TensorBoard's reader "
                          "and onnxruntime from tools/test-requirements.txt)";
  const char* require = std::getenv("EMBER_REQUIRE_PYTHON_CHECKS");
  if (require && std::string(require) == "1") {
    ADD_FAILURE() << why;
  } else {
    GTEST_MESSAGE_(why.c_str(), ::testing::TestPartResult::kSkip);  // GTEST_SKIP() without its `return`
  }
  return {};
}

}  // namespace ember::test
