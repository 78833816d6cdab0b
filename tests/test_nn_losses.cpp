// Losses against PyTorch (tests/data/nn_golden.safetensors, tools/make_nn_golden.py; helpers in
// nn_golden_cases.h): cross entropy (class weights, probability targets, K-dimensional, label smoothing,
// ignore_index), NLL, MSE, L1, BCE with logits, f32 softmax at large logits, and the shape errors.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include "f32_softmax_goldens.h"
#include "nn_golden_cases.h"
#include "test_helpers.h"

using namespace ember;
using namespace ember::test::nn_golden;

TEST(NnFunctional, CrossEntropy) {
  const Tensor t = get("ce.t");
  check_case("ce_mean", {"x"}, [&](auto& m) { return F::cross_entropy(m.at("x"), t); });
  const Tensor t_ignore = from_vector<int64_t>({1, -100, 4, 2, -100, 3});
  check_case("ce_smooth_ignore", {"x"}, [&](auto& m) {
    return F::cross_entropy(m.at("x"), t_ignore, {.label_smoothing = 0.2});
  });
  check_case("ce_sum", {"x"}, [&](auto& m) { return F::cross_entropy(m.at("x"), t, {.reduction = F::Reduction::sum}); });
  check_case("ce_none", {"x"}, [&](auto& m) {
    return F::cross_entropy(m.at("x"), t, {.ignore_index = 4, .reduction = F::Reduction::none});
  });
}

TEST(NnFunctional, OtherLosses) {
  const Tensor t = get("ce.t");
  check_case("nll", {"x"}, [&](auto& m) { return F::nll_loss(log_softmax(m.at("x"), 1), t); });
  check_case("mse", {"x", "t"}, [](auto& m) { return F::mse_loss(m.at("x"), m.at("t")); });
  check_case("l1", {"x", "t"}, [](auto& m) { return F::l1_loss(m.at("x"), m.at("t"), {.reduction = F::Reduction::sum}); });
  check_case("bce", {"x", "t"}, [](auto& m) { return F::binary_cross_entropy_with_logits(m.at("x"), m.at("t")); });
}

// f32 softmax, log_softmax and cross entropy against PyTorch's f32 results (tests/f32_softmax_goldens.h)
// on logits near ±1e3 and 5e3, nearly tied (multiples of f32's spacing at 1e3), exactly tied and O(1):
// forward and backward within 4 ulp (1.6 at worst now). A log-sum-exp rounded to f32 and used as the shift
// of exp (the old kernels) is off by up to 3e-5 there: rows summing to 1 ± 2e-5, 12 to 1661 ulp.
TEST(NnFunctional, F32SoftmaxAndCrossEntropyAtLargeLogitsMatchPyTorch) {
  test::check_f32_softmax_goldens(kCPU, 4);
  // The non-fused path (softmax over a dim other than the last) agrees with the fused one at these logits.
  const Tensor x = get("f32_softmax_large.x");
  test::expect_f32_ulps(softmax(x.t().contiguous(), 0).t(), get("f32_softmax_large.y"), "softmax dim 0", 4, 0.0);
  test::expect_f32_ulps(log_softmax(x.t().contiguous(), 0).t(), get("f32_log_softmax_large.y"), "log_softmax dim 0",
                        4, 1.0);
}

