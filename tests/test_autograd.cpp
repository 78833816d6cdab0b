// The autograd engine: graph shapes (shared inputs, diamonds, broadcasting), grad mode, detach,
// retain_graph, accumulation, the version-counter check, error messages, and memory over many steps.
// Per-op gradients are in test_gradcheck.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include <ember/ember.h>

namespace ember {
namespace {

Tensor f64(const std::vector<double>& values, const Shape& shape, bool requires_grad = true) {
  Tensor t = from_vector(values, shape, {.dtype = DType::f64});
  if (requires_grad) t.requires_grad_();
  return t;
}

void expect_values(const Tensor& t, const std::vector<double>& expected, double tol = 1e-12) {
  ASSERT_TRUE(t.defined()) << "undefined tensor (no gradient reached it?)";
  const std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], tol) << "element " << i;
}

// The message of the ember::Error that fn throws ("" when it throws none).
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_MESSAGE_HAS(msg, piece) EXPECT_NE((msg).find(piece), std::string::npos) << "message: " << (msg)

TEST(Autograd, RecordsOnlyWhenAnInputRequiresGrad) {
  const Tensor x = f64({1, 2}, {2});
  const Tensor c = f64({3, 4}, {2}, false);
  const Tensor y = x * c;
  EXPECT_TRUE(y.requires_grad());
  EXPECT_FALSE(y.is_leaf());
  EXPECT_TRUE(x.is_leaf());
  const Tensor z = c * c;
  EXPECT_FALSE(z.requires_grad());
  EXPECT_TRUE(z.is_leaf());
  // Non-differentiable results record nothing.
  EXPECT_FALSE((x > c).requires_grad());
  EXPECT_EQ(argmax(x).grad_fn(), nullptr);
  const auto [values, indices] = max(x, 0);
  EXPECT_TRUE(values.requires_grad());
  EXPECT_FALSE(indices.requires_grad());
  EXPECT_FALSE(x.to(DType::i64).requires_grad());
}

TEST(Autograd, SharedInputUsedTwiceAddsGradients) {
  const Tensor x = f64({1, -2, 3}, {3});
  (x * x + x).sum().backward();  // d/dx = 2x + 1
  expect_values(x.grad(), {3, -3, 7});
}

TEST(Autograd, DiamondGraph) {
  // x → a = 3x → {b = exp(a), c = a²} → d = b + c; dd/dx = 3·(exp(3x) + 2·3x)
  const Tensor x = f64({0.1, -0.2}, {2});
  const Tensor a = x * 3.0;
  (exp(a) + square(a)).sum().backward();
  expect_values(x.grad(), {3 * (std::exp(0.3) + 0.6), 3 * (std::exp(-0.6) - 1.2)});
}

