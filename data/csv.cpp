#include "data/csv.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string_view>

namespace ember::data {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view line, char delimiter) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    const size_t end = line.find(delimiter, start);
    fields.push_back(trim(line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start)));
    if (end == std::string_view::npos) return fields;
    start = end + 1;
  }
}

bool parse_number(std::string_view s, double& value) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && end == s.data() + s.size();
}

std::string unquote(std::string_view s) {
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return std::string(s);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in.good(), path, ": cannot open the CSV file; check the path");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

CsvDataset::CsvDataset(const std::string& path, CsvOptions options) {
  const std::string text = read_text(path);
  std::vector<std::string> names;
  int64_t label = -1;
  size_t ncols = 0;
  int64_t header_line = 0;
  std::vector<float> features;
  std::vector<double> targets;

  // Resolves the label column once the column count (and names, if any) are known.
  auto resolve_label = [&]() {
    for (size_t c = 0; c < names.size(); ++c)
      if (names[c] == options.label_column) label = static_cast<int64_t>(c);
    if (label < 0 && header_line == 0) {  // no header: a position, negative from the end
      int64_t pos = 0;
      const std::string& s = options.label_column;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), pos);
      if (ec == std::errc() && end == s.data() + s.size() && pos >= -static_cast<int64_t>(ncols) &&
          pos < static_cast<int64_t>(ncols))
        label = pos < 0 ? pos + static_cast<int64_t>(ncols) : pos;
    }
    if (label >= 0) return;
    std::string list;
    for (size_t c = 0; c < names.size(); ++c) list += (c ? ", " : "") + names[c];
    detail::throw_error(path, ": label column '", options.label_column, "' not found; the columns are: ", list,
                        header_line == 0 ? " (the file has no header, so name the label column by its 0-based "
                                           "position, e.g. label_column = \"0\", or \"-1\" for the last)"
                                         : "");
  };

  int64_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view line = trim(std::string_view(text).substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    if (line.empty()) continue;
    const std::vector<std::string_view> fields = split(line, options.delimiter);

    if (ncols == 0) {  // the first non-blank line: header or data?
      ncols = fields.size();
      bool numeric = true;
      double v = 0;
      for (std::string_view f : fields) numeric = numeric && parse_number(f, v);
      const bool header = options.header == CsvOptions::Header::Present ||
                          (options.header == CsvOptions::Header::Auto && !numeric);
      for (size_t c = 0; c < ncols; ++c) names.push_back(header ? unquote(fields[c]) : std::to_string(c));
      if (header) header_line = line_no;
      EMBER_CHECK(ncols >= 2, path, ":", line_no, ": one column only (delimiter '", options.delimiter,
                  "'); a CSV dataset needs feature columns and a label column — is the delimiter right?");
      resolve_label();
      if (header) continue;
    }

    EMBER_CHECK(fields.size() == ncols, path, ":", line_no, ": ", fields.size(), " fields, expected ", ncols,
                header_line ? " as in the header on line " + std::to_string(header_line) : " as on the first line",
                " (delimiter '", options.delimiter, "')");
    for (size_t c = 0; c < ncols; ++c) {
      double v = 0;
      EMBER_CHECK(!fields[c].empty(), path, ":", line_no, ": column '", names[c], "' (", c + 1,
                  ") is empty; fill in the missing value");
      EMBER_CHECK(parse_number(fields[c], v), path, ":", line_no, ": column '", names[c], "' (", c + 1, "): '",
                  fields[c], "' is not a number");
      if (static_cast<int64_t>(c) != label) {
        features.push_back(static_cast<float>(v));
        continue;
      }
      if (options.target_dtype == DType::i64)
        EMBER_CHECK(std::isfinite(v) && std::floor(v) == v && std::abs(v) < 9.0e15, path, ":", line_no, ": label '",
                    fields[c], "' in column '", names[c], "' is not an integer; class labels must be integers "
                    "(or set target_dtype = f32 for regression)");
      targets.push_back(v);
    }
  }
  EMBER_CHECK(!targets.empty(), path, ": no data lines", header_line ? " after the header" : "",
              "; the CSV file is empty");
  EMBER_CHECK(options.target_dtype == DType::i64 || is_floating(options.target_dtype), path,
              ": target_dtype must be i64, f32 or f64, not ", dtype_name(options.target_dtype));

  for (size_t c = 0; c < ncols; ++c)
    if (static_cast<int64_t>(c) != label) feature_names_.push_back(names[c]);
  const auto n = static_cast<int64_t>(targets.size());
  const Tensor inputs = from_data(features.data(), Shape{n, static_cast<int64_t>(ncols - 1)});
  const Tensor target_tensor = from_data(targets.data(), Shape{n}, {.dtype = options.target_dtype});
  init(inputs, target_tensor, "CsvDataset");
}

}  // namespace ember::data
