// The key rows' own checks (nn/schema.h): range texts, defaults against their rows, a table's consistency.
#include "nn/schema.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

namespace ember::nn::schema {
namespace {

// A range's bound: a plain decimal ("0", "0.5", "1e-3"); nullopt for anything else.
std::optional<double> bound(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return v;
}

// Whether `v` (a default) passes the row's own checks.
bool default_ok(const Key& k, const Value& v) {
  const auto in = [&](double x) { return in_range(x, k.range); };
  const auto all_in = [&](const std::vector<int64_t>& list) {
    return std::all_of(list.begin(), list.end(), [&](int64_t x) { return in(double(x)); });
  };
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
      return (k.length == 0 || list.size() == k.length) && all_in(list);
    }
    case Kind::pair: {
      if (const auto* n = std::get_if<int64_t>(&v)) return in(double(*n));
      const auto& list = std::get<std::vector<int64_t>>(v);
      return list.size() == 2 && all_in(list);
    }
    default: return true;
  }
}

}  // namespace

std::string Key::section() const {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

std::string Key::leaf() const { return path.substr(path.rfind('.') + 1); }

std::pair<std::string, std::string> split_range(const std::string& range) {
  const size_t end = range.rfind("in ", 0) == 0 ? range.find_first_of("])") + 1 : range.find(" (");
  if (end == 0 || end >= range.size()) return {range, ""};
  return {range.substr(0, end), range.substr(end)};
}

std::string range_phrase(const std::string& range) {
  const std::string text = split_range(range).first;
  return text == "> 0" ? "positive" : text;
}

std::string choices_phrase(const std::vector<std::string>& choices) {
  std::string out;
  for (size_t i = 0; i < choices.size(); ++i)
    out += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  return out;
}

bool is_device_name(const std::string& text) {
  if (text == "cpu" || text == "auto" || text == "cuda") return true;
  const std::string digits = text.rfind("cuda:", 0) == 0 ? text.substr(5) : "";
  return !digits.empty() && digits.size() <= 9 &&
         std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

bool in_range(double v, const std::string& range) {
  if (range.empty()) return true;
  const std::string text = split_range(range).first;
  const auto number = [&](const std::string& t) {
    const auto d = bound(t);
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
        k.kind != Kind::integers && k.kind != Kind::pair)
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

}  // namespace ember::nn::schema
