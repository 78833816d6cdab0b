// The operand checks of every backend entry (backends/checks.h), run on the CPU. Both backends call the very
// same check_<entry> first (the last test reads their sources to make sure), so a message tested here is the
// message the CUDA backend throws for the same call: these tests cover the GPU's argument checking where no
// GPU is. Each op: a valid call passes, and each kind of bad operand gets its error.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "backends/checks.h"
#include "test_helpers.h"

using namespace ember;
using ember::test::throws_error;
namespace checks = ember::checks;

namespace {

// Operands of a check: CPU tensors kept alive while their TensorArgs are used.
struct Operands {
  std::vector<Tensor> keep;
  TensorArg operator()(const Shape& shape, DType dtype = DType::f32) {
    keep.push_back(zeros(shape, {.dtype = dtype}));
    return keep.back().arg();
  }
  // A transposed (non-contiguous) view of a [rows, cols] tensor: shape [cols, rows].
  TensorArg transposed(int64_t rows, int64_t cols, DType dtype = DType::f32) {
    keep.push_back(zeros({rows, cols}, {.dtype = dtype}).t());
    return keep.back().arg();
  }
};

}  // namespace

TEST(OpChecks, Elementwise) {
  Operands op;
  const TensorArg a = op({2, 3}), b = op({2, 3}), out = op({2, 3}), b8 = op({2, 3}, DType::b8);
  EXPECT_NO_THROW(checks::check_binary(BinaryOp::add, a, b, out));
  EXPECT_NO_THROW(checks::check_binary(BinaryOp::lt, a, b, b8));
  EXPECT_TRUE(throws_error([&] { checks::check_binary(BinaryOp::add, a, op({2, 3}, DType::f64), out); },
                           {"binary: inputs f32 and f64 differ"}));
  EXPECT_TRUE(throws_error([&] { checks::check_binary(BinaryOp::lt, a, b, out); },
                           {"binary: output dtype f32, expected bool"}));
  EXPECT_TRUE(throws_error([&] { checks::check_binary(BinaryOp::mul, a, op({3, 2}), out); },
                           {"mul: operand shapes differ ([3, 2] and [2, 3])"}));
  EXPECT_TRUE(throws_error([&] { checks::check_unary(UnaryOp::exp, a, op({2, 3}, DType::f64)); },
                           {"unary: input f32 and output f64 differ"}));
  EXPECT_TRUE(throws_error([&] { checks::check_unary(UnaryOp::exp, a, op({6})); }, {"exp: operand shapes differ"}));
  EXPECT_TRUE(throws_error([&] { checks::check_unary_backward(UnaryOp::tanh, a, op({2, 3}, DType::f64), out); },
                           {"tanh backward: dtypes differ"}));
  EXPECT_TRUE(throws_error([&] { checks::check_where(a, a, b, out); }, {"where: condition must be bool, got f32"}));
  EXPECT_TRUE(throws_error([&] { checks::check_where(b8, a, op({2, 3}, DType::i64), out); },
                           {"where: the values (f32, i64) and the output (f32) must share a dtype"}));
  EXPECT_TRUE(throws_error([&] { checks::check_copy(op({3}), out); }, {"copy: operand shapes differ ([3] and [2, 3])"}));
}

TEST(OpChecks, ReductionsScansSorts) {
  Operands op;
  const TensorArg x = op({2, 3});
  EXPECT_EQ(checks::check_reduce(ReduceOp::sum, x, op({2, 1})), 3);
  EXPECT_TRUE(throws_error([&] { checks::check_reduce(ReduceOp::sum, x, op({2, 1}, DType::f64)); },
                           {"reduce: input and output dtypes differ"}));
  EXPECT_TRUE(throws_error([&] { checks::check_reduce(ReduceOp::sum, op({2}, DType::b8), op({1}, DType::b8)); },
                           {"reduce: not defined for bool tensors"}));
  EXPECT_TRUE(throws_error([&] { checks::check_reduce(ReduceOp::sum, x, op({2})); }, {"keepdim form"}));
  EXPECT_TRUE(throws_error([&] { checks::check_reduce(ReduceOp::sum, x, op({2, 2})); },
                           {"reduce: output dim 1 is 2, expected 1 or 3"}));
  EXPECT_TRUE(throws_error([&] { checks::check_reduce(ReduceOp::max, op({2, 0}), op({2, 1})); },
                           {"max/min: cannot reduce over an empty dim"}));
  EXPECT_NO_THROW(checks::check_reduce(ReduceOp::sum, op({2, 0}), op({2, 1})));  // an empty sum is 0

  const TensorArg idx = op({2, 1}, DType::i64);
  EXPECT_NO_THROW(checks::check_arg_reduce(ArgReduceOp::argmax, x, idx, 1));
  EXPECT_TRUE(throws_error([&] { checks::check_arg_reduce(ArgReduceOp::argmax, x, op({2, 1}), 1); },
                           {"arg_reduce: output must be i64"}));
  EXPECT_TRUE(throws_error([&] { checks::check_arg_reduce(ArgReduceOp::argmin, x, idx, 2); },
                           {"argmin: dim 2 is out of range for 2 dims"}));
  EXPECT_TRUE(throws_error([&] { checks::check_arg_reduce(ArgReduceOp::argmax, op({2, 0}), idx, 1); },
                           {"argmax/argmin: dim 1 has size 0"}));
  EXPECT_TRUE(throws_error([&] { checks::check_arg_reduce(ArgReduceOp::argmax, x, op({1, 1}, DType::i64), 1); },
                           {"argmax: the output is [1, 1], expected the input's shape [2, 3] with dim 1 of size 1"}));

  EXPECT_NO_THROW(checks::check_cumsum(x, op({2, 3}), 1));
  EXPECT_TRUE(throws_error([&] { checks::check_cumsum(x, op({2, 3}, DType::f64), 0); },
                           {"cumsum: input and output dtypes differ"}));
  EXPECT_TRUE(throws_error([&] { checks::check_cumsum(x, op({3, 2}), 0); },
                           {"cumsum: the output is [3, 2], expected the input's shape [2, 3]"}));
  EXPECT_TRUE(throws_error([&] { checks::check_cumsum(x, op({2, 3}), -1); }, {"cumsum: dim -1 is out of range"}));
  EXPECT_TRUE(throws_error([&] { checks::check_sort(x, op({2, 3}), op({2, 3}), 1); }, {"sort: indices must be i64"}));
  EXPECT_TRUE(throws_error([&] { checks::check_sort(x, op({2, 3}), op({2, 2}, DType::i64), 1); },
                           {"sort: indices is [2, 2], expected the input's shape [2, 3]"}));
}

