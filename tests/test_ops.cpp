// Element-wise ops: binary arithmetic, comparisons, where, unary math, broadcasting, scalar overloads,
// dtype promotion and in-place ops. Each case runs in f32 and f64 on contiguous, transposed and sliced
// inputs (test_helpers.h); expected values are hand-computed or from the C library in double.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include <ember/ember.h>

#include "golden_rows.h"
#include "test_helpers.h"

using namespace ember;
using ember::test::check_binary;
using ember::test::check_unary;
using ember::test::close_to;
using ember::test::make;
using ember::test::map;
using ember::test::throws_error;

namespace {

// ember::add and the others are overloaded (tensor ⊕ tensor, tensor ⊕ number): the tensor form as a callable.
#define EMBER_FN(name) [](const Tensor& a, const Tensor& b) { return ember::name(a, b); }

const std::vector<double> kA = {1, -2, 3, 4, 5, -6};
const std::vector<double> kB = {2, 2, -1, 0.5, 5, 4};
const Shape k23 = {2, 3};

double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
double gelu_ref(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

}  // namespace

TEST(Binary, Arithmetic) {
  check_binary("add", EMBER_FN(add), kA, k23, kB, k23, {3, 0, 2, 4.5, 10, -2}, k23);
  check_binary("sub", EMBER_FN(sub), kA, k23, kB, k23, {-1, -4, 4, 3.5, 0, -10}, k23);
  check_binary("mul", EMBER_FN(mul), kA, k23, kB, k23, {2, -4, -3, 2, 25, -24}, k23);
  check_binary("div", EMBER_FN(div), kA, k23, kB, k23, {0.5, -1, -3, 8, 1, -1.5}, k23);
  check_binary("pow", EMBER_FN(pow), kA, k23, kB, k23,
               {1, 4, 1.0 / 3, 2, 3125, 1296}, k23);
  check_binary("maximum", EMBER_FN(maximum), kA, k23, kB, k23, {2, 2, 3, 4, 5, 4}, k23);
  check_binary("minimum", EMBER_FN(minimum), kA, k23, kB, k23, {1, -2, -1, 0.5, 5, -6}, k23);
  // The operators are the same ops.
  check_binary("+", [](const Tensor& a, const Tensor& b) { return a + b; }, kA, k23, kB, k23, {3, 0, 2, 4.5, 10, -2}, k23);
  check_binary("-", [](const Tensor& a, const Tensor& b) { return a - b; }, kA, k23, kB, k23, {-1, -4, 4, 3.5, 0, -10}, k23);
  check_binary("*", [](const Tensor& a, const Tensor& b) { return a * b; }, kA, k23, kB, k23, {2, -4, -3, 2, 25, -24}, k23);
  check_binary("/", [](const Tensor& a, const Tensor& b) { return a / b; }, kA, k23, kB, k23, {0.5, -1, -3, 8, 1, -1.5}, k23);
}

TEST(Binary, DivisionEdgeCases) {
  check_binary("div by 0", EMBER_FN(div), {1, -1, 0}, {3}, {0, 0, 0}, {3}, {INFINITY, -INFINITY, NAN}, {3});
  check_binary("maximum NaN", EMBER_FN(maximum), {NAN, 1, NAN}, {3}, {1, NAN, NAN}, {3}, {NAN, NAN, NAN}, {3});
  check_binary("minimum NaN", EMBER_FN(minimum), {NAN, 1, 2}, {3}, {1, NAN, -INFINITY}, {3}, {NAN, NAN, -INFINITY}, {3});
}

TEST(Binary, Comparisons) {
  // kA vs kB: 1<2, -2<2, 3>-1, 4>0.5, 5==5, -6<4
  check_binary("eq", EMBER_FN(eq), kA, k23, kB, k23, {0, 0, 0, 0, 1, 0}, k23, true);
  check_binary("ne", EMBER_FN(ne), kA, k23, kB, k23, {1, 1, 1, 1, 0, 1}, k23, true);
  check_binary("lt", EMBER_FN(lt), kA, k23, kB, k23, {1, 1, 0, 0, 0, 1}, k23, true);
  check_binary("le", EMBER_FN(le), kA, k23, kB, k23, {1, 1, 0, 0, 1, 1}, k23, true);
  check_binary("gt", EMBER_FN(gt), kA, k23, kB, k23, {0, 0, 1, 1, 0, 0}, k23, true);
  check_binary("ge", EMBER_FN(ge), kA, k23, kB, k23, {0, 0, 1, 1, 1, 0}, k23, true);
  check_binary(">=", [](const Tensor& a, const Tensor& b) { return a >= b; }, kA, k23, kB, k23, {0, 0, 1, 1, 1, 0}, k23, true);
  check_binary("==", [](const Tensor& a, const Tensor& b) { return a == b; }, kA, k23, kB, k23, {0, 0, 0, 0, 1, 0}, k23, true);
  check_binary("NaN compares false", EMBER_FN(lt), {NAN, 1}, {2}, {1, NAN}, {2}, {0, 0}, {2}, true);
  check_binary("NaN ne", EMBER_FN(ne), {NAN, 1}, {2}, {NAN, 1}, {2}, {1, 0}, {2}, true);
  // Broadcast comparison with a scalar and on integer and bool tensors.
  const Tensor i = make({1, 5, 3}, {3}, DType::i64);
  EXPECT_EQ((i > 2).dtype(), DType::b8);
  EXPECT_EQ((i > 2).to_vector<bool>(), (std::vector<bool>{false, true, true}));
  EXPECT_EQ((i <= 2.5).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  EXPECT_EQ((i != 3).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  const Tensor m = from_vector<bool>({true, false});
  EXPECT_EQ(eq(m, from_vector<bool>({true, true})).to_vector<bool>(), (std::vector<bool>{true, false}));
}

TEST(Binary, Broadcasting) {
  check_binary("[2,3]+[3]", EMBER_FN(add), kA, k23, {10, 20, 30}, {3}, {11, 18, 33, 14, 25, 24}, k23);
  check_binary("[3]+[2,3]", EMBER_FN(add), {10, 20, 30}, {3}, kA, k23, {11, 18, 33, 14, 25, 24}, k23);
  check_binary("[2,1]+[1,3]", EMBER_FN(add), {1, 2}, {2, 1}, {10, 20, 30}, {1, 3}, {11, 21, 31, 12, 22, 32}, k23);
  check_binary("[3]-[]", EMBER_FN(sub), {1, 2, 3}, {3}, {10}, {}, {-9, -8, -7}, {3});
  check_binary("[]-[3]", EMBER_FN(sub), {10}, {}, {1, 2, 3}, {3}, {9, 8, 7}, {3});
  check_binary("[1]*[2,2]", EMBER_FN(mul), {3}, {1}, {1, 2, 3, 4}, {2, 2}, {3, 6, 9, 12}, {2, 2});
  check_binary("[]+[]", EMBER_FN(add), {1.5}, {}, {2}, {}, {3.5}, {});
  // [2,1,3] * [4,1] -> [2,4,3]: out[i][j][k] = a[i][0][k] * b[j][0].
  const std::vector<double> a = {1, 2, 3, 4, 5, 6}, b = {1, -1, 10, 0.5};
  std::vector<double> expected;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) expected.push_back(a[i * 3 + k] * b[j]);
  check_binary("[2,1,3]*[4,1]", EMBER_FN(mul), a, {2, 1, 3}, b, {4, 1}, expected, {2, 4, 3});
  std::vector<double> greater;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) greater.push_back(b[j] > a[i * 3 + k] ? 1 : 0);
  check_binary("[4,1]>[2,1,3]", EMBER_FN(gt), b, {4, 1}, a, {2, 1, 3}, greater, {2, 4, 3}, true);
}

TEST(Binary, ExpandedOperands) {
  for (DType dtype : ember::test::kFloatTypes) {
    // Stride-0 inputs (an explicitly expanded row and column) behave like their materialised copies.
    const Tensor row = make({1, 2, 3}, {3}, dtype).expand({2, 3});
    const Tensor col = make({10, 20}, {2, 1}, dtype).expand({2, 3});
    EXPECT_TRUE(close_to(row + col, {11, 12, 13, 21, 22, 23}, k23));
    EXPECT_TRUE(close_to(row * make(kA, k23, dtype).t().t(), {1, -4, 9, 4, 10, -18}, k23));
    EXPECT_TRUE(close_to(maximum(col, make(kA, {3, 2}, dtype).t() * 5), {10, 15, 25, 20, 20, 20}, k23));
    EXPECT_TRUE(close_to(lt(row, col.select(1, 0).unsqueeze(1) - 9), {0, 0, 0, 1, 1, 1}, k23));
  }
}

TEST(Binary, ScalarOverloads) {
  for (DType dtype : ember::test::kFloatTypes) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const Tensor x = make({1, -2, 4}, {3}, dtype);
    const Tensor v = make({1, 2, 3, 4, 5, 6}, {3, 2}, dtype).t().select(0, 1);  // [2, 4, 6], stride 2
    EXPECT_TRUE(close_to(x + 2, {3, 0, 6}, {3}));
    EXPECT_TRUE(close_to(2.5 + x, {3.5, 0.5, 6.5}, {3}));
    EXPECT_TRUE(close_to(x - 1, {0, -3, 3}, {3}));
    EXPECT_TRUE(close_to(1 - x, {0, 3, -3}, {3}));
    EXPECT_TRUE(close_to(x * 3, {3, -6, 12}, {3}));
    EXPECT_TRUE(close_to(0.5 * x, {0.5, -1, 2}, {3}));
    EXPECT_TRUE(close_to(x / 2, {0.5, -1, 2}, {3}));
    EXPECT_TRUE(close_to(8 / x, {8, -4, 2}, {3}));
    EXPECT_TRUE(close_to(-x, {-1, 2, -4}, {3}));
    EXPECT_TRUE(close_to(v / 2.0f, {1, 2, 3}, {3}));
    EXPECT_TRUE(close_to(10 - v, {8, 6, 4}, {3}));
    EXPECT_EQ((x + 2).dtype(), dtype);  // a C++ scalar never widens a float tensor
    EXPECT_EQ((x * 2.0).dtype(), dtype);
    EXPECT_EQ((v > 3).to_vector<bool>(), (std::vector<bool>{false, true, true}));
    EXPECT_EQ((x == -2).to_vector<bool>(), (std::vector<bool>{false, true, false}));
  }
}

