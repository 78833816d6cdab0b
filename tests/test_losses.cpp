// The losses of PyTorch parity round 3 against PyTorch 1.13 (tests/data/loss_golden.safetensors, written by
// tools/make_loss_golden.py): forward values and input gradients in f64 (with gradcheck) and f32, LibTorch's
// builder options (for the older losses too), the loss modules, and the errors naming each loss.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <limits>

#include "golden_cases.h"
#include "test_helpers.h"

using namespace ember;
namespace F = ember::nn::functional;
using R = F::Reduction;

namespace {

const test::GoldenCases goldens("loss_golden.safetensors");
using Inputs = test::GoldenCases::Inputs;

}  // namespace

TEST(Losses, SmoothL1AndHuber) {
  goldens.check_both("smooth_l1", {"x", "t"}, [](const Inputs& m, auto&) { return F::smooth_l1_loss(m.at("x"), m.at("t")); });
  goldens.check_both("smooth_l1_beta_none", {"x", "t"}, [](const Inputs& m, auto&) {
    return F::smooth_l1_loss(m.at("x"), m.at("t"), {.reduction = R::none, .beta = 0.5});
  });
  goldens.check_both("smooth_l1_beta0_sum", {"x", "t"}, [](const Inputs& m, auto&) {
    return F::smooth_l1_loss(m.at("x"), m.at("t"), F::SmoothL1LossFuncOptions().beta(0.0).reduction(R::sum));
  });
  goldens.check_both("huber", {"x", "t"}, [](const Inputs& m, auto&) { return F::huber_loss(m.at("x"), m.at("t")); });
  goldens.check_both("huber_delta_sum", {"x", "t"}, [](const Inputs& m, auto&) {
    return F::huber_loss(m.at("x"), m.at("t"), F::HuberLossFuncOptions().delta(0.7).reduction(R::sum));
  });
  goldens.check_both("huber_delta_none", {"x", "t"}, [](const Inputs& m, auto&) {
    return F::huber_loss(m.at("x"), m.at("t"), {.reduction = R::none, .delta = 2.5});
  });
}

TEST(Losses, KLDivergence) {
  goldens.check_both("kl_batchmean", {"x", "t"}, [](const Inputs& m, auto&) {
    return F::kl_div(m.at("x"), m.at("t"), {.reduction = F::KLDivReduction::batchmean});
  });
  goldens.check_both("kl_mean", {"x", "t"}, [](const Inputs& m, auto&) { return F::kl_div(m.at("x"), m.at("t")); });
  // targets with exact zeros contribute 0 (xlogy), not NaN
  goldens.check_both("kl_sum_zeros", {"x"}, [](const Inputs& m, const std::string& n) {
    return F::kl_div(m.at("x"), goldens.at(n, "t"), {.reduction = R::sum});
  });
  goldens.check_both("kl_none_log_target", {"x", "t"}, [](const Inputs& m, auto&) {
    return F::kl_div(m.at("x"), m.at("t"), F::KLDivFuncOptions().reduction(R::none).log_target(true));
  });
  goldens.check_both("kl_batchmean_log_target", {"x", "t"}, [](const Inputs& m, auto&) {
    return F::kl_div(m.at("x"), m.at("t"),
                     F::KLDivFuncOptions().reduction(F::KLDivReduction::batchmean).log_target(true));
  });
}

