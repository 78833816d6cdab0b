#include "apps/yaml_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

namespace ember::app {
namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i)
    if (i == text.size() || text[i] == sep) {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

std::string shown(const YAML::Node& node) {
  if (node.IsScalar()) return "'" + node.Scalar() + "'";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a map";
  return "nothing";
}

// The `kind` (e.g. "an integer") at a key whose node is n, nullopt where the key is missing (then fallback,
// or it is required): parse(scalar), which must pass ok, as `item range` (e.g. "a finite number > 0") says.
// fail(what) must throw.
template <typename T, typename Parse, typename Ok, typename Fail>
T one_item(const std::optional<YAML::Node>& node, const std::optional<T>& fallback, const char* kind,
           const char* item, const char* range, Parse parse, Ok ok, Fail fail) {
  if (!node) {
    if (!fallback) fail(std::string("missing required key (") + kind + " " + range + ")");
    return *fallback;
  }
  if (!node->IsScalar()) fail(std::string("expected ") + kind + " " + range + ", got " + shown(*node));
  const std::optional<T> v = parse(node->Scalar());
  if (!v || !ok(*v)) fail(std::string("expected ") + item + " " + range + ", got '" + node->Scalar() + "'");
  return *v;
}

// The list of `kind` (e.g. "integers") at a key whose node is n, nullopt where the key is missing (then
// fallback, or it is required): one scalar stands for a list of one (`size: 224` for `size: [224]`); each
// item is parse(scalar) and must pass ok, as `items range` (e.g. "integers >= 1") says.
// fail(what) must throw.
template <typename T, typename Parse, typename Ok, typename Fail>
std::vector<T> list_items(const std::optional<YAML::Node>& node, const std::optional<std::vector<T>>& fallback,
                          const char* kind, const char* items, const char* range, Parse parse, Ok ok, Fail fail) {
  if (!node) {
    if (!fallback) fail(std::string("missing required key (a list of ") + kind + " " + range + ")");
    return *fallback;
  }
  const YAML::Node& n = *node;
  const std::string expected = std::string(items) + (*range != 0 ? " " : "") + range;
  if (n.IsScalar()) {
    const std::optional<T> v = parse(n.Scalar());
    if (!v || !ok(*v)) fail("expected a list of " + expected + " (or one of them), got '" + n.Scalar() + "'");
    return {*v};
  }
  if (!n.IsSequence()) fail("expected a list of " + expected + ", got " + shown(n));
  std::vector<T> out;
  for (const auto& item : n) {
    const std::optional<T> v = item.IsScalar() ? parse(item.Scalar()) : std::nullopt;
    if (!v || !ok(*v)) fail("expected a list of " + expected + ", got the item " + shown(item));
    out.push_back(*v);
  }
  return out;
}

}  // namespace

std::string Origins::where(const std::string& path, const YAML::Node& node) const {
  // The longest overridden prefix of `path` wins: "--set data={...}" covers "data.batch_size".
  for (std::string p = path;;) {
    if (const auto it = overrides.find(p); it != overrides.end()) return it->second;
    const size_t dot = p.rfind('.');
    if (dot == std::string::npos) break;
    p.resize(dot);
  }
  const YAML::Mark mark = node.Mark();
  return mark.line >= 0 ? file + ":" + std::to_string(mark.line + 1) : file;
}