TEST(OpChecks, IndexRandomMatmul) {
  Operands op;
  const TensorArg in = op({4, 3}), index = op({2, 3}, DType::i64), out = op({2, 3});
  EXPECT_NO_THROW(checks::check_index(IndexOp::gather, in, index, out, 0));
  EXPECT_NO_THROW(checks::check_index(IndexOp::scatter_add, out, index, in, 0));
  EXPECT_TRUE(throws_error([&] { checks::check_index(IndexOp::gather, in, op({2, 3}), out, 0); },
                           {"gather/scatter: index must be i64, got f32"}));
  EXPECT_TRUE(throws_error([&] { checks::check_index(IndexOp::gather, in, op({2, 2}, DType::i64), out, 0); },
                           {"gather: the index is [2, 2] but the output is [2, 3]; they must be one shape"}));
  // A source wider than the output in a dim other than `dim` would be written past the output's rows.
  EXPECT_TRUE(throws_error([&] { checks::check_index(IndexOp::scatter, op({2, 5}), op({2, 5}, DType::i64), in, 0); },
                           {"scatter: the index [2, 5] exceeds the output [4, 3] in a dim other than 0"}));
  EXPECT_TRUE(throws_error([&] { checks::check_index(IndexOp::gather, in, index, out, 2); },
                           {"gather: dim 2 is out of range for 2 dims"}));
  EXPECT_TRUE(throws_error([] { checks::throw_index_out_of_range(IndexOp::scatter_add, 7, 0, 3); },
                           {"scatter_add: index 7 is out of range for dim 0 of size 3"}));
  EXPECT_TRUE(throws_error([] { checks::throw_index_out_of_range(IndexOp::gather, -1, 1, 2, " (on cuda:0)"); },
                           {"gather/index_select: index -1 is out of range for dim 1 of size 2 (on cuda:0)"}));
  EXPECT_NO_THROW(checks::check_scatter_reduce(ScatterReduceOp::amax, out, index, in, 0));
  EXPECT_TRUE(throws_error([&] { checks::check_scatter_reduce(ScatterReduceOp::sum, out, op({2, 3}), in, 0); },
                           {"scatter_reduce: the index must be i64, got f32"}));
  EXPECT_TRUE(throws_error(
      [&] { checks::check_scatter_reduce(ScatterReduceOp::prod, op({2, 5}), op({2, 5}, DType::i64), in, 0); },
      {"scatter_reduce: the index must have the source's shape and fit the output in every dim but 0"}));
  EXPECT_TRUE(throws_error(
      [&] { checks::check_scatter_reduce(ScatterReduceOp::amin, out, index, op({4, 3}, DType::f64), 0); },
      {"scatter_reduce: the source is f32 but the output is f64"}));

  EXPECT_NO_THROW(checks::check_random(op({3})));
  EXPECT_TRUE(throws_error([&] { checks::check_random(op.transposed(2, 3)); }, {"random: output must be contiguous"}));
  EXPECT_TRUE(throws_error([&] { checks::check_random(op({3}, DType::i64)); }, {"random: expected a floating dtype"}));

  const checks::MatmulDims d = checks::check_matmul(op({2, 3, 4}), op({2, 4, 5}), op({2, 3, 5}));
  EXPECT_EQ(d.B * 1000 + d.M * 100 + d.N * 10 + d.K, 2354);
  EXPECT_TRUE(throws_error([&] { checks::check_matmul(op({3, 4}), op({4, 5}), op({3, 5})); },
                           {"matmul (backend): expected 3-D operands"}));
  EXPECT_TRUE(throws_error([&] { checks::check_matmul(op({1, 3, 4}), op({1, 5, 5}), op({1, 3, 5})); },
                           {"matmul (backend): a [1, 3, 4], b [1, 5, 5] and out [1, 3, 5] are not [B, M, K]"}));
  EXPECT_TRUE(throws_error([&] { checks::check_matmul(op({1, 3, 4}), op({1, 4, 5}, DType::f64), op({1, 3, 5})); },
                           {"matmul: operand dtypes differ"}));
  EXPECT_TRUE(throws_error([&] { checks::check_matmul(op({1, 3, 4}, DType::b8), op({1, 4, 5}, DType::b8), op({1, 3, 5}, DType::b8)); },
                           {"matmul: not defined for bool tensors"}));
}