TEST(Losses, CosineSimilarityAndPairwiseDistance) {
  goldens.check_both("cos_sim", {"a", "b"}, [](const Inputs& m, auto&) { return F::cosine_similarity(m.at("a"), m.at("b")); });
  goldens.check_both("cos_sim_dim0_bcast", {"a", "b"}, [](const Inputs& m, auto&) {
    return F::cosine_similarity(m.at("a"), m.at("b"), F::CosineSimilarityFuncOptions().dim(0).eps(1e-6));
  });
  // ‖a‖ below eps: clamped in value only, the gradient as PyTorch 1.13's (no gradcheck: that is not a derivative)
  goldens.check_both("cos_sim_tiny", {"a", "b"}, [](const Inputs& m, auto&) {
    return F::cosine_similarity(m.at("a"), m.at("b"), {.dim = -1, .eps = 1e-3});
  }, false);
  goldens.check_both("pdist", {"a", "b"}, [](const Inputs& m, auto&) { return F::pairwise_distance(m.at("a"), m.at("b")); });
  goldens.check_both("pdist_p1_keepdim", {"a", "b"}, [](const Inputs& m, auto&) {
    return F::pairwise_distance(m.at("a"), m.at("b"), {.p = 1.0, .eps = 1e-3, .keepdim = true});
  });
  goldens.check_both("pdist_p3", {"a", "b"}, [](const Inputs& m, auto&) {
    return F::pairwise_distance(m.at("a"), m.at("b"), F::PairwiseDistanceFuncOptions().p(3.0));
  });
}

TEST(Losses, EmbeddingAndRankingLosses) {
  goldens.check_both("cos_emb", {"a", "b"}, [](const Inputs& m, const std::string& n) {
    return F::cosine_embedding_loss(m.at("a"), m.at("b"), goldens.at(n, "t"), {.margin = 0.2});
  });
  goldens.check_both("cos_emb_none", {"a", "b"}, [](const Inputs& m, const std::string& n) {
    return F::cosine_embedding_loss(m.at("a"), m.at("b"), goldens.at(n, "t"),
                                    F::CosineEmbeddingLossFuncOptions().margin(-0.3).reduction(R::none));
  });
  goldens.check_both("cos_emb_1d", {"a", "b"}, [](const Inputs& m, const std::string& n) {
    return F::cosine_embedding_loss(m.at("a"), m.at("b"), goldens.at(n, "t"), {.reduction = R::sum});
  });
  goldens.check_both("margin_rank", {"a", "b"}, [](const Inputs& m, const std::string& n) {
    return F::margin_ranking_loss(m.at("a"), m.at("b"), goldens.at(n, "t"), F::MarginRankingLossFuncOptions().margin(0.5));
  });
  goldens.check_both("margin_rank_none", {"a", "b"}, [](const Inputs& m, const std::string& n) {
    return F::margin_ranking_loss(m.at("a"), m.at("b"), goldens.at(n, "t"), {.reduction = R::none});
  });
  goldens.check_both("triplet", {"a", "p", "n"}, [](const Inputs& m, auto&) {
    return F::triplet_margin_loss(m.at("a"), m.at("p"), m.at("n"));
  });
  goldens.check_both("triplet_p1_swap_sum", {"a", "p", "n"}, [](const Inputs& m, auto&) {
    return F::triplet_margin_loss(m.at("a"), m.at("p"), m.at("n"),
                                  F::TripletMarginLossFuncOptions().margin(2.0).p(1).swap(true).reduction(R::sum));
  });
  goldens.check_both("triplet_none_1d", {"a", "p", "n"}, [](const Inputs& m, auto&) {
    return F::triplet_margin_loss(m.at("a"), m.at("p"), m.at("n"), {.margin = 3.0, .eps = 1e-3, .reduction = R::none});
  });
}

