// Every differentiable op and every fused nn op, one table line each (tests/op_table.h: input shapes, the
// op, its forward references). Each line runs on contiguous inputs and, unless it says why not, on
// non-contiguous ones (transposed and strided-slice leaves, and inputs expanded inside the op), in f64: the
// forward is compared with the independent reference (plain loops over doubles, no Ember op involved) and
// the backward with central differences (gradcheck). Lines with a PyTorch golden are also run on the
// golden's inputs: output and input gradients against PyTorch's. The table and the layouts are shared with
// the CPU-vs-CUDA parity test and the guard test.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include <ember/ember.h>

#include "op_table.h"

namespace ember {
namespace {

using namespace optable;  // the table, its reference helpers and the layouts: tests/op_table.h

// Every differentiable op must have a line named after it (variants may add lines): every unary op and
// every arithmetic binary op of the tables in backends/elementwise_ops.h, by its enum name, the other ops
// of autograd/ops.h and the Tensor view/copy methods, and every op of nn::functional, listed here.
// to(Device) is a no-op on a CPU-only machine; the CUDA parity tests cover it. (Every fused backend entry
// is reached by some line: tests/test_op_guards.cpp.)
TEST(GradcheckTable, CoversEveryDifferentiableOp) {
  std::vector<std::string> required = {
      "where", "sum", "mean", "max", "min", "amax", "amin", "max_dim", "min_dim", "softmax", "log_softmax", "matmul",
      "reshape", "view", "flatten", "squeeze", "unsqueeze", "permute", "transpose", "t", "narrow", "slice", "select",
      "expand", "contiguous", "clone", "to_dtype", "cat", "stack", "index_select", "gather",
      "var", "std", "logsumexp", "cumsum", "sort", "topk", "scaled_dot_product_attention",
      // masking, indexing, repeating
      "masked_fill", "tril", "triu", "scatter", "index_add", "repeat", "flip", "chunk", "split", "unbind",
      "scatter_add", "take_along_dim", "masked_select", "index", "index_mask", "index_put"};
  for (const char* reduce : {"sum", "prod", "mean", "amax", "amin"})
    for (const char* self : {"", "_noself"}) required.push_back(std::string("scatter_reduce_") + reduce + self);
  // nn::functional: recurrent cells, then the other fused ops and the losses
  for (const char* op : {"lstm_cell_pointwise", "gru_cell_pointwise", "lstm_cell", "gru_cell", "lstm_sequence",
                         "gru_sequence", "conv2d", "conv1d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
                         "adaptive_max_pool2d", "batch_norm_train", "batch_norm_eval", "layer_norm", "cross_entropy",
                         "nll_loss", "mse_loss", "l1_loss", "bce_with_logits", "linear", "dropout", "embedding",
                         "embedding_bag", "smooth_l1_loss", "huber_loss", "kl_div", "cosine_similarity",
                         "pairwise_distance", "cosine_embedding_loss", "margin_ranking_loss", "triplet_margin_loss",
                         "poisson_nll_loss", "gaussian_nll_loss", "binary_cross_entropy", "multilabel_soft_margin_loss",
                         "ctc_loss", "group_norm", "instance_norm", "local_response_norm", "normalize"})
    required.emplace_back(op);
  for (const char* op : {"pad_const_neg", "conv2d_same_even", "conv1d_same", "conv_transpose2d", "conv_transpose1d", "max_pool2d_dilation", "max_pool2d_with_indices", "avg_pool2d_divisor_override", "max_pool1d", "avg_pool1d", "max_unpool2d", "interpolate_nearest", "interpolate_bilinear", "interpolate_linear", "interpolate_trilinear", "pixel_shuffle", "pixel_unshuffle"})
    required.emplace_back(op);
  required.emplace_back("rms_norm");
  for (const UnaryOpInfo& op : kUnaryOps) required.emplace_back(op.name);
  for (const BinaryOpInfo& op : kBinaryOps)
    if (op.kind == BinaryKind::arithmetic) required.emplace_back(op.name);
  std::set<std::string> names;
  for (const OpCase& c : op_table()) {
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate line " << c.name;
    // A forward reference on every line but dropout's (its mask is Philox's: test_nn_functional.cpp checks
    // its statistics, the parity test its bits).
    if (c.name.rfind("dropout", 0) != 0) {
      EXPECT_TRUE(c.ref || c.o.golden) << c.name << " has neither an independent nor a PyTorch reference";
    }
  }
  for (const std::string& op : required)
    EXPECT_TRUE(names.count(op)) << "no line for " << op << " in the op table (tests/op_table.h)";
  // The first line of each op runs in every layout and is gradchecked.
  for (const OpCase& c : op_table())
    if (c.name == "conv2d" || c.name == "max_pool2d" || c.name == "cross_entropy" || c.name == "layer_norm" ||
        c.name == "rms_norm" || c.name == "group_norm" || c.name == "instance_norm" || c.name == "ctc_loss" || c.name == "embedding_bag") {
      EXPECT_EQ(c.o.contiguous_only, nullptr) << c.name;
      EXPECT_EQ(c.o.no_gradcheck, nullptr) << c.name;
    }
}

// --- every line in each of its layouts: tests/op_table.h ------------------------------------------------------
using RowLayout = std::pair<size_t, Layout>;
std::vector<RowLayout> rows_and_layouts() {
  std::vector<RowLayout> out;
  for (size_t row = 0; row < op_table().size(); ++row)
    for (Layout l : layouts_of(op_table()[row])) out.emplace_back(row, l);
  return out;
}

class Gradcheck : public ::testing::TestWithParam<RowLayout> {};

TEST_P(Gradcheck, Op) {
  const auto [row, layout] = GetParam();
  const OpCase& c = op_table()[row];
  Generator gen(1000 + row);
  std::vector<Tensor> leaves;
  std::vector<bool> expand;
  for (const In& in : c.inputs) {
    bool e = false;
    leaves.push_back(make_leaf(in, layout, gen, e));
    expand.push_back(e);
  }
  const auto views = [&](V ls) {
    std::vector<Tensor> xs = ls;
    for (size_t i = 0; i < xs.size(); ++i)
      if (expand[i]) xs[i] = xs[i].expand(c.inputs[i].shape);
    return xs;
  };
  const auto fn = [&](V ls) { return c.op(views(ls)); };
  if (layout != Layout::contiguous) {  // the layout must really be non-contiguous for some input
    bool any = false;
    for (const Tensor& x : views(leaves)) any = any || !x.is_contiguous();
    if (!any) GTEST_SKIP() << "no input of " << c.name << " can be made " << layout_name(layout);
  }

  // Forward against the reference, on the values the op sees.
  const Tensor out = fn(leaves);
  EXPECT_TRUE(out.requires_grad()) << c.name << " recorded no graph";
  if (c.ref) {
    std::vector<Host> hosts;
    for (const Tensor& x : views(leaves)) hosts.push_back({x.shape(), x.to_vector<double>()});
    const Host expected = c.ref(hosts);
    ASSERT_EQ(out.shape(), expected.shape) << c.name;
    const std::vector<double> got = out.to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], expected.v[i], c.o.forward_tol * (1 + std::abs(expected.v[i]))) << c.name << " element " << i;
  }
  if (c.o.state) {  // the parity test runs `state`, gradcheck `op`: the same output
    const std::vector<double> got = out.to_vector<double>(), stated = c.o.state(views(leaves))[0].to_vector<double>();
    EXPECT_EQ(got, stated) << c.name << ": Options::state's first output is not the op's";
  }
  if (c.o.no_gradcheck != nullptr) return;  // the reason is on the line; the parity test still runs it
  const autograd::GradcheckResult r = autograd::gradcheck(fn, leaves, c.o.eps, c.o.atol, c.o.rtol);
  EXPECT_TRUE(r.ok) << c.name << " (" << layout_name(layout) << "): " << r.message;
  EXPECT_GE(r.input, 0) << r.message;
}