void apply_override(YAML::Node& root, const std::string& text, Origins& origins) {
  const std::string origin = "--set " + text;
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError(origin + ": expected key.path=value, e.g. --set optimizer.lr=0.01");
  const std::string path = text.substr(0, eq);
  const std::vector<std::string> keys = split(path, '.');
  YAML::Node value;
  try {
    value = YAML::Load(text.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw ConfigError(origin + ": the value is not valid YAML: " + e.msg);
  }
  YAML::Node cur = root;
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string& key = keys[i];
    if (key.empty()) throw ConfigError(origin + ": empty component in the key '" + path + "'");
    const bool last = i + 1 == keys.size();
    if (cur.IsSequence()) {
      const auto index = parse_int(key);
      if (!index || *index < 0 || *index >= static_cast<int64_t>(cur.size()))
        throw ConfigError(origin + ": '" + key + "' is not an index of the list at '" +
                          join(std::vector<std::string>(keys.begin(), keys.begin() + i), ".") + "' (0.." +
                          std::to_string(static_cast<int64_t>(cur.size()) - 1) + ")");
      if (last) {
        cur[*index] = value;
      } else {
        cur.reset(cur[*index]);  // NOTE: Node::operator= would overwrite the node, reset() rebinds
      }
      continue;
    }
    if (cur.IsScalar())
      throw ConfigError(origin + ": '" + join(std::vector<std::string>(keys.begin(), keys.begin() + i), ".") +
                        "' is a value, not a section");
    if (last) {
      cur[key] = value;
    } else {
      YAML::Node next = cur[key];
      if (!next.IsDefined() || next.IsNull()) {
        cur[key] = YAML::Node(YAML::NodeType::Map);
        next = cur[key];
      }
      cur.reset(next);
    }
  }
  origins.overrides[path] = origin;
}

namespace {

// `path` names `node`; `seen` holds the positions of the maps and lists already checked, so an alias to one
// is walked once (aliases can nest: walking every expansion could take exponential time).
void check_duplicates(const YAML::Node& node, const std::string& path, const std::string& file, std::set<int>& seen) {
  if (!(node.IsSequence() || node.IsMap()) || !seen.insert(node.Mark().pos).second) return;
  if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i)
      check_duplicates(node[i], path + "[" + std::to_string(i) + "]", file, seen);
  } else if (node.IsMap()) {
    std::map<std::string, int> lines;  // key -> the line it was first given at
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) continue;
      const std::string& key = kv.first.Scalar();
      const std::string key_path = path.empty() ? key : path + "." + key;
      const int line = kv.first.Mark().line + 1;
      if (const auto [it, fresh] = lines.emplace(key, line); !fresh)
        throw ConfigError(file + ":" + std::to_string(line) + ": " + key_path + ": duplicate key (first at line " +
                          std::to_string(it->second) + "); keep one of them");
      check_duplicates(kv.second, key_path, file, seen);
    }
  }
}

}  // namespace

void reject_duplicate_keys(const YAML::Node& root, const std::string& file) {
  std::set<int> seen;
  check_duplicates(root, "", file, seen);
}

std::optional<int64_t> parse_int(const std::string& text) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const char* begin = text.data() + (!text.empty() && text[0] == '+' ? 1 : 0);
  const auto r = std::from_chars(begin, end, v);
  if (text.empty() || r.ec != std::errc() || r.ptr != end) return std::nullopt;
  return v;
}

std::optional<double> parse_number(const std::string& text) {
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "nan" || t == ".nan") return std::nan("");
  if (t == "inf" || t == ".inf" || t == "+inf" || t == "+.inf") return INFINITY;
  if (t == "-inf" || t == "-.inf") return -INFINITY;
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) return std::nullopt;
  return v;
}

std::optional<bool> parse_bool(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  return std::nullopt;
}

Section::Section(YAML::Node node, std::string path, const Origins& origins)
    : node_(node), path_(std::move(path)), origins_(origins) {  // YAML::Node copies are cheap handles
  if (node_.IsDefined() && !node_.IsNull() && !node_.IsMap())
    throw ConfigError(origins_.where(path_, node_) + ": " + (path_.empty() ? "the config" : path_) +
                      ": expected a map of keys, got " + shown(node_));
}

bool Section::has(const std::string& key) const {
  return node_.IsMap() && node_[key].IsDefined() && !node_[key].IsNull();
}

