#pragma once
// Strict, typed reading of a YAML config: every section is read through a Section, which knows the file,
// the key path ("optimizer.lr") and where each value came from (a line of the file, or a --set override),
// so every error names the place, the key, what was expected and — for unknown keys — the nearest valid one:
//
//   cfg.yaml:7: optimizer.momentm: unknown key (did you mean 'momentum'?); valid keys: type, lr, ...
//   cfg.yaml:4: data.batch_size: expected an integer >= 1, got '-8'
//   --set optimizer.lr=abc: optimizer.lr: expected a number > 0, got 'abc'
//
// All errors are ConfigError (an ember::Error): the apps exit with code 2 on them.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"

namespace ember::app {

// A usage or configuration error (exit code 2), as opposed to a failure while running (exit code 1).
class ConfigError : public Error {
 public:
  using Error::Error;
};

// Where values came from: the file name, and the --set overrides by key path.
struct Origins {
  std::string file;
  std::map<std::string, std::string> overrides;  // "optimizer.lr" -> "--set optimizer.lr=abc"
  // "cfg.yaml:12" for a node of the file; the --set text for a path set (or under one set) by an override.
  std::string where(const std::string& path, const YAML::Node& node) const;
};

// Applies "key.path=value" to `root` (value parsed as YAML, so "[1, 2]" is a list) and records its
// origin. Numeric components index lists ("model.0.out_features=128"). Throws ConfigError when the text
// has no '=' or an empty key, or a component walks into a scalar or past a list's end.
void apply_override(YAML::Node& root, const std::string& text, Origins& origins);

// Throws ConfigError for a key given twice in one map, at any depth of `root` (YAML itself would keep the
// first silently): "cfg.yaml:9: epochs: duplicate key (first at line 2); keep one of them".
void reject_duplicate_keys(const YAML::Node& root, const std::string& file);

// Scalar parsing: nullopt unless the whole text is one (integers are decimal; numbers also take
// nan, inf, .nan, .inf; booleans are true/false).
std::optional<int64_t> parse_int(const std::string& text);
std::optional<double> parse_number(const std::string& text);
std::optional<bool> parse_bool(const std::string& text);

class Section {
 public:
  // `node` must be a map (or null/absent: all keys take their defaults). Throws otherwise.
  Section(YAML::Node node, std::string path, const Origins& origins);

  bool has(const std::string& key) const;
  // Typed values: `fallback` when the key is absent (nullopt: the key is required). `ok` says whether a
  // value is allowed; `range` ("> 0") describes the allowed ones in the error. Throws ConfigError for a
  // missing required key, a value of another type, or one `ok` rejects.
  int64_t integer(const std::string& key, std::optional<int64_t> fallback,
                  const std::function<bool(int64_t)>& ok = {}, const char* range = "");
  double number(const std::string& key, std::optional<double> fallback, const std::function<bool(double)>& ok = {},
                const char* range = "");
  bool boolean(const std::string& key, bool fallback);
  std::string string(const std::string& key, std::optional<std::string> fallback);
  // One of `choices` (required when `fallback` is empty); the error lists them and suggests the nearest.
  std::string choice(const std::string& key, const std::string& fallback, const std::vector<std::string>& choices);
  // Lists: `ok` and `range` apply to each item. One number stands for a list of one.
  std::vector<double> numbers(const std::string& key, std::optional<std::vector<double>> fallback,
                              const std::function<bool(double)>& ok = {}, const char* range = "");
  std::vector<int64_t> integers(const std::string& key, std::optional<std::vector<int64_t>> fallback,
                                const std::function<bool(int64_t)>& ok = {}, const char* range = "");
  // A nested section (a map, or absent).
  Section section(const std::string& key);
  YAML::Node node(const std::string& key) const { return node_[key]; }

  // Throws ConfigError for the first key of the map not in `valid`, with a did-you-mean among them.
  void reject_unknown(const std::vector<std::string>& valid) const;

  [[noreturn]] void fail(const std::string& key, const std::string& what) const;
  std::string key_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const Origins& origins() const { return origins_; }
  const YAML::Node& yaml() const { return node_; }

 private:
  YAML::Node scalar(const std::string& key, const char* expected);

  YAML::Node node_;
  std::string path_;
  const Origins& origins_;
};

}  // namespace ember::app