TEST(Losses, PoissonAndGaussianNll) {
  goldens.check_both("poisson", {"x", "t"}, [](const Inputs& m, auto&) { return F::poisson_nll_loss(m.at("x"), m.at("t")); });
  goldens.check_both("poisson_rate_full_sum", {"x"}, [](const Inputs& m, const std::string& n) {
    return F::poisson_nll_loss(m.at("x"), goldens.at(n, "t"),
                               F::PoissonNLLLossFuncOptions().log_input(false).full(true).reduction(R::sum));
  });
  goldens.check_both("poisson_full_none", {"x"}, [](const Inputs& m, const std::string& n) {
    return F::poisson_nll_loss(m.at("x"), goldens.at(n, "t"), {.full = true, .eps = 1e-4, .reduction = R::none});
  });
  goldens.check_both("gauss", {"x", "t", "v"}, [](const Inputs& m, auto&) {
    return F::gaussian_nll_loss(m.at("x"), m.at("t"), m.at("v"));
  });
  goldens.check_both("gauss_short_full", {"x", "t", "v"}, [](const Inputs& m, auto&) {
    return F::gaussian_nll_loss(m.at("x"), m.at("t"), m.at("v"), F::GaussianNLLLossFuncOptions().full(true).reduction(R::sum));
  });
  goldens.check_both("gauss_last1_none", {"x", "t", "v"}, [](const Inputs& m, auto&) {
    return F::gaussian_nll_loss(m.at("x"), m.at("t"), m.at("v"), {.reduction = R::none});
  });
  // var below eps: clamped in value, its gradient passing as PyTorch's (not a derivative: no gradcheck)
  goldens.check_both("gauss_clamped", {"x", "t", "v"}, [](const Inputs& m, auto&) {
    return F::gaussian_nll_loss(m.at("x"), m.at("t"), m.at("v"), {.eps = 1e-3});
  }, false);
}

TEST(Losses, BinaryCrossEntropyOnProbabilities) {
  goldens.check_both("bce", {"x", "t"}, [](const Inputs& m, auto&) { return F::binary_cross_entropy(m.at("x"), m.at("t")); });
  goldens.check_both("bce_weight_sum", {"x", "t"}, [](const Inputs& m, const std::string& n) {
    return F::binary_cross_entropy(m.at("x"), m.at("t"), F::BinaryCrossEntropyFuncOptions().weight(goldens.at(n, "w")).reduction(R::sum));
  });
  goldens.check_both("bce_none", {"x", "t"}, [](const Inputs& m, auto&) {
    return F::binary_cross_entropy(m.at("x"), m.at("t"), {.reduction = R::none});
  });
  // probabilities 0 and 1: the logs clamp at -100; PyTorch's gradient formula there (finite differences
  // would leave [0, 1])
  goldens.check_both("bce_edges", {"x"}, [](const Inputs& m, const std::string& n) {
    return F::binary_cross_entropy(m.at("x"), goldens.at(n, "t"), {.reduction = R::none});
  }, false);
}

TEST(Losses, MultilabelSoftMargin) {
  goldens.check_both("mlsm", {"x"}, [](const Inputs& m, const std::string& n) {
    return F::multilabel_soft_margin_loss(m.at("x"), goldens.at(n, "t"));
  });
  goldens.check_both("mlsm_weight_none", {"x", "t"}, [](const Inputs& m, const std::string& n) {
    return F::multilabel_soft_margin_loss(m.at("x"), m.at("t"), {.weight = goldens.at(n, "w"), .reduction = R::none});
  });
  goldens.check_both("mlsm_1d_sum", {"x"}, [](const Inputs& m, const std::string& n) {
    return F::multilabel_soft_margin_loss(m.at("x"), goldens.at(n, "t"), F::MultilabelSoftMarginLossFuncOptions().reduction(R::sum));
  });
  // stable far from 0: log σ(±1e4) in f32 is 0 and -1e4, not inf or NaN
  const Tensor big = from_vector<float>({1e4f, -1e4f}, {1, 2}), y = from_vector<float>({1.0f, 1.0f}, {1, 2});
  EXPECT_TRUE(test::close_to(F::multilabel_soft_margin_loss(big, y), {5e3}, Shape{}));
}