void Section::fail(const std::string& key, const std::string& what) const {
  const YAML::Node n = has(key) ? node_[key] : node_;
  throw ConfigError(origins_.where(key_path(key), n) + ": " + key_path(key) + ": " + what);
}

YAML::Node Section::scalar(const std::string& key, const char* expected) {
  const YAML::Node n = node_[key];
  if (!n.IsScalar()) fail(key, std::string("expected ") + expected + ", got " + shown(n));
  return n;
}

int64_t Section::integer(const std::string& key, std::optional<int64_t> fallback,
                         const std::function<bool(int64_t)>& ok, const char* range) {
  return one_item<int64_t>(has(key) ? node_[key] : std::optional<YAML::Node>(), fallback, "an integer", "an integer",
                           range, parse_int, [&](int64_t v) { return !ok || ok(v); },
                           [&](const std::string& what) { fail(key, what); });
}

double Section::number(const std::string& key, std::optional<double> fallback, const std::function<bool(double)>& ok,
                       const char* range) {
  // NaN fails every range: a finite value is always required.
  return one_item<double>(has(key) ? node_[key] : std::optional<YAML::Node>(), fallback, "a number",
                          "a finite number", range, parse_number,
                          [&](double v) { return std::isfinite(v) && (!ok || ok(v)); },
                          [&](const std::string& what) { fail(key, what); });
}

bool Section::boolean(const std::string& key, bool fallback) {
  if (!has(key)) return fallback;
  const YAML::Node n = scalar(key, "true or false");
  const auto v = parse_bool(n.Scalar());
  if (!v) fail(key, "expected true or false, got '" + n.Scalar() + "'");
  return *v;
}

std::string Section::string(const std::string& key, std::optional<std::string> fallback) {
  if (!has(key)) {
    if (!fallback) fail(key, "missing required key (a string)");
    return *fallback;
  }
  return scalar(key, "a string").Scalar();
}

std::string Section::choice(const std::string& key, const std::string& fallback, const std::vector<std::string>& choices) {
  if (fallback.empty() && !has(key)) fail(key, "missing required key (one of " + join(choices) + ")");
  const std::string v = string(key, fallback);
  if (std::find(choices.begin(), choices.end(), v) == choices.end())
    fail(key, "unknown value '" + v + "'" + did_you_mean(v, choices) + "; expected one of " + join(choices));
  return v;
}

std::vector<double> Section::numbers(const std::string& key, std::optional<std::vector<double>> fallback,
                                     const std::function<bool(double)>& ok, const char* range) {
  return list_items<double>(has(key) ? node_[key] : std::optional<YAML::Node>(), fallback, "numbers", "finite numbers",
                            range, parse_number, [&](double v) { return std::isfinite(v) && (!ok || ok(v)); },
                            [&](const std::string& what) { fail(key, what); });
}

std::vector<int64_t> Section::integers(const std::string& key, std::optional<std::vector<int64_t>> fallback,
                                       const std::function<bool(int64_t)>& ok, const char* range) {
  return list_items<int64_t>(has(key) ? node_[key] : std::optional<YAML::Node>(), fallback, "integers", "integers",
                             range, parse_int, [&](int64_t v) { return !ok || ok(v); },
                             [&](const std::string& what) { fail(key, what); });
}

Section Section::section(const std::string& key) {
  return Section(has(key) ? node_[key] : YAML::Node(), key_path(key), origins_);
}

void Section::reject_unknown(const std::vector<std::string>& valid) const {
  if (!node_.IsMap()) return;
  for (const auto& kv : node_) {
    const std::string key = kv.first.Scalar();
    if (std::find(valid.begin(), valid.end(), key) != valid.end()) continue;
    throw ConfigError(origins_.where(key_path(key), kv.first) + ": " + key_path(key) + ": unknown key" +
                      did_you_mean(key, valid) + "; valid keys" + (path_.empty() ? "" : " in '" + path_ + "'") +
                      ": " + join(valid));
  }
}

}  // namespace ember::app
