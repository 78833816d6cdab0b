#pragma once
// The config's key descriptors: each ember-train key is one row, Field{path, accessor, default, range or
// choices, help}, in one table (apps/config.cpp: config_fields(), and transform_fields() for the items of
// data.transforms). Everything else is derived from the rows, in table order:
//   reading and strict checking   read_fields (unknown keys with did-you-mean, types, ranges, choices,
//                                  required keys, keys used only with another key's value)
//   --set key.path=value          applied to the YAML tree before reading, so it goes through the same rows
//   the resolved config.yaml      emit_fields (every key, defaults filled in)
//   the config hash               emit_fields without the rows marked unhashed (device, output.*)
//   docs/config.md                config_reference() (apps/config_emit.cpp)
// Adding a key: one row (and the member of TrainConfig it fills, whose type the row's kind follows), then
// use the value where it is consumed and regenerate docs/config.md (tests/test_config.cpp says how).
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "apps/yaml_reader.h"

namespace ember::app::schema {

// A key's value; the alternative follows the kind (integers are int64_t, numbers double).
using Value = std::variant<bool, int64_t, double, std::string, std::vector<double>, std::vector<int64_t>,
                           std::vector<std::string>>;

enum class Kind {
  boolean,   // true | false
  integer,   // decimal
  number,    // finite double
  string,    // any text
  choice,    // one of `choices`
  file,      // the path of an existing file
  device,    // cpu | cuda | cuda:N | auto (whether this machine can serve it is checked at use)
  numbers,   // a list of numbers (one number stands for a list of one)
  integers,  // a list of integers
  list,      // a list of maps with their own reader and writer (model, data.transforms)
  choices,   // a list of distinct items, each one of `choices` (one item stands for a list of one)
};

// The S-independent part of a row: what the docs, the checks and the messages need.
struct Key {
  std::string path;                    // "optimizer.lr"; the part before the last '.' is the section
  Kind kind = Kind::string;
  std::optional<Value> fallback;       // the default, if it is a constant
  bool required = false;               // no default: the key must be given (lists too)
  std::string default_doc;             // a default computed from other keys, as the docs show it
  std::string range;                   // "> 0", ">= 1", "in [0, 1)" (per item for lists), then an optional
                                       // " (note)"; "" = any value. The text is also the messages' and docs'.
  std::vector<std::string> choices;    // Kind::choice, Kind::choices
  size_t length = 0;                   // lists: the exact number of items (0 = any)
  std::string when_key, when_value;    // used only when the key `when_key` (same table) is `when_value`
  bool hashed = true;                  // part of config_hash: a resume with another value is refused
  // Left out of config_hash while at its (constant) default: a key added later that leaves the hash of
  // every config not using it unchanged, so that their checkpoints still resume.
  bool hashed_when_set = false;
  std::string help;

  std::string section() const;  // "optimizer" ("" at the top)
  std::string leaf() const;     // "lr"
};

// Range text → check: true when `v` satisfies "> 0", ">= 1", "in [0, 1)", "in (0, 1]"... (a trailing
// " (note)" is ignored; "" allows everything). Throws std::logic_error for text it cannot read — a table bug.
bool in_range(double v, const std::string& range);
// "in [0, 1) (0: off)" → {"in [0, 1)", " (0: off)"}.
std::pair<std::string, std::string> split_range(const std::string& range);

// Reads one key of `section` as `key` describes (kind, range, choices, length); `fallback` when absent.
// Throws ConfigError naming the place, the key and what was expected.
Value read_value(Section& section, const Key& key, const std::optional<Value>& fallback);
// Writes a value as the resolved config does: numbers in their shortest round-tripping form, lists in flow style.
void emit_value(YAML::Emitter& out, Kind kind, const Value& value);

template <typename S>
struct Field : Key {
  Value (*get)(const S&) = nullptr;
  void (*set)(S&, Value) = nullptr;
  Value (*compute)(const S&) = nullptr;  // a default computed from the keys read before this one
  // Kind::list: reads the key of `section` (absent or not) into S; writes its value; documents its items.
  void (*read_list)(Section& section, const std::string& key, S& out) = nullptr;
  void (*emit_list)(YAML::Emitter& out, const S& s) = nullptr;
  std::string (*doc_list)() = nullptr;

