// nn::functional against PyTorch: each case's inputs, output and input gradients (of sum(y * r)) come
// from tests/data/nn_golden.safetensors (tools/make_nn_golden.py), in f64 (helpers: nn_golden_cases.h).
// Each case also passes gradcheck. The golden cases that are lines of the op table (tests/op_table.h: conv,
// pooling, batch/layer norm, linear, whose f64 goldens, gradcheck and CPU-vs-CUDA parity run from there,
// tests/test_gradcheck.cpp) are not repeated here; what is here is what the table does not do: f32 goldens,
// unbatched and strided inputs, option forms, running statistics, fast paths, and the error messages users
// can hit. The losses: test_nn_losses.cpp.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include "nn_golden_cases.h"
#include "test_helpers.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/safetensors.h"
#include "nn/functional.h"
#include "nn/layers.h"

using namespace ember;
using namespace ember::test::nn_golden;

// conv_plain, conv_strided, conv_grouped in f64 (forward, gradients, gradcheck): the op table's lines
// conv2d_padding, conv2d_stride_padding_dilation and conv2d_groups.
TEST(NnFunctional, Conv2dUnbatchedAndNonContiguous) {
  const Tensor x = get("conv_plain.x"), w = get("conv_plain.w"), b = get("conv_plain.b");
  const Tensor y = F::conv2d(x.select(0, 1), w, b, conv(1, 1, 1, 1, 1, 1, 1));
  expect_close(y, get("conv_plain.y").select(0, 1), "unbatched");
  const Tensor xt = x.transpose(2, 3).contiguous().transpose(2, 3);  // same values, other strides
  expect_close(F::conv2d(xt, w, b, conv(1, 1, 1, 1, 1, 1, 1)), get("conv_plain.y"), "strided input");
}

// conv1d as PyTorch's: unbatched input and an f32 case computed by PyTorch in f32 (the f64 cases, with
// the three ways of writing the options: the op table's lines conv1d, conv1d_strided, conv1d_grouped).
TEST(NnFunctional, Conv1d) {
  const Tensor x = get("conv1d_plain.x"), w = get("conv1d_plain.w"), b = get("conv1d_plain.b");
  expect_close(F::conv1d(x.select(0, 1), w, b, F::Conv1dOptions().padding(1)), get("conv1d_plain.y").select(0, 1),
               "unbatched [C, L]");

  Tensor x32 = get("f32_conv1d.x").requires_grad_(), w32 = get("f32_conv1d.w").requires_grad_();
  Tensor b32 = get("f32_conv1d.b").requires_grad_();
  ASSERT_EQ(x32.dtype(), DType::f32);
  const Tensor y = F::conv1d(x32, w32, b32, F::Conv1dOptions().stride(2).padding(1));
  expect_close(y, get("f32_conv1d.y"), "f32 forward", 2e-5);
  (y * get("f32_conv1d.r")).sum().backward();
  expect_close(x32.grad(), get("f32_conv1d.gx"), "f32 grad x", 2e-5);
  expect_close(w32.grad(), get("f32_conv1d.gw"), "f32 grad w", 2e-5);
  expect_close(b32.grad(), get("f32_conv1d.gb"), "f32 grad b", 2e-5);
}

TEST(NnFunctional, Conv1dErrorsNameConv1d) {
  const Tensor w = zeros({4, 3, 3});
  EXPECT_TRUE(test::throws_error([&] { F::conv1d(zeros({2, 3, 4, 5}), w); },
                                 {"conv1d: expected input [N, C, L] or [C, L]", "[2, 3, 4, 5]"}));
  EXPECT_TRUE(test::throws_error([&] { F::conv1d(zeros({2, 3, 5}), zeros({4, 3, 3, 3})); },
                                 {"conv1d: weight must be [O, C/groups, K]", "[4, 3, 3, 3]"}));
  EXPECT_TRUE(test::throws_error([&] { F::conv1d(zeros({2, 5, 8}), w); }, {"conv1d", "the input has 5 channels"}));
  EXPECT_TRUE(test::throws_error([&] { F::conv1d(zeros({2, 3, 2}), w); }, {"conv1d", "output size is too small"}));
}