std::string case_name(const ::testing::TestParamInfo<RowLayout>& info) {
  return op_table()[info.param.first].name + "_" + layout_name(info.param.second);
}

INSTANTIATE_TEST_SUITE_P(Ops, Gradcheck, ::testing::ValuesIn(rows_and_layouts()), case_name);

// --- lines with a PyTorch golden: its inputs, output and input gradients -------------------------------------
std::vector<size_t> golden_rows() {
  std::vector<size_t> rows;
  for (size_t row = 0; row < op_table().size(); ++row)
    if (op_table()[row].o.golden) rows.push_back(row);
  return rows;
}

class GoldenLine : public ::testing::TestWithParam<size_t> {};

TEST_P(GoldenLine, OutputAndGradientsAsPyTorch) {
  const OpCase& c = op_table()[GetParam()];
  const Golden& g = *c.o.golden;
  ASSERT_EQ(g.inputs.size(), c.inputs.size()) << c.name << ": the golden names one tensor per input";
  std::vector<Tensor> xs;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    xs.push_back(test::golden(g.file, g.name + "." + g.inputs[i]).clone().requires_grad_());
    EXPECT_EQ(xs.back().shape(), c.inputs[i].shape) << c.name << ": the line's input " << i << " is not the golden's";
  }
  const Tensor y = c.op(xs);
  const auto expect_close = [&](const Tensor& got, const std::string& key) {
    const Tensor want = test::golden(g.file, g.name + "." + key);
    ASSERT_EQ(got.shape(), want.shape()) << c.name << " " << key;
    const std::vector<double> a = got.to_vector<double>(), e = want.to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], e[i], g.tol * (1 + std::abs(e[i]))) << c.name << " " << key << " element " << i;
  };
  expect_close(y, "y");
  sum(y * test::golden(g.file, g.name + ".r")).backward();
  for (size_t i = 0; i < xs.size(); ++i) {
    ASSERT_TRUE(xs[i].grad().defined()) << c.name << " input " << g.inputs[i];
    expect_close(xs[i].grad(), "g" + g.inputs[i]);
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, GoldenLine, ::testing::ValuesIn(golden_rows()),
                         [](const ::testing::TestParamInfo<size_t>& info) { return op_table()[info.param].name; });