  // A row for the member `access` returns (see EMBER_MEMBER): its type gives the kind.
  template <typename Access>
  Field(std::string key_path, Access) {
    using T = std::remove_cvref_t<decltype(Access{}(std::declval<S&>()))>;
    path = std::move(key_path);
    kind = std::is_same_v<T, bool>                   ? Kind::boolean
           : std::is_integral_v<T>                   ? Kind::integer
           : std::is_floating_point_v<T>             ? Kind::number
           : std::is_same_v<T, std::vector<double>>  ? Kind::numbers
           : std::is_same_v<T, std::vector<int64_t>> ? Kind::integers
           : std::is_same_v<T, std::vector<std::string>> ? Kind::choices
                                                     : Kind::string;
    get = [](const S& s) -> Value {
      const T& v = Access{}(s);
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return static_cast<int64_t>(v);
      else return v;
    };
    set = [](S& s, Value v) {
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
        Access{}(s) = static_cast<T>(std::get<int64_t>(v));
      else Access{}(s) = std::get<T>(std::move(v));
    };
  }
  // A row whose value is not one member (e.g. optimizer.betas, stored as beta1 and beta2).
  Field(std::string key_path, Kind k, Value (*getter)(const S&), void (*setter)(S&, Value)) {
    path = std::move(key_path);
    kind = k;
    get = getter;
    set = setter;
  }
  // A list of maps with its own reader, writer and item docs.
  Field(std::string key_path, void (*reader)(Section&, const std::string&, S&),
        void (*writer)(YAML::Emitter&, const S&), std::string (*doc)()) {
    path = std::move(key_path);
    kind = Kind::list;
    read_list = reader;
    emit_list = writer;
    doc_list = doc;
  }