// The option forms compile to the same options: LibTorch's builder, designated initialisers, one int.
TEST(NnFunctional, OptionForms) {
  const auto built = F::Conv2dOptions(1, 32, {3, 5}).stride(2).padding({1, 2});
  const F::Conv2dOptions designated = F::Conv2dOptions::Fields{
      .in_channels = 1, .out_channels = 32, .kernel_size = {3, 5}, .stride = 2, .padding = {1, 2}};
  EXPECT_EQ(built.kernel_size(), designated.kernel_size());
  EXPECT_EQ(built.stride(), designated.stride());
  EXPECT_EQ(built.padding(), designated.padding());
  EXPECT_EQ(built.padding()[1], 2);
  EXPECT_EQ(built.stride()[0], 2);
  EXPECT_EQ(built.dilation()[1], 1);

  const Tensor x = get("maxpool.x");
  // max_pool2d(x, 2) is a 2×2 window with stride 2, as PyTorch's F.max_pool2d(x, 2)
  expect_close(F::max_pool2d(x, 2), F::max_pool2d(x, F::MaxPool2dOptions(2).stride(2)), "shorthand");
  EXPECT_EQ(F::avg_pool2d(x, 2).shape(), Shape({2, 3, 3, 4}));
  expect_close(F::max_pool2d(x, {.kernel_size = 3, .stride = 2, .padding = 1}), get("maxpool.y"), "designated");
  EXPECT_TRUE(test::throws_error([] { F::Conv2dOptions().stride({1, 2, 3}); }, {"expected 2 values", "got 3"}));
}

// Pooling (maxpool, avgpool, avgpool_nopad, adaptive) and ceil_mode (PyTorch's output sizes: a last window
// past the padding, clipped; one that would start in the right padding dropped; values, gradients, the avg
// divisors of the clipped windows, gradcheck): the op table's pooling lines with goldens.
TEST(NnFunctional, PoolingCeilMode) {
  // f32 over odd sizes (the 2x2 fast path's dtype) gives the same
  const Tensor x = get("maxpool2x2_ceil.x").to(DType::f32);
  expect_close(F::max_pool2d(x, pool(2, 2, 0, true, true)), get("maxpool2x2_ceil.y"), "f32 2x2 ceil", 1e-6);
  // A window may overhang the input by up to stride - 1 in ceil_mode (PyTorch: 3 and 1.5 here, the avg over
  // the clipped window), not more.
  const Tensor small = arange(0, 4, 1, {.dtype = DType::f64}).reshape({1, 1, 2, 2});
  EXPECT_EQ(F::max_pool2d(small, pool(3, 2, 0, true, true)).to_vector<double>(), std::vector<double>{3.0});
  EXPECT_EQ(F::avg_pool2d(small, pool(3, 2, 0, true, true)).to_vector<double>(), std::vector<double>{1.5});
  EXPECT_TRUE(test::throws_error([] { F::max_pool2d(zeros({1, 1, 1, 1}), pool(4, 2, 0, true, true)); },
                                 {"max_pool2d", "output size is too small", "(ceil_mode)", "output [0, 0]",
                                  "H + 2·padding + stride - 1 >= kernel"}));
}

// (gradcheck of the training-mode output: the op table's batch_norm_train lines.)
TEST(NnFunctional, BatchNormTrainingUpdatesRunningStats) {
  Tensor rm = get("bn_train.rm0").clone(), rv = get("bn_train.rv0").clone();
  check_case("bn_train", {"x", "w", "b"},
             [&](auto& m) { return F::batch_norm(m.at("x"), rm, rv, m.at("w"), m.at("b"), true, 0.1, 1e-5); }, false);
  expect_close(rm, get("bn_train.rm"), "running_mean");
  expect_close(rv, get("bn_train.rv"), "running_var");
}

