#pragma once
// Golden cases of one PyTorch golden file (tools/make_loss_golden.py writes loss_golden and norm_golden):
// each case NAME holds its inputs, output NAME.y, cotangent NAME.r and the input gradients of sum(y * r),
// computed by PyTorch in f64 (NAME) and in f32 (NAME_f32). check_both runs an op on both: f64 within 1e-10
// (and gradcheck), f32 within 2e-5 of PyTorch's f32 results.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "test_helpers.h"

namespace ember::test {

class GoldenCases {
 public:
  explicit GoldenCases(std::string file) : file_(std::move(file)) {}

  Tensor get(const std::string& name) const { return golden(file_, name); }
  // A constant of a case (targets, weights): NAME.KEY.
  Tensor at(const std::string& case_name, const char* key) const { return get(case_name + "." + key); }

  using Inputs = std::map<std::string, Tensor>;
  // The op gets the inputs (leaves requiring grad) and the case's name, to read its constants in its dtype.
  using Op = std::function<Tensor(const Inputs&, const std::string&)>;

  // NAME (f64: forward, gradients, gradcheck unless grad_check is false) and NAME_f32.
  void check_both(const std::string& name, const std::vector<std::string>& inputs, const Op& op,
                  bool grad_check = true) const {
    check(name, inputs, op, DType::f64, grad_check);
    check(name + "_f32", inputs, op, DType::f32, false);
  }

  static void expect_close(const Tensor& actual, const Tensor& expected, const std::string& what, double tol) {
    ASSERT_EQ(actual.shape(), expected.shape()) << what;
    const auto a = actual.to_vector<double>(), e = expected.to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::isnan(e[i]) || std::isinf(e[i])) {  // NaN matches NaN, ±inf itself
        EXPECT_TRUE(std::isnan(e[i]) ? std::isnan(a[i]) : a[i] == e[i]) << what << " element " << i << ": " << a[i];
        continue;
      }
      ASSERT_NEAR(a[i], e[i], tol * (1 + std::abs(e[i]))) << what << " element " << i;
    }
  }

 private:
  void check(const std::string& name, const std::vector<std::string>& names, const Op& op, DType dtype,
             bool grad_check) const {
    SCOPED_TRACE(name);
    const double tol = dtype == DType::f64 ? 1e-10 : 2e-5, gtol = dtype == DType::f64 ? 1e-9 : 2e-5;
    Inputs in;
    for (const auto& n : names) {
      Tensor t = get(name + "." + n).clone();
      ASSERT_EQ(t.dtype(), dtype) << n;
      in[n] = t.requires_grad_();
    }
    const Tensor y = op(in, name);
    ASSERT_EQ(y.dtype(), dtype);
    expect_close(y, get(name + ".y"), name + " forward", tol);
    sum(y * get(name + ".r")).backward();
    for (const auto& n : names) {
      ASSERT_TRUE(in[n].grad().defined()) << name << ": no gradient for " << n;
      expect_close(in[n].grad(), get(name + ".g" + n), name + " grad of " + n, gtol);
    }
    if (!grad_check) return;
    std::vector<Tensor> leaves;
    for (const auto& n : names) leaves.push_back(get(name + "." + n).clone().requires_grad_());
    const auto result = autograd::gradcheck(
        [&](const std::vector<Tensor>& v) {
          Inputs m;
          for (size_t i = 0; i < names.size(); ++i) m[names[i]] = v[i];
          return op(m, name);
        },
        leaves);
    EXPECT_TRUE(result.ok) << result.message;
  }

  std::string file_;
};

}  // namespace ember::test
