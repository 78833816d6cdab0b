#include "observe/histogram.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace ember {

const std::vector<double>& default_histogram_edges() {
  static const std::vector<double> edges = [] {
    std::vector<double> positive;
    for (double v = 1e-12; v < 1e20; v *= 1.1) positive.push_back(v);  // exactly PyTorch's loop, in double
    std::vector<double> all;
    all.reserve(2 * positive.size() + 1);
    for (auto it = positive.rbegin(); it != positive.rend(); ++it) all.push_back(-*it);
    all.push_back(0);
    all.insert(all.end(), positive.begin(), positive.end());
    return all;
  }();
  return edges;
}

Histogram make_histogram(const std::vector<double>& values) {
  EMBER_CHECK(!values.empty(), "add_histogram: the tensor has no element; a histogram needs at least one value");
  const std::vector<double>& edges = default_histogram_edges();
  std::vector<double> counts(edges.size() - 1, 0.0);
  Histogram h;
  h.min = values[0];
  h.max = values[0];
  h.num = static_cast<double>(values.size());
  bool any_nan = false;
  for (const double v : values) {
    any_nan = any_nan || std::isnan(v);
    h.min = std::min(h.min, v);
    h.max = std::max(h.max, v);
    h.sum += v;
    h.sum_squares += v * v;
    if (!(v >= edges.front() && v <= edges.back())) continue;  // outside the edges, or NaN
    // numpy.histogram: bin i is [edges[i], edges[i+1]), the last bin includes its right edge.
    size_t bin = static_cast<size_t>(std::upper_bound(edges.begin(), edges.end(), v) - edges.begin()) - 1;
    bin = std::min(bin, counts.size() - 1);
    counts[bin] += 1;
  }
  if (any_nan) h.min = h.max = std::nan("");  // as numpy's min/max (std::min/max would skip a later NaN)
  size_t first = counts.size(), last = 0;
  for (size_t i = 0; i < counts.size(); ++i)
    if (counts[i] > 0) {
      first = std::min(first, i);
      last = i;
    }
  EMBER_CHECK(first < counts.size(), "add_histogram: none of the ", values.size(),
              " values lies within the histogram's edges [-1e20, 1e20] (NaN or beyond); nothing to show");
  // The empty bucket left of the first non-empty one carries the leftmost edge.
  if (first > 0) {
    h.bucket.assign(counts.begin() + static_cast<std::ptrdiff_t>(first) - 1, counts.begin() + static_cast<std::ptrdiff_t>(last) + 1);
  } else {
    h.bucket.push_back(0);
    h.bucket.insert(h.bucket.end(), counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(last) + 1);
  }
  h.bucket_limit.assign(edges.begin() + static_cast<std::ptrdiff_t>(first), edges.begin() + static_cast<std::ptrdiff_t>(last) + 2);
  return h;
}

Histogram make_histogram(const Tensor& values) {
  EMBER_CHECK(values.defined(), "add_histogram: the tensor is undefined");
  return make_histogram(values.detach().to(kCPU).to(DType::f64).contiguous().to_vector<double>());
}

}  // namespace ember
