// Core's cross-device plumbing, run on any machine: a second, separate instance of the CPU backend serves
// DeviceType::CUDA (set_backend_override), so "cuda:0" tensors exist without a GPU. What is checked is
// core's part — moving tensors and modules, device checks and their messages, autograd across devices,
// optimizer state, files, the ember::cuda memory API — not the CUDA kernels (tests/test_cuda_parity.cpp, tests/test_cuda_backend.cpp).
//
// NOTE: a Storage frees its memory through the backend that allocated it, so the stand-in must outlive
// every tensor it served: it is a function-local static, destroyed after the last test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "backends/cpu/cpu_backend.h"
#include "test_helpers.h"

namespace ember {
namespace {

namespace F = nn::functional;
using test::throws_error;

constexpr Device kGpu{DeviceType::CUDA, 0};

cpu::CpuBackend& standin() {
  static cpu::CpuBackend backend;  // separate from cpu::cpu_backend(): its own allocator and statistics
  return backend;
}

class StandIn : public ::testing::Test {
 protected:
  void SetUp() override { set_backend_override(DeviceType::CUDA, &standin()); }
  void TearDown() override { set_backend_override(DeviceType::CUDA, nullptr); }
};

// The bytes of a tensor's values in row-major order (from whichever device).
std::vector<unsigned char> bytes_of(const Tensor& t) {
  const Tensor host = t.detach().to(kCPU).contiguous();
  const auto* p = static_cast<const unsigned char*>(host.data_ptr());
  return std::vector<unsigned char>(p, p + host.numel() * host.element_size());
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// --- Tensor::to -------------------------------------------------------------------------------------------

// Views of a [4, 6] tensor: contiguous, transposed, strided slice with an offset, broadcast (stride 0),
// 1-d select, 0-d, empty.
const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>>& views() {
  static const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> v = {
      {"contiguous", [](const Tensor& t) { return t; }},
      {"transposed", [](const Tensor& t) { return t.t(); }},
      {"sliced", [](const Tensor& t) { return t.slice(1, 1, 6, 2); }},
      {"expanded", [](const Tensor& t) { return t.narrow(0, 2, 1).expand({3, 6}); }},
      {"selected", [](const Tensor& t) { return t.select(1, 3); }},
      {"zero_dim", [](const Tensor& t) { return t.select(0, 1).select(0, 2); }},
      {"empty", [](const Tensor& t) { return t.narrow(0, 1, 0); }},
  };
  return v;
}

const std::vector<double>& values24() {
  static const std::vector<double> v = {0,   1,    -2,  3.5, -4.25, 5,   6,  -7,  8.125, 9,   -10, 11,
                                        1e6, -0.5, 0.0, 13,  14,    -15, 16, 17,  -18,   19,  20,  2.75};
  return v;
}

TEST_F(StandIn, ToDeviceAndBackRoundTripsEveryDtypeAndLayout) {
  for (DType dtype : {DType::b8, DType::i64, DType::f32, DType::f64}) {
    const Tensor base = from_vector<double>(values24(), {4, 6}, {.dtype = dtype});
    const Tensor base_gpu = base.to(kGpu);
    for (const auto& [name, view] : views()) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + name);
      const Tensor src = view(base);
      const Tensor gpu = src.to(kGpu);
      EXPECT_EQ(gpu.device(), kGpu);
      EXPECT_EQ(gpu.dtype(), dtype);
      EXPECT_EQ(gpu.shape(), src.shape());
      EXPECT_TRUE(gpu.is_contiguous());  // a view moves as its logical values
      EXPECT_FALSE(gpu.shares_storage(base));
      const Tensor back = gpu.to(kCPU);
      EXPECT_EQ(back.device(), kCPU);
      EXPECT_EQ(back.shape(), src.shape());
      EXPECT_EQ(bytes_of(back), bytes_of(src));
      // The same view taken on the device reads the same values back.
      EXPECT_EQ(bytes_of(view(base_gpu)), bytes_of(src));
      EXPECT_EQ(view(base_gpu).to(kCPU).device(), kCPU);
    }
  }
}

TEST_F(StandIn, TheStandInHoldsTheDeviceMemory) {
  const size_t device_before = standin().memory_stats(0).allocated;
  const size_t host_before = memory_stats(kCPU).allocated;
  const Tensor h = ones({256, 64}, {.dtype = DType::f64});  // 128 KiB on the host
  EXPECT_GE(memory_stats(kCPU).allocated, host_before + 128 * 1024);
  {
    const Tensor d = h.to(kGpu);
    EXPECT_GE(standin().memory_stats(0).allocated, device_before + 128 * 1024);
    EXPECT_EQ(cuda::memory_allocated(0), standin().memory_stats(0).allocated);  // ember::cuda reads the stand-in
    EXPECT_EQ(memory_stats(kGpu).allocated, standin().memory_stats(0).allocated);
  }
  EXPECT_EQ(standin().memory_stats(0).allocated, device_before);
}

TEST_F(StandIn, FactoriesAndRandomOnTheDeviceEqualTheCpu) {
  for (DType dtype : {DType::f32, DType::f64}) {
    SCOPED_TRACE(dtype_name(dtype));
    const TensorOptions host{.dtype = dtype}, dev{.dtype = dtype, .device = kGpu};
    EXPECT_EQ(bytes_of(zeros({3, 4}, dev)), bytes_of(zeros({3, 4}, host)));
    EXPECT_EQ(bytes_of(ones({3, 4}, dev)), bytes_of(ones({3, 4}, host)));
    EXPECT_EQ(bytes_of(full({3, 4}, -2.5, dev)), bytes_of(full({3, 4}, -2.5, host)));
    EXPECT_EQ(bytes_of(arange(1, 9, 0.5, dev)), bytes_of(arange(1, 9, 0.5, host)));
    Generator a(11), b(11);
    for (int draw = 0; draw < 2; ++draw) {  // the second draw checks the generator's offset advanced alike
      const Tensor r = rand({5, 7}, dev, &a), n = randn({5, 7}, dev, &a);
      EXPECT_EQ(r.device(), kGpu);
      EXPECT_EQ(bytes_of(r), bytes_of(rand({5, 7}, host, &b)));
      EXPECT_EQ(bytes_of(n), bytes_of(randn({5, 7}, host, &b)));
    }
    EXPECT_EQ(a.state(), b.state());
    Generator ga(12), gb(12);
    const Tensor x = ones({8, 9}, dev), y = ones({8, 9}, host);
    EXPECT_EQ(bytes_of(F::dropout(x, 0.4, true, &ga)), bytes_of(F::dropout(y, 0.4, true, &gb)));
  }
}

TEST_F(StandIn, PinnedHostMemoryMovesToTheDevice) {
  const Tensor h = from_vector<double>(values24(), {4, 6}, {.dtype = DType::f32});
  const Tensor pinned = h.t().pin_memory();
  EXPECT_TRUE(pinned.is_pinned());
  EXPECT_EQ(pinned.device(), kCPU);
  EXPECT_EQ(bytes_of(pinned), bytes_of(h.t()));
  const Tensor d = pinned.to(kGpu);
  EXPECT_EQ(d.device(), kGpu);
  EXPECT_EQ(bytes_of(d), bytes_of(h.t()));
}

// --- device checks ------------------------------------------------------------------------------------------

TEST_F(StandIn, OpsOnMixedDevicesNameBothDevices) {
  // Every message: "tensors on different devices: <a> and <b> in <op>; move one with .to(...)".
  const auto mixed = [](const std::function<void()>& fn, const char* op) {
    return throws_error(fn, {"tensors on different devices", "cpu", "cuda:0", op, "move one with .to(...)"});
  };
  Generator g(1);
  const Tensor h = randn({2, 3, 4, 4}, {}, &g);
  const Tensor d = h.to(kGpu);
  const Tensor w = randn({5, 3, 3, 3}, {}, &g);
  EXPECT_TRUE(mixed([&] { F::conv2d(h, w.to(kGpu)); }, "conv2d"));
  EXPECT_TRUE(mixed([&] { F::conv2d(d, w.to(kGpu), zeros({5})); }, "conv2d"));
  EXPECT_TRUE(mixed([&] { F::linear(randn({2, 4}), randn({3, 4}).to(kGpu)); }, "matmul"));
  EXPECT_TRUE(mixed([&] { F::cross_entropy(randn({2, 3}).to(kGpu), from_vector<int64_t>({0, 2})); }, "cross_entropy"));
  EXPECT_TRUE(mixed([&] { F::nll_loss(randn({2, 3}), from_vector<int64_t>({0, 2}).to(kGpu)); }, "nll"));
  EXPECT_TRUE(mixed([&] { F::batch_norm(d, zeros({3}), ones({3}), {}, {}, true); }, "batch_norm"));
  EXPECT_TRUE(mixed([&] { F::layer_norm(d, {4}, ones({4})); }, "layer_norm"));
  EXPECT_TRUE(mixed([&] { F::rms_norm(d, {4}, ones({4})); }, "rms_norm"));
  EXPECT_TRUE(mixed([&] { F::embedding(from_vector<int64_t>({0, 1}), randn({3, 2}).to(kGpu)); }, "embedding"));
  EXPECT_TRUE(mixed([&] { F::mse_loss(d, h); }, "sub"));
  EXPECT_TRUE(mixed([&] { maximum(h, d); }, "maximum"));
  EXPECT_TRUE(mixed([&] { pow(d, h); }, "pow"));
  EXPECT_TRUE(mixed([&] { where(h > 0.0, d, d); }, "where"));
  EXPECT_TRUE(mixed([&] { stack({h, d}); }, "cat"));
  EXPECT_TRUE(mixed([&] { gather(d.flatten(1), 1, zeros({2, 1}, {.dtype = DType::i64})); }, "gather"));
  EXPECT_TRUE(mixed([&] { index_select(d, 0, from_vector<int64_t>({1})); }, "index_select"));
}

// A 0-d CPU tensor acts as a scalar beside a GPU tensor (as in PyTorch): the op runs on the GPU, and the
// scalar's gradient comes back to the CPU.
TEST_F(StandIn, ZeroDimCpuTensorsActAsScalars) {
  Generator g(3);
  const Tensor h = randn({2, 3}, {.dtype = DType::f64}, &g);
  const Tensor d = h.to(kGpu).requires_grad_();
  const Tensor s = scalar_tensor(2.5, {.dtype = DType::f64}).requires_grad_();
  const Tensor y = d * s;
  EXPECT_EQ(y.device(), kGpu);
  EXPECT_EQ(y.to(kCPU).to_vector<double>(), (h * 2.5).to_vector<double>());
  y.sum().backward();
  EXPECT_EQ(s.grad().device(), kCPU);
  EXPECT_NEAR(s.grad().item<double>(), h.sum().item<double>(), 1e-12);
  EXPECT_EQ(d.grad().device(), kGpu);
  Tensor t = h.to(kGpu);
  t.add_(scalar_tensor(1.0, {.dtype = DType::f64}));  // in place too
  EXPECT_EQ(t.to(kCPU).to_vector<double>(), (h + 1.0).to_vector<double>());
  EXPECT_TRUE(throws_error([&] { h.clone().add_(scalar_tensor(1.0, {.dtype = DType::f64}).to(kGpu)); },
                           {"tensors on different devices"}));  // but a GPU scalar is not moved to the CPU
}

// --- autograd across devices ---------------------------------------------------------------------------------

TEST_F(StandIn, GradientsFlowBackAcrossDevices) {
  Generator g(2);
  const Tensor x = randn({3, 4}, {.dtype = DType::f64}, &g).requires_grad_();  // a CPU leaf
  const Tensor y = (x.to(kGpu) * 3.0).exp().sum();
  EXPECT_EQ(y.device(), kGpu);
  y.backward();
  ASSERT_TRUE(x.grad().defined());
  EXPECT_EQ(x.grad().device(), kCPU);
  const std::vector<double> xv = x.to_vector<double>(), gv = x.grad().to_vector<double>();
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_NEAR(gv[i], 3 * std::exp(3 * xv[i]), 1e-12 * std::exp(3 * xv[i]));

  // One leaf reached through both devices: the gradients meet on the leaf's device.
  const Tensor z = randn({5}, {.dtype = DType::f64}, &g).requires_grad_();
  ((z * 2.0).sum() + (z.to(kGpu) * 3.0).sum().to(kCPU)).backward();
  EXPECT_EQ(z.grad().device(), kCPU);
  EXPECT_EQ(z.grad().to_vector<double>(), std::vector<double>(5, 5.0));

  // A device leaf used on the CPU.
  const Tensor w = randn({4}, {}, &g).to(kGpu).requires_grad_();
  (w.to(kCPU) * 2.0f).sum().backward();
  EXPECT_EQ(w.grad().device(), kGpu);
  EXPECT_EQ(w.grad().to_vector<float>(), std::vector<float>(4, 2.0f));

  // A gradient handed in on the wrong device.
  const Tensor on_gpu = x.to(kGpu) * 2.0;
  EXPECT_TRUE(throws_error([&] { on_gpu.backward(ones({3, 4}, {.dtype = DType::f64})); },
                           {"the gradient is on cpu", "cuda:0", ".to(...)"}));
}

// --- modules, optimizers, files --------------------------------------------------------------------------------

// conv → batch norm (buffers, one of them i64) → relu → linear: x [N, 2, 6, 6] → [N, 5].
struct Net : nn::Module {
  std::shared_ptr<nn::Conv2d> conv;
  std::shared_ptr<nn::BatchNorm2d> bn;
  std::shared_ptr<nn::Linear> fc;
  explicit Net(Generator* gen)
      : conv(register_module("conv", std::make_shared<nn::Conv2d>(2, 3, 3, gen))),
        bn(register_module("bn", std::make_shared<nn::BatchNorm2d>(3))),
        fc(register_module("fc", std::make_shared<nn::Linear>(3 * 4 * 4, 5, true, gen))) {}
  Tensor forward(const Tensor& x) override { return fc->forward(relu(bn->forward(conv->forward(x))).flatten(1)); }
};

TEST_F(StandIn, ModuleToMovesParametersBuffersAndGradients) {
  Generator g(3);
  Net net(&g);
  const Tensor x = randn({2, 2, 6, 6}, {}, &g);
  square(net.forward(x)).mean().backward();  // every parameter gets a gradient, the running stats move
  Tensor y_cpu;
  {
    NoGradGuard no_grad;
    net.eval();
    y_cpu = net.forward(x);
    net.train();
  }
  std::vector<std::vector<unsigned char>> params, grads, buffers;
  size_t bytes = 0;
  for (const Tensor& p : net.parameters()) {
    ASSERT_TRUE(p.grad().defined());
    params.push_back(bytes_of(p));
    grads.push_back(bytes_of(p.grad()));
    bytes += 2 * p.numel() * p.element_size();
  }
  for (const Tensor& b : net.buffers()) {
    buffers.push_back(bytes_of(b));
    bytes += b.numel() * b.element_size();
  }
  const Tensor weight = net.fc->weight;  // a handle taken before the move
  const size_t before = standin().memory_stats(0).allocated;

  net.to(kGpu);
  EXPECT_GE(standin().memory_stats(0).allocated, before + bytes);
  EXPECT_EQ(cuda::memory_allocated(0), standin().memory_stats(0).allocated);
  EXPECT_EQ(weight.device(), kGpu);
  const std::vector<Tensor> ps = net.parameters(), bs = net.buffers();
  for (size_t i = 0; i < ps.size(); ++i) {
    SCOPED_TRACE(net.named_parameters()[i].first);
    EXPECT_EQ(ps[i].device(), kGpu);
    EXPECT_TRUE(ps[i].requires_grad());
    EXPECT_TRUE(ps[i].is_leaf());
    EXPECT_EQ(bytes_of(ps[i]), params[i]);
    ASSERT_TRUE(ps[i].grad().defined());
    EXPECT_EQ(ps[i].grad().device(), kGpu);
    EXPECT_EQ(bytes_of(ps[i].grad()), grads[i]);
  }
  for (size_t i = 0; i < bs.size(); ++i) {
    SCOPED_TRACE(net.named_buffers()[i].first);
    EXPECT_EQ(bs[i].device(), kGpu);
    EXPECT_EQ(bytes_of(bs[i]), buffers[i]);
  }
  EXPECT_EQ(net.bn->num_batches_tracked.dtype(), DType::i64);
  {
    NoGradGuard no_grad;
    net.eval();
    const Tensor y = net.forward(x.to(kGpu));
    EXPECT_EQ(y.device(), kGpu);
    EXPECT_EQ(bytes_of(y), bytes_of(y_cpu));  // the stand-in runs the CPU code: the same bits
    net.train();
  }
  net.to(kCPU);
  for (const Tensor& p : net.parameters()) {
    EXPECT_EQ(p.device(), kCPU);
    EXPECT_EQ(p.grad().device(), kCPU);
  }
  for (const Tensor& b : net.buffers()) EXPECT_EQ(b.device(), kCPU);
  EXPECT_EQ(standin().memory_stats(0).allocated, before);  // moving back left nothing behind on the device
}

struct OptimizerCase {
  std::string name;
  std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)> make;
};

