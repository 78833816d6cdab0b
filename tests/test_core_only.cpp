// Links ember_core (and the backends below it) alone, not ember::ember: it builds only while core needs no
// symbol from a layer above it (autograd, nn, optim, data, apps), as docs/architecture.md says. What it runs
// is the spelling core and the backward formulas use: ember::raw:: (core/raw.h), which records nothing.
#include <gtest/gtest.h>

#include "core/raw.h"
#include "core/tensor.h"

namespace ember {
namespace {

TEST(CoreOnly, RawOpsAndViews) {
  const Tensor a = from_vector<float>({1, -2, 3, -4, 5, -6}, {2, 3});
  const Tensor b = raw::unary(UnaryOp::relu, a);
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{1, 0, 3, 0, 5, 0}));
  const Tensor t = raw::contiguous(raw::transpose(a, 0, 1));
  EXPECT_EQ(t.shape(), Shape({3, 2}));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, -4, -2, 5, 3, -6}));
  const Tensor s = raw::reduce(ReduceOp::sum, raw::binary(BinaryOp::mul, a, a), {}, false);
  EXPECT_FLOAT_EQ(s.item<float>(), 91.0f);
  const Tensor g = raw::unary_backward(UnaryOp::relu, ones({2, 3}), b);
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{1, 0, 1, 0, 1, 0}));
  const Tensor m = raw::matmul(a, t);  // [2, 3] @ [3, 2]
  EXPECT_EQ(m.shape(), Shape({2, 2}));
  EXPECT_FLOAT_EQ(m.to_vector<float>()[0], 1 * 1 + -2 * -2 + 3 * 3);
}

}  // namespace
}  // namespace ember
