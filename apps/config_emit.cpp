// What the key table derives beyond reading (apps/config_schema.h): a row's value read and written, the
// the resolved config.yaml, the config hash and docs/config.md (the rows and their own checks: nn/schema.h).
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

using nn::schema::is_device_name;

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
    case Kind::pair: return "integer or [h, w]";
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

}  // namespace

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
    case Kind::list:
    case Kind::pair: break;
  }
  throw std::logic_error("config key table: " + k.path + " is a list or a layer size; it has its own reader");
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
    case Kind::pair:
      if (const auto* n = std::get_if<int64_t>(&value)) out << *n;
      else emit_value(out, Kind::integers, value);
      break;
    case Kind::list: throw std::logic_error("config key table: a list has its own writer");
    default: out << std::get<std::string>(value);
  }
}

std::string describe(std::span<const Key* const> keys) {
  std::string out = "| key | type | default | allowed | resume | description |\n|---|---|---|---|---|---|\n";
  for (const Key* k : keys) {
    std::string type = kind_name(k->kind);
    if (k->kind == Kind::list && !k->default_doc.empty()) type = "name or map";  // data.tokenizer (config_schema.h)
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
        out += "\n### `" + f.path + (f.default_doc.empty() ? "` items" : "` as a map") + "\n\n" + f.doc_list();
  }
  return out;
}

}  // namespace ember::app