// Strided weight, bias and running statistics (every other element of a longer buffer) give what their
// contiguous copies give, and the running statistics are updated in place, in the right elements.
TEST(NnFunctional, BatchNormStridedParameters) {
  const Tensor x = get("bn_train.x"), w = get("bn_train.w"), b = get("bn_train.b");
  const int64_t C = w.numel();
  const auto strided = [C](const Tensor& t) {
    Tensor buf = zeros({2 * C}, {.dtype = t.dtype()});
    buf.slice(0, 0, 2 * C, 2).copy_(t);
    return buf.slice(0, 0, 2 * C, 2);
  };
  Tensor rm = get("bn_train.rm0").clone(), rv = get("bn_train.rv0").clone();
  const Tensor rm_s = strided(rm), rv_s = strided(rv);
  const Tensor ws = strided(w).requires_grad_(), wc = w.clone().requires_grad_();
  const Tensor y_s = F::batch_norm(x, rm_s, rv_s, ws, strided(b), true, 0.1, 1e-5);
  const Tensor y_c = F::batch_norm(x, rm, rv, wc, b, true, 0.1, 1e-5);
  expect_close(y_s, y_c, "output");
  expect_close(rm_s.contiguous(), rm, "running_mean");
  expect_close(rv_s.contiguous(), rv, "running_var");
  (y_s * y_s).sum().backward();
  (y_c * y_c).sum().backward();
  expect_close(ws.grad(), wc.grad(), "weight gradient");
}

// bn_eval, bn1d, layernorm: the op table's lines batch_norm_eval_golden, batch_norm_train_no_stats, layer_norm_2d.

// The weight and bias gradients are column sums over the rows, a tile of 256 columns at a time on the CPU:
// against their composition from Ember's ops in f64, over more columns than one tile (600).
TEST(NnFunctional, LayerNormParameterGradientsOverSeveralTiles) {
  Generator gen(2);
  const Tensor x = randn({50, 600}, {.dtype = DType::f64}, &gen), g = randn({50, 600}, {.dtype = DType::f64}, &gen);
  Tensor w = randn({600}, {.dtype = DType::f64}, &gen).requires_grad_(),
         b = randn({600}, {.dtype = DType::f64}, &gen).requires_grad_();
  F::layer_norm(x, {600}, w, b).backward(g);
  const Tensor mu = x.mean({1}, true), centred = x - mu;
  const Tensor xhat = centred * rsqrt((centred * centred).mean({1}, true) + 1e-5);
  expect_close(w.grad(), (g * xhat).sum({0}), "weight gradient");
  expect_close(b.grad(), g.sum({0}), "bias gradient");
}

// rmsnorm, rmsnorm_default_eps (f64): the op table's lines rms_norm_2d and rms_norm_default_eps. Here PyTorch's
// f32 result with f32's default eps (torch.finfo(f32).eps; mean(x²) ~ 1e-6 there, so eps shows), the weight
// gradient over several column tiles against its composition from Ember's ops, and the error messages.
TEST(NnFunctional, RmsNorm) {
  check_case_f32("f32_rmsnorm_default_eps", {"x", "w"}, [](auto& m) { return F::rms_norm(m.at("x"), {5}, m.at("w")); });
  const Tensor x32 = get("f32_rmsnorm_default_eps.x"), w32 = get("f32_rmsnorm_default_eps.w");
  EXPECT_EQ(F::rms_norm(x32, {5}, w32).to_vector<float>(),
            F::rms_norm(x32, {5}, w32, std::numeric_limits<float>::epsilon()).to_vector<float>());
  const Tensor x64 = get("rmsnorm_default_eps.x"), w64 = get("rmsnorm_default_eps.w");
  EXPECT_EQ(F::rms_norm(x64, {5}, w64).to_vector<double>(),
            F::rms_norm(x64, {5}, w64, std::numeric_limits<double>::epsilon()).to_vector<double>());

  Generator gen(3);
  const Tensor x = randn({50, 600}, {.dtype = DType::f64}, &gen), g = randn({50, 600}, {.dtype = DType::f64}, &gen);
  Tensor w = randn({600}, {.dtype = DType::f64}, &gen).requires_grad_();
  F::rms_norm(x, {600}, w, 1e-6).backward(g);
  expect_close(w.grad(), (g * x * rsqrt((x * x).mean({1}, true) + 1e-6)).sum({0}), "weight gradient");

  EXPECT_TRUE(test::throws_error([&] { F::rms_norm(zeros({2, 3}), {4}); }, {"rms_norm", "[4]", "[2, 3]"}));
  EXPECT_TRUE(test::throws_error([&] { F::rms_norm(zeros({2, 3}), {3}, zeros({2})); },
                                 {"rms_norm: weight must be [3] f32, got [2] f32"}));
  EXPECT_TRUE(test::throws_error([&] { F::rms_norm(zeros({2, 3}, {.dtype = DType::i64}), {3}); },
                                 {"rms_norm: needs a floating input, got i64"}));
}