const std::vector<OptimizerCase>& optimizer_cases() {
  static const std::vector<OptimizerCase> cases = {
      {"sgd_momentum", [](std::vector<Tensor> p) {
         return std::make_unique<optim::SGD>(p, optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .weight_decay = 1e-3});
       }},
      {"adam_amsgrad", [](std::vector<Tensor> p) {
         return std::make_unique<optim::Adam>(p, optim::AdamOptions{.lr = 1e-2, .amsgrad = true});
       }},
      {"adamw", [](std::vector<Tensor> p) { return std::make_unique<optim::AdamW>(p, optim::AdamWOptions{.lr = 1e-2}); }},
      {"rmsprop_centered_momentum", [](std::vector<Tensor> p) {
         return std::make_unique<optim::RMSprop>(p, optim::RMSpropOptions{.lr = 1e-2, .momentum = 0.5, .centered = true});
       }},
  };
  return cases;
}

// Three training steps of a copy of the model on `device` (moved before the optimizer is made, as in
// PyTorch); returns the model.
std::unique_ptr<Net> train_three_steps(const OptimizerCase& c, Device device, std::unique_ptr<optim::Optimizer>& opt) {
  Generator g(4);
  auto net = std::make_unique<Net>(&g);
  net->to(device);
  opt = c.make(net->parameters());
  for (int step = 0; step < 3; ++step) {
    Generator data(100 + step);
    const Tensor x = randn({4, 2, 6, 6}, {}, &data).to(device);
    opt->zero_grad();
    square(net->forward(x)).mean().backward();
    opt->step();
  }
  return net;
}