TEST(OpChecks, OptimizerStep) {
  Operands op;
  const TensorArg param = op({4}), grad = op({4}), buf = op({4});
  OptimizerParams adam;
  EXPECT_NO_THROW(checks::check_optimizer_step(OptimizerOp::adam, adam, param, grad, &buf, &buf, nullptr));
  EXPECT_TRUE(throws_error([&] { checks::check_optimizer_step(OptimizerOp::adam, adam, param, grad, &buf, nullptr, nullptr); },
                           {"optimizer step: state buffer s1 is missing but this configuration updates it"}));
  adam.amsgrad = true;
  EXPECT_TRUE(throws_error([&] { checks::check_optimizer_step(OptimizerOp::adam, adam, param, grad, &buf, &buf, nullptr); },
                           {"state buffer s2 is missing"}));
  OptimizerParams sgd;  // no momentum: no state at all
  sgd.momentum = 0;
  EXPECT_NO_THROW(checks::check_optimizer_step(OptimizerOp::sgd, sgd, param, grad, nullptr, nullptr, nullptr));
  EXPECT_TRUE(throws_error([&] { checks::check_optimizer_step(OptimizerOp::sgd, sgd, param, op({5}), nullptr, nullptr, nullptr); },
                           {"optimizer step: the gradient must be a contiguous f32 tensor of 4 elements, got f32 × 5"}));
  EXPECT_TRUE(throws_error([&] { checks::check_optimizer_step(OptimizerOp::sgd, sgd, op.transposed(2, 2), grad, nullptr, nullptr, nullptr); },
                           {"optimizer step: parameter and gradient must be contiguous"}));
  OptimizerParams rmsprop;
  rmsprop.momentum = 0.9;
  const TensorArg buf64 = op({4}, DType::f64);
  EXPECT_TRUE(throws_error([&] { checks::check_optimizer_step(OptimizerOp::rmsprop, rmsprop, param, grad, &buf, &buf64, nullptr); },
                           {"state buffer s1 must be a contiguous f32 tensor of 4 elements, got f64 × 4"}));
}

TEST(OpChecks, Conv2d) {
  Operands op;
  const TensorArg x = op({2, 4, 8, 8}), w = op({6, 2, 3, 3}), y = op({2, 6, 6, 6}), bias = op({6});
  Conv2dParams p;
  p.groups = 2;
  EXPECT_NO_THROW(checks::check_conv2d_forward(x, w, &bias, y, p));
  EXPECT_TRUE(throws_error([&] { checks::check_conv2d_forward(x, w, &bias, op({2, 6, 7, 6}), p); },
                           {"conv2d: output is [2, 6, 7, 6], expected [2, 6, 6, 6]"}));
  EXPECT_TRUE(throws_error([&] { checks::check_conv2d_forward(x, op({6, 4, 3, 3}), nullptr, y, p); },
                           {"conv2d: input channels 4, weight [6, 4, ...] and groups 2 do not match"}));
  EXPECT_TRUE(throws_error([&] { checks::check_conv2d_forward(x, w, &bias, y, Conv2dParams{.stride = {0, 1}, .groups = 2}); },
                           {"conv2d: stride (0, 1) and dilation (1, 1) must be >= 1"}));
  EXPECT_TRUE(throws_error([&] { checks::check_conv2d_forward(x, w, &bias, op({2, 6, 6, 6}, DType::f64), p); },
                           {"conv2d: output must be a contiguous 4-d f32 tensor, got 4-d f64"}));
  const TensorArg strided_bias = op.transposed(2, 3);
  EXPECT_TRUE(throws_error([&] { checks::check_conv2d_forward(x, w, &strided_bias, y, p); },
                           {"conv2d: bias must be a contiguous [6] tensor of the weight's dtype"}));
  EXPECT_TRUE(throws_error([&] { checks::check_conv2d_forward(op({2, 4, 8, 8}, DType::i64), w, nullptr, y, p); },
                           {"conv2d: expected a floating dtype (f32 or f64), got i64"}));
  const TensorArg gx = op({2, 4, 8, 8}), gw = op({6, 2, 3, 3});
  EXPECT_NO_THROW(checks::check_conv2d_backward(x, w, y, &gx, &gw, &bias, p));
  const TensorArg bad_gw = op({6, 2, 3, 2});
  EXPECT_TRUE(throws_error([&] { checks::check_conv2d_backward(x, w, y, &gx, &bad_gw, &bias, p); },
                           {"conv2d_backward: grad_w must have w's shape"}));
  EXPECT_EQ(checks::conv_output_size(8, 3, 2, 1, 1), 4);
  EXPECT_EQ(checks::conv_output_size(8, 3, 1, 0, 2), 4);  // dilation 2: a 5-wide window
}

