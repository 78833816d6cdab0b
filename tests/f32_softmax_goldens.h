#pragma once
// The f32 softmax / log_softmax / cross-entropy goldens of tests/data/nn_golden.safetensors (make_nn_golden.py,
// case32: PyTorch's f32 CPU results on logits near ±1e3 and 5e3, nearly and exactly tied, and O(1)), shared
// by tests/test_nn_functional.cpp (CPU) and tests/test_cuda_parity.cpp (the same values on the GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <ember/ember.h>

#include "test_helpers.h"

namespace ember::test {

inline Tensor f32_golden(const std::string& name) { return golden("nn_golden.safetensors", name); }

// The cases: golden name and the op, applied to the case's x (on x's device).
inline std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> f32_softmax_cases() {
  namespace F = nn::functional;
  const auto target = [](const Tensor& x, const char* name) { return f32_golden(name).to(x.device()); };
  return {
      {"f32_softmax_large", [](const Tensor& x) { return softmax(x, 1); }},
      {"f32_log_softmax_large", [](const Tensor& x) { return log_softmax(x, 1); }},
      {"f32_ce_large", [=](const Tensor& x) { return F::cross_entropy(x, target(x, "f32_ce.t")); }},
      {"f32_ce_large_none",
       [=](const Tensor& x) {
         return F::cross_entropy(x, target(x, "f32_ce.t"), {.reduction = F::Reduction::none});
       }},
      {"f32_ce_large_smooth",
       [=](const Tensor& x) {
         return F::cross_entropy(x, target(x, "f32_ce.t"), {.label_smoothing = 0.1, .reduction = F::Reduction::none});
       }},
      {"f32_ce_large_smooth_ignore",
       [=](const Tensor& x) { return F::cross_entropy(x, target(x, "f32_ce.t_ignore"), {.label_smoothing = 0.2}); }},
      {"f32_ce_large_ignore_index",
       [=](const Tensor& x) {
         return F::cross_entropy(x, target(x, "f32_ce.t"), {.ignore_index = 6, .reduction = F::Reduction::sum});
       }},
  };
}

// The error allowed is `ulps` f32 spacings of max(|value|, floor). The floor is where PyTorch's own f32
// rounding happens: log-probabilities and losses subtract log(s), O(1), rounded at 1; gradients subtract
// sums of O(1) upstream values (g - Σ g·y, g - exp(y)·Σ g), rounded at 1 too (floor 1); softmax values are
// products and quotients only (floor 0: relative to the element). Records the worst error as a property.
inline void expect_f32_ulps(const Tensor& actual, const Tensor& expected, const std::string& what, double ulps,
                            double floor) {
  ASSERT_EQ(actual.dtype(), DType::f32) << what;
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  const auto a = actual.to(kCPU).to_vector<double>(), e = expected.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double scale = std::max({std::abs(e[i]), floor, 1e-30});
    const double spacing = std::ldexp(1.0, std::ilogb(scale) - 23);  // f32's spacing at scale
    const double err = std::abs(a[i] - e[i]) / spacing;
    worst = std::max(worst, err);
    EXPECT_LE(err, ulps) << what << " element " << i << ": " << a[i] << " vs PyTorch " << e[i];
  }
  ::testing::Test::RecordProperty(what, std::to_string(worst));
}

// Runs every case on `device`: output and the gradient of sum(y · r) against PyTorch's, within `ulps`.
inline void check_f32_softmax_goldens(Device device, double ulps) {
  for (const auto& [name, fn] : f32_softmax_cases()) {
    SCOPED_TRACE(name);
    const Tensor x = f32_golden(name + ".x").clone().to(device).requires_grad_();  // not the cached golden
    ASSERT_EQ(x.dtype(), DType::f32);
    const Tensor y = fn(x);
    expect_f32_ulps(y, f32_golden(name + ".y"), name + " forward", ulps, name == "f32_softmax_large" ? 0.0 : 1.0);
    sum(y * f32_golden(name + ".r").to(device)).backward();
    expect_f32_ulps(x.grad(), f32_golden(name + ".gx"), name + " gradient", ulps, 1.0);
  }
}

}  // namespace ember::test