// LibTorch's builders for the losses that had only aggregates, equal to the designated-initialiser forms.
TEST(Losses, BuilderOptionsForTheOlderLosses) {
  const Tensor x = randn({6, 5}, {.dtype = DType::f64}), t = from_vector<int64_t>({1, 0, 4, 2, 3, 3});
  const Tensor w = rand({5}, {.dtype = DType::f64}) + 0.5;
  const auto ce = F::CrossEntropyFuncOptions().weight(w).ignore_index(3).label_smoothing(0.1).reduction(R::sum);
  EXPECT_EQ(ce.ignore_index(), 3);
  EXPECT_TRUE(test::close_to(F::cross_entropy(x, t, ce),
                             F::cross_entropy(x, t, {.ignore_index = 3, .label_smoothing = 0.1, .reduction = R::sum,
                                                     .weight = w}).to_vector<double>(), Shape{}));
  const Tensor lp = log_softmax(x, 1);
  EXPECT_TRUE(test::close_to(F::nll_loss(lp, t, F::NLLLossFuncOptions().weight(w).ignore_index(0)),
                             F::nll_loss(lp, t, {.ignore_index = 0, .weight = w}).to_vector<double>(), Shape{}));
  const Tensor y = randn({6, 5}, {.dtype = DType::f64});
  EXPECT_TRUE(test::close_to(F::mse_loss(x, y, F::MSELossFuncOptions().reduction(R::sum)),
                             F::mse_loss(x, y, {.reduction = R::sum}).to_vector<double>(), Shape{}));
  EXPECT_EQ(F::l1_loss(x, y, F::L1LossFuncOptions().reduction(R::none)).shape(), x.shape());
  const Tensor p = rand({6, 5}, {.dtype = DType::f64});
  EXPECT_TRUE(test::close_to(
      F::binary_cross_entropy_with_logits(x, p, F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(w).weight(w)),
      F::binary_cross_entropy_with_logits(x, p, {.weight = w, .pos_weight = w}).to_vector<double>(), Shape{}));
  // The modules take the builders too (LibTorch's nn::CrossEntropyLossOptions).
  nn::CrossEntropyLoss module(nn::CrossEntropyLossOptions().weight(w).ignore_index(3).label_smoothing(0.1).reduction(R::sum));
  EXPECT_TRUE(test::close_to(module.forward(x, t), F::cross_entropy(x, t, ce).to_vector<double>(), Shape{}));
}

TEST(Losses, ModulesRunTheFunctions) {
  const Tensor x = randn({4, 3}, {.dtype = DType::f64}), y = randn({4, 3}, {.dtype = DType::f64});
  const auto same = [](const Tensor& a, const Tensor& b) { return test::close_to(a, b.to_vector<double>(), b.shape()); };
  EXPECT_TRUE(same(nn::SmoothL1Loss(nn::SmoothL1LossOptions().beta(0.3)).forward(x, y), F::smooth_l1_loss(x, y, {.beta = 0.3})));
  EXPECT_TRUE(same(nn::HuberLoss({.delta = 0.3}).forward(x, y), F::huber_loss(x, y, {.delta = 0.3})));
  const Tensor lp = log_softmax(x, 1), p = softmax(y, 1);
  EXPECT_TRUE(same(nn::KLDivLoss({.reduction = F::KLDivReduction::batchmean}).forward(lp, p),
                   F::kl_div(lp, p, {.reduction = F::KLDivReduction::batchmean})));
  const Tensor pr = sigmoid(x), t = rand({4, 3}, {.dtype = DType::f64});
  EXPECT_TRUE(same(nn::BCELoss().forward(pr, t), F::binary_cross_entropy(pr, t)));
  EXPECT_TRUE(same(nn::MultiLabelSoftMarginLoss().forward(x, t), F::multilabel_soft_margin_loss(x, t)));
  EXPECT_TRUE(same(nn::PoissonNLLLoss({.log_input = false}).forward(pr, t), F::poisson_nll_loss(pr, t, {.log_input = false})));
  EXPECT_TRUE(same(nn::GaussianNLLLoss().forward(x, y, pr), F::gaussian_nll_loss(x, y, pr)));
  const Tensor s = from_vector<double>({1, -1, -1, 1});
  EXPECT_TRUE(same(nn::CosineEmbeddingLoss({.margin = 0.1}).forward(x, y, s), F::cosine_embedding_loss(x, y, s, {.margin = 0.1})));
  EXPECT_TRUE(same(nn::MarginRankingLoss().forward(x.select(1, 0), y.select(1, 0), s),
                   F::margin_ranking_loss(x.select(1, 0), y.select(1, 0), s)));
  EXPECT_TRUE(same(nn::TripletMarginLoss({.swap = true}).forward(x, y, pr), F::triplet_margin_loss(x, y, pr, {.swap = true})));
  EXPECT_TRUE(same(nn::CosineSimilarity({.dim = 0}).forward(x, y), F::cosine_similarity(x, y, {.dim = 0})));
  EXPECT_TRUE(same(nn::PairwiseDistance().forward(x, y), F::pairwise_distance(x, y)));
  EXPECT_EQ(nn::KLDivLoss().type_name(), "KLDivLoss");
}

