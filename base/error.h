#pragma once
// ember::Error — the one exception type Ember throws. Messages name the op, the values involved and what
// the user can do about it.
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ember {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// " (did you mean 'momentum'?)" when a choice is close to `word` (edit distance ≤ 1/3 of its length, at
// least 1), else "". For messages about unknown keys and names.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& choices);
// "a, b, c" — for messages that list the valid choices.
std::string join(const std::vector<std::string>& items, const char* separator = ", ");
// "cannot write 'run/x.tmp.42': No space left on device" — `what`, the path and errno's text, for a
// failed system call on a file (call it before anything else can change errno).
std::string system_error_message(const std::string& what, const std::string& path);

namespace detail {
template <typename... Args>
[[noreturn]] void throw_error(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  throw Error(out.str());
}
}  // namespace detail

}  // namespace ember

// EMBER_CHECK(cond, "op: ", what, "; do this") — throws ember::Error built from the streamed pieces.
#define EMBER_CHECK(cond, ...)                                   \
  do {                                                           \
    if (!(cond)) [[unlikely]] ::ember::detail::throw_error(__VA_ARGS__); \
  } while (0)