TEST(NnFunctional, LinearEmbeddingActivations) {
  // linear: the op table's line
  const Tensor idx = get("embedding.i");
  check_case("embedding", {"w"}, [&](auto& m) { return F::embedding(idx, m.at("w")); });
  check_case("gelu", {"x"}, [](auto& m) { return gelu(m.at("x")); });
  check_case("logsoftmax", {"x"}, [](auto& m) { return log_softmax(m.at("x"), 0); });
}

TEST(NnFunctional, DropoutScalesKeepsAndIsSeeded) {
  const Tensor x = ones({100000}, {.dtype = DType::f64});
  Generator g1(5), g2(5);
  const Tensor a = F::dropout(x, 0.3, true, &g1), b = F::dropout(x, 0.3, true, &g2);
  EXPECT_EQ(a.to_vector<double>(), b.to_vector<double>());
  const double kept = (a > 0.0).to(DType::f64).mean().item<double>();
  EXPECT_NEAR(kept, 0.7, 0.01);
  EXPECT_NEAR(a.max().item<double>(), 1 / 0.7, 1e-12);
  EXPECT_NEAR(a.mean().item<double>(), 1.0, 0.02);
  EXPECT_TRUE(F::dropout(x, 0.3, false).shares_storage(x));  // eval: identity
  // The gradient flows through the kept elements only, scaled.
  const Tensor leaf = ones({1000}, {.dtype = DType::f64}).requires_grad_();
  Generator g3(9);
  const Tensor y = F::dropout(leaf, 0.5, true, &g3);
  sum(y).backward();
  EXPECT_EQ(leaf.grad().to_vector<double>(), (y / 1.0).detach().to_vector<double>());
}