TEST(OpChecks, Pool2d) {
  Operands op;
  const TensorArg x = op({2, 3, 5, 5}), y = op({2, 3, 3, 3}), idx = op({2, 3, 3, 3}, DType::i64);
  Pool2dParams p{.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}};
  const checks::PoolDims d = checks::check_pool2d_forward(PoolOp::max, x, y, &idx, p);
  EXPECT_EQ(d.planes * 10000 + d.H * 1000 + d.W * 100 + d.OH * 10 + d.OW, 65533);
  EXPECT_TRUE(throws_error([&] { checks::check_pool2d_forward(PoolOp::max, op({2, 3, 5}), y, nullptr, p); },
                           {"pool2d: expected 4-d [N, C, H, W] operands, got 3-d and 4-d"}));
  EXPECT_TRUE(throws_error([&] { checks::check_pool2d_forward(PoolOp::avg, x, op({2, 4, 3, 3}), nullptr, p); },
                           {"pool2d: input [2, 3, ...] and output [2, 4, ...] differ in N or C"}));
  EXPECT_TRUE(throws_error([&] { checks::check_pool2d_forward(PoolOp::max, x, y, &y, p); },
                           {"pool2d: indices must be a contiguous i64 tensor of the output's shape"}));
  EXPECT_TRUE(throws_error([&] { checks::check_pool2d_forward(PoolOp::avg, x, op({2, 3, 3, 3}, DType::f64), nullptr, p); },
                           {"pool2d: input and output dtypes differ (f32, f64)"}));
  // An output too large for the input: its last windows would start past the input and read outside it.
  EXPECT_TRUE(throws_error([&] { checks::check_pool2d_forward(PoolOp::max, x, op({2, 3, 4, 3}), nullptr, p); },
                           {"pool2d: output size 4 along H needs windows that start past the input's 5"}));
  EXPECT_TRUE(throws_error([&] { checks::check_pool2d_forward(PoolOp::avg, x, y, nullptr, Pool2dParams{.kernel = {3, 3}, .stride = {2, 2}, .padding = {2, 1}}); },
                           {"padding (2, 1) in [0, kernel / 2]"}));
  EXPECT_TRUE(throws_error([&] { checks::check_pool2d_backward(PoolOp::max, y, nullptr, x, p); },
                           {"max_pool2d backward: needs the forward's indices"}));
  EXPECT_NO_THROW(checks::check_pool2d_backward(PoolOp::max, y, &idx, x, p));
  EXPECT_TRUE(throws_error([&] { checks::check_pool2d_backward(PoolOp::avg, y, nullptr, op({2, 3, 5, 5}, DType::f64), p); },
                           {"pool2d_backward: input and output dtypes differ"}));
  Pool2dParams adaptive;
  adaptive.adaptive = true;
  EXPECT_NO_THROW(checks::check_pool2d_forward(PoolOp::avg, x, op({2, 3, 7, 2}), nullptr, adaptive));
  EXPECT_TRUE(throws_error([&] { checks::check_pool2d_forward(PoolOp::avg, op({2, 3, 0, 5}), op({2, 3, 1, 1}), nullptr, adaptive); },
                           {"pool2d: the input [2, 3, 0, 5] has no elements to pool into the output [2, 3, 1, 1]"}));
}

TEST(OpChecks, SoftmaxAndCrossEntropy) {
  Operands op;
  const checks::RowDims r = checks::check_softmax_forward(op({4, 5}), op({4, 5}));
  EXPECT_EQ(r.M * 10 + r.D, 45);
  const checks::RowDims scalar = checks::check_softmax_forward(op({}), op({}));
  EXPECT_EQ(scalar.M * 10 + scalar.D, 11);  // a 0-d tensor is one row of one
  EXPECT_TRUE(throws_error([&] { checks::check_softmax_forward(op({4, 5}), op({4, 5}, DType::f64)); },
                           {"softmax: operands differ in dtype or size (f32 × 20, f64 × 20)"}));
  EXPECT_TRUE(throws_error([&] { checks::check_softmax_backward(op({4, 5}), op({4, 5}), op.transposed(5, 4)); },
                           {"softmax_backward: operands must be contiguous"}));

  const TensorArg logits = op({3, 4}), target = op({3}, DType::i64), loss = op({3}), lse = op({3});
  const checks::XentDims d = checks::check_cross_entropy_forward(logits, target, loss, lse, 0.1);
  EXPECT_EQ(d.N * 10 + d.C, 34);
  EXPECT_TRUE(throws_error([&] { checks::check_cross_entropy_forward(op({3, 4, 1}), target, loss, lse, 0); },
                           {"cross_entropy: logits must be a contiguous [N, C] tensor"}));
  EXPECT_TRUE(throws_error([&] { checks::check_cross_entropy_forward(logits, op({3}), loss, lse, 0); },
                           {"cross_entropy: target must be a contiguous i64 tensor of 3 class indices"}));
  EXPECT_TRUE(throws_error([&] { checks::check_cross_entropy_forward(logits, target, op({2}), lse, 0); },
                           {"cross_entropy: loss and lse must be contiguous [N] tensors of the logits' dtype"}));
  EXPECT_TRUE(throws_error([&] { checks::check_cross_entropy_forward(logits, target, loss, lse, 1.5); },
                           {"cross_entropy: label_smoothing must be in [0, 1], got 1.5"}));
  EXPECT_NO_THROW(checks::check_cross_entropy_backward(logits, target, lse, op({}), op({3, 4}), 0));
  EXPECT_TRUE(throws_error([&] { checks::check_cross_entropy_backward(logits, target, lse, op({2}), op({3, 4}), 0); },
                           {"cross_entropy_backward: grad_loss must be 0-d or [3] of the logits' dtype"}));
  EXPECT_TRUE(throws_error([&] { checks::check_cross_entropy_backward(logits, target, lse, op({}), op({3, 5}), 0); },
                           {"cross_entropy_backward: operands differ in dtype or size"}));
  EXPECT_TRUE(throws_error([] { checks::throw_bad_target(7, 2, 4, true); },
                           {"cross_entropy: target 7 (sample 2) is not a class index in [0, 4) or the ignore_index"}));
}