TEST_F(StandIn, OptimizerStepsOnAMovedModelKeepTheirStateOnItsDevice) {
  for (const OptimizerCase& c : optimizer_cases()) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<optim::Optimizer> opt_cpu, opt_gpu;
    const auto net_cpu = train_three_steps(c, kCPU, opt_cpu);
    const auto net_gpu = train_three_steps(c, kGpu, opt_gpu);
    const std::vector<Tensor> pc = net_cpu->parameters(), pg = net_gpu->parameters();
    for (size_t i = 0; i < pc.size(); ++i) {
      EXPECT_EQ(pg[i].device(), kGpu);
      EXPECT_EQ(bytes_of(pg[i]), bytes_of(pc[i])) << "parameter " << i;
    }
    const optim::NamedTensors sc = opt_cpu->state_dict(), sg = opt_gpu->state_dict();
    ASSERT_EQ(sc.size(), sg.size());
    int buffers = 0;
    for (size_t i = 0; i < sg.size(); ++i) {
      const std::string& key = sg[i].first;
      ASSERT_EQ(key, sc[i].first);
      if (key.ends_with(".step") || key.ends_with("lr")) continue;  // host scalars: counts and rates
      ++buffers;
      EXPECT_EQ(sg[i].second.device(), kGpu) << key;
      EXPECT_EQ(bytes_of(sg[i].second), bytes_of(sc[i].second)) << key;
    }
    EXPECT_GT(buffers, 0);
  }
}

