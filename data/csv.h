#pragma once
// CsvDataset: a table of numbers, one example per line. Every column but the label column is an input
// feature (f32); the label column is the target.
//
//   x1,x2,label        ->  input f32 [2], target i64 [] (or f32 [] with target_dtype = f32)
//   0.5,1.25,1
//
// Header detection (Header::Auto): the first line is a header when any of its fields is not a number.
// Without a header, columns are named by their 0-based position ("0", "1", ...), so label_column = "4"
// names the fifth column. Blank lines are skipped; fields are trimmed of spaces; "\r\n" endings work.
#include <string>

#include "data/dataset.h"

namespace ember::data {

struct CsvOptions {
  enum class Header { Auto, Present, Absent };
  std::string label_column = "label";
  char delimiter = ',';
  Header header = Header::Auto;
  DType target_dtype = DType::i64;  // i64: class labels (must be integers); f32/f64: regression targets
};

// Loads the whole file at construction. Throws ember::Error naming `path` and, for content errors, the
// line (1-based) and column: a field that is empty or not a number, a line with the wrong number of
// fields, a non-integer label for an i64 target, a label column that does not exist (listing those
// that do), an unreadable file, or a file with no data lines.
class CsvDataset : public TensorDataset {
 public:
  explicit CsvDataset(const std::string& path, CsvOptions options = {});

  // The input columns' names, in order (header names, or positions as strings).
  const std::vector<std::string>& feature_names() const { return feature_names_; }

 private:
  std::vector<std::string> feature_names_;
};

}  // namespace ember::data
