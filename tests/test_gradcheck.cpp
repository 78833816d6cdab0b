// Every differentiable op, one table line each (input shapes, the op, an independent reference for its
// forward). Each line runs on contiguous inputs and on non-contiguous ones (transposed and strided-slice
// leaves, and inputs expanded inside the op), in f64: the forward is compared with the reference
// (plain loops over doubles in tests/op_table.h, no Ember op involved), the backward with central
// differences. The table and the layouts are shared with the CPU-vs-CUDA parity test (tests/op_table.h).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "op_table.h"

namespace ember {
namespace {

using namespace optable;  // the table, its reference helpers and the layouts: tests/op_table.h

// Every differentiable op must have a line named after it (variants may add lines): every unary op and
// every arithmetic binary op of the tables in backends/elementwise_ops.h, by its enum name, and the other
// ops of autograd/ops.h and the Tensor view/copy methods, listed here. to(Device) is a no-op on a CPU-only
// machine; the CUDA parity tests cover it.
TEST(GradcheckTable, CoversEveryDifferentiableOp) {
  std::vector<std::string> required = {
      "where", "sum", "mean", "max", "min", "amax", "amin", "max_dim", "min_dim", "softmax", "log_softmax", "matmul",
      "reshape", "view", "flatten", "squeeze", "unsqueeze", "permute", "transpose", "t", "narrow", "slice", "select",
      "expand", "contiguous", "clone", "to_dtype", "cat", "stack", "index_select", "gather",
      "var", "std", "logsumexp", "cumsum", "sort", "topk", "scaled_dot_product_attention",
      // masking, indexing, repeating
      "masked_fill", "tril", "triu", "scatter", "index_add", "repeat", "flip", "chunk", "split", "unbind"};
  // recurrent cells (nn::functional)
  for (const char* op : {"lstm_cell_pointwise", "gru_cell_pointwise", "lstm_cell", "gru_cell", "lstm_sequence", "gru_sequence"}) required.emplace_back(op);
  for (const UnaryOpInfo& op : kUnaryOps) required.emplace_back(op.name);
  for (const BinaryOpInfo& op : kBinaryOps)
    if (op.kind == BinaryKind::arithmetic) required.emplace_back(op.name);
  std::set<std::string> names;
  for (const OpCase& c : op_table()) EXPECT_TRUE(names.insert(c.name).second) << "duplicate line " << c.name;
  for (const std::string& op : required)
    EXPECT_TRUE(names.count(op)) << "no line for " << op << " in the op table (tests/op_table.h)";
}

// --- layouts: tests/op_table.h ------------------------------------------------------------------------------------
class Gradcheck : public ::testing::TestWithParam<std::tuple<size_t, Layout>> {};

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
  std::vector<Host> hosts;
  for (const Tensor& x : views(leaves)) hosts.push_back({x.shape(), x.to_vector<double>()});
  const Tensor out = fn(leaves);
  const Host expected = c.ref(hosts);
  ASSERT_EQ(out.shape(), expected.shape) << c.name;
  const std::vector<double> got = out.to_vector<double>();
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], expected.v[i], c.forward_tol * (1 + std::abs(expected.v[i]))) << c.name << " element " << i;
  EXPECT_TRUE(out.requires_grad()) << c.name << " recorded no graph";

  const autograd::GradcheckResult r = autograd::gradcheck(fn, leaves, c.eps, c.atol, c.rtol);
  EXPECT_TRUE(r.ok) << c.name << " (" << layout_name(layout) << "): " << r.message;
  EXPECT_GE(r.input, 0) << r.message;
}

std::string case_name(const ::testing::TestParamInfo<Gradcheck::ParamType>& info) {
  return op_table()[std::get<0>(info.param)].name + "_" + layout_name(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Ops, Gradcheck,
                         ::testing::Combine(::testing::Range<size_t>(0, op_table().size()),
                                            ::testing::Values(Layout::contiguous, Layout::transposed, Layout::sliced,
                                                              Layout::expanded)),
                         case_name);

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