// NOTE: known bug, disabled until fixed (optim/optimizer.cpp): the state an optimizer made on the CPU stays
// there when the model moves after a step, and step() hands those host buffers to the model's backend
// (with a real GPU: host pointers in a kernel). Either outcome below is acceptable: the state follows the
// parameters, or step() throws naming both devices.
TEST_F(StandIn, OptimizerStateFollowsAModelMovedAfterItsFirstStep) {
  Generator g(4);
  Net net(&g);
  optim::Adam opt(net.parameters(), {.lr = 1e-2});
  const Tensor x = randn({4, 2, 6, 6}, {}, &g);
  square(net.forward(x)).mean().backward();
  opt.step();
  net.to(kGpu);
  opt.zero_grad();
  square(net.forward(x.to(kGpu))).mean().backward();
  opt.step();
  for (const auto& [key, t] : opt.state_dict()) {
    if (key.ends_with(".step") || key.ends_with("lr")) continue;  // host scalars
    EXPECT_EQ(t.device(), kGpu) << key;
  }
}

TEST_F(StandIn, SavedFilesDoNotDependOnTheDevice) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ember_standin_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  Generator ga(5), gb(5), gc(6);
  Net a(&ga), b(&gb), c(&gc);
  {
    NoGradGuard no_grad;
    a.bn->running_mean.fill_(0.25);
    b.bn->running_mean.fill_(0.25);
  }
  b.to(kGpu);
  save(a, (dir / "cpu.safetensors").string(), {{"note", "same"}});
  save(b, (dir / "gpu.safetensors").string(), {{"note", "same"}});
  const std::string cpu_file = read_file(dir / "cpu.safetensors");
  EXPECT_FALSE(cpu_file.empty());
  EXPECT_EQ(read_file(dir / "gpu.safetensors"), cpu_file);

  // Loading into a model on the device keeps it there.
  c.to(kGpu);
  load(c, (dir / "cpu.safetensors").string());
  const nn::NamedTensors sa = a.state_dict(), sc = c.state_dict();
  ASSERT_EQ(sa.size(), sc.size());
  for (size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sc[i].second.device(), kGpu) << sc[i].first;
    EXPECT_EQ(bytes_of(sc[i].second), bytes_of(sa[i].second)) << sc[i].first;
  }
  std::filesystem::remove_all(dir);
}

