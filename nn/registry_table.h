#pragma once
// Internal to nn/registry.cpp and nn/registry_table.cpp: what a layer factory reads (Args), a registry entry
// (its key rows and factory) and the table of every {type: ...}. Not installed.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "nn/registry.h"
#include "nn/schema.h"

namespace ember::nn::registry {

using schema::Kind;
using Row = schema::KeyRow;

// What one spec gives a layer factory: its values, typed, with the defaults of its type's key rows. The
// values a spec gives were checked against the rows before (check_args: kinds, ranges, choices); a read
// here of a key without a row, or as another kind, is a bug of the table (std::logic_error).
class Args {
 public:
  Args(const LayerSpec& spec, const std::vector<Row>& rows, const Shape& in, DType dtype, int64_t vocab_size)
      : in(in), dtype(dtype), spec_(spec), rows_(rows), vocab_size_(vocab_size) {}

  const Shape in;     // the sample shape entering this layer (no batch dim)
  const DType dtype;  // and its dtype (i64: token ids)

  // The data's vocabulary size, for layers that take or predict token ids; an error without text data.
  int64_t vocab(const char* what) const {
    if (vocab_size_ <= 0)
      error(std::string(what) + " needs a vocabulary size, which only text data has (data.dataset: text, whose "
            "tokenizer gives it)");
    return vocab_size_;
  }
  // Checks that the input is token ids (i64), as embeddings need.
  void need_tokens(const char* what) const {
    if (dtype != DType::i64)
      error(std::string(what) + " takes token ids (i64), but the input here is " + std::string(dtype_name(dtype)) + " " + in.str() +
            "; it goes first, on text data");
  }

  bool has(const std::string& key) const { return find(key) != nullptr; }
  // The value of `key`, or its row's default. The `computed` overloads are for rows whose default depends on
  // the input (Row::default_is): they give it.
  int64_t integer(const std::string& key) const { return std::get<int64_t>(value(key, Kind::integer)); }
  int64_t integer(const std::string& key, int64_t computed) const {
    return std::get<int64_t>(value(key, Kind::integer, computed));
  }
  double number(const std::string& key) const { return as_number(value(key, Kind::number)); }
  double number(const std::string& key, double computed) const {
    return as_number(value(key, Kind::number, schema::Value{computed}));
  }
  bool boolean(const std::string& key) const { return std::get<bool>(value(key, Kind::boolean)); }
  std::string text(const std::string& key) const { return std::get<std::string>(value(key, Kind::choice)); }
  // An int n means (n, n); a list of two ints (h, w).
  std::pair<int64_t, int64_t> pair(const std::string& key) const { return as_pair(value(key, Kind::pair)); }
  std::pair<int64_t, int64_t> pair(const std::string& key, int64_t computed) const {
    return as_pair(value(key, Kind::pair, computed));
  }
  // A list of integers (one integer stands for a list of one).
  std::vector<int64_t> integers(const std::string& key) const {
    const schema::Value v = value(key, Kind::integers, 0);
    if (const auto* i = std::get_if<int64_t>(&v)) return {*i};
    return std::get<std::vector<int64_t>>(v);
  }
  // The value of a boolean row whose default is "none" (default_is), unset unless the spec gives it.
  std::optional<bool> optional_boolean(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    return std::get<bool>(value(key, Kind::boolean, 0));
  }
  // ... and of a number row whose default is "none".
  std::optional<double> optional_number(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    const schema::Value v = value(key, Kind::number, 0);
    if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
    return std::get<double>(v);
  }
  // A string the spec gives where the row also takes one (a conv's padding "same" / "valid": named_padding).
  std::optional<std::string> named(const std::string& key) const {
    const SpecValue* v = find(key);
    if (v == nullptr || !std::holds_alternative<std::string>(*v)) return std::nullopt;
    return std::get<std::string>(*v);
  }
  [[noreturn]] void error(const std::string& what) const {
    detail::throw_error(spec_.where, " (", spec_.type, "): ", what);
  }

 private:
  const SpecValue* find(const std::string& key) const {
    for (const auto& [k, v] : spec_.args)
      if (k == key) return &v;
    return nullptr;
  }
  static double as_number(const schema::Value& v) {
    if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
    return std::get<double>(v);
  }
  static std::pair<int64_t, int64_t> as_pair(const schema::Value& v) {
    if (const auto* i = std::get_if<int64_t>(&v)) return {*i, *i};
    const auto& l = std::get<std::vector<int64_t>>(v);
    return {l[0], l[1]};
  }
  // The spec's value as a schema value, else the row's default (`computed` for a computed one).
  schema::Value value(const std::string& key, Kind kind, std::optional<schema::Value> computed = std::nullopt) const {
    const auto row = std::find_if(rows_.begin(), rows_.end(), [&](const Row& r) { return r.path == key; });
    if (row == rows_.end() || row->kind != kind || computed.has_value() != !row->default_doc.empty())
      throw std::logic_error("layer registry: " + spec_.type + " reads '" + key + "' unlike its key row");
    if (const SpecValue* v = find(key))
      return std::visit([](const auto& x) -> schema::Value { return x; }, *v);
    if (row->required) error("missing required key '" + key + "'");
    if (computed) return *computed;
    return *row->fallback;
  }

  const LayerSpec& spec_;
  const std::vector<Row>& rows_;
  int64_t vocab_size_;
};

struct Entry {
  std::vector<Row> keys;  // required first
  std::function<std::shared_ptr<Module>(const Args&, Generator*)> make;
  bool whole_model = false;  // a complete model: the only spec, built unwrapped (build_model)
};

// Every layer type by name (nn/registry_table.cpp).
const std::map<std::string, Entry>& table();

}  // namespace ember::nn::registry