TEST(Binary, TypePromotion) {
  struct Case {
    DType a;
    bool a_0d;
    DType b;
    bool b_0d;
    DType expected;
  };
  using enum DType;
  const Case cases[] = {
      {f32, false, f64, false, f64}, {i64, false, f32, false, f32}, {b8, false, i64, false, i64},
      {b8, false, f32, false, f32},  {i64, false, f64, false, f64}, {b8, false, b8, false, i64},  // bool + bool counts
      {f32, false, f64, true, f32},  {f64, true, f32, false, f32},  // same category: the dimensioned tensor decides
      {i64, false, f64, true, f64},  // higher category wins even from a 0-d tensor
      {f32, true, f64, true, f64},   {i64, true, f32, false, f32},  {b8, false, i64, true, i64},
  };
  for (const Case& c : cases) {
    const Tensor a = c.a_0d ? scalar_tensor(1, {.dtype = c.a}) : ones({2}, {.dtype = c.a});
    const Tensor b = c.b_0d ? scalar_tensor(1, {.dtype = c.b}) : ones({2}, {.dtype = c.b});
    SCOPED_TRACE(std::string(dtype_name(c.a)) + (c.a_0d ? "(0-d)" : "") + " + " + std::string(dtype_name(c.b)) +
                 (c.b_0d ? "(0-d)" : ""));
    EXPECT_EQ(add(a, b).dtype(), c.expected);
    EXPECT_EQ(add(b, a).dtype(), c.expected);
    EXPECT_TRUE(close_to(add(a, b), c.a_0d && c.b_0d ? std::vector<double>{2} : std::vector<double>{2, 2},
                         c.a_0d && c.b_0d ? Shape{} : Shape{2}));
  }
  // Scalars: like Python numbers.
  const Tensor i = make({1, 2, 3}, {3}, DType::i64);
  EXPECT_EQ((i * 2).dtype(), DType::i64);
  EXPECT_EQ((i * 2).to_vector<int64_t>(), (std::vector<int64_t>{2, 4, 6}));
  EXPECT_EQ((i * 0.5).dtype(), DType::f32);
  EXPECT_TRUE(close_to(i * 0.5, {0.5, 1, 1.5}, {3}));
  const Tensor m = from_vector<bool>({true, false, true});
  EXPECT_EQ((m * 2).dtype(), DType::i64);
  EXPECT_EQ((m * 2).to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 2}));
  EXPECT_EQ((m * 2.5).dtype(), DType::f32);
  // True division: integers divide into f32.
  EXPECT_EQ(div(make({7, -7}, {2}, DType::i64), make({2, 2}, {2}, DType::i64)).dtype(), DType::f32);
  EXPECT_TRUE(close_to(make({7, -7}, {2}, DType::i64) / 2, {3.5, -3.5}, {2}));
  // Integer arithmetic stays exact.
  const Tensor big = from_vector<int64_t>({(int64_t{1} << 53) + 1});
  EXPECT_EQ((big + big).to_vector<int64_t>()[0], (int64_t{1} << 54) + 2);
  EXPECT_EQ(sub(make({5, 1}, {2}, DType::i64), make({7, 1}, {2}, DType::i64)).to_vector<int64_t>(),
            (std::vector<int64_t>{-2, 0}));
  EXPECT_EQ(maximum(m, from_vector<bool>({false, false, false})).dtype(), DType::i64);
  // Float-only math on integers computes in f32; sign-preserving ops keep integers.
  EXPECT_EQ(exp(i).dtype(), DType::f32);
  EXPECT_TRUE(close_to(sqrt(make({4, 9}, {2}, DType::i64)), {2, 3}, {2}));
  EXPECT_EQ(neg(i).to_vector<int64_t>(), (std::vector<int64_t>{-1, -2, -3}));
  EXPECT_EQ(abs(make({-3, 2}, {2}, DType::i64)).to_vector<int64_t>(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(relu(make({-3, 2}, {2}, DType::i64)).to_vector<int64_t>(), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(neg(m).dtype(), DType::i64);
  EXPECT_EQ(neg(m).to_vector<int64_t>(), (std::vector<int64_t>{-1, 0, -1}));
  EXPECT_EQ(clamp(make({-5, 0, 5}, {3}, DType::i64), -2, 3).to_vector<int64_t>(), (std::vector<int64_t>{-2, 0, 3}));
  EXPECT_EQ(clamp(make({-5, 0, 5}, {3}, DType::i64), -INFINITY, 3).to_vector<int64_t>(),
            (std::vector<int64_t>{-5, 0, 3}));
  EXPECT_EQ(clamp(make({-5, 0, 5}, {3}, DType::i64), -1, INFINITY).to_vector<int64_t>(),
            (std::vector<int64_t>{-1, 0, 5}));
  EXPECT_EQ(pow(i, 2.0).dtype(), DType::f32);
}

TEST(Where, SelectsAndBroadcasts) {
  for (DType dtype : ember::test::kFloatTypes) {
    for (const auto& a : ember::test::layouts(kA, k23, dtype)) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + a.name);
      const Tensor cond = a.t > 0;
      EXPECT_EQ(cond.to_vector<bool>(), (std::vector<bool>{true, false, true, true, true, false}));
      EXPECT_TRUE(close_to(where(cond, a.t, make(kB, k23, dtype)), {1, 2, 3, 4, 5, 4}, k23));
      EXPECT_TRUE(close_to(where(cond, a.t, scalar_tensor(0, {.dtype = dtype})), {1, 0, 3, 4, 5, 0}, k23));
      EXPECT_TRUE(close_to(where(cond.select(0, 0), make({7}, {1}, dtype), a.t), {7, -2, 7, 7, 5, 7}, k23));
      // A [2,1] condition against a [3] value and a [2,3] tensor.
      const Tensor c21 = from_vector<bool>({false, true}, {2, 1});
      EXPECT_TRUE(close_to(where(c21, make({10, 20, 30}, {3}, dtype), a.t), {1, -2, 3, 10, 20, 30}, k23));
    }
  }
  // Result dtype: the promotion of the two value tensors.
  const Tensor c = from_vector<bool>({true, false});
  const Tensor r = where(c, make({1, 2}, {2}, DType::i64), make({0.5, 0.25}, {2}, DType::f32));
  EXPECT_EQ(r.dtype(), DType::f32);
  EXPECT_TRUE(close_to(r, {1, 0.25}, {2}));
  EXPECT_EQ(where(c, make({1, 2}, {2}, DType::i64), make({3, 4}, {2}, DType::i64)).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 4}));
}