TEST(NnFunctional, ErrorMessages) {
  const Tensor x = zeros({2, 3, 5, 5});
  EXPECT_TRUE(test::throws_error([&] { F::conv2d(x, zeros({4, 2, 3, 3})); }, {"conv2d", "3 channels", "expects 2"}));
  EXPECT_TRUE(test::throws_error([&] { F::conv2d(zeros({5, 5}), zeros({4, 3, 3, 3})); }, {"conv2d", "[N, C, H, W]", "[5, 5]"}));
  EXPECT_TRUE(test::throws_error([&] { F::conv2d(x, zeros({4, 3, 7, 7})); },
                                 {"conv2d", "output size is too small", "[2, 3, 5, 5]", "kernel [7, 7]", "output [-1, -1]"}));
  EXPECT_TRUE(test::throws_error([&] { F::conv2d(x, zeros({4, 3, 3, 3}), zeros({5})); }, {"conv2d", "bias must be [4]"}));
  EXPECT_TRUE(test::throws_error([&] { F::conv2d(x, zeros({4, 3, 3, 3}, {.dtype = DType::f64})); }, {"conv2d", "f32", "f64"}));
  EXPECT_TRUE(test::throws_error([&] { F::max_pool2d(x, pool(2, 2, 2)); }, {"max_pool2d", "at most half"}));
  EXPECT_TRUE(test::throws_error([&] { F::avg_pool2d(x, pool(3, 1, 2)); },
                                 {"avg_pool2d", "padding [2, 2] must be at most half the kernel [3, 3]"}));
  EXPECT_TRUE(test::throws_error([&] { F::cross_entropy(zeros({4, 3}), from_vector<int64_t>({0, 1, 3, 2})); },
               {"cross_entropy", "target 3", "sample 2", "[0, 3)"}));
  EXPECT_TRUE(test::throws_error([&] { F::cross_entropy(zeros({4, 3}), zeros({4})); }, {"cross_entropy", "i64"}));
  EXPECT_TRUE(test::throws_error([&] { F::cross_entropy(zeros({4, 3}), zeros({3}, {.dtype = DType::i64})); }, {"target shape [3]", "[4]"}));
  EXPECT_TRUE(test::throws_error([&] { F::batch_norm(x, {}, {}, {}, {}, false); }, {"batch_norm", "running_mean"}));
  EXPECT_TRUE(test::throws_error([&] { F::batch_norm(zeros({1, 3}), {}, {}, {}, {}, true); }, {"batch_norm", "more than one value"}));
  EXPECT_TRUE(test::throws_error([&] { F::layer_norm(x, {4}); }, {"layer_norm", "[4]", "[2, 3, 5, 5]"}));
  EXPECT_TRUE(test::throws_error([&] { F::linear(zeros({2, 3}), zeros({4, 5})); }, {"linear", "in_features 5"}));
  EXPECT_TRUE(test::throws_error([&] { F::dropout(x, 1.5, true); }, {"dropout", "[0, 1]"}));
  EXPECT_TRUE(test::throws_error([&] { F::embedding(from_vector<int64_t>({7}), zeros({4, 2})); },
                                 {"embedding", "index 7", "position [0]", "out of range", "vocabulary of 4"}));
}

// Rows with a non-finite max give NaN throughout, as PyTorch 1.13 (softmax, log_softmax and cross entropy
// of [inf, 0, 1], [-inf, -inf, -inf] and [nan, 0, 1] are all NaN); a -inf logit among finite ones is a 0
// probability (log: -inf).
TEST(NnFunctional, SoftmaxNonFiniteRowsAsPyTorch) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = from_vector<float>({inf, 0, 1, -inf, -inf, -inf, nan, 0, 1, -inf, 0, 1}, {4, 3});
  const auto p = softmax(x, 1).to_vector<float>(), lp = log_softmax(x, 1).to_vector<float>();
  const auto loss = F::cross_entropy(x, from_vector<int64_t>({1, 1, 1, 1}), {.reduction = F::Reduction::none})
                        .to_vector<float>();
  for (int i = 0; i < 9; ++i) {
    EXPECT_TRUE(std::isnan(p[i])) << i;
    EXPECT_TRUE(std::isnan(lp[i])) << i;
  }
  for (int r = 0; r < 3; ++r) EXPECT_TRUE(std::isnan(loss[r])) << r;
  EXPECT_EQ(p[9], 0.0f);
  EXPECT_EQ(lp[9], -inf);
  EXPECT_NEAR(p[11], 0.7310586f, 1e-7);
  EXPECT_NEAR(loss[3], 1.3132616f, 1e-6);
}

