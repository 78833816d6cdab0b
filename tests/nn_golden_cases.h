#pragma once
// The golden cases of tests/data/nn_golden.safetensors (tools/make_nn_golden.py), shared by
// test_nn_functional.cpp and test_nn_losses.cpp: each case's inputs, output and input gradients (of
// sum(y * r)) from PyTorch, checked in f64 (with gradcheck) and, for case_both cases, in f32.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "nn/functional.h"
#include "test_helpers.h"

namespace ember::test::nn_golden {

namespace F = ember::nn::functional;


inline Tensor get(const std::string& name) { return test::golden("nn_golden.safetensors", name); }

// A constant of a case (targets, weights): NAME.KEY.
inline Tensor at(const std::string& case_name, const char* key) { return get(case_name + "." + key); }

inline void expect_close(const Tensor& actual, const Tensor& expected, const std::string& what, double tol = 1e-10) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  const auto a = actual.to_vector<double>(), e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], e[i], tol * (1 + std::abs(e[i]))) << what << " element " << i;
}

using Op = std::function<Tensor(const std::map<std::string, Tensor>&)>;

// Runs `op` on the case's inputs `names` (leaves requiring grad where floating), compares the output and
// every input gradient with PyTorch's, then runs gradcheck on the same inputs.
inline void check_case(const std::string& name, const std::vector<std::string>& names, const Op& op, bool grad_check = true) {
  SCOPED_TRACE(name);
  std::map<std::string, Tensor> in;
  for (const auto& n : names) {
    Tensor t = get(name + "." + n).clone();
    if (is_floating(t.dtype())) t.requires_grad_();
    in[n] = t;
  }
  const Tensor y = op(in);
  expect_close(y, get(name + ".y"), name + " forward");
  sum(y * get(name + ".r")).backward();
  for (const auto& n : names)
    if (in[n].requires_grad()) expect_close(in[n].grad(), get(name + ".g" + n), name + " grad of " + n, 1e-9);
  if (!grad_check) return;
  std::vector<Tensor> inputs;
  for (const auto& n : names) inputs.push_back(get(name + "." + n).clone().requires_grad_(is_floating(in[n].dtype())));
  const auto result = autograd::gradcheck(
      [&](const std::vector<Tensor>& v) {
        std::map<std::string, Tensor> m;
        for (size_t i = 0; i < names.size(); ++i) m[names[i]] = v[i];
        return op(m);
      },
      inputs);
  EXPECT_TRUE(result.ok) << result.message;
}

// The same case in f32: PyTorch's f32 results (NAME_f32), within f32 accuracy; no gradcheck (f64 does it).
inline void check_case_f32(const std::string& name, const std::vector<std::string>& names, const Op& op) {
  SCOPED_TRACE(name);
  std::map<std::string, Tensor> in;
  for (const auto& n : names) {
    Tensor t = get(name + "." + n).clone();
    ASSERT_EQ(t.dtype(), DType::f32) << n;
    in[n] = t.requires_grad_();
  }
  const Tensor y = op(in);
  ASSERT_EQ(y.dtype(), DType::f32);
  expect_close(y.to(DType::f64), get(name + ".y").to(DType::f64), name + " forward", 2e-5);
  sum(y * get(name + ".r")).backward();
  for (const auto& n : names)
    expect_close(in[n].grad().to(DType::f64), get(name + ".g" + n).to(DType::f64), name + " grad of " + n, 2e-5);
}

// A case written by case_both in tools/make_nn_golden.py: NAME in f64 (with gradcheck) and NAME_f32. The op
// gets the case's name to read its constants (targets, weights) in the case's dtype: get(name + ".w").
using NamedOp = std::function<Tensor(const std::map<std::string, Tensor>&, const std::string&)>;
inline void check_both(const std::string& name, const std::vector<std::string>& names, const NamedOp& op,
                bool grad_check = true) {
  check_case(name, names, [&](auto& m) { return op(m, name); }, grad_check);
  check_case_f32(name + "_f32", names, [&](auto& m) { return op(m, name + "_f32"); });
}

inline F::Conv2dOptions conv(int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t groups) {
  return F::Conv2dOptions().stride({sh, sw}).padding({ph, pw}).dilation({dh, dw}).groups(groups);
}

inline F::Pool2dOptions pool(int64_t k, int64_t s, int64_t p, bool include_pad = true, bool ceil_mode = false) {
  return F::Pool2dOptions(k).stride(s).padding(p).count_include_pad(include_pad).ceil_mode(ceil_mode);
}

}  // namespace ember::test::nn_golden
