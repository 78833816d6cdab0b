#pragma once
// Helpers shared by the Foundation tests (tinygrad's test_ops idea: one helper, so a case is one line).
// - throws_error: runs a lambda and checks the ember::Error message contains every given piece.
// - make / close_to: tensors from double values in any dtype, and value checks with a per-dtype tolerance.
// - layouts: the same logical tensor as a contiguous tensor, a transposed view and a strided, offset
//   slice of a padded buffer, so every op is also run on views.
// - check_unary / check_binary: run an op in f32 and f64 over every layout (pair) against expected values.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <ember/ember.h>

namespace ember::test {

template <typename Fn>
::testing::AssertionResult throws_error(Fn&& fn, std::initializer_list<std::string_view> pieces) {
  try {
    fn();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (std::string_view p : pieces)
      if (msg.find(p) == std::string::npos)
        return ::testing::AssertionFailure() << "message \"" << msg << "\" lacks \"" << p << "\"";
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw a non-ember exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

inline Tensor make(const std::vector<double>& values, const Shape& shape, DType dtype = DType::f32) {
  return from_vector(values, shape, {.dtype = dtype});
}

// Default tolerance: f32 ~ a few ulps of float math, f64 ~ a few ulps of double math, integers exact.
inline double default_rtol(DType dtype) {
  return dtype == DType::f32 ? 2e-6 : dtype == DType::f64 ? 1e-13 : 0.0;
}

// Shape, and every value within atol + rtol·|expected| (NaN matches NaN, ±inf must match exactly).
inline ::testing::AssertionResult close_to(const Tensor& t, const std::vector<double>& expected, const Shape& shape,
                                           double rtol = -1, double atol = -1) {
  if (!(t.shape() == shape))
    return ::testing::AssertionFailure() << "shape " << t.shape() << ", expected " << shape;
  if (rtol < 0) rtol = default_rtol(t.dtype());
  if (atol < 0) atol = rtol;
  const std::vector<double> got = t.to_vector<double>();
  if (got.size() != expected.size())
    return ::testing::AssertionFailure() << got.size() << " values, expected " << expected.size();
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], e = expected[i];
    const bool ok = std::isnan(e) ? std::isnan(g)
                    : std::isinf(e) ? g == e
                                    : std::abs(g - e) <= atol + rtol * std::abs(e);
    if (!ok) return ::testing::AssertionFailure() << "element " << i << " is " << g << ", expected " << e << "\n" << t;
  }
  return ::testing::AssertionSuccess();
}

struct Layout {
  std::string name;
  Tensor t;
};

// Fills everything a view must not read with a value no test expects.
inline constexpr double kSentinel = 777;

// The tensor of `values` (row-major, `shape`) as: contiguous; a transposed view of a tensor that holds
// the transpose (2+ dims); every other element of a padded buffer, at offset 1 (1+ dims).
inline std::vector<Layout> layouts(const std::vector<double>& values, const Shape& shape, DType dtype) {
  std::vector<Layout> out{{"contiguous", make(values, shape, dtype)}};
  const int n = shape.size();
  if (n >= 2) {
    const int64_t rows = shape[n - 2], cols = shape[n - 1], batch = shape.numel() / std::max<int64_t>(rows * cols, 1);
    std::vector<double> tv(values.size());
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) tv[(b * cols + j) * rows + i] = values[(b * rows + i) * cols + j];
    Shape ts = shape;
    std::swap(ts[n - 2], ts[n - 1]);
    out.push_back({"transposed", make(tv, ts, dtype).transpose(-1, -2)});
  }
  if (n >= 1) {
    const int64_t last = shape[n - 1], outer = shape.numel() / std::max<int64_t>(last, 1);
    Shape ps = shape;
    ps[n - 1] = 2 * last + 1;
    std::vector<double> padded(static_cast<size_t>(ps.numel()), kSentinel);
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t j = 0; j < last; ++j) padded[o * (2 * last + 1) + 2 * j + 1] = values[o * last + j];
    out.push_back({"sliced", make(padded, ps, dtype).slice(-1, 1, 2 * last + 1, 2)});
  }
  return out;
}