// A window larger than the padded input: PyTorch refuses ("Output size is too small"); truncating division
// gave a silent 1×1 output here (e.g. (2 - 3) / 2 + 1 = 1). Each message names the op, the input, kernel,
// stride, padding and the output size the arithmetic gives.
TEST(NnFunctional, WindowLargerThanThePaddedInputIsRefused) {
  const Tensor x = zeros({2, 3, 2, 3});
  for (const bool max : {true, false}) {
    const char* op = max ? "max_pool2d" : "avg_pool2d";
    const auto run = [&](const F::Pool2dOptions& o) { return max ? F::max_pool2d(x, o) : F::avg_pool2d(x, o); };
    EXPECT_TRUE(test::throws_error([&] { run(pool(4, 3, 0)); },
                                   {op, "output size is too small", "[2, 3, 2, 3]", "H×W 2×3", "kernel [4, 4]",
                                    "stride [3, 3]", "padding [0, 0]", "output [0, 0]", "larger input"}));
    EXPECT_TRUE(test::throws_error([&] { run(pool(3, 2, 0)); }, {op, "kernel [3, 3]", "output [0, 1]"}));
    // unbatched input: the message shows the shape given
    const Tensor x3 = x.select(0, 0);
    EXPECT_TRUE(test::throws_error([&] { max ? F::max_pool2d(x3, pool(3, 2, 0)) : F::avg_pool2d(x3, pool(3, 2, 0)); },
                                   {op, "the input [3, 2, 3]", "output [0, 1]"}));
    // padding makes it fit: PyTorch's sizes
    EXPECT_EQ(run(pool(3, 2, 1)).shape(), Shape({2, 3, 1, 2}));
    EXPECT_EQ(run(pool(2, 2, 0)).shape(), Shape({2, 3, 1, 1}));
  }
  // conv2d with dilation: kernel 3, dilation 3 spans 7 > 5 + 2·0; stride 2 truncated (-2)/2 + 1 to 0 + 1 before
  const Tensor xc = zeros({1, 3, 5, 6}), w = zeros({4, 3, 3, 3});
  EXPECT_TRUE(test::throws_error([&] { F::conv2d(xc, w, {}, conv(2, 2, 0, 0, 3, 3, 1)); },
                                 {"conv2d", "output size is too small", "[1, 3, 5, 6]", "kernel [3, 3]",
                                  "dilation [3, 3]: effective [7, 7]", "stride [2, 2]", "padding [0, 0]",
                                  "output [0, 0]"}));
  EXPECT_EQ(F::conv2d(xc, w, {}, conv(2, 2, 1, 1, 3, 3, 1)).shape(), Shape({1, 4, 1, 1}));  // 5 + 2 - 7 = 0: fits
  // adaptive pooling: an empty spatial dim, an output larger than the input
  EXPECT_TRUE(test::throws_error([&] { F::adaptive_avg_pool2d(zeros({1, 2, 0, 4}), 1); },
                                 {"adaptive_avg_pool2d", "[1, 2, 0, 4]", "empty spatial dim"}));
  EXPECT_TRUE(test::throws_error([&] { F::adaptive_max_pool2d(zeros({1, 2, 3, 0}), 2); },
                                 {"adaptive_max_pool2d", "[1, 2, 3, 0]", "empty spatial dim"}));
  EXPECT_TRUE(test::throws_error([&] { F::adaptive_avg_pool2d(zeros({1, 2, 3, 3}), 0, 2); },
                                 {"adaptive_avg_pool2d", "output size [0, 2]", "positive"}));
  // an output larger than the input is PyTorch's too (windows of one element, repeated)
  EXPECT_EQ(F::adaptive_avg_pool2d(zeros({1, 2, 3, 3}), 4).shape(), Shape({1, 2, 4, 4}));
}