TEST(Unary, Math) {
  const std::vector<double> x = {-2, -0.5, 0, 0.5, 1, 3};
  const std::vector<double> pos = {0.25, 0.5, 1, 2, 4, 9};
  check_unary("neg", static_cast<Tensor (*)(const Tensor&)>(ember::neg), x, k23, {2, 0.5, 0, -0.5, -1, -3});
  check_unary("unary -", [](const Tensor& t) { return -t; }, x, k23, {2, 0.5, 0, -0.5, -1, -3});
  check_unary("abs", static_cast<Tensor (*)(const Tensor&)>(ember::abs), x, k23, {2, 0.5, 0, 0.5, 1, 3});
  check_unary("relu", ember::relu, x, k23, {0, 0, 0, 0.5, 1, 3});
  check_unary("square", ember::square, x, k23, {4, 0.25, 0, 0.25, 1, 9});
  check_unary("sign", ember::sign, x, k23, {-1, -1, 0, 1, 1, 1});
  check_unary("sqrt", static_cast<Tensor (*)(const Tensor&)>(ember::sqrt), pos, k23, {0.5, std::sqrt(0.5), 1, std::sqrt(2.0), 2, 3});
  check_unary("rsqrt", ember::rsqrt, pos, k23, {2, std::sqrt(2.0), 1, 1 / std::sqrt(2.0), 0.5, 1.0 / 3});
  check_unary("exp", static_cast<Tensor (*)(const Tensor&)>(ember::exp), x, k23, map(x, std::exp));
  check_unary("log", static_cast<Tensor (*)(const Tensor&)>(ember::log), pos, k23, map(pos, std::log));
  check_unary("tanh", static_cast<Tensor (*)(const Tensor&)>(ember::tanh), x, k23, map(x, std::tanh));
  check_unary("sigmoid", ember::sigmoid, x, k23, map(x, sigmoid_ref));
  check_unary("gelu", [](const Tensor& x) { return gelu(x); }, x, k23, map(x, gelu_ref));
  // Hand-computed anchors for the references above.
  check_unary("exp(1)", static_cast<Tensor (*)(const Tensor&)>(ember::exp), {0, 1}, {2}, {1, 2.718281828459045});
  check_unary("sigmoid(0)", ember::sigmoid, {0, 100}, {2}, {0.5, 1});
  check_unary("gelu anchors", [](const Tensor& x) { return gelu(x); }, {1, -1}, {2}, {0.8413447460685429, -0.15865525393145707});
  check_unary("pow 2", [](const Tensor& t) { return pow(t, 2.0); }, x, k23, {4, 0.25, 0, 0.25, 1, 9});
  check_unary("pow 0.5", [](const Tensor& t) { return t.pow(0.5); }, pos, k23, {0.5, std::sqrt(0.5), 1, std::sqrt(2.0), 2, 3});
  check_unary("pow -1", [](const Tensor& t) { return t.pow(-1); }, pos, k23, {4, 2, 1, 0.5, 0.25, 1.0 / 9});
  check_unary("clamp", [](const Tensor& t) { return clamp(t, -1, 1); }, x, k23, {-1, -0.5, 0, 0.5, 1, 1});
  check_unary("clamp max only", [](const Tensor& t) { return t.clamp(-INFINITY, 0.5); }, x, k23, {-2, -0.5, 0, 0.5, 0.5, 0.5});
  check_unary("clamp min only", [](const Tensor& t) { return t.clamp(0, INFINITY); }, x, k23, {0, 0, 0, 0.5, 1, 3});
  // Edge values: log(0) = -inf, NaN propagates, relu/clamp keep NaN, saturating functions stay finite.
  check_unary("log edges", static_cast<Tensor (*)(const Tensor&)>(ember::log), {0, -1, INFINITY}, {3}, {-INFINITY, NAN, INFINITY});
  check_unary("sqrt -1", static_cast<Tensor (*)(const Tensor&)>(ember::sqrt), {-1, 0}, {2}, {NAN, 0});
  check_unary("relu NaN", ember::relu, {NAN, -INFINITY}, {2}, {NAN, 0});
  check_unary("clamp NaN", [](const Tensor& t) { return clamp(t, 0, 1); }, {NAN, -INFINITY, INFINITY}, {3}, {NAN, 0, 1});
  check_unary("tanh large", static_cast<Tensor (*)(const Tensor&)>(ember::tanh), {-50, 50}, {2}, {-1, 1});
  check_unary("sigmoid large", ember::sigmoid, {-200, 200}, {2}, {0, 1});
  check_unary("exp overflow", static_cast<Tensor (*)(const Tensor&)>(ember::exp), {1000, -1000}, {2}, {INFINITY, 0});
}

