#pragma once
// Golden tables run as parameterised tests: every row in f32 and f64, named "<row>_<dtype>", and the
// index tables' shared case (x, an optional second input s, constants) checked against PyTorch's values.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <tuple>

#include "test_helpers.h"

namespace ember::test {

// The parameters of a golden table of `rows` rows: (row, dtype) for every row in f32 and f64.
inline auto golden_rows(size_t rows) {
  return ::testing::Combine(::testing::Range<size_t>(0, rows), ::testing::Values(DType::f32, DType::f64));
}

// The test name "<row name>_<dtype>"; row_name(row) gives a row's name.
template <typename RowName>
auto golden_row_name(RowName row_name) {
  return [row_name](const auto& info) {
    return std::string(row_name(std::get<0>(info.param))) + "_" + std::string(dtype_name(std::get<1>(info.param)));
  };
}

// A row of tools/make_index_golden.py: op(x, s, c) with c(name) a constant operand of the case (its mask
// or index) and s a second differentiable input when has_s.
using GoldenConst = std::function<Tensor(const char*)>;
struct IndexGoldenCase {
  const char* name;
  bool has_s;
  std::function<Tensor(Tensor& x, const Tensor& s, const GoldenConst& c)> op;
};

// Runs `c` in `dtype` on FILE's inputs NAME.<dtype>.x/s: the forward, the gradients of sum(y * r) and,
// where the file has NAME.<dtype>.x_after, x as the op left it, within rtol (= atol).
inline void check_index_golden(const char* file, const IndexGoldenCase& c, DType dtype, double rtol) {
  const std::string key = std::string(c.name) + (dtype == DType::f32 ? ".f32." : ".f64.");
  Tensor x = golden(file, key + "x").clone().requires_grad_();
  Tensor s = c.has_s ? golden(file, key + "s").clone().requires_grad_() : Tensor();
  ASSERT_EQ(x.dtype(), dtype);
  const GoldenConst constant = [&](const char* what) { return golden(file, std::string(c.name) + "." + what); };
  const Tensor y = c.op(x, s, constant);
  ASSERT_EQ(y.dtype(), dtype) << c.name;
  (y * golden(file, key + "r")).sum().backward();
  const double atol = rtol;
  EXPECT_LE(golden_mismatch(y, golden(file, key + "y"), rtol, atol), 1.0) << c.name << " forward";
  EXPECT_LE(golden_mismatch(x.grad(), golden(file, key + "gx"), rtol, atol), 1.0) << c.name << " gradient of x";
  if (c.has_s) {
    EXPECT_LE(golden_mismatch(s.grad(), golden(file, key + "gs"), rtol, atol), 1.0) << c.name << " gradient of s";
  }
  if (golden_file(file).find(key + "x_after") != nullptr) {
    EXPECT_LE(golden_mismatch(x, golden(file, key + "x_after"), rtol, atol), 1.0) << c.name << " renormalised weight";
  }
}

}  // namespace ember::test
