#pragma once
// Key descriptors: what a key of a config or a layer spec is (kind, default, range or choices, help), as one
// row of a table, and the checks that rows and values get from it. Two tables use it: ember-train's config
// keys (apps/config_schema.h adds reading and writing them through YAML) and the keys of each layer type of
// the layer registry (nn/registry.cpp). docs/config.md renders both from their rows.
//
// Nothing here reads YAML or knows a config: nn/ and apps/ both stand on it.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace ember::nn::schema {

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
  pair,      // an integer n, standing for (n, n), or a list of two integers [h, w] (layer sizes: kernel_size)
};

// One row: what the docs, the checks and the messages need.
struct Key {
  std::string path;                    // "optimizer.lr"; the part before the last '.' is the section
  Kind kind = Kind::string;
  std::optional<Value> fallback;       // the default, if it is a constant
  bool required = false;               // no default: the key must be given (lists too)
  std::string default_doc;             // a default computed from other keys (or the input), as the docs show it
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

// The fluent declaration of a row, shared by every table's row type (`Self`, which derives from it):
//   Self("lr", ...).req().in("> 0").doc("The learning rate.")
template <typename Self>
struct Declare : Key {
  template <typename T>
  Self&& def(T v) && {
    if constexpr (std::is_same_v<T, bool>) fallback = v;
    else if constexpr (std::is_integral_v<T>) fallback = kind == Kind::number ? Value(double(v)) : Value(int64_t(v));
    else if constexpr (std::is_floating_point_v<T>) fallback = double(v);
    else if constexpr (std::is_convertible_v<T, std::string>) fallback = std::string(v);
    else fallback = Value(std::move(v));
    return self();
  }
  Self&& req() && { required = true; return self(); }
  // A default that depends on other keys or on the input: `doc` says what it is (the code computes it).
  Self&& default_is(std::string doc) && { default_doc = std::move(doc); return self(); }
  Self&& in(std::string r) && { range = std::move(r); return self(); }
  Self&& one_of(std::vector<std::string> c) && {
    kind = Kind::choice;
    choices = std::move(c);
    return self();
  }
  Self&& each_of(std::vector<std::string> c) && {  // a list member (std::vector<std::string>)
    kind = Kind::choices;
    choices = std::move(c);
    return self();
  }
  Self&& file() && { kind = Kind::file; return self(); }
  Self&& device() && { kind = Kind::device; return self(); }
  Self&& items(size_t n) && { length = n; return self(); }
  Self&& when(std::string key, std::string value) && {
    when_key = std::move(key);
    when_value = std::move(value);
    return self();
  }
  Self&& unhashed() && { hashed = false; return self(); }
  Self&& hashed_when_set_only() && { hashed_when_set = true; return self(); }
  Self&& doc(std::string text) && { help = std::move(text); return self(); }

 private:
  Self&& self() { return static_cast<Self&&>(*this); }
};

// A row of a table whose values are read by hand (the layer registry): its name and kind.
struct KeyRow : Declare<KeyRow> {
  KeyRow(std::string name, Kind k) {
    path = std::move(name);
    kind = k;
  }
};

// Range text → check: true when `v` satisfies "> 0", ">= 1", "in [0, 1)", "in (0, 1]"... (a trailing
// " (note)" is ignored; "" allows everything). Throws std::logic_error for text it cannot read — a table bug.
bool in_range(double v, const std::string& range);
// "in [0, 1) (0: off)" → {"in [0, 1)", " (0: off)"}.
std::pair<std::string, std::string> split_range(const std::string& range);
// The range as a message says a value must be: "positive" for "> 0", else the range without its note.
std::string range_phrase(const std::string& range);
// The choices as a message lists them: "a or b", "a, b or c".
std::string choices_phrase(const std::vector<std::string>& choices);

// cpu | auto | cuda | cuda:N — the names Device::parse reads.
bool is_device_name(const std::string& text);

// Checks a table's rows against each other: every key has a default, a computed default or is required
// (lists excepted); defaults satisfy their range and choices; ranges parse; a `when` key is an earlier
// choice of the same table; each section's rows are contiguous. Returns the problems, one a line ("" = none).
std::string check_keys(std::span<const Key* const> keys);

template <typename Row>
std::vector<const Key*> keys_of(std::span<const Row> rows) {
  std::vector<const Key*> keys;
  for (const Row& r : rows) keys.push_back(&r);
  return keys;
}

}  // namespace ember::nn::schema

namespace ember::nn {

// The key rows of a layer type of the layer registry (nn/registry.h: layer_keys gives their names),
// required ones first; none for an unknown type. A spec's values are checked against them (kind, range,
// choices) before its layer is built, and a key it leaves out takes the row's default.
std::vector<const schema::Key*> layer_key_rows(const std::string& type);

}  // namespace ember::nn