TEST(Losses, EdgeCasesAsPyTorch) {
  const Tensor x = from_vector<double>({0.5, -2.0, 3.0}), y = from_vector<double>({0.0, 0.0, 0.0});
  // beta = 0 is l1_loss
  EXPECT_TRUE(test::close_to(F::smooth_l1_loss(x, y, {.beta = 0.0}), {5.5 / 3}, Shape{}));
  // kl_div with batchmean on a 0-d input is the sum
  const Tensor a = scalar_tensor(-1.0, {.dtype = DType::f64}), b = scalar_tensor(0.5, {.dtype = DType::f64});
  EXPECT_TRUE(test::close_to(F::kl_div(a, b, {.reduction = F::KLDivReduction::batchmean}),
                             {0.5 * std::log(0.5) + 0.5}, Shape{}));
  // cosine_embedding_loss: targets other than ±1 contribute 0
  const Tensor u = from_vector<double>({1, 0, 0, 1}, {2, 2}), v = from_vector<double>({0, 1, 0, 1}, {2, 2});
  EXPECT_TRUE(test::close_to(F::cosine_embedding_loss(u, v, from_vector<double>({1, 0}), {.reduction = R::none}),
                             {1.0, 0.0}, Shape{2}));
  // normalize and cosine_similarity of zero vectors: 0, with finite gradients
  Tensor z = zeros({2, 3}, {.dtype = DType::f64}).requires_grad_();
  const Tensor c = F::cosine_similarity(z, ones({2, 3}, {.dtype = DType::f64}));
  EXPECT_TRUE(test::close_to(c, {0.0, 0.0}, Shape{2}));
  sum(c).backward();
  for (double g : z.grad().to_vector<double>()) EXPECT_TRUE(std::isfinite(g));
  // binary_cross_entropy at 0 and 1 is finite (logs clamped at -100)
  EXPECT_TRUE(test::close_to(F::binary_cross_entropy(from_vector<double>({0.0, 1.0}), from_vector<double>({1.0, 0.0}),
                                                     {.reduction = R::none}),
                             {100.0, 100.0}, Shape{2}));
}