TEST(OpChecks, Norms) {
  Operands op;
  const TensorArg x = op({4, 3, 5}), y = op({4, 3, 5}), c = op({3});
  const checks::BatchNormDims d = checks::check_batch_norm_forward(x, &c, &c, &c, &c, y, c, c, true);
  EXPECT_EQ(d.N * 100 + d.C * 10 + d.S, 435);
  EXPECT_TRUE(throws_error([&] { checks::check_batch_norm_forward(x, &c, &c, nullptr, nullptr, y, c, c, false); },
                           {"batch_norm: eval mode needs running statistics"}));
  EXPECT_TRUE(throws_error([&] { checks::check_batch_norm_forward(op({1, 3}), nullptr, nullptr, nullptr, nullptr, op({1, 3}), c, c, true); },
                           {"batch_norm: training needs more than one value per channel", "use a larger batch or eval()"}));
  EXPECT_TRUE(throws_error([&] { checks::check_batch_norm_forward(x, &c, &c, nullptr, nullptr, y, op({4}), c, true); },
                           {"batch_norm: save_mean must be a contiguous f32 tensor of 3 elements, got f32 × 4"}));
  const TensorArg w64 = op({3}, DType::f64);
  EXPECT_TRUE(throws_error([&] { checks::check_batch_norm_forward(x, &w64, nullptr, nullptr, nullptr, y, c, c, true); },
                           {"batch_norm: weight must be a contiguous f32 tensor of 3 elements, got f64 × 3"}));
  EXPECT_TRUE(throws_error([&] { checks::check_batch_norm_forward(op({12}), nullptr, nullptr, nullptr, nullptr, op({12}), c, c, true); },
                           {"batch_norm: input must be a contiguous [N, C, ...] tensor"}));
  const TensorArg gx_bad = op({4, 3, 4});
  EXPECT_TRUE(throws_error([&] { checks::check_batch_norm_backward(y, x, &c, c, c, &gx_bad, &c, &c); },
                           {"batch_norm_backward: grad_x must be a contiguous f32 tensor of 60 elements, got f32 × 48"}));

  const TensorArg rows = op({6, 8}), d8 = op({8}), m6 = op({6});
  const checks::RowDims r = checks::check_layer_norm_forward(rows, &d8, &d8, op({6, 8}), m6, m6);
  EXPECT_EQ(r.M * 10 + r.D, 68);
  EXPECT_TRUE(throws_error([&] { checks::check_layer_norm_forward(rows, &m6, nullptr, op({6, 8}), m6, m6); },
                           {"layer_norm: weight must be a contiguous f32 tensor of 8 elements, got f32 × 6"}));
  EXPECT_TRUE(throws_error([&] { checks::check_layer_norm_forward(op.transposed(8, 6), nullptr, nullptr, op({6, 8}), m6, m6); },
                           {"layer_norm: input must be a contiguous tensor of at least 1 dim"}));
  EXPECT_TRUE(throws_error([&] { checks::check_layer_norm_backward(op({6, 8}), rows, nullptr, d8, m6, nullptr, nullptr, nullptr); },
                           {"layer_norm_backward: save_mean must be a contiguous f32 tensor of 6 elements, got f32 × 8"}));

  const checks::RowDims rr = checks::check_rms_norm_forward(rows, &d8, op({6, 8}), m6);
  EXPECT_EQ(rr.M * 10 + rr.D, 68);
  EXPECT_TRUE(throws_error([&] { checks::check_rms_norm_forward(rows, &m6, op({6, 8}), m6); },
                           {"rms_norm: weight must be a contiguous f32 tensor of 8 elements, got f32 × 6"}));
  EXPECT_TRUE(throws_error([&] { checks::check_rms_norm_forward(op.transposed(8, 6), nullptr, op({6, 8}), m6); },
                           {"rms_norm: input must be a contiguous tensor of at least 1 dim"}));
  EXPECT_TRUE(throws_error([&] { checks::check_rms_norm_forward(rows, nullptr, op({6, 8}, DType::f64), m6); },
                           {"rms_norm: output must be a contiguous f32 tensor of 48 elements, got f64 × 48"}));
  EXPECT_TRUE(throws_error([&] { checks::check_rms_norm_backward(op({6, 8}), rows, nullptr, d8, nullptr, nullptr); },
                           {"rms_norm_backward: save_invrms must be a contiguous f32 tensor of 6 elements, got f32 × 8"}));
  const TensorArg gw_bad = op({6});
  EXPECT_TRUE(throws_error([&] { checks::check_rms_norm_backward(op({6, 8}), rows, &d8, m6, nullptr, &gw_bad); },
                           {"rms_norm_backward: grad_weight must be a contiguous f32 tensor of 8 elements, got f32 × 6"}));
}

