// The norms of PyTorch parity round 3 against PyTorch 1.13 (tests/data/norm_golden.safetensors, written by
// tools/make_loss_golden.py): group_norm, instance_norm (running statistics, eval), local_response_norm and
// normalize in f64 (with gradcheck) and f32; the layers GroupNorm, InstanceNorm1d/2d, LocalResponseNorm; errors.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>

#include "golden_cases.h"
#include "test_helpers.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace {

const test::GoldenCases goldens("norm_golden.safetensors");
using Inputs = test::GoldenCases::Inputs;

::testing::AssertionResult same(const Tensor& a, const Tensor& b, double tol = 1e-12) {
  return test::close_to(a, b.to_vector<double>(), b.shape(), tol, tol);
}

}  // namespace

TEST(Norms, GroupNorm) {
  goldens.check_both("gn", {"x", "w", "b"}, [](const Inputs& m, auto&) { return F::group_norm(m.at("x"), 3, m.at("w"), m.at("b")); });
  goldens.check_both("gn_one_group", {"x"}, [](const Inputs& m, auto&) {
    return F::group_norm(m.at("x"), F::GroupNormFuncOptions(1).eps(1e-3));
  });
  goldens.check_both("gn_weight_only", {"x", "w"}, [](const Inputs& m, auto&) {
    return F::group_norm(m.at("x"), {.num_groups = 2, .weight = m.at("w")});
  });
  goldens.check_both("gn_per_channel", {"x", "w", "b"}, [](const Inputs& m, auto&) {
    return F::group_norm(m.at("x"), F::GroupNormFuncOptions(4).weight(m.at("w")).bias(m.at("b")));
  });
  goldens.check_both("gn_2d", {"x"}, [](const Inputs& m, auto&) { return F::group_norm(m.at("x"), 2); });
  // bias without weight (PyTorch 1.13's backward fails there): the normalisation plus the bias
  const Tensor x = randn({2, 4, 3}, {.dtype = DType::f64}), b = randn({4}, {.dtype = DType::f64}).requires_grad_();
  EXPECT_TRUE(same(F::group_norm(x, 2, {}, b), F::group_norm(x, 2) + b.reshape({1, 4, 1})));
  const auto r = autograd::gradcheck([&](const std::vector<Tensor>& v) { return F::group_norm(v[0], 2, {}, v[1]); },
                                     {x.clone().requires_grad_(), b.detach().clone().requires_grad_()});
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(Norms, InstanceNorm) {
  goldens.check_both("in1d", {"x", "w", "b"}, [](const Inputs& m, auto&) {
    return F::instance_norm(m.at("x"), {}, {}, m.at("w"), m.at("b"));
  });
  // training with running statistics: PyTorch's updated running_mean/var (the mean over N of each update)
  for (const std::string n : {"in2d_running", "in2d_running_f32"}) {
    SCOPED_TRACE(n);
    const Tensor rm = goldens.at(n, "rm").clone(), rv = goldens.at(n, "rv").clone();
    const Tensor x = goldens.at(n, "x");
    const Tensor y = F::instance_norm(x, F::InstanceNormFuncOptions().running_mean(rm).running_var(rv).momentum(0.2).eps(1e-3));
    const double tol = x.dtype() == DType::f64 ? 1e-12 : 1e-5;
    EXPECT_TRUE(same(y, goldens.at(n, "y"), tol));
    EXPECT_TRUE(same(rm, goldens.at(n, "rm_after"), tol));
    EXPECT_TRUE(same(rv, goldens.at(n, "rv_after"), tol));
  }
  goldens.check_both("in2d_running", {"x"}, [](const Inputs& m, const std::string& n) {
    return F::instance_norm(m.at("x"), goldens.at(n, "rm").clone(), goldens.at(n, "rv").clone(), {}, {}, true, 0.2, 1e-3);
  });
  goldens.check_both("in_eval", {"x", "w", "b"}, [](const Inputs& m, const std::string& n) {
    return F::instance_norm(m.at("x"), {.running_mean = goldens.at(n, "rm"), .running_var = goldens.at(n, "rv"), .weight = m.at("w"),
                                        .bias = m.at("b"), .use_input_stats = false});
  });
}

TEST(Norms, LocalResponseNorm) {
  goldens.check_both("lrn", {"x"}, [](const Inputs& m, auto&) { return F::local_response_norm(m.at("x"), 3); });
  goldens.check_both("lrn_4d", {"x"}, [](const Inputs& m, auto&) {
    return F::local_response_norm(m.at("x"), F::LocalResponseNormFuncOptions(4).alpha(0.1).beta(0.6).k(2.0));
  });
  goldens.check_both("lrn_size1", {"x"}, [](const Inputs& m, auto&) { return F::local_response_norm(m.at("x"), 1, 0.5); });
  goldens.check_both("lrn_wide", {"x"}, [](const Inputs& m, auto&) {
    return F::local_response_norm(m.at("x"), {.size = 9, .alpha = 0.3, .beta = 1.2, .k = 0.5});
  });
}

TEST(Norms, Normalize) {
  goldens.check_both("normalize", {"x"}, [](const Inputs& m, auto&) { return F::normalize(m.at("x")); });
  goldens.check_both("normalize_p1_dim0", {"x"}, [](const Inputs& m, auto&) {
    return F::normalize(m.at("x"), F::NormalizeFuncOptions().p(1.0).dim(0));
  });
  goldens.check_both("normalize_inf", {"x"}, [](const Inputs& m, auto&) { return F::normalize(m.at("x"), INFINITY, -1); });
  goldens.check_both("normalize_p3_eps", {"x"}, [](const Inputs& m, auto&) {
    return F::normalize(m.at("x"), {.p = 3.0, .dim = 1, .eps = 0.5});
  });
  // a zero row stays zero, with PyTorch's gradient 1/eps (finite)
  Tensor z = zeros({1, 3}, {.dtype = DType::f64}).requires_grad_();
  const Tensor y = F::normalize(z);
  EXPECT_TRUE(test::close_to(y, {0, 0, 0}, Shape{1, 3}));
  sum(y).backward();
  EXPECT_TRUE(test::close_to(z.grad(), {1e12, 1e12, 1e12}, Shape{1, 3}));
}

TEST(Norms, GroupNormLayer) {
  nn::GroupNorm gn(nn::GroupNormOptions(2, 4).eps(1e-3));
  EXPECT_EQ(gn.named_parameters().size(), 2u);
  EXPECT_EQ(gn.named_parameters()[0].first, "weight");
  EXPECT_EQ(gn.describe(), "GroupNorm(2, 4, eps=0.001)");
  const Tensor x = randn({3, 4, 5});
  {
    NoGradGuard no_grad;
    gn.weight.copy_(from_vector<float>({1, 2, 3, 4}));
  }
  EXPECT_TRUE(same(gn.forward(x), F::group_norm(x, 2, gn.weight, gn.bias, 1e-3), 1e-6));
  nn::GroupNorm plain({.num_groups = 1, .num_channels = 4, .affine = false});
  EXPECT_TRUE(plain.named_parameters().empty());
  EXPECT_TRUE(same(plain.forward(x), F::group_norm(x, 1), 1e-6));
  // in f64 after .to(), and a dtype mismatch names the layer
  gn.to(DType::f64);
  EXPECT_EQ(gn.forward(x.to(DType::f64)).dtype(), DType::f64);
  EXPECT_TRUE(test::throws_error([&] { gn.forward(x); }, {"GroupNorm", "f32", "f64", ".to("}));
  EXPECT_TRUE(test::throws_error([&] { gn.forward(randn({3, 6, 5}, {.dtype = DType::f64})); },
                                 {"GroupNorm", "[N, 4, *]", "[3, 6, 5]"}));
  EXPECT_TRUE(test::throws_error([] { nn::GroupNorm(4, 6); }, {"GroupNorm", "divisible", "6", "4"}));
}

TEST(Norms, InstanceNormLayers) {
  // PyTorch's defaults: no parameters, no buffers, the input's statistics in train and eval alike
  nn::InstanceNorm2d plain(3);
  EXPECT_TRUE(plain.named_parameters().empty());
  EXPECT_TRUE(plain.named_buffers().empty());
  const Tensor x = randn({2, 3, 4, 4}, {.dtype = DType::f64});
  plain.to(DType::f64);
  const Tensor y_train = plain.forward(x);
  plain.eval();
  EXPECT_TRUE(same(plain.forward(x), y_train));
  EXPECT_TRUE(same(y_train, F::instance_norm(x)));
  // unbatched [C, H, W]
  EXPECT_TRUE(same(plain.forward(x.select(0, 1)), y_train.select(0, 1)));

  // affine + track_running_stats: state-dict names as PyTorch, running statistics updated in training,
  // used in eval
  nn::InstanceNorm1d in(nn::InstanceNormOptions(3).affine(true).track_running_stats(true).momentum(0.3));
  in.to(DType::f64);
  std::vector<std::string> keys;
  for (const auto& [k, v] : in.state_dict()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}));
  const Tensor s = randn({4, 3, 6}, {.dtype = DType::f64});
  const Tensor rm = zeros({3}, {.dtype = DType::f64}), rv = ones({3}, {.dtype = DType::f64});
  const Tensor expected = F::instance_norm(s, rm, rv, in.weight, in.bias, true, 0.3);
  EXPECT_TRUE(same(in.forward(s), expected));
  EXPECT_TRUE(same(in.running_mean, rm));
  EXPECT_TRUE(same(in.running_var, rv));
  EXPECT_EQ(in.num_batches_tracked.item<int64_t>(), 0);  // PyTorch's InstanceNorm never advances it
  in.eval();
  EXPECT_TRUE(same(in.forward(s), F::instance_norm(s, rm, rv, in.weight, in.bias, false)));
  EXPECT_TRUE(same(in.running_mean, rm));  // eval leaves them
  EXPECT_TRUE(test::throws_error([&] { in.forward(randn({4, 5, 6}, {.dtype = DType::f64})); },
                                 {"InstanceNorm1d", "5 channels", "built for 3"}));
  EXPECT_TRUE(test::throws_error([&] { in.forward(randn({2, 3, 4, 4}, {.dtype = DType::f64})); },
                                 {"InstanceNorm1d", "[N, C, L] or [C, L]", "[2, 3, 4, 4]"}));
  EXPECT_TRUE(test::throws_error([&] { in.forward(s.to(DType::f32)); }, {"InstanceNorm1d", "f32", "f64", ".to("}));
}