TEST(Losses, ErrorsNameTheLoss) {
  const Tensor x = zeros({4, 3}), y3 = zeros({3});
  EXPECT_TRUE(test::throws_error([&] { F::smooth_l1_loss(x, y3); }, {"smooth_l1_loss", "[4, 3]", "[3]", "same shape"}));
  EXPECT_TRUE(test::throws_error([&] { F::smooth_l1_loss(x, x, {.beta = -1}); }, {"smooth_l1_loss", "beta", ">= 0"}));
  EXPECT_TRUE(test::throws_error([&] { F::huber_loss(x, y3); }, {"huber_loss", "[4, 3]", "[3]"}));
  EXPECT_TRUE(test::throws_error([&] { F::huber_loss(x, x, {.delta = 0}); }, {"huber_loss", "delta", "positive"}));
  EXPECT_TRUE(test::throws_error([&] { F::kl_div(x, zeros({2})); }, {"kl_div", "[4, 3]", "[2]"}));
  EXPECT_TRUE(test::throws_error([&] { F::cosine_similarity(x, zeros({5, 3})); }, {"cosine_similarity", "[4, 3]", "[5, 3]"}));
  EXPECT_TRUE(test::throws_error([&] { F::cosine_similarity(x, x, {.dim = 2}); }, {"cosine_similarity", "dim 2"}));
  EXPECT_TRUE(test::throws_error([&] { F::cosine_embedding_loss(x, x, zeros({4, 1})); },
                                 {"cosine_embedding_loss", "0-d or 1-D target", "[4, 1]"}));
  EXPECT_TRUE(test::throws_error([&] { F::cosine_embedding_loss(x, x, scalar_tensor(1.0)); },
                                 {"cosine_embedding_loss", "0-d target expects 1-D [D] inputs", "[4, 3]"}));
  EXPECT_TRUE(test::throws_error([&] { F::margin_ranking_loss(x, x, zeros({4})); },
                                 {"margin_ranking_loss", "same number of dims", "[4]"}));
  EXPECT_TRUE(test::throws_error([&] { F::triplet_margin_loss(x, x, y3); },
                                 {"triplet_margin_loss", "same number of dims", "[3]"}));
  EXPECT_TRUE(test::throws_error([&] { F::poisson_nll_loss(x, zeros({2})); }, {"poisson_nll_loss", "[4, 3]", "[2]"}));
  EXPECT_TRUE(test::throws_error([&] { F::gaussian_nll_loss(x, x, zeros({3})); },
                                 {"gaussian_nll_loss", "var of shape [3]", "[4, 3]"}));
  EXPECT_TRUE(test::throws_error([&] { F::gaussian_nll_loss(x, x, full({4}, -1.0)); },
                                 {"gaussian_nll_loss", "negative"}));
  EXPECT_TRUE(test::throws_error([&] { F::binary_cross_entropy(x, y3); }, {"binary_cross_entropy", "[4, 3]", "[3]"}));
  EXPECT_TRUE(test::throws_error([&] { F::binary_cross_entropy(full({2}, 1.5), zeros({2})); },
                                 {"binary_cross_entropy", "between 0 and 1", "binary_cross_entropy_with_logits"}));
  EXPECT_TRUE(test::throws_error([&] { F::binary_cross_entropy(x, x, {.weight = zeros({2, 4, 3})}); },
                                 {"binary_cross_entropy", "weight of shape [2, 4, 3]", "[4, 3]"}));
  EXPECT_TRUE(test::throws_error([&] { F::multilabel_soft_margin_loss(x, zeros({5})); },
                                 {"multilabel_soft_margin_loss", "[4, 3]", "[5]"}));
  EXPECT_TRUE(test::throws_error([&] { F::smooth_l1_loss(zeros({2}, {.dtype = DType::i64}), zeros({2}, {.dtype = DType::i64})); },
                                 {"smooth_l1_loss", "floating"}));
}