TEST(OpChecks, RecurrentCells) {
  Operands op;
  const TensorArg gates = op({2, 12}), state = op({2, 3}), h = op({2, 3}), c = op({2, 3}), ws = op({2, 12});
  const checks::CellDims d = checks::check_lstm_cell_forward(gates, state, h, c, ws);
  EXPECT_EQ(d.B * 10 + d.H, 23);
  EXPECT_TRUE(throws_error([&] { checks::check_lstm_cell_forward(op({2, 9}), state, h, c, ws); },
                           {"lstm_cell: gates must be a contiguous f32 tensor of [2, 12] elements, got f32 × 18"}));
  EXPECT_TRUE(throws_error([&] { checks::check_lstm_cell_forward(gates, op({6}), h, c, ws); },
                           {"lstm_cell: c_prev must be [B, H], got 1 dims"}));
  EXPECT_TRUE(throws_error([&] { checks::check_lstm_cell_backward(nullptr, nullptr, state, c, ws, gates, &gates); },
                           {"lstm_cell_backward: grad_c_prev must be a contiguous f32 tensor of [2, 3] elements"}));
  const TensorArg g3 = op({2, 9});
  EXPECT_NO_THROW(checks::check_gru_cell_forward(g3, g3, state, h, ws));
  EXPECT_TRUE(throws_error([&] { checks::check_gru_cell_forward(g3, op({2, 9}, DType::f64), state, h, ws); },
                           {"gru_cell: hidden_gates must be a contiguous f32 tensor of [2, 9] elements, got f64 × 18"}));
  EXPECT_TRUE(throws_error([&] { checks::check_gru_cell_backward(h, state, op({2, 9}), &g3, &g3, &h); },
                           {"gru_cell_backward: workspace must be a contiguous f32 tensor of [2, 12] elements"}));
}

TEST(OpChecks, Attention) {
  Operands op;
  const TensorArg q = op({2, 3, 4, 8}), k = op({2, 3, 5, 8}), v = op({2, 3, 5, 6}), out = op({2, 3, 4, 6}),
                  lse = op({2, 3, 4}), mask = op({2, 3, 4, 5});
  const AttentionParams p;
  const checks::AttentionDims d = checks::check_attention_forward(q, k, v, &mask, out, lse, p);
  EXPECT_EQ(((((d.B * 10 + d.H) * 10 + d.L) * 10 + d.S) * 10 + d.E) * 10 + d.Ev, 234586);
  EXPECT_EQ(d.Hkv, 3);
  EXPECT_TRUE(throws_error([&] { checks::check_attention_forward(q, op({2, 3, 5, 7}), v, nullptr, out, lse, p); },
                           {"scaled_dot_product_attention: shapes of q [B, H, L, E], k [B, Hkv, S, E]", "do not agree"}));
  EXPECT_TRUE(throws_error([&] { checks::check_attention_forward(q, k, op({2, 2, 5, 6}), nullptr, out, lse, p); },
                           {"scaled_dot_product_attention: q, out and lse must share [B, H], k and v [B, Hkv], got q "
                            "[2, 3, 4, 8], k [2, 3, 5, 8], v [2, 2, 5, 6]"}));
  EXPECT_TRUE(throws_error([&] { checks::check_attention_forward(q, k, v, nullptr, out, op({2, 3, 4}, DType::f64), p); },
                           {"q, k, v, out and lse must be contiguous and of one dtype"}));
  EXPECT_TRUE(throws_error([&] { checks::check_attention_forward(q, k, v, nullptr, out, lse, AttentionParams{.dropout_p = 1.5}); },
                           {"dropout_p must be in [0, 1], got 1.5"}));
  EXPECT_TRUE(throws_error([&] { checks::check_attention_backward(q, k, v, nullptr, out, lse, op({2, 3, 4, 5}), nullptr, nullptr, nullptr, p); },
                           {"scaled_dot_product_attention_backward: gradients must be contiguous, of q's dtype and of their operand's size"}));
  const TensorArg dq = op({2, 3, 4, 8});
  EXPECT_NO_THROW(checks::check_attention_backward(q, k, v, &mask, out, lse, out, &dq, nullptr, nullptr, p));
}

