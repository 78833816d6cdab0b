// Tensor metadata, factories, item/to_vector, printing, to(DType), contiguous/clone, Generator.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include <ember/ember.h>

#include "backends/kernels.h"
#include "test_helpers.h"

using namespace ember;
using ember::test::close_to;
using ember::test::make;
using ember::test::throws_error;

TEST(Tensor, Smoke) {
  Tensor a = arange(6).reshape({2, 3});
  EXPECT_EQ(a.sum().item<float>(), 15.f);
}

TEST(Tensor, Metadata) {
  const Tensor t = zeros({2, 3, 4});
  EXPECT_TRUE(t.defined());
  EXPECT_EQ(t.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(t.strides(), (Shape{12, 4, 1}));
  EXPECT_EQ(t.dim(), 3);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.size(0), 2);
  EXPECT_EQ(t.size(-1), 4);
  EXPECT_EQ(t.stride(-2), 4);
  EXPECT_EQ(t.offset(), 0);
  EXPECT_EQ(t.dtype(), DType::f32);
  EXPECT_EQ(t.element_size(), 4u);
  EXPECT_EQ(t.device(), kCPU);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_FALSE(t.requires_grad());
  EXPECT_FALSE(t.transpose(0, 2).is_contiguous());
  EXPECT_EQ(zeros({2}, {.dtype = DType::f64}).element_size(), 8u);
  EXPECT_EQ(zeros({2}, {.dtype = DType::i64}).element_size(), 8u);
  EXPECT_EQ(zeros({2}, {.dtype = DType::b8}).element_size(), 1u);

  const Tensor s = scalar_tensor(3.5);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_FALSE(Tensor().defined());
  EXPECT_EQ(zeros({3, 0}).numel(), 0);
}

TEST(Tensor, FactoriesFill) {
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    const TensorOptions o{.dtype = dtype};
    EXPECT_EQ(zeros({2, 2}, o).dtype(), dtype);
    EXPECT_TRUE(close_to(zeros({2, 2}, o), {0, 0, 0, 0}, {2, 2}));
    EXPECT_TRUE(close_to(ones({3}, o), {1, 1, 1}, {3}));
    EXPECT_TRUE(close_to(full({2, 1}, 7, o), {7, 7}, {2, 1}));
    EXPECT_TRUE(close_to(scalar_tensor(-4, o), {-4}, {}));
    EXPECT_EQ(empty({4, 5}, o).shape(), (Shape{4, 5}));
    EXPECT_EQ(empty({4, 5}, o).dtype(), dtype);
  }
  EXPECT_TRUE(close_to(full({2}, 2.5, {.dtype = DType::f64}), {2.5, 2.5}, {2}));
  EXPECT_TRUE(close_to(full({2}, 1, {.dtype = DType::b8}), {1, 1}, {2}));
  EXPECT_TRUE(ones({2}, {.requires_grad = true}).requires_grad());
}

TEST(Tensor, Arange) {
  EXPECT_TRUE(close_to(arange(5), {0, 1, 2, 3, 4}, {5}));
  EXPECT_EQ(arange(5).dtype(), DType::i64);    // integer arguments: i64, as LibTorch
  EXPECT_EQ(arange(5.0).dtype(), DType::f32);
  const Tensor i = arange(5, {.dtype = DType::i64});
  EXPECT_EQ(i.dtype(), DType::i64);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(close_to(arange(2, 4, 0.5, {.dtype = DType::f64}), {2, 2.5, 3, 3.5}, {4}));
  EXPECT_TRUE(close_to(arange(5, 0, -2), {5, 3, 1}, {3}));
  EXPECT_TRUE(close_to(arange(0, 1, 0.3), {0, 0.3, 0.6, 0.9}, {4}));  // end excluded, ceil of the count
  EXPECT_EQ(arange(3, 3, 1).numel(), 0);
}