TEST(Losses, CtcLoss) {
  const auto lengths = [](const std::string& n, const char* key) { return goldens.at(n, key); };
  goldens.check_both("ctc_mean", {"x"}, [&](const Inputs& m, const std::string& n) {
    return F::ctc_loss(m.at("x"), goldens.at(n, "tg"), lengths(n, "il"), lengths(n, "tl"));
  }, false);  // PyTorch's log_probs gradient assumes a log_softmax input: gradchecked through one below
  goldens.check_both("ctc_logits_sum", {"x"}, [&](const Inputs& m, const std::string& n) {
    return F::ctc_loss(log_softmax(m.at("x"), 2), goldens.at(n, "tg"), lengths(n, "il"), lengths(n, "tl"),
                       F::CTCLossFuncOptions().reduction(R::sum));
  });
  goldens.check_both("ctc_concat_blank_last_none", {"x"}, [&](const Inputs& m, const std::string& n) {
    return F::ctc_loss(m.at("x"), goldens.at(n, "tg"), lengths(n, "il"), lengths(n, "tl"), {.blank = 4, .reduction = R::none});
  }, false);
  goldens.check_both("ctc_zero_infinity", {"x"}, [&](const Inputs& m, const std::string& n) {
    return F::ctc_loss(m.at("x"), goldens.at(n, "tg"), lengths(n, "il"), lengths(n, "tl"),
                       {.reduction = R::none, .zero_infinity = true});
  }, false);
  goldens.check_both("ctc_zero_infinity_mean", {"x"}, [&](const Inputs& m, const std::string& n) {
    return F::ctc_loss(m.at("x"), goldens.at(n, "tg"), lengths(n, "il"), lengths(n, "tl"), {.zero_infinity = true});
  }, false);
  goldens.check_both("ctc_unbatched_logits", {"x"}, [&](const Inputs& m, const std::string& n) {
    return F::ctc_loss(log_softmax(m.at("x"), 1), goldens.at(n, "tg"), lengths(n, "il"), lengths(n, "tl"));
  });
  // The length lists (LibTorch's IntArrayRef overload) and the module give the same; without zero_infinity an
  // impossible alignment is an infinite loss.
  const std::string n = "ctc_zero_infinity";
  const Tensor x = goldens.at(n, "x"), tg = goldens.at(n, "tg");
  const Tensor l = F::ctc_loss(x, tg, std::vector<int64_t>{7, 1, 6}, std::vector<int64_t>{3, 2, 4}, {.reduction = R::none});
  const auto v = l.to_vector<double>();
  EXPECT_TRUE(std::isinf(v[1]) && v[1] > 0);
  test::GoldenCases::expect_close(l.select(0, 0), goldens.at(n, "y").select(0, 0), "list lengths", 1e-12);
  nn::CTCLoss module(nn::CTCLossOptions().zero_infinity(true));
  test::GoldenCases::expect_close(module.forward(x, tg, goldens.at(n, "il"), goldens.at(n, "tl")),
                                  F::ctc_loss(x, tg, goldens.at(n, "il"), goldens.at(n, "tl"), {.zero_infinity = true}), "module", 1e-12);
}

TEST(Losses, CtcLossErrors) {
  const Tensor lp = log_softmax(randn({5, 2, 4}), 2);
  const Tensor tg = from_vector<int64_t>({1, 2, 3, 1}, {2, 2}), il = from_vector<int64_t>({5, 5});
  const Tensor tl = from_vector<int64_t>({2, 2});
  EXPECT_TRUE(test::throws_error([&] { F::ctc_loss(lp.select(1, 0).select(1, 0), tg, il, tl); },
                                 {"ctc_loss", "[T, N, C]", "[5]"}));
  EXPECT_TRUE(test::throws_error([&] { F::ctc_loss(lp, tg, il, tl, {.blank = 4}); }, {"ctc_loss", "blank (4)", "[0, 4)"}));
  EXPECT_TRUE(test::throws_error([&] { F::ctc_loss(lp, tg, from_vector<int64_t>({5}), tl); },
                                 {"ctc_loss", "input_lengths has 1 entries", "(2)"}));
  EXPECT_TRUE(test::throws_error([&] { F::ctc_loss(lp, tg, from_vector<int64_t>({6, 5}), tl); },
                                 {"ctc_loss", "input_lengths[0] = 6", "T = 5"}));
  EXPECT_TRUE(test::throws_error([&] { F::ctc_loss(lp, tg, il, from_vector<int64_t>({3, 2})); },
                                 {"ctc_loss", "target_lengths[0] = 3", "S = 2"}));
  EXPECT_TRUE(test::throws_error([&] { F::ctc_loss(lp, from_vector<int64_t>({1, 2, 3}), il, tl); },
                                 {"ctc_loss", "sum to at least 4", "hold 3"}));
  EXPECT_TRUE(test::throws_error([&] { F::ctc_loss(lp, from_vector<int64_t>({1, 0, 3, 1}, {2, 2}), il, tl); },
                                 {"ctc_loss", "label 0 of sample 0", "other than blank"}));
  EXPECT_TRUE(test::throws_error([&] { F::ctc_loss(lp, tg.to(DType::f32), il, tl); }, {"ctc_loss", "targets must be i64"}));
}