// Grouped-query attention: k and v of Hkv heads, H a multiple of Hkv; dK and dV of k's and v's size.
TEST(OpChecks, AttentionGroupedQuery) {
  Operands op;
  const TensorArg q = op({2, 4, 3, 8}), k = op({2, 2, 5, 8}), v = op({2, 2, 5, 6}), out = op({2, 4, 3, 6}),
                  lse = op({2, 4, 3}), mask = op({2, 4, 3, 5}), dq = op({2, 4, 3, 8}), dk = op({2, 2, 5, 8}),
                  dv = op({2, 2, 5, 6});
  const checks::AttentionDims d = checks::check_attention_forward(q, k, v, &mask, out, lse, {});
  EXPECT_EQ(d.H * 10 + d.Hkv, 42);
  EXPECT_NO_THROW(checks::check_attention_backward(q, k, v, &mask, out, lse, out, &dq, &dk, &dv, {}));
  const TensorArg k1 = op({2, 1, 5, 8}), v1 = op({2, 1, 5, 6});
  EXPECT_NO_THROW(checks::check_attention_forward(q, k1, v1, nullptr, out, lse, {}));  // multi-query
  const TensorArg k3 = op({2, 3, 5, 8}), v3 = op({2, 3, 5, 6});
  EXPECT_TRUE(throws_error([&] { checks::check_attention_forward(q, k3, v3, nullptr, out, lse, {}); },
                           {"scaled_dot_product_attention: q's 4 heads must be a multiple of k and v's 3 (grouped-query attention)"}));
  EXPECT_TRUE(throws_error([&] { checks::check_attention_forward(q, k, v1, nullptr, out, lse, {}); },
                           {"q, out and lse must share [B, H], k and v [B, Hkv]"}));
  EXPECT_TRUE(throws_error([&] { checks::check_attention_forward(q, op({1, 2, 5, 8}), op({1, 2, 5, 6}), nullptr, out, lse, {}); },
                           {"q, out and lse must share [B, H], k and v [B, Hkv]"}));
  // The mask stays [B, H, L, S] (query heads), not [B, Hkv, L, S].
  const TensorArg kv_mask = op({2, 2, 3, 5});
  EXPECT_TRUE(throws_error([&] { checks::check_attention_forward(q, k, v, &kv_mask, out, lse, {}); },
                           {"the mask must be a [B, H, L, S] view of q's dtype: [2, 4, 3, 5] f32"}));
  // The gradients of k and v have their size: a dK of q's heads is refused.
  const TensorArg dk_full = op({2, 4, 5, 8});
  EXPECT_TRUE(throws_error([&] { checks::check_attention_backward(q, k, v, nullptr, out, lse, out, &dq, &dk_full, &dv, {}); },
                           {"scaled_dot_product_attention_backward: gradients must be contiguous, of q's dtype and of "
                            "their operand's size"}));
}

// Rotary: x any [B, H, L, E] view, out contiguous of its shape, cos and sin [L, R/2] with R <= E.
TEST(OpChecks, Rotary) {
  Operands op;
  const TensorArg x = op({2, 3, 4, 8}), out = op({2, 3, 4, 8}), cos = op({4, 3}), sin = op({4, 3});
  const checks::RotaryDims d = checks::check_rotary(x, cos, sin, out);
  EXPECT_EQ((((d.B * 10 + d.H) * 10 + d.L) * 10 + d.E) * 10 + d.pairs, 23483);
  const Tensor strided = zeros({2, 4, 3, 8}).transpose(1, 2);  // [2, 3, 4, 8], not contiguous
  EXPECT_NO_THROW(checks::check_rotary(strided.arg(), cos, sin, out));
  EXPECT_TRUE(throws_error([&] { checks::check_rotary(op({2, 3, 8}), cos, sin, out); },
                           {"apply_rotary: expected x a [B, H, L, E] view of a floating dtype, got 3 dims f32"}));
  EXPECT_TRUE(throws_error([&] { checks::check_rotary(op({2, 3, 4, 8}, DType::i64), cos, sin, out); },
                           {"apply_rotary: expected x a [B, H, L, E] view of a floating dtype, got 4 dims i64"}));
  EXPECT_TRUE(throws_error([&] { checks::check_rotary(x, cos, sin, op({2, 3, 4, 7})); },
                           {"apply_rotary: out must be a contiguous f32 tensor of x's shape [2, 3, 4, 8], got [2, 3, 4, 7] f32"}));
  EXPECT_TRUE(throws_error([&] { checks::check_rotary(x, cos, sin, strided.arg()); }, {"out must be a contiguous"}));
  EXPECT_TRUE(throws_error([&] { checks::check_rotary(x, op({4, 5}), op({4, 5}), out); },
                           {"apply_rotary: cos and sin must be contiguous [L, R/2] tables of x's dtype with L = 4 and "
                            "R <= E = 8, got [4, 5] f32 and [4, 5] f32"}));
  EXPECT_TRUE(throws_error([&] { checks::check_rotary(x, op({3, 3}), op({3, 3}), out); }, {"with L = 4"}));
  EXPECT_TRUE(throws_error([&] { checks::check_rotary(x, cos, op({4, 2}), out); }, {"got [4, 3] f32 and [4, 2] f32"}));
  EXPECT_TRUE(throws_error([&] { checks::check_rotary(x, cos, op({4, 3}, DType::f64), out); }, {"[4, 3] f64"}));
  EXPECT_TRUE(throws_error([&] { checks::check_rotary(x, op({12}), op({12}), out); }, {"cos and sin must be"}));
}

