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
#include "nn/schema.h"

namespace ember::app::schema {

// The row itself, its kinds and its checks are nn/schema.h's (the layer registry declares its keys with them).
using nn::schema::check_keys, nn::schema::in_range, nn::schema::Key, nn::schema::keys_of, nn::schema::Kind,
    nn::schema::split_range, nn::schema::Value;

// Reads one key of `section` as `key` describes (kind, range, choices, length); `fallback` when absent.
// Throws ConfigError naming the place, the key and what was expected.
Value read_value(Section& section, const Key& key, const std::optional<Value>& fallback);
// Writes a value as the resolved config does: numbers in their shortest round-tripping form, lists in flow style.
void emit_value(YAML::Emitter& out, Kind kind, const Value& value);

template <typename S>
struct Field : nn::schema::Declare<Field<S>> {
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
    this->path = std::move(key_path);
    this->kind = std::is_same_v<T, bool>                   ? Kind::boolean
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
    this->path = std::move(key_path);
    this->kind = k;
    get = getter;
    set = setter;
  }
  // A list of maps with its own reader, writer and item docs. The same with .default_is(...): a value that is
  // a name or a map (data.tokenizer), which the docs call so.
  Field(std::string key_path, void (*reader)(Section&, const std::string&, S&),
        void (*writer)(YAML::Emitter&, const S&), std::string (*doc)()) {
    this->path = std::move(key_path);
    this->kind = Kind::list;
    read_list = reader;
    emit_list = writer;
    doc_list = doc;
  }

  // A default computed from the keys read before this one; `doc` is what the docs show.
  Field&& computed(Value (*fn)(const S&), std::string doc) && {
    compute = fn;
    this->default_doc = std::move(doc);
    return std::move(*this);
  }
};

// The accessor of a member (nested members too): Field<TrainConfig>("optimizer.lr", EMBER_MEMBER(optimizer.lr)).
#define EMBER_MEMBER(member) [](auto& s) -> auto& { return s.member; }

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

}  // namespace ember::app::schema
