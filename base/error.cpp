#include "base/error.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ember {
namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string did_you_mean(const std::string& word, const std::vector<std::string>& choices) {
  const std::string* best = nullptr;
  size_t best_d = std::max<size_t>(1, word.size() / 3) + 1;
  for (const std::string& c : choices) {
    const size_t d = edit_distance(word, c);
    if (d < best_d) best = &c, best_d = d;
  }
  return best != nullptr ? " (did you mean '" + *best + "'?)" : "";
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : separator) + s;
  return out;
}

std::string system_error_message(const std::string& what, const std::string& path) {
  return what + " '" + path + "': " + std::strerror(errno);
}

}  // namespace ember