TEST(Tensor, FromVectorAndData) {
  const Tensor f = from_vector<float>({1.5f, -2.f, 3.f, 4.f}, {2, 2});
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{1.5f, -2.f, 3.f, 4.f}));
  const Tensor d = from_vector<double>({0.1, 0.2});
  EXPECT_EQ(d.dtype(), DType::f64);
  EXPECT_EQ(d.shape(), Shape{2});
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{0.1, 0.2}));  // f64 keeps every bit
  const Tensor i = from_vector<int64_t>({int64_t{1} << 40, -3});
  EXPECT_EQ(i.dtype(), DType::i64);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{int64_t{1} << 40, -3}));
  const Tensor b = from_vector<bool>({true, false, true});
  EXPECT_EQ(b.dtype(), DType::b8);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, false, true}));
  // Conversion on the way in.
  const Tensor c = from_vector<double>({1.9, -1.9}, {2}, {.dtype = DType::i64});
  EXPECT_EQ(c.to_vector<int64_t>(), (std::vector<int64_t>{1, -1}));
  const float raw[6] = {1, 2, 3, 4, 5, 6};
  const Tensor r = from_data(raw, {3, 2});
  EXPECT_EQ(r.dtype(), DType::f32);
  EXPECT_TRUE(close_to(r, {1, 2, 3, 4, 5, 6}, {3, 2}));
  EXPECT_TRUE(close_to(from_data(raw, {2}, {.dtype = DType::f64}), {1, 2}, {2}));
}

