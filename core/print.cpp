// operator<< for tensors: values like PyTorch's repr (summarised past 1000 elements), then shape, dtype
// and device.
#include <cmath>
#include <cstdio>
#include <ostream>
#include <sstream>

#include "core/raw.h"

namespace ember {
namespace {

constexpr int64_t kSummariseAbove = 1000;
constexpr int64_t kEdgeItems = 3;

struct Printer {
  const std::vector<double>& values;
  const Shape& shape;
  DType dtype;
  bool summarise;
  bool scientific = false;

  std::string format(double v) const {
    char buf[48];
    if (dtype == DType::b8) return v != 0 ? "true" : "false";
    if (dtype == DType::i64) {
      std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
    } else if (std::isnan(v) || std::isinf(v)) {
      return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
    } else {
      std::snprintf(buf, sizeof buf, scientific ? "%.4e" : "%.4f", v);
    }
    return buf;
  }

  // Prints dim `d` of the block starting at flat index `base` (row-major).
  void print(std::ostream& out, int d, int64_t base, int indent) const {
    if (d == shape.size()) {
      out << format(values[base]);
      return;
    }
    int64_t inner = 1;
    for (int k = d + 1; k < shape.size(); ++k) inner *= shape[k];
    out << '[';
    const int64_t n = shape[d];
    for (int64_t i = 0; i < n; ++i) {
      if (summarise && n > 2 * kEdgeItems && i == kEdgeItems) {
        out << "...";
        i = n - kEdgeItems - 1;
        out << (d + 1 == shape.size() ? ", " : ",\n" + std::string(indent + 1, ' '));
        continue;
      }
      print(out, d + 1, base + i * inner, indent + 1);
      if (i + 1 < n) out << (d + 1 == shape.size() ? ", " : ",\n" + std::string(indent + 1, ' '));
    }
    out << ']';
  }
};

}  // namespace

std::ostream& operator<<(std::ostream& out, const Tensor& t) {
  if (!t.defined()) return out << "tensor(undefined)";
  const std::vector<double> values = t.to_vector<double>();
  Printer p{values, t.shape(), t.dtype(), t.numel() > kSummariseAbove};
  double max_abs = 0, min_abs = INFINITY;
  for (double v : values) {
    if (std::isfinite(v) && v != 0) {
      max_abs = std::max(max_abs, std::abs(v));
      min_abs = std::min(min_abs, std::abs(v));
    }
  }
  p.scientific = max_abs >= 1e5 || (min_abs < 1e-4 && max_abs > 0);
  out << "tensor(";
  if (t.numel() == 0) out << "[]";
  else p.print(out, 0, 0, 7);
  out << ", shape=" << t.shape() << ", dtype=" << dtype_name(t.dtype()) << ", device=" << t.device();
  if (t.requires_grad()) out << ", requires_grad=true";
  return out << ')';
}

std::string Tensor::str() const {
  std::ostringstream s;
  s << *this;
  return s.str();
}

}  // namespace ember
