// What the key table derives beyond reading (apps/config_schema.h): a row's value read and written, the
// range text's check, the table's self-check, the resolved config.yaml, the config hash and docs/config.md.
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "apps/config.h"
#include "base/format.h"

namespace ember::app {
namespace schema {
namespace {

template <typename V>
std::optional<V> as(const std::optional<Value>& v) {
  return v ? std::optional<V>(std::get<V>(*v)) : std::nullopt;
}

// cpu | auto | cuda | cuda:N — the names Device::parse reads; whether the machine has that device is
// checked where the device is used (config_device), so a config stays readable on any machine.
bool is_device_name(const std::string& text) {
  if (text == "cpu" || text == "auto" || text == "cuda") return true;
  const std::string digits = text.rfind("cuda:", 0) == 0 ? text.substr(5) : "";
  return !digits.empty() && digits.size() <= 9 &&
         std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::boolean: return "boolean";
    case Kind::integer: return "integer";
    case Kind::number: return "number";
    case Kind::string: return "string";
    case Kind::choice: return "choice";
    case Kind::file: return "file path";
    case Kind::device: return "device";
    case Kind::numbers: return "list of numbers";
    case Kind::integers: return "list of integers";
    case Kind::list: return "list of maps";
    case Kind::choices: return "list of choices";
  }
  return "";
}

// A value as YAML text, for docs and messages: "64", "0.001", "[0.9, 0.999]", "\"\"".
std::string value_text(Kind kind, const Value& v) {
  YAML::Emitter out;
  emit_value(out, kind, v);
  const std::string text = out.c_str();
  return text.empty() ? "\"\"" : text;
}

// Whether `v` (a default) passes the row's own checks.
bool default_ok(const Key& k, const Value& v) {
  const auto in = [&](double x) { return in_range(x, k.range); };
  switch (k.kind) {
    case Kind::integer: return in(double(std::get<int64_t>(v)));
    case Kind::number: return in(std::get<double>(v));
    case Kind::choice: {
      const auto& s = std::get<std::string>(v);
      return std::find(k.choices.begin(), k.choices.end(), s) != k.choices.end();
    }
    case Kind::device: return is_device_name(std::get<std::string>(v));
    case Kind::choices: {
      const auto& list = std::get<std::vector<std::string>>(v);
      return std::all_of(list.begin(), list.end(), [&](const std::string& s) {
        return std::find(k.choices.begin(), k.choices.end(), s) != k.choices.end();
      });
    }
    case Kind::numbers: {
      const auto& list = std::get<std::vector<double>>(v);
      return (k.length == 0 || list.size() == k.length) && std::all_of(list.begin(), list.end(), in);
    }
    case Kind::integers: {
      const auto& list = std::get<std::vector<int64_t>>(v);
      return (k.length == 0 || list.size() == k.length) &&
             std::all_of(list.begin(), list.end(), [&](int64_t x) { return in(double(x)); });
    }
    default: return true;
  }
}

}  // namespace

std::pair<std::string, std::string> split_range(const std::string& range) {
  const size_t end = range.rfind("in ", 0) == 0 ? range.find_first_of("])") + 1 : range.find(" (");
  if (end == 0 || end >= range.size()) return {range, ""};
  return {range.substr(0, end), range.substr(end)};
}

std::string Key::section() const {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

std::string Key::leaf() const { return path.substr(path.rfind('.') + 1); }

bool in_range(double v, const std::string& range) {
  if (range.empty()) return true;
  const std::string text = split_range(range).first;
  const auto number = [&](const std::string& t) {
    const auto d = parse_number(t);
    if (!d) throw std::logic_error("config key table: cannot read the range '" + range + "'");
    return *d;
  };
  if (text.rfind(">= ", 0) == 0) return v >= number(text.substr(3));
  if (text.rfind("> ", 0) == 0) return v > number(text.substr(2));
  // "in [lo, hi)" with [ or ( and ] or )
  const size_t comma = text.find(", ");
  if (text.rfind("in ", 0) != 0 || text.size() < 8 || comma == std::string::npos ||
      (text[3] != '[' && text[3] != '(') || (text.back() != ']' && text.back() != ')'))
    throw std::logic_error("config key table: cannot read the range '" + range + "'");
  const double lo = number(text.substr(4, comma - 4)), hi = number(text.substr(comma + 2, text.size() - comma - 3));
  return (text[3] == '[' ? v >= lo : v > lo) && (text.back() == ']' ? v <= hi : v < hi);
}

Value read_value(Section& s, const Key& k, const std::optional<Value>& fallback) {
  const std::string key = k.leaf();
  const char* range = k.range.c_str();
  const auto ok = [&k](double v) { return in_range(v, k.range); };
  switch (k.kind) {
    case Kind::boolean: return s.boolean(key, fallback && std::get<bool>(*fallback));
    case Kind::integer: return s.integer(key, as<int64_t>(fallback), [&](int64_t v) { return ok(double(v)); }, range);
    case Kind::number: return s.number(key, as<double>(fallback), ok, range);
    case Kind::choice: return s.choice(key, fallback ? std::get<std::string>(*fallback) : "", k.choices);
    case Kind::string:
    case Kind::file:
    case Kind::device: {
      std::string v = s.string(key, as<std::string>(fallback));
      if (k.kind == Kind::file && !std::filesystem::is_regular_file(v))
        s.fail(key, "the file '" + v + "' does not exist");
      if (k.kind == Kind::device && !is_device_name(v))
        s.fail(key, "'" + v + "' is not a device; expected cpu, cuda, cuda:N (N >= 0) or auto");
      return v;
    }
    case Kind::numbers:
    case Kind::integers: {
      const bool numbers = k.kind == Kind::numbers;
      const Value v = numbers ? Value(s.numbers(key, as<std::vector<double>>(fallback), ok, range))
                              : Value(s.integers(key, as<std::vector<int64_t>>(fallback),
                                                 [&](int64_t x) { return ok(double(x)); }, range));
      const size_t n = numbers ? std::get<std::vector<double>>(v).size() : std::get<std::vector<int64_t>>(v).size();
      if (k.length != 0 && n != k.length)
        s.fail(key, "expected a list of " + std::to_string(k.length) + (numbers ? " numbers" : " integers") +
                        (k.range.empty() ? "" : " " + k.range) + ", got " + std::to_string(n) +
                        (fallback ? " (e.g. " + value_text(k.kind, *fallback) + ")" : ""));
      return v;
    }
    case Kind::choices: {
      if (!s.has(key)) return fallback ? *fallback : Value(std::vector<std::string>{});
      const YAML::Node node = s.node(key);
      std::vector<std::string> items;
      const auto item = [&](const YAML::Node& n) {
        const std::string text = n.IsScalar() ? n.Scalar() : "";
        if (std::find(k.choices.begin(), k.choices.end(), text) == k.choices.end())
          s.fail(key, (n.IsScalar() ? "'" + text + "' is not one of " : std::string("expected a list of ")) +
                          join(k.choices) + did_you_mean(text, k.choices));
        if (std::find(items.begin(), items.end(), text) != items.end()) s.fail(key, "'" + text + "' is listed twice");
        items.push_back(text);
      };
      if (node.IsSequence()) {
        for (const auto& n : node) item(n);
      } else if (node.IsScalar()) {
        item(node);
      } else if (!node.IsNull()) {
        s.fail(key, "expected a list of: " + join(k.choices));
      }
      return items;
    }
    case Kind::list: break;
  }
  throw std::logic_error("config key table: " + k.path + " is a list; it has its own reader");
}

void emit_value(YAML::Emitter& out, Kind kind, const Value& value) {
  switch (kind) {
    case Kind::boolean: out << std::get<bool>(value); break;
    case Kind::integer: out << std::get<int64_t>(value); break;
    case Kind::number: out << format_shortest(std::get<double>(value)); break;
    case Kind::numbers:
      out << YAML::Flow << YAML::BeginSeq;
      for (double v : std::get<std::vector<double>>(value)) out << format_shortest(v);
      out << YAML::EndSeq;
      break;
    case Kind::integers:
      out << YAML::Flow << YAML::BeginSeq;
      for (int64_t v : std::get<std::vector<int64_t>>(value)) out << v;
      out << YAML::EndSeq;
      break;
    case Kind::choices:
      out << YAML::Flow << YAML::BeginSeq;
      for (const std::string& v : std::get<std::vector<std::string>>(value)) out << v;
      out << YAML::EndSeq;
      break;
    case Kind::list: throw std::logic_error("config key table: a list has its own writer");
    default: out << std::get<std::string>(value);
  }
}

std::string check_keys(std::span<const Key* const> keys) {
  std::string problems;
  const auto problem = [&](const Key& k, const std::string& what) { problems += k.path + ": " + what + "\n"; };
  std::vector<std::string> seen_sections;
  for (size_t i = 0; i < keys.size(); ++i) {
    const Key& k = *keys[i];
    if (std::count(k.path.begin(), k.path.end(), '.') > 1) problem(k, "sections nest one level deep");
    for (size_t j = 0; j < i; ++j)  // several rows of a key: each for another value of the same `when` key
      if (keys[j]->path == k.path && (k.when_key.empty() || keys[j]->when_key != k.when_key ||
                                      keys[j]->when_value == k.when_value))
        problem(k, "listed twice (rows of one key need the same 'when' key with different values)");
    if (i == 0 || keys[i - 1]->section() != k.section()) {
      const bool seen = std::find(seen_sections.begin(), seen_sections.end(), k.section()) != seen_sections.end();
      if (seen && !k.section().empty())
        problem(k, "the rows of section '" + k.section() + "' must be contiguous (the resolved config writes them so)");
      seen_sections.push_back(k.section());
    }
    if (k.help.empty()) problem(k, "no help text");
    try {
      in_range(0, k.range);
    } catch (const std::logic_error& e) {
      problem(k, e.what());
    }
    if (!k.range.empty() && k.kind != Kind::integer && k.kind != Kind::number && k.kind != Kind::numbers &&
        k.kind != Kind::integers)
      problem(k, "a range on a key that is not numeric");
    if ((k.kind == Kind::choice || k.kind == Kind::choices) == k.choices.empty())
      problem(k, "choices go with kind choice or choices, and only with them");
    if (k.hashed_when_set && (!k.fallback || !k.hashed)) problem(k, "hashed_when_set_only needs a constant default and a hashed key");
    if (k.kind == Kind::list) continue;
    const int defaults = int(k.fallback.has_value()) + int(k.required) + int(!k.default_doc.empty());
    if (defaults != 1) problem(k, "needs exactly one of a default, a computed default or required");
    if (k.required && k.kind == Kind::boolean) problem(k, "a boolean needs a default");
    try {
      if (k.fallback && !default_ok(k, *k.fallback)) problem(k, "the default fails the key's own check");
    } catch (const std::exception& e) {
      problem(k, std::string("the default does not fit the kind: ") + e.what());
    }
    if (!k.when_key.empty()) {
      const auto it = std::find_if(keys.begin(), keys.begin() + i, [&](const Key* o) { return o->path == k.when_key; });
      if (it == keys.begin() + i || (*it)->kind != Kind::choice ||
          std::find((*it)->choices.begin(), (*it)->choices.end(), k.when_value) == (*it)->choices.end())
        problem(k, "'when' needs an earlier choice key with the value '" + k.when_value + "'");
    }
  }
  return problems;
}

std::string describe(std::span<const Key* const> keys) {
  std::string out = "| key | type | default | allowed | resume | description |\n|---|---|---|---|---|---|\n";
  for (const Key* k : keys) {
    std::string type = kind_name(k->kind);
    if (k->length != 0)
      type = "list of " + std::to_string(k->length) + (k->kind == Kind::numbers ? " numbers" : " integers");
    const std::string def = k->required             ? "**required**"
                            : !k->default_doc.empty() ? k->default_doc
                            : k->fallback             ? "`" + value_text(k->kind, *k->fallback) + "`"
                                                      : "`[]`";  // a list of maps that may be absent
    const auto [range, note] = split_range(k->range);
    std::string allowed = range.empty() ? "" : "`" + range + "`" + note;
    if (k->kind == Kind::numbers || k->kind == Kind::integers) allowed = allowed.empty() ? "" : "each " + allowed;
    if (k->kind == Kind::choices) allowed = "each of ";
    for (const std::string& c : k->choices) allowed += (allowed.empty() || allowed == "each of " ? "`" : ", `") + c + "`";
    if (k->kind == Kind::file) allowed = "an existing file";
    if (k->kind == Kind::device) allowed = "`cpu`, `cuda`, `cuda:N`, `auto`";
    const std::string when = k->when_key.empty() ? "" : "Only with `" + k->when_key + ": " + k->when_value + "`. ";
    out += "| `" + k->path + "` | " + type + " | " + def + " | " + allowed + " | " +
           (k->hashed ? "must match" : "may change") + " | " + when + k->help + " |\n";
  }
  return out;
}

}  // namespace schema

std::string to_yaml(const TrainConfig& config) {
  YAML::Emitter out;
  schema::emit_fields(out, config_fields(), config, true);
  return std::string(out.c_str()) + "\n";
}

std::string config_hash(const TrainConfig& config) {
  YAML::Emitter out;
  schema::emit_fields(out, config_fields(), config, false);
  uint64_t h = 1469598103934665603ULL;  // FNV-1a: the same on every machine and build
  for (const char* p = out.c_str(); *p != 0; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 1099511628211ULL;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string config_reference() {
  std::string out =
      "# ember-train config reference\n\n"
      "<!-- Generated from the key table in apps/config.cpp by `ember-train --print-config-docs > docs/config.md`;\n"
      "     do not edit: tests/test_config.cpp fails when this file and the table differ. -->\n\n"
      "An ember-train config is a YAML file (configs/fashion_mlp.yaml is a full example). Every key is checked: an "
      "unknown key (with the nearest valid one), a key given twice, a wrong type, a missing required key or a value "
      "outside its range stops ember-train with exit code 2 and a message naming the file and line, the key and "
      "what was expected. `--set key.path=value` overrides any key through the same checks (list items by index: "
      "`--set model.1.out_features=512`). The run directory gets the resolved config (every key below, defaults "
      "filled in) as `config.yaml`.\n\n"
      "*resume*: a checkpoint holds a hash of the keys marked \"must match\"; `--resume` refuses a config that "
      "changes one of them. The others may change between runs.\n";
  const auto fields = config_fields();
  std::vector<std::string> sections;
  for (const auto& f : fields)
    if (std::find(sections.begin(), sections.end(), f.section()) == sections.end()) sections.push_back(f.section());
  for (const std::string& section : sections) {
    std::vector<const schema::Key*> keys;
    for (const auto& f : fields)
      if (f.section() == section) keys.push_back(&f);
    out += "\n## " + (section.empty() ? std::string("Top level") : "`" + section + "`") + "\n\n";
    out += schema::describe(keys);
    for (const auto& f : fields)
      if (f.section() == section && f.kind == schema::Kind::list)
        out += "\n### `" + f.path + "` items\n\n" + f.doc_list();
  }
  return out;
}

}  // namespace ember::app