TEST(Unary, OnExpandedAndMethodForms) {
  for (DType dtype : ember::test::kFloatTypes) {
    const Tensor e = make({-1, 2}, {2, 1}, dtype).expand({2, 3});
    EXPECT_TRUE(close_to(e.abs(), {1, 1, 1, 2, 2, 2}, k23));
    EXPECT_TRUE(close_to(e.relu(), {0, 0, 0, 2, 2, 2}, k23));
    EXPECT_TRUE(close_to(e.neg(), {1, 1, 1, -2, -2, -2}, k23));
    EXPECT_TRUE(close_to(e.exp(), {std::exp(-1.0), std::exp(-1.0), std::exp(-1.0), std::exp(2.0), std::exp(2.0), std::exp(2.0)}, k23));
    EXPECT_TRUE(close_to(e.abs().sqrt(), {1, 1, 1, std::sqrt(2.0), std::sqrt(2.0), std::sqrt(2.0)}, k23));
    EXPECT_TRUE(close_to(e.abs().log(), {0, 0, 0, std::log(2.0), std::log(2.0), std::log(2.0)}, k23));
    EXPECT_TRUE(close_to(e.tanh(), map({-1, -1, -1, 2, 2, 2}, std::tanh), k23));
    EXPECT_TRUE(close_to(e.sigmoid(), map({-1, -1, -1, 2, 2, 2}, sigmoid_ref), k23));
    EXPECT_TRUE(close_to(e.gelu(), map({-1, -1, -1, 2, 2, 2}, gelu_ref), k23));
    EXPECT_TRUE(close_to(e.pow(3), {-1, -1, -1, 8, 8, 8}, k23));
    EXPECT_TRUE(close_to(e.clamp(0, 1), {0, 0, 0, 1, 1, 1}, k23));
    EXPECT_TRUE(e.exp().is_contiguous());  // results are always fresh contiguous tensors
  }
}