// f32 convolutions take the fast path (oneDNN where the build has it, else im2col + GEMM); they must agree
// with PyTorch's f64 values to f32 accuracy, forward and backward, for every case above.
TEST(NnFunctional, Conv2dF32AgreesWithF64Goldens) {
  struct Case {
    const char* name;
    F::Conv2dOptions o;
    bool bias;
  };
  const Case cases[] = {{"conv_plain", conv(1, 1, 1, 1, 1, 1, 1), true},
                        {"conv_strided", conv(2, 1, 1, 2, 1, 2, 1), true},
                        {"conv_grouped", conv(2, 2, 1, 1, 1, 1, 2), false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string n = c.name;
    Tensor x = get(n + ".x").to(DType::f32).requires_grad_(), w = get(n + ".w").to(DType::f32).requires_grad_();
    Tensor b = c.bias ? get(n + ".b").to(DType::f32).requires_grad_() : Tensor();
    const Tensor y = F::conv2d(x, w, b, c.o);
    expect_close(y, get(n + ".y"), "forward", 1e-5);
    (y * get(n + ".r").to(DType::f32)).sum().backward();
    expect_close(x.grad(), get(n + ".gx"), "grad x", 1e-5);
    expect_close(w.grad(), get(n + ".gw"), "grad w", 1e-5);
    if (c.bias) expect_close(b.grad(), get(n + ".gb"), "grad b", 1e-5);
  }
}

// The 2×2 stride-2 max pool has its own branch-free path: same values, first-maximum indices (so the
// gradient goes where the general path sends it) and NaN propagation, against plain loops.
TEST(NnFunctional, MaxPool2x2FastPathMatchesReference) {
  // 12 outputs per plane (shorter than a vector), 54 (vector iterations and a remainder), and odd sizes
  // (a row and a column no window covers: zero gradient there).
  for (const auto& [H, W] : {std::pair<int64_t, int64_t>{6, 8}, {12, 18}, {7, 9}, {9, 34}}) {
    const int64_t OH = H / 2, OW = W / 2;
    Generator gen(4);
    Tensor x = (rand({2, 3, H, W}, {}, &gen) * 4.0f).to(DType::i64).to(DType::f32);  // many ties
    {
      NoGradGuard no_grad;
      x.select(0, 1).select(0, 2).select(0, 3).select(0, 5).fill_(NAN);
      x.select(0, 0).select(0, 1).select(0, H - 1).select(0, W - 2).fill_(NAN);
    }
    const std::vector<float> v = x.to_vector<float>();
    x.requires_grad_();
    const Tensor y = F::max_pool2d(x, pool(2, 2, 0));
    ASSERT_EQ(y.shape(), Shape({2, 3, OH, OW}));
    sum(y).backward();
    const std::vector<float> got = y.to_vector<float>(), grad = x.grad().to_vector<float>();
    std::vector<float> expected_grad(v.size(), 0.0f);
    for (int64_t plane = 0; plane < 6; ++plane)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          int64_t best = plane * H * W + 2 * oh * W + 2 * ow;
          for (int64_t dh = 0; dh < 2; ++dh)
            for (int64_t dw = 0; dw < 2; ++dw) {
              const int64_t i = plane * H * W + (2 * oh + dh) * W + 2 * ow + dw;
              if (v[i] > v[best] || std::isnan(v[i])) best = i;
            }
          const float want = v[best], have = got[plane * OH * OW + oh * OW + ow];
          EXPECT_TRUE(want == have || (std::isnan(want) && std::isnan(have))) << H << "x" << W << ": " << plane << " "
                                                                              << oh << " " << ow;
          expected_grad[best] += 1.0f;
        }
    EXPECT_EQ(grad, expected_grad) << H << "x" << W;
  }
}


// --- PyTorch parity round 2: adaptive pooling, embedding padding_idx (its losses: test_nn_losses.cpp) --