inline constexpr DType kFloatTypes[] = {DType::f32, DType::f64};

using UnaryFn = std::function<Tensor(const Tensor&)>;
using BinaryFn = std::function<Tensor(const Tensor&, const Tensor&)>;

// op(x) on every float dtype and layout of x ([values] with `shape`) equals `expected` (same shape).
inline void check_unary(const char* name, const UnaryFn& op, const std::vector<double>& values, const Shape& shape,
                        const std::vector<double>& expected, double rtol = -1) {
  for (DType dtype : kFloatTypes)
    for (const Layout& x : layouts(values, shape, dtype)) {
      SCOPED_TRACE(std::string(name) + " " + std::string(dtype_name(dtype)) + " " + x.name);
      const Tensor y = op(x.t);
      EXPECT_EQ(y.dtype(), dtype);
      EXPECT_TRUE(close_to(y, expected, shape, rtol));
    }
}

// op(a, b) for every float dtype and every pair of layouts equals `expected` with `out_shape`.
// Comparisons give bool results; others the inputs' dtype.
inline void check_binary(const char* name, const BinaryFn& op, const std::vector<double>& a, const Shape& a_shape,
                         const std::vector<double>& b, const Shape& b_shape, const std::vector<double>& expected,
                         const Shape& out_shape, bool gives_bool = false) {
  for (DType dtype : kFloatTypes)
    for (const Layout& x : layouts(a, a_shape, dtype))
      for (const Layout& y : layouts(b, b_shape, dtype)) {
        SCOPED_TRACE(std::string(name) + " " + std::string(dtype_name(dtype)) + " " + x.name + " ⊕ " + y.name);
        const Tensor z = op(x.t, y.t);
        EXPECT_EQ(z.dtype(), gives_bool ? DType::b8 : dtype);
        EXPECT_TRUE(close_to(z, expected, out_shape));
      }
}

// expected[i] = f(values[i]): reference values from the C library in double, independent of Ember.
inline std::vector<double> map(const std::vector<double>& values, double (*f)(double)) {
  std::vector<double> out;
  for (double v : values) out.push_back(f(v));
  return out;
}

// Largest |a - b| / (atol + rtol·|b|) over the elements, after checking the shapes agree: at most 1 when a
// matches the reference b. NaN matches NaN and equal infinities match; any other non-finite reference value
// that a differs from counts as an infinite mismatch.
inline double golden_mismatch(const Tensor& a, const Tensor& b, double rtol, double atol) {
  EXPECT_EQ(a.shape(), b.shape());
  const std::vector<double> va = a.to(DType::f64).to_vector<double>(), vb = b.to(DType::f64).to_vector<double>();
  EXPECT_EQ(va.size(), vb.size());
  double worst = 0;
  for (size_t i = 0; i < va.size() && i < vb.size(); ++i) {
    if ((std::isnan(va[i]) && std::isnan(vb[i])) || va[i] == vb[i]) continue;
    const double d = std::isfinite(vb[i]) ? std::abs(va[i] - vb[i]) / (atol + rtol * std::abs(vb[i])) : INFINITY;
    worst = std::max(worst, std::isnan(d) ? INFINITY : d);
  }
  return worst;
}

// A tensor from a golden file in tests/data (written by PyTorch through tools/make_*_golden.py). Each file
// is read once. Throws naming the file, the tensor and the script to rerun when the tensor is missing.
inline const safetensors::Contents& golden_file(const std::string& file) {
  static std::map<std::string, safetensors::Contents> files;
  auto it = files.find(file);
  if (it == files.end()) it = files.emplace(file, safetensors::load(std::string(EMBER_TEST_DATA_DIR) + "/" + file)).first;
  return it->second;
}
inline Tensor golden(const std::string& file, const std::string& name) {
  const Tensor* t = golden_file(file).find(name);
  if (t == nullptr) throw Error("golden tensor '" + name + "' missing from tests/data/" + file + "; rerun its tools/ script");
  return *t;
}

}  // namespace ember::test