TEST(InPlace, AddMulFillCopy) {
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    Tensor t = make({1, 2, 3, 4, 5, 6}, k23, dtype);
    const Tensor before = t;
    t.add_(make({10, 20, 30}, {3}, dtype));  // broadcast
    EXPECT_TRUE(close_to(t, {11, 22, 33, 14, 25, 36}, k23));
    EXPECT_TRUE(before.shares_storage(t));  // in place: same storage
    t.add_(make({1, 2}, {2, 1}, dtype).expand({2, 3}));
    EXPECT_TRUE(close_to(t, {12, 23, 34, 16, 27, 38}, k23));
    t.t().add_(make({100, 200, 300, 400, 500, 600}, {3, 2}, dtype));  // through a transposed view
    EXPECT_TRUE(close_to(t, {112, 323, 534, 216, 427, 638}, k23));
    t.mul_(2);
    EXPECT_TRUE(close_to(t, {224, 646, 1068, 432, 854, 1276}, k23));
    t.select(1, 0).mul_(-1);
    EXPECT_TRUE(close_to(t, {-224, 646, 1068, -432, 854, 1276}, k23));
    t.slice(1, 0, 3, 2).fill_(7);
    EXPECT_TRUE(close_to(t, {7, 646, 7, 7, 854, 7}, k23));
    t.zero_();
    EXPECT_TRUE(close_to(t, {0, 0, 0, 0, 0, 0}, k23));
    t.copy_(make({1, 2, 3}, {3}, DType::f64));  // broadcast and convert
    EXPECT_TRUE(close_to(t, {1, 2, 3, 1, 2, 3}, k23));
    t.copy_(make({1, 2, 3, 4, 5, 6}, {3, 2}, dtype).t());  // from a transposed view
    EXPECT_TRUE(close_to(t, {1, 3, 5, 2, 4, 6}, k23));
    EXPECT_EQ(t.dtype(), dtype);
  }
  Tensor f = make({1, 2}, {2}, DType::f32);
  f.add_(make({0.25, 0.5}, {2}, DType::f64));  // f64 into an f32 target: same category, converted
  EXPECT_TRUE(close_to(f, {1.25, 2.5}, {2}));
  f.mul_(0.5);
  EXPECT_TRUE(close_to(f, {0.625, 1.25}, {2}));
  Tensor i = make({1, 2}, {2}, DType::i64);
  i.copy_(make({2.9, -2.9}, {2}, DType::f32));  // copy_ converts (truncating), unlike add_
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{2, -2}));
}