TEST(Tensor, LikeFactories) {
  const Tensor t = make({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f64).transpose(0, 1);
  for (const Tensor& l : {zeros_like(t), ones_like(t), full_like(t, 3), empty_like(t), rand_like(t), randn_like(t)}) {
    EXPECT_EQ(l.shape(), (Shape{3, 2}));
    EXPECT_EQ(l.dtype(), DType::f64);
    EXPECT_TRUE(l.is_contiguous());
    EXPECT_FALSE(l.shares_storage(t));
  }
  EXPECT_TRUE(close_to(zeros_like(t), {0, 0, 0, 0, 0, 0}, {3, 2}));
  EXPECT_TRUE(close_to(ones_like(t), {1, 1, 1, 1, 1, 1}, {3, 2}));
  EXPECT_TRUE(close_to(full_like(t, -2), {-2, -2, -2, -2, -2, -2}, {3, 2}));
  Tensor g = ones({2}, {.requires_grad = true});
  EXPECT_FALSE(zeros_like(g).requires_grad());
}

TEST(Tensor, ItemAndToVector) {
  EXPECT_EQ(scalar_tensor(2.5).item<float>(), 2.5f);
  EXPECT_EQ(scalar_tensor(2.5).item<double>(), 2.5);
  EXPECT_EQ(scalar_tensor(2.5).item<int64_t>(), 2);  // converted, truncating
  EXPECT_EQ(scalar_tensor(-2.5).item<int64_t>(), -2);
  EXPECT_EQ(make({7}, {1, 1}).item<float>(), 7.f);   // any one-element tensor
  EXPECT_EQ(scalar_tensor(0.5).item<bool>(), true);
  // to_vector reads a view in its logical (row-major) order.
  const Tensor t = make({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(t.t().to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(t.slice(1, 0, 3, 2).to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 4, 6}));
  EXPECT_EQ(t.select(1, 2).to_vector<double>(), (std::vector<double>{3, 6}));
  EXPECT_TRUE(throws_error([&] { t.select(1, 2).item<float>(); }, {"item()", "2 elements", "[2]"}));
}

TEST(Tensor, DataPointer) {
  Tensor t = make({1, 2, 3, 4}, {2, 2});
  float* p = t.data<float>();
  p[3] = 40;
  EXPECT_EQ(t.to_vector<float>()[3], 40.f);
  const Tensor v = t.select(0, 1);
  EXPECT_EQ(v.data<float>(), p + 2);  // element 0 of the view
  EXPECT_TRUE(throws_error([&] { t.data<double>(); }, {"data<f64>", "f32", ".to(DType)"}));
}

TEST(Tensor, Printing) {
  EXPECT_EQ(make({1, 2.5, -3}, {3}).str(), "tensor([1.0000, 2.5000, -3.0000], shape=[3], dtype=f32, device=cpu)");
  EXPECT_EQ(make({1, 2, 3, 4}, {2, 2}, DType::f64).str(),
            "tensor([[1.0000, 2.0000],\n        [3.0000, 4.0000]], shape=[2, 2], dtype=f64, device=cpu)");
  // Views print their logical values.
  EXPECT_EQ(make({1, 2, 3, 4}, {2, 2}).t().str(),
            "tensor([[1.0000, 3.0000],\n        [2.0000, 4.0000]], shape=[2, 2], dtype=f32, device=cpu)");
  EXPECT_EQ(make({5, -6}, {2}, DType::i64).str(), "tensor([5, -6], shape=[2], dtype=i64, device=cpu)");
  EXPECT_EQ(from_vector<bool>({true, false}).str(), "tensor([true, false], shape=[2], dtype=bool, device=cpu)");
  EXPECT_EQ(scalar_tensor(0.5).str(), "tensor(0.5000, shape=[], dtype=f32, device=cpu)");
  EXPECT_EQ(zeros({0, 2}).str(), "tensor([], shape=[0, 2], dtype=f32, device=cpu)");
  EXPECT_EQ(make({NAN, INFINITY, -INFINITY}, {3}).str(), "tensor([nan, inf, -inf], shape=[3], dtype=f32, device=cpu)");
  EXPECT_EQ(make({1e6, 2}, {2}).str(), "tensor([1.0000e+06, 2.0000e+00], shape=[2], dtype=f32, device=cpu)");
  EXPECT_EQ(ones({1}, {.requires_grad = true}).str(),
            "tensor([1.0000], shape=[1], dtype=f32, device=cpu, requires_grad=true)");
  std::ostringstream s;
  s << arange(2000, {.dtype = DType::i64});
  EXPECT_EQ(s.str(), "tensor([0, 1, 2, ..., 1997, 1998, 1999], shape=[2000], dtype=i64, device=cpu)");
  std::ostringstream u;
  u << Tensor();
  EXPECT_EQ(u.str(), "tensor(undefined)");
}

TEST(Tensor, ToDType) {
  const Tensor f = make({2.7, -2.7, 0, 1}, {4});
  EXPECT_EQ(f.to(DType::f32).shares_storage(f), true);  // already that dtype: the same tensor
  const Tensor i = f.to(DType::i64);
  EXPECT_EQ(i.dtype(), DType::i64);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{2, -2, 0, 1}));  // truncation toward zero
  EXPECT_FALSE(i.shares_storage(f));
  EXPECT_EQ(f.to(DType::b8).to_vector<bool>(), (std::vector<bool>{true, true, false, true}));
  EXPECT_TRUE(close_to(f.to(DType::f64), {2.7f, -2.7f, 0, 1}, {4}, 0));  // exact widening of the f32 values
  EXPECT_TRUE(close_to(from_vector<bool>({true, false}).to(DType::f32), {1, 0}, {2}));
  // Converting a view gives a contiguous tensor of the logical values.
  const Tensor v = make({1, 2, 3, 4, 5, 6}, {2, 3}, DType::f64).t().to(DType::i64);
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(v.to_vector<int64_t>(), (std::vector<int64_t>{1, 4, 2, 5, 3, 6}));
}