// --- the ember::cuda memory API through the override ---------------------------------------------------------

TEST_F(StandIn, CudaMemoryApiReadsTheStandInsStatistics) {
  EXPECT_NO_THROW(cuda::synchronize(0));
  const size_t before = cuda::memory_allocated(0);
  EXPECT_EQ(before, standin().memory_stats(0).allocated);
  const size_t host_before = memory_stats(kCPU).allocated;
  constexpr size_t kBytes = size_t{1} << 20;
  {
    const Tensor t = empty({static_cast<int64_t>(kBytes / 4)}, {.device = kGpu});
    EXPECT_EQ(memory_stats(kCPU).allocated, host_before);  // the device's bytes are not the host's
    EXPECT_GE(cuda::memory_allocated(0), before + kBytes);
    EXPECT_EQ(cuda::memory_allocated(0), standin().memory_stats(0).allocated);
  }
  EXPECT_EQ(cuda::memory_allocated(0), before);
  EXPECT_GE(cuda::max_memory_allocated(0), before + kBytes);  // the peak stays until reset
  EXPECT_EQ(cuda::max_memory_allocated(0), standin().memory_stats(0).peak_allocated);
  cuda::reset_peak_memory_stats(0);
  EXPECT_EQ(cuda::max_memory_allocated(0), cuda::memory_allocated(0));
  const size_t reserved = cuda::memory_reserved(0);  // the freed block is cached
  EXPECT_GE(reserved, cuda::memory_allocated(0) + kBytes);
  cuda::empty_cache(0);
  EXPECT_LE(cuda::memory_reserved(0), reserved - kBytes);
  EXPECT_EQ(cuda::memory_reserved(0), cuda::memory_allocated(0));
}

// --- without the override ----------------------------------------------------------------------------------------

TEST(NoGpu, CudaDevicesAreRefusedWithTheReasonAndAutoPicksTheCpu) {
  if (cuda::is_available()) GTEST_SKIP() << "this machine has a usable GPU; the no-GPU answers cannot be checked";
  const std::string reason = cuda::unavailable_reason();
  ASSERT_FALSE(reason.empty());
  for (const char* text : {"cuda", "cuda:0"}) EXPECT_TRUE(throws_error([&] { Device::parse(text); }, {reason})) << text;
  EXPECT_EQ(Device::parse("auto"), kCPU);
  EXPECT_EQ(cuda::device_count(), 0);
}

}  // namespace
}  // namespace ember