TEST(InPlace, OverlappingViews) {
  // Reading and writing overlapping ranges of one buffer: the result is as if the source was read first.
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    Tensor a = arange(5, {.dtype = dtype});
    a.narrow(0, 1, 4).add_(a.narrow(0, 0, 4));
    EXPECT_TRUE(close_to(a, {0, 1, 3, 5, 7}, {5}));
    Tensor b = arange(5, {.dtype = dtype});
    b.narrow(0, 1, 4).copy_(b.narrow(0, 0, 4));
    EXPECT_TRUE(close_to(b, {0, 0, 1, 2, 3}, {5}));
    Tensor c = arange(4, {.dtype = dtype}).reshape({2, 2});
    c.copy_(c.t());  // in-place transpose
    EXPECT_TRUE(close_to(c, {0, 2, 1, 3}, {2, 2}));
    Tensor d = arange(4, {.dtype = dtype});
    d.add_(d);  // the same view: safe without a copy
    EXPECT_TRUE(close_to(d, {0, 2, 4, 6}, {4}));
  }
}

// --- golden values from PyTorch (tools/make_ops_golden.py): forward and gradient, f32 and f64 -------------
namespace {

using UnaryCase = std::pair<const char*, std::function<Tensor(const Tensor&)>>;

const std::vector<UnaryCase>& golden_unary_cases() {
  static const std::vector<UnaryCase> cases = {
      {"exp", [](const Tensor& x) { return exp(x); }},
      {"expm1", [](const Tensor& x) { return expm1(x); }},
      {"log", [](const Tensor& x) { return log(x); }},
      {"log1p", [](const Tensor& x) { return log1p(x); }},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }},
      {"reciprocal", [](const Tensor& x) { return reciprocal(x); }},
      {"sin", [](const Tensor& x) { return sin(x); }},
      {"cos", [](const Tensor& x) { return cos(x); }},
      {"tanh", [](const Tensor& x) { return tanh(x); }},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
      {"silu", [](const Tensor& x) { return nn::functional::silu(x); }},
      {"relu", [](const Tensor& x) { return relu(x); }},
      {"abs", [](const Tensor& x) { return abs(x); }},
      {"square", [](const Tensor& x) { return square(x); }},
      {"neg", [](const Tensor& x) { return -x; }},
      {"gelu", [](const Tensor& x) { return gelu(x); }},
      {"gelu_tanh", [](const Tensor& x) { return x.gelu("tanh"); }},
      {"leaky_relu", [](const Tensor& x) { return leaky_relu(x); }},
      {"leaky_relu_02", [](const Tensor& x) { return leaky_relu(x, 0.2); }},
      {"elu", [](const Tensor& x) { return elu(x); }},
      {"elu_15", [](const Tensor& x) { return elu(x, 1.5); }},
      {"softplus", [](const Tensor& x) { return softplus(x); }},
      {"softplus_2_3", [](const Tensor& x) { return softplus(x, 2.0, 3.0); }},
      {"hardtanh", [](const Tensor& x) { return hardtanh(x); }},
      {"hardtanh_08_06", [](const Tensor& x) { return hardtanh(x, -0.8, 0.6); }},
      {"clamp", [](const Tensor& x) { return clamp(x, -0.8, 0.6); }},
      {"pow_25", [](const Tensor& x) { return pow(x, 2.5); }},
      {"pow_3", [](const Tensor& x) { return x.pow(3); }},
  };
  return cases;
}

