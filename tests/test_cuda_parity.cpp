// CPU-vs-CUDA parity (DESIGN.md, "Tests"): the CPU backend is the reference; every result the CUDA backend
// gives is compared with it on the same inputs. The op tables, one line per case:
//   (a) every row of the gradcheck op table (tests/op_table.h) in its four layouts, f64 and f32: output and
//       every input gradient (after a backward from the same random upstream gradient);
//   (b) nn::functional: conv2d, pooling, batch/layer norm, softmax on wide rows, the losses, dropout,
//       embedding: outputs, gradients and the running statistics a training-mode batch norm updates.
// tests/test_cuda_backend.cpp has the rest (backend entries autograd does not reach, errors and memory,
// training). Every test skips itself (GTEST_SKIP, in the fixtures' SetUp, before any GPU work) where no
// usable GPU is present, saying why. Tolerances: tests/cuda_parity.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <iomanip>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <ember/ember.h>

#include "core/raw.h"  // bernoulli draws and the logical ops have no user-facing function
#include "nn/init.h"
#include "cuda_parity.h"
#include "f32_softmax_goldens.h"
#include "op_table.h"
#include "test_helpers.h"

namespace ember {
namespace {

using namespace optable;  // op_table(), In/N/P, Domain, Layout, make_leaf, random_values
using namespace parity;   // Cuda, CudaWithParam, Kind, tolerance, matches, same, both, kGpu
namespace F = nn::functional;
using Outs = std::vector<Tensor>;

// =====================================================================================================
// (a) the gradcheck op table
// =====================================================================================================

// Rows whose forward sums (its order of additions differs between the devices); the others are one op per
// element or a selection.
bool sums(const std::string& name) {
  for (const char* prefix : {"sum", "mean", "softmax", "log_softmax", "matmul"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

struct OpRun {
  Tensor out;
  std::vector<Tensor> leaves;
  bool non_contiguous = false;  // some input the op sees is a non-contiguous view
};

// The row's op on leaves drawn as the gradcheck test draws them (same seed, same layout), on `device`,
// then a backward from a seeded random upstream gradient.
OpRun run_op(size_t row, Layout layout, DType dtype, Device device) {
  const OpCase& c = op_table()[row];
  Generator gen(1000 + row);
  OpRun r;
  std::vector<Tensor> xs;
  for (const In& in : c.inputs) {
    bool expand = false;
    r.leaves.push_back(make_leaf(in, layout, gen, expand, dtype, device));
    xs.push_back(expand ? r.leaves.back().expand(in.shape) : r.leaves.back());
    r.non_contiguous = r.non_contiguous || !xs.back().is_contiguous();
  }
  r.out = c.op(xs);
  Generator upstream(5000 + row);
  r.out.backward(random_values(r.out.shape(), Domain::normal, upstream, r.out.dtype(), device));
  return r;
}

using OpParam = std::tuple<size_t, Layout, DType>;
class CudaOpParity : public CudaWithParam<OpParam> {};

TEST_P(CudaOpParity, OutputAndGradients) {
  const auto [row, layout, dtype] = GetParam();
  const OpCase& c = op_table()[row];
  const OpRun cpu = run_op(row, layout, dtype, kCPU);
  if (layout != Layout::contiguous && !cpu.non_contiguous)  // as the gradcheck test
    GTEST_SKIP() << "no input of " << c.name << " can be made " << layout_name(layout);
  const OpRun gpu = run_op(row, layout, dtype, kGpu);
  for (size_t i = 0; i < cpu.leaves.size(); ++i) {  // the GPU ran on the same layout
    EXPECT_EQ(gpu.leaves[i].strides(), cpu.leaves[i].strides()) << "input " << i;
    EXPECT_EQ(gpu.leaves[i].offset(), cpu.leaves[i].offset()) << "input " << i;
  }
  EXPECT_TRUE(matches(cpu.out, gpu.out, tolerance(sums(c.name) ? Kind::reduce : Kind::elementwise, cpu.out.dtype())))
      << c.name << " output";
  for (size_t i = 0; i < cpu.leaves.size(); ++i) {
    ASSERT_TRUE(cpu.leaves[i].grad().defined()) << "input " << i;
    EXPECT_TRUE(matches(cpu.leaves[i].grad(), gpu.leaves[i].grad(), tolerance(Kind::reduce, dtype)))
        << c.name << " gradient of input " << i;
  }
}

std::string op_case_name(const ::testing::TestParamInfo<OpParam>& info) {
  const auto [row, layout, dtype] = info.param;
  return op_table()[row].name + "_" + layout_name(layout) + "_" + std::string(dtype_name(dtype));
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaOpParity,
                         ::testing::Combine(::testing::Range<size_t>(0, op_table().size()),
                                            ::testing::Values(Layout::contiguous, Layout::transposed, Layout::sliced,
                                                              Layout::expanded),
                                            ::testing::Values(DType::f64, DType::f32)),
                         op_case_name);

// Tensor::to(Device) records the graph: a CPU leaf used on the GPU gets its gradient on the CPU.
TEST_F(Cuda, ToDeviceIsDifferentiable) {
  for (DType dtype : {DType::f64, DType::f32}) {
    Generator gen(1), gen2(1);
    const Tensor x = random_values({3, 5}, Domain::normal, gen, dtype).requires_grad_();
    const Tensor y = (x.to(kGpu).tanh() * 3.0).sum();
    EXPECT_EQ(y.device(), kGpu);
    y.backward();
    ASSERT_TRUE(x.grad().defined());
    EXPECT_EQ(x.grad().device(), kCPU);
    const Tensor ref = random_values({3, 5}, Domain::normal, gen2, dtype).requires_grad_();
    (ref.tanh() * 3.0).sum().backward();
    // (matches() wants its second tensor on the GPU: the gradient goes there to be compared.)
    EXPECT_TRUE(matches(ref.grad(), x.grad().to(kGpu), tolerance(Kind::elementwise, dtype)));
  }
}

// =====================================================================================================
// (b) nn::functional
// =====================================================================================================

struct NnCase {
  std::string name;
  std::vector<In> inputs;  // leaves requiring grad, drawn as the op table's ([-2, 2) or [0.5, 2))
  // [0] is the output the backward starts from; the rest are compared after the call (running statistics).
  std::function<Outs(V)> op;
  Kind out = Kind::reduce;   // the outputs
  Kind grad = Kind::reduce;  // the gradients
};

// A constant (no grad) with the inputs' dtype and device: the same values on every device (drawn on the CPU).
Tensor constant(V x, const Shape& shape, Domain domain, uint64_t seed) {
  Generator gen(seed);
  return random_values(shape, domain, gen, x[0].dtype(), x[0].device());
}
Tensor uniform_constant(V x, const Shape& shape, uint64_t seed) {  // in [0, 1): binary targets
  Generator gen(seed);
  return rand(shape, {.dtype = x[0].dtype()}, &gen).to(x[0].device());
}
Tensor labels(V x, const std::vector<int64_t>& values, const Shape& shape) {
  return from_vector<int64_t>(values, shape).to(x[0].device());
}
Tensor labels(V x, const std::vector<int64_t>& values) {
  return labels(x, values, {static_cast<int64_t>(values.size())});
}

F::Conv2dOptions conv(int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t groups) {
  return F::Conv2dOptions().stride({sh, sw}).padding({ph, pw}).dilation({dh, dw}).groups(groups);
}
F::Pool2dOptions pool(int64_t kernel, int64_t stride, int64_t padding, bool count_include_pad = true,
                     bool ceil_mode = false) {
  return F::Pool2dOptions(kernel).stride(stride).padding(padding).count_include_pad(count_include_pad).ceil_mode(
      ceil_mode);
}
// Batch norm in training mode from seeded running statistics; returns y and the updated statistics.
Outs batch_norm_train(V x, const Tensor& weight, const Tensor& bias) {
  const Shape c{x[0].size(1)};
  const Tensor mean = constant(x, c, Domain::normal, 11), var = constant(x, c, Domain::positive, 12);
  const Tensor y = F::batch_norm(x[0], mean, var, weight, bias, /*training=*/true, 0.1, 1e-5);
  return {y, mean, var};
}
Outs batch_norm_eval(V x, const Tensor& weight, const Tensor& bias) {
  const Shape c{x[0].size(1)};
  return {F::batch_norm(x[0], constant(x, c, Domain::normal, 11), constant(x, c, Domain::positive, 12), weight, bias,
                        /*training=*/false)};
}
F::CrossEntropyOptions xent(int64_t ignore_index, double smoothing, F::Reduction reduction = F::Reduction::mean) {
  return {.ignore_index = ignore_index, .label_smoothing = smoothing, .reduction = reduction};
}
const std::vector<int64_t> kTargets = {0, 4, 2, 1, 3, 2};  // for logits [6, 5]

// NOLINTBEGIN(readability-function-size): one line per case
const std::vector<NnCase>& nn_table() {
  using R = F::Reduction;
  static const std::vector<NnCase> table = {
    // conv2d
    {"conv2d", {N({2, 3, 7, 7}), N({4, 3, 3, 3})}, [](V x) { return Outs{F::conv2d(x[0], x[1])}; }, Kind::conv, Kind::conv},
    {"conv2d_bias", {N({2, 3, 7, 7}), N({4, 3, 3, 3}), N({4})}, [](V x) { return Outs{F::conv2d(x[0], x[1], x[2])}; }, Kind::conv, Kind::conv},
    {"conv2d_stride2", {N({2, 3, 8, 8}), N({4, 3, 3, 3}), N({4})}, [](V x) { return Outs{F::conv2d(x[0], x[1], x[2], conv(2, 2, 0, 0, 1, 1, 1))}; }, Kind::conv, Kind::conv},
    {"conv2d_padding", {N({2, 3, 6, 5}), N({4, 3, 3, 3}), N({4})}, [](V x) { return Outs{F::conv2d(x[0], x[1], x[2], conv(1, 1, 1, 2, 1, 1, 1))}; }, Kind::conv, Kind::conv},
    {"conv2d_dilation", {N({2, 3, 9, 9}), N({4, 3, 3, 3})}, [](V x) { return Outs{F::conv2d(x[0], x[1], {}, conv(1, 1, 2, 2, 2, 2, 1))}; }, Kind::conv, Kind::conv},
    {"conv2d_groups", {N({2, 4, 6, 6}), N({6, 2, 3, 3}), N({6})}, [](V x) { return Outs{F::conv2d(x[0], x[1], x[2], conv(1, 1, 1, 1, 1, 1, 2))}; }, Kind::conv, Kind::conv},
    {"conv2d_depthwise", {N({2, 4, 6, 6}), N({4, 1, 3, 3})}, [](V x) { return Outs{F::conv2d(x[0], x[1], {}, conv(1, 1, 1, 1, 1, 1, 4))}; }, Kind::conv, Kind::conv},
    {"conv2d_everything", {N({2, 4, 9, 8}), N({6, 2, 3, 2}), N({6})}, [](V x) { return Outs{F::conv2d(x[0], x[1], x[2], conv(2, 1, 1, 0, 2, 1, 2))}; }, Kind::conv, Kind::conv},
    {"conv2d_1x1", {N({2, 5, 4, 4}), N({3, 5, 1, 1}), N({3})}, [](V x) { return Outs{F::conv2d(x[0], x[1], x[2])}; }, Kind::conv, Kind::conv},
    {"conv2d_larger", {N({4, 16, 12, 12}), N({32, 16, 3, 3}), N({32})}, [](V x) { return Outs{F::conv2d(x[0], x[1], x[2], conv(1, 1, 1, 1, 1, 1, 1))}; }, Kind::conv, Kind::conv},
    // pooling: max selects (exact forward), its backward adds where windows overlap
    {"max_pool2d", {N({2, 3, 6, 6})}, [](V x) { return Outs{F::max_pool2d(x[0], pool(2, 2, 0))}; }, Kind::exact},
    {"max_pool2d_overlapping", {N({2, 3, 7, 7})}, [](V x) { return Outs{F::max_pool2d(x[0], pool(3, 2, 0))}; }, Kind::exact},
    {"max_pool2d_padding", {N({2, 3, 6, 6})}, [](V x) { return Outs{F::max_pool2d(x[0], pool(3, 1, 1))}; }, Kind::exact},
    {"avg_pool2d", {N({2, 3, 6, 6})}, [](V x) { return Outs{F::avg_pool2d(x[0], pool(2, 2, 0))}; }},
    {"avg_pool2d_overlapping", {N({2, 3, 7, 7})}, [](V x) { return Outs{F::avg_pool2d(x[0], pool(3, 2, 0))}; }},
    {"avg_pool2d_padding", {N({2, 3, 7, 7})}, [](V x) { return Outs{F::avg_pool2d(x[0], pool(3, 2, 1))}; }},
    {"avg_pool2d_padding_not_counted", {N({2, 3, 7, 7})}, [](V x) { return Outs{F::avg_pool2d(x[0], pool(3, 2, 1, false))}; }},
    // ceil_mode: last windows clipped at the padding (8 → 5 rows), or dropped where they would start in it
    {"max_pool2d_ceil", {N({2, 3, 8, 9})}, [](V x) { return Outs{F::max_pool2d(x[0], pool(3, 2, 1, true, true))}; }, Kind::exact},
    {"max_pool2d_2x2_ceil", {N({2, 3, 5, 7})}, [](V x) { return Outs{F::max_pool2d(x[0], pool(2, 2, 0, true, true))}; }, Kind::exact},
    {"max_pool2d_ceil_rule", {N({1, 2, 3, 5})}, [](V x) { return Outs{F::max_pool2d(x[0], pool(2, 2, 1, true, true))}; }, Kind::exact},
    {"avg_pool2d_ceil", {N({2, 3, 8, 9})}, [](V x) { return Outs{F::avg_pool2d(x[0], pool(3, 2, 1, true, true))}; }},
    {"avg_pool2d_ceil_not_counted", {N({2, 3, 8, 9})}, [](V x) { return Outs{F::avg_pool2d(x[0], pool(3, 2, 1, false, true))}; }},
    {"avg_pool2d_ceil_unpadded", {N({2, 3, 8, 7})}, [](V x) { return Outs{F::avg_pool2d(x[0], pool(3, 2, 0, true, true))}; }},
    {"adaptive_avg_pool2d", {N({2, 3, 6, 6})}, [](V x) { return Outs{F::adaptive_avg_pool2d(x[0], 2, 3)}; }},
    {"adaptive_avg_pool2d_global", {N({2, 3, 6, 6})}, [](V x) { return Outs{F::adaptive_avg_pool2d(x[0], 1)}; }},
    // adaptive pooling to sizes that do not divide the input: overlapping windows of different sizes
    // (nn_math::adaptive_start/end), and an output larger than the input
    {"adaptive_avg_pool2d_7", {N({2, 3, 10, 9})}, [](V x) { return Outs{F::adaptive_avg_pool2d(x[0], 7)}; }},
    {"adaptive_avg_pool2d_up", {N({1, 2, 3, 3})}, [](V x) { return Outs{F::adaptive_avg_pool2d(x[0], 4, 5)}; }},
    {"adaptive_max_pool2d_7", {N({2, 3, 10, 9})}, [](V x) { return Outs{F::adaptive_max_pool2d(x[0], 7)}; }, Kind::exact},
    {"adaptive_max_pool2d_3x4", {N({2, 3, 5, 7})}, [](V x) { return Outs{F::adaptive_max_pool2d(x[0], 3, 4)}; }, Kind::exact},
    {"adaptive_max_pool2d_up", {N({1, 2, 3, 3})}, [](V x) { return Outs{F::adaptive_max_pool2d(x[0], 4, 5)}; }, Kind::exact},
    // normalisation (training mode also compares the updated running statistics)
    {"batch_norm_train", {N({4, 3, 5, 5}), N({3}), N({3})}, [](V x) { return batch_norm_train(x, x[1], x[2]); }},
    {"batch_norm_train_1d", {N({8, 5}), N({5}), N({5})}, [](V x) { return batch_norm_train(x, x[1], x[2]); }},
    {"batch_norm_train_no_affine", {N({4, 3, 5, 5})}, [](V x) { return batch_norm_train(x, {}, {}); }},
    {"batch_norm_train_larger", {N({32, 16, 8, 8}), N({16}), N({16})}, [](V x) { return batch_norm_train(x, x[1], x[2]); }},
    {"batch_norm_eval", {N({4, 3, 5, 5}), N({3}), N({3})}, [](V x) { return batch_norm_eval(x, x[1], x[2]); }},
    {"batch_norm_eval_1d", {N({8, 5}), N({5}), N({5})}, [](V x) { return batch_norm_eval(x, x[1], x[2]); }},
    {"layer_norm", {N({4, 6, 5}), N({5}), N({5})}, [](V x) { return Outs{F::layer_norm(x[0], {5}, x[1], x[2])}; }},
    {"layer_norm_2d", {N({4, 6, 5}), N({6, 5}), N({6, 5})}, [](V x) { return Outs{F::layer_norm(x[0], {6, 5}, x[1], x[2])}; }},
    {"layer_norm_no_affine", {N({3, 7})}, [](V x) { return Outs{F::layer_norm(x[0], {7})}; }},
    {"layer_norm_wide", {N({4, 1000}), N({1000}), N({1000})}, [](V x) { return Outs{F::layer_norm(x[0], {1000}, x[1], x[2])}; }},
    // softmax over wide rows (D = 1000)
    {"softmax_wide", {N({4, 1000})}, [](V x) { return Outs{softmax(x[0], -1)}; }},
    {"log_softmax_wide", {N({4, 1000})}, [](V x) { return Outs{log_softmax(x[0], 1)}; }},
    {"softmax_wide_dim0", {N({1000, 3})}, [](V x) { return Outs{softmax(x[0], 0)}; }},
    // losses
    {"cross_entropy", {N({6, 5})}, [](V x) { return Outs{F::cross_entropy(x[0], labels(x, kTargets))}; }},
    {"cross_entropy_ignore_index", {N({6, 5})}, [](V x) { return Outs{F::cross_entropy(x[0], labels(x, {0, 2, 4, 2, 1, 3}), xent(2, 0))}; }},
    {"cross_entropy_ignore_default", {N({6, 5})}, [](V x) { return Outs{F::cross_entropy(x[0], labels(x, {0, -100, 4, 2, -100, 3}))}; }},
    {"cross_entropy_label_smoothing", {N({6, 5})}, [](V x) { return Outs{F::cross_entropy(x[0], labels(x, kTargets), xent(-100, 0.1))}; }},
    {"cross_entropy_smoothing_ignore_none", {N({6, 5})}, [](V x) { return Outs{F::cross_entropy(x[0], labels(x, {0, 3, 4, 3, 1, 2}), xent(3, 0.2, R::none))}; }},
    {"cross_entropy_sum", {N({6, 5})}, [](V x) { return Outs{F::cross_entropy(x[0], labels(x, kTargets), xent(-100, 0, R::sum))}; }},
    {"cross_entropy_wide", {N({8, 1000})}, [](V x) { return Outs{F::cross_entropy(x[0], labels(x, {0, 999, 500, 1, 250, 750, 3, 998}))}; }},
    // logits near ±1e3 (spread 3) and nearly tied at 1e3 (spread 1e-3: a few f32 spacings): the row sums
    // accumulate in double on both devices and the formulas are one copy (backends/nn_math.h), so these
    // take the elementwise tolerance: a device that shifted exp by a log-sum-exp rounded to f32 (rows
    // summing to 1 ± 2e-5) where the other does not fails it. tests/test_nn_functional.cpp pins the CPU's
    // values at such logits to PyTorch's.
    {"softmax_large_logits", {N({8, 300})}, [](V x) { return Outs{softmax(x[0] * 3.0 + 1000.0, -1)}; }, Kind::elementwise, Kind::elementwise},
    {"softmax_nearly_tied", {N({8, 300})}, [](V x) { return Outs{softmax(x[0] * 1e-3 + 1000.0, -1)}; }, Kind::elementwise, Kind::elementwise},
    {"softmax_negative_large_logits", {N({8, 300})}, [](V x) { return Outs{softmax(x[0] * 3.0 - 1000.0, -1)}; }, Kind::elementwise, Kind::elementwise},
    {"log_softmax_large_logits", {N({8, 300})}, [](V x) { return Outs{log_softmax(x[0] * 3.0 + 1000.0, -1)}; }, Kind::elementwise, Kind::elementwise},
    {"log_softmax_nearly_tied", {N({8, 300})}, [](V x) { return Outs{log_softmax(x[0] * 1e-3 - 1000.0, -1)}; }, Kind::elementwise, Kind::elementwise},
    {"cross_entropy_large_logits", {N({6, 5})}, [](V x) { return Outs{F::cross_entropy(x[0] * 3.0 + 1000.0, labels(x, kTargets))}; }, Kind::elementwise, Kind::elementwise},
    {"cross_entropy_nearly_tied", {N({6, 5})}, [](V x) { return Outs{F::cross_entropy(x[0] * 1e-3 + 1000.0, labels(x, kTargets), xent(-100, 0, R::none))}; }, Kind::elementwise, Kind::elementwise},
    {"cross_entropy_large_smoothing", {N({6, 5})}, [](V x) { return Outs{F::cross_entropy(x[0] * 3.0 - 1000.0, labels(x, kTargets), xent(-100, 0.1))}; }, Kind::elementwise, Kind::elementwise},
    {"cross_entropy_large_ignore_index", {N({6, 5})}, [](V x) { return Outs{F::cross_entropy(x[0] * 3.0 + 1000.0, labels(x, {0, 2, 4, 2, 1, 3}), xent(2, 0.2, R::sum))}; }, Kind::elementwise, Kind::elementwise},
    {"cross_entropy_large_wide", {N({8, 1000})}, [](V x) { return Outs{F::cross_entropy(x[0] * 3.0 + 1000.0, labels(x, {0, 999, 500, 1, 250, 750, 3, 998}))}; }, Kind::elementwise, Kind::elementwise},
    {"nll_loss", {N({6, 5})}, [](V x) { return Outs{F::nll_loss(log_softmax(x[0], 1), labels(x, kTargets))}; }},
    {"mse_loss", {N({3, 4}), N({3, 4})}, [](V x) { return Outs{F::mse_loss(x[0], x[1])}; }},
    {"l1_loss", {N({3, 4}), N({3, 4})}, [](V x) { return Outs{F::l1_loss(x[0], x[1], {.reduction = R::sum})}; }},
    {"bce_with_logits", {N({3, 4})}, [](V x) { return Outs{F::binary_cross_entropy_with_logits(x[0], uniform_constant(x, {3, 4}, 13))}; }},
    {"bce_with_logits_none", {N({3, 4})}, [](V x) { return Outs{F::binary_cross_entropy_with_logits(x[0], uniform_constant(x, {3, 4}, 13), {.reduction = R::none})}; }},
    // losses with options: class weights, probability targets, K-dim inputs, pos_weight (round 2)
    {"cross_entropy_weight", {N({6, 5})}, [](V x) { return Outs{F::cross_entropy(x[0], labels(x, {0, -100, 4, 2, 1, 3}), {.weight = constant(x, {5}, Domain::positive, 21)})}; }},
    {"cross_entropy_weight_smoothing_sum", {N({6, 5})}, [](V x) { return Outs{F::cross_entropy(x[0], labels(x, kTargets), {.ignore_index = 2, .label_smoothing = 0.2, .reduction = R::sum, .weight = constant(x, {5}, Domain::positive, 21)})}; }},
    {"cross_entropy_probs", {N({6, 5})}, [](V x) { return Outs{F::cross_entropy(x[0], softmax(constant(x, {6, 5}, Domain::normal, 22), 1), {.label_smoothing = 0.1, .weight = constant(x, {5}, Domain::positive, 21)})}; }},
    {"cross_entropy_kdim", {N({2, 4, 3, 2})}, [](V x) { return Outs{F::cross_entropy(x[0], labels(x, {1, 0, 3, -100, 2, 2, 0, 3, -100, 1, 3, 0}, {2, 3, 2}), {.label_smoothing = 0.1})}; }},
    {"cross_entropy_kdim_weight_none", {N({2, 4, 3, 2})}, [](V x) { return Outs{F::cross_entropy(x[0], labels(x, {1, 0, 3, -100, 2, 2, 0, 3, -100, 1, 3, 0}, {2, 3, 2}), {.reduction = R::none, .weight = constant(x, {4}, Domain::positive, 23)})}; }},
    {"nll_loss_weight_kdim", {N({2, 4, 3})}, [](V x) { return Outs{F::nll_loss(log_softmax(x[0], 1), labels(x, {1, 0, 3, 2, -100, 1}, {2, 3}), {.weight = constant(x, {4}, Domain::positive, 23)})}; }},
    {"bce_with_logits_weight_pos_weight", {N({3, 4})}, [](V x) { return Outs{F::binary_cross_entropy_with_logits(x[0] * 10.0, uniform_constant(x, {3, 4}, 13), {.weight = constant(x, {3, 1}, Domain::positive, 24), .pos_weight = constant(x, {4}, Domain::positive, 25)})}; }},
    // layers built from tensor ops
    {"linear", {N({4, 7}), N({5, 7}), N({5})}, [](V x) { return Outs{F::linear(x[0], x[1], x[2])}; }},
    // dropout: the same seed gives the same mask on both devices (Philox), so outputs and gradients are exact
    {"dropout", {N({8, 100})}, [](V x) { Generator g(42); return Outs{F::dropout(x[0], 0.3, true, &g)}; }, Kind::exact, Kind::exact},
    {"dropout_larger", {N({64, 1000})}, [](V x) { Generator g(43); return Outs{F::dropout(x[0], 0.5, true, &g)}; }, Kind::exact, Kind::exact},
    // embedding: the backward scatter-adds rows (atomics on the GPU: the order of the additions varies)
    {"embedding", {N({10, 4})}, [](V x) { return Outs{F::embedding(labels(x, {1, 3, 3, 0, 9, 1}, {2, 3}), x[0])}; }, Kind::exact},
    {"embedding_padding_idx", {N({10, 4})}, [](V x) { return Outs{F::embedding(labels(x, {1, 3, 3, 0, 9, 1}, {2, 3}), x[0], {.padding_idx = 3})}; }, Kind::exact},
  };
  return table;
}
// NOLINTEND(readability-function-size)

struct NnRun {
  Outs outs;
  std::vector<Tensor> leaves;
};

NnRun run_nn(size_t row, DType dtype, Device device) {
  const NnCase& c = nn_table()[row];
  Generator gen(2000 + row);
  NnRun r;
  for (const In& in : c.inputs) r.leaves.push_back(random_values(in.shape, in.domain, gen, dtype, device).requires_grad_());
  r.outs = c.op(r.leaves);
  Generator upstream(6000 + row);
  r.outs[0].backward(random_values(r.outs[0].shape(), Domain::normal, upstream, r.outs[0].dtype(), device));
  return r;
}

// The f32 goldens at large and nearly tied logits (tests/f32_softmax_goldens.h) on the GPU, against PyTorch's
// values directly: 8 ulp where the CPU is held to 4 (the device's expf/logf are within 2 ulp of glibc's, not
// correctly rounded). The old kernels missed by 12 to 1661 ulp.
TEST_F(Cuda, F32SoftmaxAndCrossEntropyGoldensAtLargeLogits) { test::check_f32_softmax_goldens(kGpu, 8); }

using NnParam = std::tuple<size_t, DType>;
class CudaNnParity : public CudaWithParam<NnParam> {};

TEST_P(CudaNnParity, OutputAndGradients) {
  const auto [row, dtype] = GetParam();
  const NnCase& c = nn_table()[row];
  const NnRun cpu = run_nn(row, dtype, kCPU), gpu = run_nn(row, dtype, kGpu);
  ASSERT_EQ(cpu.outs.size(), gpu.outs.size());
  EXPECT_TRUE(matches(cpu.outs[0], gpu.outs[0], tolerance(c.out, dtype))) << c.name << " output";
  for (size_t i = 1; i < cpu.outs.size(); ++i)  // running mean / var after the training step
    EXPECT_TRUE(matches(cpu.outs[i], gpu.outs[i], tolerance(Kind::reduce, dtype))) << c.name << " state " << i;
  for (size_t i = 0; i < cpu.leaves.size(); ++i) {
    ASSERT_TRUE(cpu.leaves[i].grad().defined()) << "input " << i;
    EXPECT_TRUE(matches(cpu.leaves[i].grad(), gpu.leaves[i].grad(), tolerance(c.grad, dtype)))
        << c.name << " gradient of input " << i;
  }
}

std::string nn_case_name(const ::testing::TestParamInfo<NnParam>& info) {
  return nn_table()[std::get<0>(info.param)].name + "_" + std::string(dtype_name(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(Nn, CudaNnParity,
                         ::testing::Combine(::testing::Range<size_t>(0, nn_table().size()),
                                            ::testing::Values(DType::f64, DType::f32)),
                         nn_case_name);

}  // namespace
}  // namespace ember