// The f64 goldens (and gradcheck): the op table's adaptive pooling lines; here PyTorch's f32 results.
TEST(NnFunctional, AdaptivePoolingToAnySize) {
  check_case_f32("adaptive_avg_7_f32", {"x"}, [](auto& m) { return F::adaptive_avg_pool2d(m.at("x"), 7); });
  check_case_f32("adaptive_avg_3x4_f32", {"x"}, [](auto& m) { return F::adaptive_avg_pool2d(m.at("x"), 3, 4); });
  check_case_f32("adaptive_avg_up_f32", {"x"}, [](auto& m) { return F::adaptive_avg_pool2d(m.at("x"), 4, 5); });
  check_case_f32("adaptive_max_7_f32", {"x"}, [](auto& m) { return F::adaptive_max_pool2d(m.at("x"), 7); });
  check_case_f32("adaptive_max_3x4_f32", {"x"}, [](auto& m) { return F::adaptive_max_pool2d(m.at("x"), 3, 4); });
  check_case_f32("adaptive_max_up_f32", {"x"}, [](auto& m) { return F::adaptive_max_pool2d(m.at("x"), 4, 5); });
  const auto [y, idx] = F::adaptive_max_pool2d_with_indices(get("adaptive_max_3x4.x"), 3, 4);
  EXPECT_EQ(idx.to_vector<int64_t>(), get("adaptive_max_3x4.idx").to_vector<int64_t>());
  // unbatched [C, H, W]
  expect_close(F::adaptive_avg_pool2d(get("adaptive_avg_7.x").select(0, 1), 7), get("adaptive_avg_7.y").select(0, 1),
               "unbatched");
  // layers: one size means out×out
  EXPECT_EQ(nn::AdaptiveAvgPool2d(7).forward(zeros({2, 3, 10, 9})).shape(), Shape({2, 3, 7, 7}));
  EXPECT_EQ(nn::AdaptiveMaxPool2d(2, 3).forward(zeros({2, 3, 10, 9})).shape(), Shape({2, 3, 2, 3}));
  EXPECT_EQ(nn::AdaptiveMaxPool2d(2, 3).describe(), "AdaptiveMaxPool2d(output_size=[2, 3])");
}

// No gradcheck here: the padding row's zero gradient is PyTorch's rule, not the derivative (the output does
// depend on that row), so finite differences disagree by design; the gradients are PyTorch's.
TEST(NnFunctional, EmbeddingPaddingIdx) {
  check_both("embedding_pad", {"w"}, [](auto& m, const std::string& n) {
    return F::embedding(at(n, "i"), m.at("w"), {.padding_idx = 1});
  }, false);
  check_both("embedding_pad_neg", {"w"}, [](auto& m, const std::string& n) {
    return F::embedding(at(n, "i"), m.at("w"), {.padding_idx = -1});
  }, false);
  // the layer starts that row at zero, normalises a negative padding_idx, and its gradient stays zero
  Generator gen(3);
  nn::Embedding emb(5, 3, {.padding_idx = -2}, &gen);
  ASSERT_TRUE(emb.padding_idx.has_value());
  EXPECT_EQ(*emb.padding_idx, 3);
  EXPECT_EQ(emb.weight.select(0, 3).to_vector<float>(), std::vector<float>(3, 0.0f));
  EXPECT_NE(emb.weight.select(0, 2).to_vector<float>(), std::vector<float>(3, 0.0f));
  sum(emb.forward(from_vector<int64_t>({3, 2, 3}))).backward();
  EXPECT_EQ(emb.weight.grad().select(0, 3).to_vector<float>(), std::vector<float>(3, 0.0f));
  EXPECT_EQ(emb.weight.grad().select(0, 2).to_vector<float>(), std::vector<float>(3, 1.0f));
  EXPECT_TRUE(test::throws_error([] { nn::Embedding(4, 2, {.padding_idx = 4}); }, {"Embedding", "padding_idx 4", "[-4, 4)"}));
  nn::Embedding first(4, 2, {.padding_idx = 0});
  EXPECT_EQ(first.padding_idx, std::optional<int64_t>(0));
  EXPECT_EQ(first.weight.select(0, 0).to_vector<float>(), std::vector<float>(2, 0.0f));
  EXPECT_TRUE(test::throws_error([] { F::embedding(from_vector<int64_t>({0}), zeros({4, 2}), {.padding_idx = -5}); },
                                 {"embedding", "padding_idx -5"}));
  // out of range: names embedding, the index, its position and the vocabulary size (not gather/index_select)
  EXPECT_TRUE(test::throws_error([] { F::embedding(from_vector<int64_t>({0, 1, 2, -1, 5, 1}, {2, 3}), zeros({4, 2})); },
                                 {"embedding: index -1 at position [1, 0]", "indices [2, 3]", "vocabulary of 4",
                                  "0 to 3"}));
}