// Regression (issue 29): the CUDA backend's own check accepted a mask whose [B, H] differed from q's — a mask
// of one batch row for a batch of two passed, and the kernel read the second row past the mask's end. The
// check both backends run now refuses it, for any of the four dims.
TEST(OpChecks, AttentionMaskBatchAndHeadsRegression) {
  Operands op;
  const TensorArg q = op({2, 3, 4, 8}), k = op({2, 3, 5, 8}), v = op({2, 3, 5, 6}), out = op({2, 3, 4, 6}),
                  lse = op({2, 3, 4}), dq = op({2, 3, 4, 8});
  for (const Shape& bad : {Shape{1, 3, 4, 5}, Shape{2, 1, 4, 5}, Shape{3, 3, 4, 5}, Shape{2, 3, 1, 5}, Shape{2, 3, 4, 4}}) {
    const TensorArg mask = op(bad);
    EXPECT_TRUE(throws_error([&] { checks::check_attention_forward(q, k, v, &mask, out, lse, {}); },
                             {"scaled_dot_product_attention: the mask must be a [B, H, L, S] view of q's dtype: "
                              "[2, 3, 4, 5] f32, got"}))
        << "mask " << bad;
    EXPECT_TRUE(throws_error([&] { checks::check_attention_backward(q, k, v, &mask, out, lse, out, &dq, nullptr, nullptr, {}); },
                             {"scaled_dot_product_attention_backward: the mask must be a [B, H, L, S] view"}))
        << "mask " << bad;
  }
  const TensorArg f64_mask = op({2, 3, 4, 5}, DType::f64);
  EXPECT_TRUE(throws_error([&] { checks::check_attention_forward(q, k, v, &f64_mask, out, lse, {}); },
                           {"got [2, 3, 4, 5] f64"}));
  // A broadcast mask (stride 0 over B and H, as core passes an expanded [L, S] mask) has the full shape: valid.
  const Tensor small = zeros({4, 5});
  const TensorArg broadcast = small.expand({2, 3, 4, 5}).arg();
  EXPECT_NO_THROW(checks::check_attention_forward(q, k, v, &broadcast, out, lse, {}));
  // The CPU backend runs the same check (and so refuses the mask before reading it).
  const TensorArg one_row = op({1, 3, 4, 5});
  EXPECT_TRUE(throws_error([&] { backend(kCPU).attention_forward(q, k, v, &one_row, out, lse, {}); },
                           {"the mask must be a [B, H, L, S] view of q's dtype: [2, 3, 4, 5] f32, got [1, 3, 4, 5] f32"}));
}

// The backends' entries call these checks: each of backends/cpu/ and backends/cuda/ names checks::check_<entry>
// for every entry of EMBER_BACKEND_OPS (or calls a shared entry in backends/*_math.h that does), so what the
// tests above accept and refuse is what both backends accept and refuse.
TEST(OpChecks, BothBackendsCallTheCheckOfEveryEntry) {
  namespace fs = std::filesystem;
  const fs::path root = EMBER_SOURCE_DIR;
  const auto read_dir = [&](const fs::path& dir) {
    std::string text;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".cpp" && ext != ".cu" && ext != ".h" && ext != ".cuh") continue;
      std::ifstream in(entry.path());
      std::stringstream s;
      s << in.rdbuf();
      text += s.str();
    }
    return text;
  };
  const std::string cpu = read_dir(root / "backends/cpu"), cuda = read_dir(root / "backends/cuda");
  std::string shared;  // the shared entries (rnn_math::lstm_cell_forward, ...) and the checks they call
  for (const char* header : {"backends/rnn_math.h", "backends/nn_math.h", "backends/attention_math.h"}) {
    std::ifstream in(root / header);
    std::stringstream s;
    s << in.rdbuf();
    shared += s.str();
  }
  const std::vector<std::string> unchecked = {"copy_bytes_host", "fill"};  // see backends/checks.h
  std::vector<std::string> entries;
#define EMBER_X(name, params) entries.push_back(#name);
  EMBER_BACKEND_OPS(EMBER_X)
#undef EMBER_X
  ASSERT_GT(entries.size(), 30u);
  const auto calls_check = [&](const std::string& source, const std::string& name) {
    if (source.find("checks::check_" + name + "(") != std::string::npos) return true;
    // through a shared entry: `<family>_math::<name>(` in the backend, and its definition calls the check
    for (const char* family : {"rnn_math::", "nn_math::", "attention_math::"})
      if (source.find(family + name + "(") != std::string::npos &&
          shared.find("checks::check_" + name + "(") != std::string::npos)
        return true;
    return false;
  };
  for (const std::string& name : entries) {
    if (std::find(unchecked.begin(), unchecked.end(), name) != unchecked.end()) continue;
    EXPECT_TRUE(calls_check(cpu, name)) << "backends/cpu/ does not call checks::check_" << name;
    EXPECT_TRUE(calls_check(cuda, name)) << "backends/cuda/ does not call checks::check_" << name;
  }
}