  template <typename T>
  Field&& def(T v) && {
    if constexpr (std::is_same_v<T, bool>) fallback = v;
    else if constexpr (std::is_integral_v<T>) fallback = kind == Kind::number ? Value(double(v)) : Value(int64_t(v));
    else if constexpr (std::is_floating_point_v<T>) fallback = double(v);
    else if constexpr (std::is_convertible_v<T, std::string>) fallback = std::string(v);
    else fallback = Value(std::move(v));
    return std::move(*this);
  }
  Field&& req() && { required = true; return std::move(*this); }
  Field&& computed(Value (*fn)(const S&), std::string doc) && {
    compute = fn;
    default_doc = std::move(doc);
    return std::move(*this);
  }
  Field&& in(std::string r) && { range = std::move(r); return std::move(*this); }
  Field&& one_of(std::vector<std::string> c) && {
    kind = Kind::choice;
    choices = std::move(c);
    return std::move(*this);
  }
  Field&& each_of(std::vector<std::string> c) && {  // a list member (std::vector<std::string>)
    kind = Kind::choices;
    choices = std::move(c);
    return std::move(*this);
  }
  Field&& file() && { kind = Kind::file; return std::move(*this); }
  Field&& device() && { kind = Kind::device; return std::move(*this); }
  Field&& items(size_t n) && { length = n; return std::move(*this); }
  Field&& when(std::string key, std::string value) && {
    when_key = std::move(key);
    when_value = std::move(value);
    return std::move(*this);
  }
  Field&& unhashed() && { hashed = false; return std::move(*this); }
  Field&& hashed_when_set_only() && { hashed_when_set = true; return std::move(*this); }
  Field&& doc(std::string text) && { help = std::move(text); return std::move(*this); }
};

// The accessor of a member (nested members too): Field<TrainConfig>("optimizer.lr", EMBER_MEMBER(optimizer.lr)).
#define EMBER_MEMBER(member) [](auto& s) -> auto& { return s.member; }

// Checks a table's rows against each other: every key has a default, a computed default or is required
// (lists excepted); defaults satisfy their range and choices; ranges parse; a `when` key is an earlier
// choice of the same table; each section's rows are contiguous. Returns the problems, one a line ("" = none).
std::string check_keys(std::span<const Key* const> keys);

// The reference table of `keys` (markdown): key, type, default, allowed values, resume, description.
std::string describe(std::span<const Key* const> keys);

namespace detail {
inline std::string when_value_of(const auto& fields, const auto& s, const std::string& path) {
  for (const auto& f : fields)
    if (f.path == path) return std::get<std::string>(f.get(s));
  return "";
}
}  // namespace detail

// Whether row `f` applies to `s` (its `when` condition holds).
template <typename S>
bool applies(std::span<const Field<S>> fields, const Field<S>& f, const S& s) {
  return f.when_key.empty() || detail::when_value_of(fields, s, f.when_key) == f.when_value;
}

// Reads every row of `fields` from `root` into `out`, in table order. Unknown keys in the maps the table
// describes are refused first (with the nearest valid key); a key given where its `when` does not hold is
// refused, unless another row of the same key applies. `origin`, when given, receives where each key set
// explicitly came from ("cfg.yaml:3", "--set ...").
template <typename S>
void read_fields(std::span<const Field<S>> fields, Section& root, S& out,
                 std::map<std::string, std::string>* origin = nullptr) {
  std::vector<std::string> sections = {""};
  for (const Field<S>& f : fields)
    if (std::find(sections.begin(), sections.end(), f.section()) == sections.end()) sections.push_back(f.section());
  for (const std::string& name : sections) {
    std::vector<std::string> valid;
    for (const Field<S>& f : fields) {
      const std::string child = f.section() == name ? f.leaf() : name.empty() ? f.section() : "";
      if (!child.empty() && std::find(valid.begin(), valid.end(), child) == valid.end()) valid.push_back(child);
    }
    (name.empty() ? root : root.section(name)).reject_unknown(valid);
  }
  for (const Field<S>& f : fields) {
    Section section = f.section().empty() ? root : root.section(f.section());
    const std::string key = f.leaf();
    if (!applies(fields, f, out)) {
      // A key may have several rows, one per value of its `when` key (data.transforms' `size`).
      const auto other = [&](const Field<S>& g) { return &g != &f && g.path == f.path && applies(fields, g, out); };
      if (section.has(key) && std::none_of(fields.begin(), fields.end(), other)) {
        std::string values;  // every value of the `when` key that this key is used with
        for (const Field<S>& g : fields)
          if (g.path == f.path) values += (values.empty() ? "" : " or ") + g.when_value;
        section.fail(key, "only used with " + f.when_key + ": " + values + " (here " + f.when_key + " is " +
                              detail::when_value_of(fields, out, f.when_key) + "); remove it");
      }
      continue;
    }
    if (f.kind == Kind::list) {
      if (f.required && !section.has(key)) section.fail(key, "missing required key: " + f.help);
      f.read_list(section, key, out);
      continue;
    }
    f.set(out, read_value(section, f, f.compute ? std::optional<Value>(f.compute(out)) : f.fallback));
    if (origin && section.has(key)) (*origin)[f.path] = section.origins().where(f.path, section.node(key));
  }
}

// Writes the rows of `fields` that apply to `s` as one YAML map (sections as nested maps), in table order;
// without `all`, only the hashed rows.
template <typename S>
void emit_fields(YAML::Emitter& out, std::span<const Field<S>> fields, const S& s, bool all) {
  out << YAML::BeginMap;
  std::string open;  // the section whose map is open
  for (const Field<S>& f : fields) {
    if (!applies(fields, f, s) || !(all || f.hashed)) continue;
    if (!all && f.hashed_when_set && f.kind != Kind::list && f.fallback && f.get(s) == *f.fallback) continue;
    if (f.section() != open) {
      if (!open.empty()) out << YAML::EndMap;
      open = f.section();
      if (!open.empty()) out << YAML::Key << open << YAML::Value << YAML::BeginMap;
    }
    out << YAML::Key << f.leaf() << YAML::Value;
    if (f.kind == Kind::list) f.emit_list(out, s);
    else emit_value(out, f.kind, f.get(s));
  }
  if (!open.empty()) out << YAML::EndMap;
  out << YAML::EndMap;
}

template <typename S>
std::vector<const Key*> keys_of(std::span<const Field<S>> fields) {
  std::vector<const Key*> keys;
  for (const Field<S>& f : fields) keys.push_back(&f);
  return keys;
}

}  // namespace ember::app::schema