TEST(NnFunctional, CrossEntropyWithClassWeights) {
  check_both("ce_w", {"x"}, [](auto& m, const std::string& n) {
    return F::cross_entropy(m.at("x"), at(n, "t"), {.weight = at(n, "w")});
  });
  check_both("ce_w_smooth_ignore", {"x"}, [](auto& m, const std::string& n) {
    return F::cross_entropy(m.at("x"), at(n, "t"), {.label_smoothing = 0.2, .weight = at(n, "w")});
  });
  check_both("ce_w_sum", {"x"}, [](auto& m, const std::string& n) {
    return F::cross_entropy(m.at("x"), at(n, "t"),
                            {.ignore_index = 2, .label_smoothing = 0.1, .reduction = F::Reduction::sum, .weight = at(n, "w")});
  });
  check_both("ce_w_none", {"x"}, [](auto& m, const std::string& n) {
    return F::cross_entropy(m.at("x"), at(n, "t"),
                            {.label_smoothing = 0.3, .reduction = F::Reduction::none, .weight = at(n, "w")});
  });
  check_both("ce_unbatched_w", {"x"}, [](auto& m, const std::string& n) {
    return F::cross_entropy(m.at("x"), at(n, "t"), {.label_smoothing = 0.1, .weight = at(n, "w")});
  });
  // Weight 1 everywhere gives the fused path's values (mean over the non-ignored targets)
  const Tensor x = get("ce_w_smooth_ignore.x"), t = get("ce_w_smooth_ignore.t");
  expect_close(F::cross_entropy(x, t, {.label_smoothing = 0.2, .weight = ones({5}, {.dtype = DType::f64})}),
               F::cross_entropy(x, t, {.label_smoothing = 0.2}), "unit weight");
}

TEST(NnFunctional, CrossEntropyWithProbabilityTargets) {
  check_both("ce_prob", {"x", "t"}, [](auto& m, const std::string&) { return F::cross_entropy(m.at("x"), m.at("t")); });
  check_both("ce_prob_smooth_w", {"x", "t"}, [](auto& m, const std::string& n) {
    return F::cross_entropy(m.at("x"), m.at("t"),
                            {.label_smoothing = 0.2, .reduction = F::Reduction::none, .weight = at(n, "w")});
  });
  check_both("ce_prob_kdim_sum", {"x", "t"}, [](auto& m, const std::string&) {
    return F::cross_entropy(m.at("x"), m.at("t"), {.label_smoothing = 0.1, .reduction = F::Reduction::sum});
  });
}

TEST(NnFunctional, CrossEntropyAndNllKDimensional) {
  check_both("ce_kdim_w", {"x"}, [](auto& m, const std::string& n) {
    return F::cross_entropy(m.at("x"), at(n, "t"), {.weight = at(n, "w")});
  });
  check_both("ce_kdim_none", {"x"}, [](auto& m, const std::string& n) {
    return F::cross_entropy(m.at("x"), at(n, "t"), {.label_smoothing = 0.1, .reduction = F::Reduction::none});
  });
  check_both("ce_kdim_mean", {"x"}, [](auto& m, const std::string& n) {
    return F::cross_entropy(m.at("x"), at(n, "t"), {.label_smoothing = 0.2});
  });
  check_both("nll_w", {"x"}, [](auto& m, const std::string& n) {
    return F::nll_loss(log_softmax(m.at("x"), 1), at(n, "t"), {.weight = at(n, "w")});
  });
  check_both("nll_kdim_w_none", {"x"}, [](auto& m, const std::string& n) {
    return F::nll_loss(log_softmax(m.at("x"), 1), at(n, "t"), {.reduction = F::Reduction::none, .weight = at(n, "w")});
  });
}