TEST(Tensor, ContiguousAndClone) {
  const Tensor t = make({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_TRUE(t.contiguous().shares_storage(t));  // already contiguous: no copy
  const Tensor tt = t.t();
  const Tensor c = tt.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.shares_storage(t));
  EXPECT_EQ(c.strides(), (Shape{2, 1}));
  EXPECT_TRUE(close_to(c, {1, 4, 2, 5, 3, 6}, {3, 2}));
  const Tensor e = make({1, 2}, {2, 1}).expand({2, 3}).contiguous();
  EXPECT_TRUE(close_to(e, {1, 1, 1, 2, 2, 2}, {2, 3}));
  Tensor k = t.clone();
  EXPECT_FALSE(k.shares_storage(t));
  k.fill_(0);
  EXPECT_TRUE(close_to(t, {1, 2, 3, 4, 5, 6}, {2, 3}));  // the clone is independent
  const Tensor sc = make({1, 2, 3, 4, 5, 6, 7, 8}, {8}, DType::i64).slice(0, 1, 8, 3).clone();
  EXPECT_EQ(sc.to_vector<int64_t>(), (std::vector<int64_t>{2, 5, 8}));
  EXPECT_EQ(sc.dtype(), DType::i64);
}

TEST(Generator, SameSeedSameNumbers) {
  for (DType dtype : {DType::f32, DType::f64}) {
    Generator g1(42), g2(42), g3(43);
    const auto a = rand({100}, {.dtype = dtype}, &g1).to_vector<double>();
    const auto b = rand({100}, {.dtype = dtype}, &g2).to_vector<double>();
    const auto c = rand({100}, {.dtype = dtype}, &g3).to_vector<double>();
    EXPECT_EQ(a, b);
    EXPECT_NE(a, c);
    // The generator advances: a second draw differs from the first.
    EXPECT_NE(rand({100}, {.dtype = dtype}, &g1).to_vector<double>(), a);
  }
}

TEST(Generator, CounterBasedDraws) {
  // Element i depends on (seed, offset + i) only: two draws of 3 equal one draw of 6.
  Generator g1(7), g2(7);
  const auto whole = randn({6}, {}, &g1).to_vector<float>();
  auto first = randn({3}, {}, &g2).to_vector<float>();
  const auto second = randn({3}, {}, &g2).to_vector<float>();
  first.insert(first.end(), second.begin(), second.end());
  EXPECT_EQ(whole, first);
  EXPECT_EQ(g1.state(), (Generator::State{7, 6}));
  // State save and restore replays the same numbers.
  const Generator::State s = g1.state();
  const auto x = rand({5}, {}, &g1).to_vector<float>();
  g1.set_state(s);
  EXPECT_EQ(rand({5}, {}, &g1).to_vector<float>(), x);
  g1.manual_seed(7);
  EXPECT_EQ(randn({6}, {}, &g1).to_vector<float>(), whole);
}

TEST(Generator, DefaultGeneratorManualSeed) {
  manual_seed(123);
  const auto a = rand({10}).to_vector<float>();
  manual_seed(123);
  EXPECT_EQ(rand({10}).to_vector<float>(), a);
}

TEST(Generator, PhiloxKnownAnswer) {
  // Random123's known-answer test for philox4x32_10: counter 0, key 0.
  const Philox4 r = philox4x32_10(0, 0);
  EXPECT_EQ(r.v[0], 0x6627e8d5u);
  EXPECT_EQ(r.v[1], 0xe169c58du);
  EXPECT_EQ(r.v[2], 0xbc57ac4cu);
  EXPECT_EQ(r.v[3], 0x9b00dbd8u);
}

TEST(Generator, Distributions) {
  Generator g(1);
  const auto u = rand({100000}, {.dtype = DType::f64}, &g).to_vector<double>();
  double sum = 0, lo = 1, hi = 0;
  for (double v : u) sum += v, lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_GE(lo, 0.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_NEAR(sum / u.size(), 0.5, 0.01);
  const auto n = randn({100000}, {}, &g).to_vector<float>();
  double m = 0, sq = 0;
  for (float v : n) m += v, sq += double(v) * v;
  m /= n.size();
  EXPECT_NEAR(m, 0.0, 0.02);
  EXPECT_NEAR(std::sqrt(sq / n.size() - m * m), 1.0, 0.02);
  // Random draws are floating only.
  EXPECT_TRUE(throws_error([] { rand({2}, {.dtype = DType::i64}); }, {"random", "floating", "i64"}));
}