TEST(Norms, LocalResponseNormLayer) {
  nn::LocalResponseNorm lrn(nn::LocalResponseNormOptions(3).alpha(0.2).k(2.0));
  const Tensor x = randn({2, 5, 4});
  EXPECT_TRUE(same(lrn.forward(x), F::local_response_norm(x, 3, 0.2, 0.75, 2.0), 1e-6));
  EXPECT_EQ(lrn.describe(), "LocalResponseNorm(3, alpha=0.2, beta=0.75, k=2)");
}

TEST(Norms, ErrorsNameTheNorm) {
  const Tensor x = randn({2, 6, 4});
  EXPECT_TRUE(test::throws_error([&] { F::group_norm(x, 4); }, {"group_norm", "6 channels", "num_groups = 4"}));
  EXPECT_TRUE(test::throws_error([&] { F::group_norm(randn({6}), 2); }, {"group_norm", "[N, C, *]", "[6]"}));
  EXPECT_TRUE(test::throws_error([&] { F::group_norm(x, 2, ones({4})); }, {"group_norm", "weight must be [6]"}));
  EXPECT_TRUE(test::throws_error([&] { F::instance_norm(x, {}, {}, {}, {}, false); },
                                 {"instance_norm", "running_mean and running_var"}));
  EXPECT_TRUE(test::throws_error([&] { F::instance_norm(randn({2, 6, 1})); },
                                 {"instance_norm", "more than 1 spatial element", "[2, 6, 1]"}));
  EXPECT_TRUE(test::throws_error([&] { F::instance_norm(x, zeros({4}), ones({6})); },
                                 {"instance_norm", "running_mean must be [6]"}));
  EXPECT_TRUE(test::throws_error([&] { F::local_response_norm(randn({2, 6}), 3); },
                                 {"local_response_norm", "at least 3 dims", "[2, 6]"}));
  EXPECT_TRUE(test::throws_error([&] { F::local_response_norm(x, 0); }, {"local_response_norm", "size"}));
  EXPECT_TRUE(test::throws_error([&] { F::normalize(x, -1.0); }, {"vector_norm", "p must be"}));
}
