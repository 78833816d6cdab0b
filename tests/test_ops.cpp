// Element-wise ops: binary arithmetic, comparisons, where, unary math, broadcasting, scalar overloads,
// dtype promotion and in-place ops. Each case runs in f32 and f64 on contiguous, transposed and sliced
// inputs (test_helpers.h); expected values are hand-computed or from the C library in double.
#include <gtest/gtest.h>

#include <cmath>

#include <ember/ember.h>

#include "test_helpers.h"

using namespace ember;
using ember::test::check_binary;
using ember::test::check_unary;
using ember::test::close_to;
using ember::test::make;
using ember::test::map;
using ember::test::throws_error;

namespace {

const std::vector<double> kA = {1, -2, 3, 4, 5, -6};
const std::vector<double> kB = {2, 2, -1, 0.5, 5, 4};
const Shape k23 = {2, 3};

double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
double gelu_ref(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }

}  // namespace

TEST(Binary, Arithmetic) {
  check_binary("add", ember::add, kA, k23, kB, k23, {3, 0, 2, 4.5, 10, -2}, k23);
  check_binary("sub", ember::sub, kA, k23, kB, k23, {-1, -4, 4, 3.5, 0, -10}, k23);
  check_binary("mul", ember::mul, kA, k23, kB, k23, {2, -4, -3, 2, 25, -24}, k23);
  check_binary("div", ember::div, kA, k23, kB, k23, {0.5, -1, -3, 8, 1, -1.5}, k23);
  check_binary("pow", static_cast<Tensor (*)(const Tensor&, const Tensor&)>(ember::pow), kA, k23, kB, k23,
               {1, 4, 1.0 / 3, 2, 3125, 1296}, k23);
  check_binary("maximum", ember::maximum, kA, k23, kB, k23, {2, 2, 3, 4, 5, 4}, k23);
  check_binary("minimum", ember::minimum, kA, k23, kB, k23, {1, -2, -1, 0.5, 5, -6}, k23);
  // The operators are the same ops.
  check_binary("+", [](const Tensor& a, const Tensor& b) { return a + b; }, kA, k23, kB, k23, {3, 0, 2, 4.5, 10, -2}, k23);
  check_binary("-", [](const Tensor& a, const Tensor& b) { return a - b; }, kA, k23, kB, k23, {-1, -4, 4, 3.5, 0, -10}, k23);
  check_binary("*", [](const Tensor& a, const Tensor& b) { return a * b; }, kA, k23, kB, k23, {2, -4, -3, 2, 25, -24}, k23);
  check_binary("/", [](const Tensor& a, const Tensor& b) { return a / b; }, kA, k23, kB, k23, {0.5, -1, -3, 8, 1, -1.5}, k23);
}

TEST(Binary, DivisionEdgeCases) {
  check_binary("div by 0", ember::div, {1, -1, 0}, {3}, {0, 0, 0}, {3}, {INFINITY, -INFINITY, NAN}, {3});
  check_binary("maximum NaN", ember::maximum, {NAN, 1, NAN}, {3}, {1, NAN, NAN}, {3}, {NAN, NAN, NAN}, {3});
  check_binary("minimum NaN", ember::minimum, {NAN, 1, 2}, {3}, {1, NAN, -INFINITY}, {3}, {NAN, NAN, -INFINITY}, {3});
}

TEST(Binary, Comparisons) {
  // kA vs kB: 1<2, -2<2, 3>-1, 4>0.5, 5==5, -6<4
  check_binary("eq", ember::eq, kA, k23, kB, k23, {0, 0, 0, 0, 1, 0}, k23, true);
  check_binary("ne", ember::ne, kA, k23, kB, k23, {1, 1, 1, 1, 0, 1}, k23, true);
  check_binary("lt", ember::lt, kA, k23, kB, k23, {1, 1, 0, 0, 0, 1}, k23, true);
  check_binary("le", ember::le, kA, k23, kB, k23, {1, 1, 0, 0, 1, 1}, k23, true);
  check_binary("gt", ember::gt, kA, k23, kB, k23, {0, 0, 1, 1, 0, 0}, k23, true);
  check_binary("ge", ember::ge, kA, k23, kB, k23, {0, 0, 1, 1, 1, 0}, k23, true);
  check_binary(">=", [](const Tensor& a, const Tensor& b) { return a >= b; }, kA, k23, kB, k23, {0, 0, 1, 1, 1, 0}, k23, true);
  check_binary("==", [](const Tensor& a, const Tensor& b) { return a == b; }, kA, k23, kB, k23, {0, 0, 0, 0, 1, 0}, k23, true);
  check_binary("NaN compares false", ember::lt, {NAN, 1}, {2}, {1, NAN}, {2}, {0, 0}, {2}, true);
  check_binary("NaN ne", ember::ne, {NAN, 1}, {2}, {NAN, 1}, {2}, {1, 0}, {2}, true);
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
  check_binary("[2,3]+[3]", ember::add, kA, k23, {10, 20, 30}, {3}, {11, 18, 33, 14, 25, 24}, k23);
  check_binary("[3]+[2,3]", ember::add, {10, 20, 30}, {3}, kA, k23, {11, 18, 33, 14, 25, 24}, k23);
  check_binary("[2,1]+[1,3]", ember::add, {1, 2}, {2, 1}, {10, 20, 30}, {1, 3}, {11, 21, 31, 12, 22, 32}, k23);
  check_binary("[3]-[]", ember::sub, {1, 2, 3}, {3}, {10}, {}, {-9, -8, -7}, {3});
  check_binary("[]-[3]", ember::sub, {10}, {}, {1, 2, 3}, {3}, {9, 8, 7}, {3});
  check_binary("[1]*[2,2]", ember::mul, {3}, {1}, {1, 2, 3, 4}, {2, 2}, {3, 6, 9, 12}, {2, 2});
  check_binary("[]+[]", ember::add, {1.5}, {}, {2}, {}, {3.5}, {});
  // [2,1,3] * [4,1] -> [2,4,3]: out[i][j][k] = a[i][0][k] * b[j][0].
  const std::vector<double> a = {1, 2, 3, 4, 5, 6}, b = {1, -1, 10, 0.5};
  std::vector<double> expected;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) expected.push_back(a[i * 3 + k] * b[j]);
  check_binary("[2,1,3]*[4,1]", ember::mul, a, {2, 1, 3}, b, {4, 1}, expected, {2, 4, 3});
  std::vector<double> greater;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) greater.push_back(b[j] > a[i * 3 + k] ? 1 : 0);
  check_binary("[4,1]>[2,1,3]", ember::gt, b, {4, 1}, a, {2, 1, 3}, greater, {2, 4, 3}, true);
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
  check_unary("gelu", ember::gelu, x, k23, map(x, gelu_ref));
  // Hand-computed anchors for the references above.
  check_unary("exp(1)", static_cast<Tensor (*)(const Tensor&)>(ember::exp), {0, 1}, {2}, {1, 2.718281828459045});
  check_unary("sigmoid(0)", ember::sigmoid, {0, 100}, {2}, {0.5, 1});
  check_unary("gelu anchors", ember::gelu, {1, -1}, {2}, {0.8413447460685429, -0.15865525393145707});
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