TEST(Autograd, BroadcastingGradientsSumBackToInputShapes) {
  const Tensor a = f64({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = f64({10, 20, 30}, {3});
  const Tensor c = f64({-1, 1}, {2, 1});
  const Tensor s = f64({2}, {});
  ((a * b + c) * s).sum().backward();
  expect_values(a.grad(), {20, 40, 60, 20, 40, 60});
  expect_values(b.grad(), {2 * (1 + 4), 2 * (2 + 5), 2 * (3 + 6)});
  expect_values(c.grad(), {6, 6});
  EXPECT_EQ(c.grad().shape(), (Shape{2, 1}));
  EXPECT_EQ(s.grad().shape(), Shape{});
  expect_values(s.grad(), {(10 + 40 + 90 + 40 + 100 + 180) + 0.0});
}

TEST(Autograd, SkipsGradientsNoInputNeeds) {
  Tensor a = f64({1, 2}, {2});
  const Tensor b = f64({3, 4}, {2}, false);
  const Tensor y = a * b;  // a's gradient needs b; nothing needs a, so a is not saved
  {
    NoGradGuard no_grad;
    a.fill_(100);  // would trip the version check if a had been saved
  }
  y.sum().backward();
  expect_values(a.grad(), {3, 4});
  EXPECT_FALSE(b.grad().defined());
}

TEST(Autograd, NoGradGuardRecordsNothingAndRestores) {
  const Tensor x = f64({1, 2}, {2});
  EXPECT_TRUE(GradMode::is_enabled());
  {
    NoGradGuard outer;
    EXPECT_FALSE(GradMode::is_enabled());
    const Tensor y = exp(x) * 2.0;
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(y.grad_fn(), nullptr);
    {
      NoGradGuard inner;
    }
    EXPECT_FALSE(GradMode::is_enabled());  // the inner guard restored "off", not "on"
    bool other_thread_enabled = false;
    std::thread([&] { other_thread_enabled = GradMode::is_enabled(); }).join();
    EXPECT_TRUE(other_thread_enabled);  // thread-local
  }
  EXPECT_TRUE(GradMode::is_enabled());
  EXPECT_TRUE((x * 2.0).requires_grad());
}

TEST(Autograd, DetachSharesDataButStopsGradients) {
  const Tensor x = f64({1, 2, 3}, {3});
  const Tensor d = x.detach();
  EXPECT_TRUE(d.shares_storage(x));
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_leaf());
  (x * d).sum().backward();  // d is a constant: the gradient is d, not 2x
  expect_values(x.grad(), {1, 2, 3});
  const Tensor y = exp(x);
  const Tensor yd = y.detach();
  EXPECT_EQ(yd.grad_fn(), nullptr);
  EXPECT_TRUE(y.grad_fn() != nullptr);
}

TEST(Autograd, RetainGraphAllowsASecondBackward) {
  const Tensor x = f64({1, 2}, {2});
  const Tensor y = (exp(x) * x).sum();  // both nodes save tensors
  y.backward(Tensor(), /*retain_graph=*/true);
  const std::vector<double> once = x.grad().to_vector<double>();
  y.backward(Tensor(), /*retain_graph=*/true);
  expect_values(x.grad(), {2 * once[0], 2 * once[1]});
  y.backward();  // the last one frees the graph
  expect_values(x.grad(), {3 * once[0], 3 * once[1]});
  const std::string msg = error_of([&] { y.backward(); });
  EXPECT_MESSAGE_HAS(msg, "already freed");
  EXPECT_MESSAGE_HAS(msg, "retain_graph");
}

TEST(Autograd, GradientsAccumulateAcrossBackwardCallsUntilReset) {
  Tensor w = f64({0.5, -1}, {2});
  const Tensor x = f64({2, 3}, {2}, false);
  (w * x).sum().backward();
  (w * x).sum().backward();
  expect_values(w.grad(), {4, 6});
  w.set_grad(Tensor());  // what zero_grad does
  (w * x * w).sum().backward();  // 2·w·x
  expect_values(w.grad(), {2, -6});
}

TEST(Autograd, AccumulatedGradDoesNotAliasOtherTensors) {
  // add hands the same gradient to both inputs; accumulating into one must not change the other.
  const Tensor a = f64({1, 2}, {2});
  const Tensor b = f64({3, 4}, {2});
  (a + b).sum().backward();
  (a * 2.0).sum().backward();
  expect_values(a.grad(), {3, 3});
  expect_values(b.grad(), {1, 1});
}

TEST(Autograd, BackwardWithAGradientOnANonScalar) {
  const Tensor x = f64({1, 2, 3}, {3});
  const Tensor y = x * x;
  y.backward(from_vector<double>({1, 0.5, -1}, {3}));
  expect_values(x.grad(), {2, 2, -6});
}

TEST(Autograd, BackwardOnALeaf) {
  const Tensor x = f64({1, 2}, {2});
  x.backward(from_vector<double>({3, 4}, {2}));
  expect_values(x.grad(), {3, 4});
}

TEST(Autograd, InPlaceModificationOfASavedTensorIsAnError) {
  const Tensor x = f64({0.5, 1}, {2});
  Tensor y = exp(x);  // exp saves its output
  y.mul_(2.0);
  const std::string msg = error_of([&] { y.sum().backward(); });
  EXPECT_MESSAGE_HAS(msg, "exp backward");
  EXPECT_MESSAGE_HAS(msg, "modified by an in-place operation");
  EXPECT_MESSAGE_HAS(msg, "version 0 when saved, 1 now");
  EXPECT_MESSAGE_HAS(msg, "clone()");
  // An input saved by mul, modified through a view of it.
  const Tensor w = f64({1, 2, 3}, {3});
  const Tensor c = f64({4, 5, 6}, {3}, false);
  const Tensor z = w * c;
  c.narrow(0, 1, 1).fill_(0);
  EXPECT_MESSAGE_HAS(error_of([&] { z.sum().backward(); }), "mul backward");
  EXPECT_FALSE(w.grad().defined());
}

TEST(Autograd, BackwardOnANonScalarWithoutAGradientIsAnError) {
  const Tensor x = f64({1, 2, 3}, {3});
  const Tensor y = x * 2.0;
  const std::string msg = error_of([&] { y.backward(); });
  EXPECT_MESSAGE_HAS(msg, "one-element tensor");
  EXPECT_MESSAGE_HAS(msg, "[3]");
  EXPECT_MESSAGE_HAS(msg, "ones_like");
  const std::string shape_msg = error_of([&] { y.backward(ones({2}, {.dtype = DType::f64})); });
  EXPECT_MESSAGE_HAS(shape_msg, "the gradient has shape [2] but the tensor has shape [3]");
}

TEST(Autograd, BackwardOnATensorThatRequiresNoGradIsAnError) {
  const Tensor x = f64({1, 2}, {2}, false);
  const std::string msg = error_of([&] { (x * 2.0).sum().backward(); });
  EXPECT_MESSAGE_HAS(msg, "does not require grad");
  EXPECT_MESSAGE_HAS(msg, "requires_grad_()");
  const Tensor w = f64({1, 2}, {2});
  Tensor loss;
  {
    NoGradGuard no_grad;
    loss = (w * 2.0).sum();
  }
  EXPECT_MESSAGE_HAS(error_of([&] { loss.backward(); }), "NoGradGuard");
}

TEST(Autograd, GradientsOfTiesAreSharedAsPyTorchDoes) {
  const Tensor x = f64({1, 3, 3, 2}, {4});
  max(x).backward();
  expect_values(x.grad(), {0, 0.5, 0.5, 0});
  const Tensor m = f64({5, 5, 1, 2, 7, 7}, {2, 3});
  amax(m, {1}).sum().backward();
  expect_values(m.grad(), {0.5, 0.5, 0, 0, 0.5, 0.5});
  const Tensor n = f64({5, 5, 1}, {3});
  std::get<0>(max(n, 0)).backward();  // the returned index (the first) gets it all
  expect_values(n.grad(), {1, 0, 0});
  const Tensor a = f64({1, 2}, {2});
  const Tensor b = f64({1, 3}, {2});
  maximum(a, b).sum().backward();
  expect_values(a.grad(), {0.5, 0});
  expect_values(b.grad(), {0.5, 1});
}

TEST(Autograd, MixedDtypesGetGradientsInTheirOwnDtype) {
  const Tensor a = randn({3}).requires_grad_();                                 // f32
  const Tensor b = randn({3}, {.dtype = DType::f64}).requires_grad_();          // f64
  (a * b).sum().backward();
  EXPECT_EQ(a.grad().dtype(), DType::f32);
  EXPECT_EQ(b.grad().dtype(), DType::f64);
  const Tensor c = randn({2}, {.dtype = DType::f64}).requires_grad_();
  c.to(DType::f32).sum().backward();
  EXPECT_EQ(c.grad().dtype(), DType::f64);
  expect_values(c.grad(), {1, 1});
}

TEST(Autograd, DeepChainsRunAndFreeWithoutRecursion) {
  const Tensor x = f64({0.5}, {1});
  Tensor y = x;
  for (int i = 0; i < 20000; ++i) y = y * 1.0 + 0.0;
  y.sum().backward();
  expect_values(x.grad(), {1});
  y = Tensor();  // frees a 40,000-node chain
}

// 10,000 steps of a small MLP trained with SGD: the graph of each step must be freed, so the memory
// allocated by live tensors after the last step equals that after the first few.
TEST(Autograd, TrainingLoopMemoryIsStable) {
  Generator gen(7);
  const Tensor x = randn({8, 4}, {}, &gen);
  const Tensor target = from_vector<int64_t>({0, 1, 2, 0, 1, 2, 0, 1}, {8, 1});
  Tensor w1 = (randn({4, 16}, {}, &gen) * 0.5).requires_grad_();
  Tensor b1 = zeros({16}).requires_grad_();
  Tensor w2 = (randn({16, 3}, {}, &gen) * 0.5).requires_grad_();
  Tensor b2 = zeros({3}).requires_grad_();
  std::vector<Tensor> params = {w1, b1, w2, b2};
  const auto step = [&] {
    for (Tensor& p : params) p.set_grad(Tensor());
    const Tensor logits = matmul(relu(matmul(x, w1) + b1), w2) + b2;
    const Tensor loss = -gather(log_softmax(logits, 1), 1, target).mean();
    loss.backward();
    NoGradGuard no_grad;
    for (Tensor& p : params) p.add_(p.grad() * -0.05);
    return loss.item<double>();
  };
  const double first_loss = step();
  for (int i = 0; i < 10; ++i) step();
  const size_t warm = memory_stats(kCPU).allocated;
  double last_loss = 0;
  for (int i = 0; i < 10000; ++i) last_loss = step();
  EXPECT_EQ(memory_stats(kCPU).allocated, warm);
  EXPECT_LT(last_loss, first_loss * 0.5);  // and it did train
  // A graph dropped without a backward is freed too (saved outputs make no reference cycle).
  for (int i = 0; i < 1000; ++i) (void)exp(matmul(x, w1)).sum();
  EXPECT_EQ(memory_stats(kCPU).allocated, warm);
}


// --- grad-ready hooks and backward callbacks (autograd/hooks.h) -------------------------------------------

TEST(GradReadyHooks, FireOnceAfterTheLastContributionThenCallbacks) {
  Tensor w = from_vector(std::vector<float>{1, 2}, {2}).requires_grad_();
  Tensor v = from_vector(std::vector<float>{3, 4}, {2}).requires_grad_();
  std::vector<std::string> events;
  std::vector<float> w_grad_seen;
  auto hw = autograd::add_grad_ready_hook(w, [&](const Tensor& leaf) {
    events.push_back("w");
    w_grad_seen = leaf.grad().to_vector<float>();
    autograd::queue_callback([&] { events.push_back("end"); });
  });
  auto hv = autograd::add_grad_ready_hook(v, [&](const Tensor&) { events.push_back("v"); });
  // w is used three times: its hook sees the sum of all three contributions (1 + v + 2w).
  Tensor y = (w + w * v + w * w).sum();
  y.backward();
  EXPECT_EQ(std::count(events.begin(), events.end(), "w"), 1);
  EXPECT_EQ(std::count(events.begin(), events.end(), "v"), 1);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), "end");  // the queued callback runs after every node and hook
  EXPECT_EQ(w_grad_seen, (std::vector<float>{1 + 3 + 2, 1 + 4 + 4}));
  // Removed hooks stay silent; a graph that skips v does not fire v's.
  events.clear();
  hw.remove();
  (w * 2).sum().backward();
  EXPECT_TRUE(events.empty());
  EXPECT_MESSAGE_HAS(error_of([] { autograd::queue_callback([] {}); }), "outside a backward");
  EXPECT_MESSAGE_HAS(error_of([&] { (void)autograd::add_grad_ready_hook(w * 2, [](const Tensor&) {}); }), "not a leaf");
}

}  // namespace
}  // namespace ember