// --- gradcheck itself --------------------------------------------------------------------------------------------
struct WrongSquareBackward : autograd::Node {
  autograd::SavedTensor x;
  std::string_view name() const override { return "wrong_square"; }
  void backward(const Tensor& g, Tensor* grad_inputs) override { grad_inputs[0] = g * x.unpack(*this) * 3.0; }
};

TEST(GradcheckApi, ReportsTheWorstElementOfAWrongBackward) {
  const auto wrong_square = [](V in) {
    Tensor y;
    {
      NoGradGuard no_grad;
      y = in[0] * in[0];
    }
    if (auto node = autograd::make_node<WrongSquareBackward>(in[0])) {
      node->x.save(in[0]);
      autograd::set_history(y, node);
    }
    return y;
  };
  const Tensor x = from_vector<double>({1, -4, 2}, {3}).requires_grad_();
  const autograd::GradcheckResult r = autograd::gradcheck(wrong_square, {x});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.input, 0);
  EXPECT_EQ(r.element, 1);         // |3x − 2x| is largest at x = −4
  EXPECT_EQ(r.output_element, 1);
  EXPECT_NEAR(r.analytic, -12, 1e-12);
  EXPECT_NEAR(r.numeric, -8, 1e-5);
  EXPECT_NE(r.message.find("FAILED"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("element [1]"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("analytic -12"), std::string::npos) << r.message;
}

TEST(GradcheckApi, RejectsInputsItCannotCheck) {
  const auto id = [](V in) { return in[0] * 1.0; };
  const Tensor f32 = ones({2}).requires_grad_();
  try {
    autograd::gradcheck(id, {f32});
    ADD_FAILURE() << "an f32 input was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs f64 inputs"), std::string::npos) << e.what();
  }
  const Tensor expanded = ones({1, 3}, {.dtype = DType::f64}).expand({2, 3}).detach().requires_grad_();
  try {
    autograd::gradcheck(id, {expanded});
    ADD_FAILURE() << "an expanded input was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("overlapping memory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ember