class OpsGolden : public ::testing::TestWithParam<std::tuple<size_t, DType>> {};

// f64 agrees to ~1e-13; f32 to a few ulp (PyTorch's vectorised f32 exp/log/tanh differ from the C
// library's by an ulp or two, and a gradient compounds two such values).
TEST_P(OpsGolden, ForwardAndGradient) {
  const auto [row, dtype] = GetParam();
  const auto& [name, op] = golden_unary_cases()[row];
  const std::string key = std::string(name) + (dtype == DType::f32 ? ".f32." : ".f64.");
  const char* file = "ops_golden.safetensors";
  Tensor x = test::golden(file, key + "x").clone().requires_grad_();
  ASSERT_EQ(x.dtype(), dtype);
  const Tensor y = op(x);
  ASSERT_EQ(y.dtype(), dtype);
  (y * test::golden(file, key + "r")).sum().backward();
  const double rtol = dtype == DType::f32 ? 4e-6 : 1e-12, atol = dtype == DType::f32 ? 1e-6 : 1e-14;
  EXPECT_LE(test::golden_mismatch(y, test::golden(file, key + "y"), rtol, atol), 1.0) << name << " forward, " << dtype_name(dtype);
  EXPECT_LE(test::golden_mismatch(x.grad(), test::golden(file, key + "gx"), rtol, atol), 1.0) << name << " gradient, " << dtype_name(dtype);
}