TEST(NnFunctional, BceWithLogitsWeightsAndOtherLossOptions) {
  check_both("bce_w_pos", {"x", "t"}, [](auto& m, const std::string& n) {
    return F::binary_cross_entropy_with_logits(m.at("x"), m.at("t"), {.weight = at(n, "w"), .pos_weight = at(n, "p")});
  });
  check_both("bce_pos_none", {"x", "t"}, [](auto& m, const std::string& n) {
    return F::binary_cross_entropy_with_logits(m.at("x"), m.at("t"),
                                               {.reduction = F::Reduction::none, .pos_weight = at(n, "p")});
  });
  check_both("bce_w_sum", {"x", "t"}, [](auto& m, const std::string& n) {
    return F::binary_cross_entropy_with_logits(m.at("x"), m.at("t"), {.reduction = F::Reduction::sum, .weight = at(n, "w")});
  });
  check_both("mse_sum", {"x", "t"}, [](auto& m, const std::string&) {
    return F::mse_loss(m.at("x"), m.at("t"), {.reduction = F::Reduction::sum});
  });
  check_both("l1_none", {"x", "t"}, [](auto& m, const std::string&) {
    return F::l1_loss(m.at("x"), m.at("t"), {.reduction = F::Reduction::none});
  });
  // stable at |logits| ~ 1e4 in f32: finite, and the saturated side's loss is |x| (or 0)
  const Tensor big = from_vector<float>({1e4f, -1e4f}), y = from_vector<float>({0.0f, 0.0f});
  const auto l = F::binary_cross_entropy_with_logits(big, y, {.reduction = F::Reduction::none,
                                                             .pos_weight = from_vector<float>({2.0f})})
                     .to_vector<float>();
  EXPECT_EQ(l, (std::vector<float>{1e4f, 0.0f}));
}

TEST(NnFunctional, LossShapeErrorsNameTheLossAndShapes) {
  const Tensor x = zeros({4, 3});
  EXPECT_TRUE(test::throws_error([&] { F::cross_entropy(x, from_vector<int64_t>({0, 1, 2, 0}), {.weight = ones({4})}); },
                                 {"cross_entropy", "weight must be [C] = [3]", "[4, 3]", "got shape [4]"}));
  EXPECT_TRUE(test::throws_error([&] { F::cross_entropy(zeros({2, 3, 4}), zeros({2, 3}, {.dtype = DType::i64})); },
                                 {"cross_entropy", "target shape [2, 3]", "input [2, 3, 4]", "expected [2, 4]"}));
  EXPECT_TRUE(test::throws_error([&] { F::cross_entropy(x, zeros({4, 2})); },
                                 {"cross_entropy", "probability targets", "[4, 3]", "[4, 2]"}));
  EXPECT_TRUE(test::throws_error([&] { F::cross_entropy(zeros({3}), zeros({1}, {.dtype = DType::i64})); },
                                 {"cross_entropy", "unbatched input [3]", "0-d target"}));
  EXPECT_TRUE(test::throws_error(
                  [&] { F::cross_entropy(x, from_vector<int64_t>({0, 1, 5, 0}), {.weight = ones({3})}); },
                  {"cross_entropy", "target 5", "sample 2", "[0, 3)"}));
  EXPECT_TRUE(test::throws_error([&] { F::nll_loss(x, from_vector<int64_t>({0, 1, 2, 0}), {.weight = ones({2})}); },
                                 {"nll_loss", "weight must be [C] = [3]"}));
  EXPECT_TRUE(test::throws_error([&] { F::nll_loss(x, from_vector<int64_t>({0, 3, 2, 0})); },
                                 {"nll_loss", "target 3", "sample 1", "[0, 3)"}));
  EXPECT_TRUE(test::throws_error([&] { F::binary_cross_entropy_with_logits(x, x, {.pos_weight = ones({4})}); },
                                 {"binary_cross_entropy_with_logits", "pos_weight of shape [4]", "[4, 3]", "[C]"}));
  EXPECT_TRUE(test::throws_error([&] { F::binary_cross_entropy_with_logits(x, x, {.weight = ones({2, 4, 3})}); },
                                 {"binary_cross_entropy_with_logits", "weight of shape [2, 4, 3]", "[4, 3]"}));
  EXPECT_TRUE(test::throws_error([&] { F::binary_cross_entropy_with_logits(x, zeros({3, 4})); },
                                 {"binary_cross_entropy_with_logits", "[4, 3]", "[3, 4]"}));
  EXPECT_TRUE(test::throws_error([&] { F::mse_loss(x, zeros({3})); }, {"mse_loss", "[4, 3]", "[3]"}));
  EXPECT_TRUE(test::throws_error([&] { F::l1_loss(x, zeros({3})); }, {"l1_loss", "[4, 3]", "[3]"}));
}
