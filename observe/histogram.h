#pragma once
// The histogram TensorBoard shows for add_histogram, computed as PyTorch's SummaryWriter.add_histogram
// does with its default bins="tensorflow":
//   edges: -1e20 .. -1e-12, 0, 1e-12 .. 1e20, geometric with ratio 1.1 (v = 1e-12; while v < 1e20: v *= 1.1);
//   counts as numpy.histogram over those edges (bins [a, b), the last one [a, b]; values outside the edges
//   and NaN are in no bucket);
//   kept: the buckets from the first to the last non-empty one, plus the empty bucket left of the first (so
//   the leftmost edge is in the proto, which holds right edges only).
// min, max, num, sum and sum_squares are over all the values, in double.
#include <vector>

#include "core/tensor.h"

namespace ember {

struct Histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> bucket_limit;  // right edges
  std::vector<double> bucket;        // counts, one per edge
};

// Throws ember::Error when `values` is empty or no value falls within the edges (every value NaN or
// beyond ±1e20), as PyTorch does. Any dtype and device: the values are read as f64 on the CPU.
Histogram make_histogram(const Tensor& values);
// The same from host values.
Histogram make_histogram(const std::vector<double>& values);

// PyTorch's default ("tensorflow") bin edges, ascending: 1 + 2 × 290 values.
const std::vector<double>& default_histogram_edges();

}  // namespace ember