INSTANTIATE_TEST_SUITE_P(, OpsGolden, test::golden_rows(golden_unary_cases().size()),
                         test::golden_row_name([](size_t row) { return golden_unary_cases()[row].first; }));

}  // namespace

// Comparisons take a C++ number on either side, as torch::eq(t, 0) does.
TEST(Binary, ScalarForms) {
  const Tensor t = from_vector<float>({0, 1, -2, 0}, {4});
  EXPECT_EQ(eq(t, 0.f).to_vector<bool>(), (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(gt(0, t).to_vector<bool>(), (std::vector<bool>{false, false, true, false}));
  EXPECT_EQ(t.ne(zeros({4})).to_vector<bool>(), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(maximum(t, 0.5).to_vector<float>(), (std::vector<float>{0.5f, 1, 0.5f, 0.5f}));
  EXPECT_EQ(sub(1, t).to_vector<float>(), (std::vector<float>{1, 0, 3, 1}));
  EXPECT_EQ(pow(t, 2).to_vector<float>(), (std::vector<float>{0, 1, 4, 0}));
}

// An op named in the tables reports its name, and the dtypes it refuses say so.
TEST(Unary, TableDrivenErrors) {
  const Tensor i = from_vector<int64_t>({1, 2}, {2}), o = empty({2}, {.dtype = DType::i64});
  EXPECT_TRUE(throws_error([&] { backend(kCPU).unary(UnaryOp::silu, i.arg(), o.arg(), 0, 0); },
                           {"silu: not defined for dtype i64"}));
  EXPECT_TRUE(throws_error([&] { backend(kCPU).binary(BinaryOp::pow, i.arg(), i.arg(), o.arg()); },
                           {"pow: not defined for dtype i64"}));
  const Tensor f = from_vector<float>({1, 2}, {2});
  EXPECT_TRUE(throws_error([&] { gelu(f, "fast"); }, {"gelu: approximate must be 'none' or 'tanh'"}));
  EXPECT_TRUE(throws_error([&] { hardtanh(f, 1, -1); }, {"hardtanh: min_val 1 is greater than max_val -1"}));
  // integer inputs of float-only ops are converted first, as in PyTorch
  EXPECT_EQ(expm1(from_vector<int64_t>({0}, {1})).dtype(), DType::f32);
}
