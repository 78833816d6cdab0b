// Every error a user can hit in the Foundation API, with its message: it names the op, the values
// involved and what to do. Cross-device paths run on a CPU-backed stand-in for CUDA.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include "backends/cpu/cpu_backend.h"
#include "core/raw.h"
#include "test_helpers.h"

using namespace ember;
using ember::test::close_to;
using ember::test::make;
using ember::test::throws_error;

TEST(Errors, ShapeMismatchAndBroadcast) {
  const Tensor a = zeros({2, 3}), b = zeros({4});
  EXPECT_TRUE(throws_error([&] { add(a, b); },
                           {"add: shapes [2, 3] and [4] cannot be broadcast", "dim 1: 3 vs 4", "match or be 1"}));
  EXPECT_TRUE(throws_error([&] { a * zeros({3, 3}); }, {"mul", "[2, 3]", "[3, 3]"}));
  EXPECT_TRUE(throws_error([&] { gt(a, b); }, {"gt", "cannot be broadcast"}));
  EXPECT_TRUE(throws_error([&] { where(a > 0, a, b); }, {"where", "[2, 3]", "[4]"}));
  EXPECT_TRUE(throws_error([&] { zeros({3}).add_(a); }, {"add_", "[2, 3]", "[3]", "cannot grow"}));
  EXPECT_TRUE(throws_error([&] { zeros({3}).copy_(a); }, {"expand", "[2, 3]"}));
  EXPECT_TRUE(throws_error([&] { matmul(a, zeros({4, 5})); },
                           {"matmul: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)"}));
  EXPECT_TRUE(throws_error([&] { matmul(zeros({3}), zeros({4})); }, {"matmul", "[3]", "[4]", "3 != 4"}));
  EXPECT_TRUE(throws_error([&] { matmul(zeros({2, 2, 3}), zeros({3, 3, 4})); },
                           {"matmul (batch dims)", "[2]", "[3]", "cannot be broadcast"}));
  EXPECT_TRUE(throws_error([&] { matmul(scalar_tensor(1), zeros({2})); }, {"matmul", "at least 1 dim", "[]"}));
  EXPECT_TRUE(throws_error([&] { a.reshape({4, 4}); }, {"reshape: shape [4, 4] is invalid", "[2, 3]", "6 elements"}));
  EXPECT_TRUE(throws_error([&] { a.reshape({-1, 4}); }, {"reshape", "[-1, 4]", "6 elements"}));
  EXPECT_TRUE(throws_error([&] { a.view({-1, -1}); }, {"view", "only one dimension can be -1"}));
  EXPECT_TRUE(throws_error([&] { a.reshape({-2, 3}); }, {"reshape", "invalid size -2"}));
  EXPECT_TRUE(throws_error([&] { a.expand({2, 5}); }, {"expand", "size 3", "[2, 5]"}));
  EXPECT_TRUE(throws_error([&] { a.expand({2, -7}); }, {"expand", "-7"}));
  EXPECT_TRUE(throws_error([&] { cat({a, zeros({2, 2, 1})}); }, {"cat: tensor 1 has 3 dims", "tensor 0 has 2"}));
  EXPECT_TRUE(throws_error([&] { cat({a, zeros({3, 3})}, 1); }, {"cat: tensor 1 has shape [3, 3]", "all dims but dim 1"}));
  EXPECT_TRUE(throws_error([&] { cat({}); }, {"cat", "non-empty"}));
  EXPECT_TRUE(throws_error([&] { cat({scalar_tensor(1)}); }, {"cat", "zero-dimensional", "stack()"}));
  EXPECT_TRUE(throws_error([&] { stack({a, zeros({3, 2})}); }, {"stack: tensor 1 has shape [3, 2]", "equal shapes"}));
  EXPECT_TRUE(throws_error([&] { stack({}); }, {"stack", "non-empty"}));
  EXPECT_TRUE(throws_error([] { from_vector<float>({1, 2, 3, 4, 5}, {2, 3}); },
                           {"from_vector: 5 values do not fill shape [2, 3] (6 elements)"}));
  EXPECT_TRUE(throws_error([] { zeros({2, -1}); }, {"empty: negative size", "[2, -1]"}));
  EXPECT_TRUE(throws_error([] { zeros({1, 1, 1, 1, 1, 1, 1, 1, 1}); }, {"9 dims", "at most 8"}));
  EXPECT_TRUE(throws_error([&] { a.item<float>(); }, {"item()", "6 elements", "[2, 3]", ".sum()"}));
  EXPECT_TRUE(throws_error([] { Tensor().shape(); }, {"undefined Tensor", "ember::zeros"}));
  EXPECT_TRUE(throws_error([] { Tensor() + ones({1}); }, {"undefined Tensor"}));
}

TEST(Errors, TensorSizeOverflow) {
  // 2^62 f32 elements need 2^64 bytes: caught before any allocation, not wrapped around to 0 bytes.
  EXPECT_TRUE(throws_error([] { zeros({int64_t{1} << 31, int64_t{1} << 31}); }, {"[2147483648, 2147483648]"}));
  EXPECT_TRUE(throws_error([] { empty({int64_t{1} << 40, int64_t{1} << 40}); }, {"[1099511627776, 1099511627776]"}));
}

TEST(Errors, DTypes) {
  const Tensor f = zeros({2}), i = zeros({2}, {.dtype = DType::i64});
  EXPECT_TRUE(throws_error([&] { where(f, f, f); }, {"where: the condition must be a bool tensor", "got f32"}));
  EXPECT_TRUE(throws_error([&] { index_select(f, 0, f); }, {"index_select: the index must be i64, got f32"}));
  EXPECT_TRUE(throws_error([&] { gather(f, 0, f); }, {"gather: the index must be i64, got f32"}));
  EXPECT_TRUE(throws_error([&] { raw::scatter_add({2}, 0, f, f); }, {"scatter_add: the index must be i64, got f32"}));
  Tensor target = i.clone();
  EXPECT_TRUE(throws_error([&] { target.add_(f); }, {"add_: the result type f32 cannot be stored in the i64 target"}));
  EXPECT_TRUE(throws_error([&] { target.mul_(0.5); }, {"mul_", "f32", "i64"}));
  EXPECT_TRUE(throws_error([&] { i.clone().requires_grad_(); }, {"requires_grad_", "floating", "i64"}));
  EXPECT_TRUE(throws_error([] { ones({1}, {.dtype = DType::i64, .requires_grad = true}); }, {"requires_grad_", "i64"}));
  EXPECT_TRUE(throws_error([&] { i.data<float>(); }, {"data<f32>(): the tensor is i64"}));
  EXPECT_TRUE(throws_error([&] { matmul(f > 0, f > 0); }, {"matmul: not defined for bool tensors"}));
  EXPECT_TRUE(throws_error([] { rand({2}, {.dtype = DType::i64}); }, {"random", "floating", "i64"}));
  EXPECT_TRUE(throws_error([] { randn({2}, {.dtype = DType::b8}); }, {"random", "bool"}));
}

TEST(Errors, OutOfRangeDims) {
  const Tensor a = zeros({2, 3});
  EXPECT_TRUE(throws_error([&] { a.sum({2}); }, {"sum: dim 2 is out of range for a tensor with 2 dims (valid: -2 to 1)"}));
  EXPECT_TRUE(throws_error([&] { a.mean({-3}); }, {"mean: dim -3 is out of range"}));
  EXPECT_TRUE(throws_error([&] { amax(a, {5}); }, {"max: dim 5"}));
  EXPECT_TRUE(throws_error([&] { a.sum({0, -2}); }, {"sum: dim 0 appears twice in [0, -2]"}));
  EXPECT_TRUE(throws_error([&] { a.argmax(2); }, {"argmax: dim 2 is out of range"}));
  EXPECT_TRUE(throws_error([&] { ember::max(a, -3); }, {"dim -3 is out of range"}));
  EXPECT_TRUE(throws_error([&] { a.transpose(0, 2); }, {"transpose: dim 2"}));
  EXPECT_TRUE(throws_error([&] { a.permute({0}); }, {"permute: got 1 dims [0] for a tensor with 2 dims"}));
  EXPECT_TRUE(throws_error([&] { a.permute({1, 1}); }, {"permute: dim 1 appears twice"}));
  EXPECT_TRUE(throws_error([&] { a.permute({0, 2}); }, {"permute: dim 2 is out of range"}));
  EXPECT_TRUE(throws_error([&] { a.unsqueeze(3); }, {"unsqueeze: dim 3", "valid: -3 to 2"}));
  EXPECT_TRUE(throws_error([&] { a.squeeze(2); }, {"squeeze: dim 2"}));
  EXPECT_TRUE(throws_error([&] { a.flatten(0, 4); }, {"flatten: dim 4"}));
  EXPECT_TRUE(throws_error([&] { a.select(2, 0); }, {"select: dim 2"}));
  EXPECT_TRUE(throws_error([&] { a.select(1, 3); }, {"select: index 3 is out of range for dim 1 of size 3", "[2, 3]"}));
  EXPECT_TRUE(throws_error([&] { a.select(0, -3); }, {"select: index -3 is out of range for dim 0 of size 2"}));
  EXPECT_TRUE(throws_error([&] { a.narrow(1, 2, 2); }, {"narrow: start 2 and length 2 are out of range for dim 1 of size 3"}));
  EXPECT_TRUE(throws_error([&] { a.narrow(0, 0, -1); }, {"narrow", "length -1"}));
  EXPECT_TRUE(throws_error([&] { a.slice(1, 0, 2, 0); }, {"slice: step must be positive, got 0"}));
  EXPECT_TRUE(throws_error([&] { a.slice(-3, 0, 1); }, {"slice: dim -3"}));
  EXPECT_TRUE(throws_error([&] { cat({a, a}, 2); }, {"cat: dim 2"}));
  EXPECT_TRUE(throws_error([&] { stack({a, a}, 3); }, {"stack: dim 3", "valid: -3 to 2"}));
  EXPECT_TRUE(throws_error([&] { index_select(a, 2, from_vector<int64_t>({0})); }, {"index_select: dim 2"}));
  EXPECT_TRUE(throws_error([&] { gather(a, -3, zeros({2, 3}, {.dtype = DType::i64})); }, {"gather: dim -3"}));
  EXPECT_TRUE(throws_error([&] { a.size(2); }, {"size: dim 2"}));
  EXPECT_TRUE(throws_error([&] { a.stride(-3); }, {"stride: dim -3"}));
  EXPECT_TRUE(throws_error([] { scalar_tensor(1).size(0); }, {"size", "0-d"}));
  EXPECT_TRUE(throws_error([&] { zeros({2, 2, 2}).t(); }, {"t(): expects a tensor with at most 2 dims", "transpose()"}));
  EXPECT_TRUE(throws_error([&] { a.flatten(1, 0); }, {"flatten: start_dim 1 comes after end_dim 0"}));
  EXPECT_TRUE(throws_error([] { scalar_tensor(1).narrow(0, 0, 1); }, {"narrow: cannot narrow a 0-d tensor"}));
  EXPECT_TRUE(throws_error([] { scalar_tensor(1).select(0, 0); }, {"select: cannot index a 0-d tensor"}));
}

TEST(Errors, OutOfRangeIndices) {
  const Tensor x = arange(6).reshape({3, 2});
  EXPECT_TRUE(throws_error([&] { index_select(x, 0, from_vector<int64_t>({0, 3})); },
                           {"index_select", "index 3 is out of range for dim 0 of size 3"}));
  EXPECT_TRUE(throws_error([&] { index_select(x, 1, from_vector<int64_t>({-1})); }, {"index -1 is out of range", "size 2"}));
  EXPECT_TRUE(throws_error([&] { index_select(x, 0, zeros({1, 1}, {.dtype = DType::i64})); },
                           {"index_select: the index must be 0-d or 1-D, got shape [1, 1]"}));
  EXPECT_TRUE(throws_error([&] { gather(x, 1, from_vector<int64_t>({0, 2, 1}, {3, 1})); },
                           {"gather", "index 2 is out of range for dim 1 of size 2"}));
  EXPECT_TRUE(throws_error([&] { gather(x, 1, from_vector<int64_t>({0, 1})); },
                           {"gather: the index (shape [2]) must have as many dims as the input (shape [3, 2])"}));
  EXPECT_TRUE(throws_error([&] { gather(x, 1, zeros({4, 1}, {.dtype = DType::i64})); },
                           {"gather: index shape [4, 1] exceeds the input shape [3, 2] in dim 0"}));
  const Tensor src = ones({2});
  EXPECT_TRUE(throws_error([&] { raw::scatter_add({3}, 0, from_vector<int64_t>({0, 7}), src); },
                           {"scatter_add: index 7 is out of range for dim 0 of size 3"}));
  EXPECT_TRUE(throws_error([&] { raw::scatter_add({3}, 0, from_vector<int64_t>({0}), src); },
                           {"scatter_add: the index shape [1] must equal the source shape [2]"}));
  EXPECT_TRUE(throws_error([&] { raw::scatter_add({3, 1}, 0, from_vector<int64_t>({0, 1}), src); },
                           {"scatter_add: the source (shape [2]) must have as many dims as the output [3, 1]"}));
}

TEST(Errors, ValuesAndEmptyInputs) {
  EXPECT_TRUE(throws_error([] { clamp(ones({2}), 2, 1); }, {"clamp: min 2 is greater than max 1"}));
  EXPECT_TRUE(throws_error([] { zeros({0}).max(); }, {"max: the input (shape [0]) is empty", "no identity"}));
  EXPECT_TRUE(throws_error([] { amin(zeros({2, 0}), {1}); }, {"min", "[2, 0]", "empty"}));
  EXPECT_TRUE(throws_error([] { zeros({0, 2}).argmax(0); }, {"argmax: dim 0 of shape [0, 2] is empty"}));
  EXPECT_TRUE(throws_error([] { arange(0, 5, 0); }, {"arange: step must be nonzero"}));
  EXPECT_TRUE(throws_error([] { arange(5, 0, 1); }, {"arange: the range [5, 0) is empty or reversed for step 1"}));
  EXPECT_TRUE(throws_error([] { arange(0, INFINITY, 1); }, {"arange", "finite"}));
}

// --- devices ----------------------------------------------------------------------------------------------

TEST(Devices, ParseValidStrings) {
  EXPECT_EQ(Device::parse("cpu"), kCPU);
  EXPECT_EQ(Device::parse("cpu").str(), "cpu");
  EXPECT_EQ(Device(DeviceType::CUDA, 1).str(), "cuda:1");
  EXPECT_EQ(Device(DeviceType::CPU, 3).index, 0);  // the CPU has one index
  const Device automatic = Device::parse("auto");
  EXPECT_EQ(automatic.is_cuda(), cuda::is_available());
}

TEST(Devices, BadStrings) {
  for (const char* text : {"cuda:x", "cuda:", "cuda:-1", "cuda:1x", "cudax", "cuda0"})
    EXPECT_TRUE(throws_error([&] { Device::parse(text); },
                             {std::string("device '") + text + "' is not a device", "expected cpu, cuda, cuda:N"}))
        << text;
  for (const char* text : {"gpu", "CPU", "", "cpu:0", "tpu"})
    EXPECT_TRUE(throws_error([&] { Device::parse(text); },
                             {std::string("device '") + text + "' is not a device", "cpu, cuda, cuda:N or auto"}))
        << text;
}

TEST(Devices, CudaUnavailable) {
  if (cuda::is_available()) GTEST_SKIP() << "this machine has a usable GPU; the no-GPU messages cannot be checked";
  const std::string reason = cuda::unavailable_reason();
  EXPECT_FALSE(reason.empty());
  // The library speaks C++ (what to call), not the command line of the apps.
  EXPECT_NE(reason.find(".to(kCPU)"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("--device"), std::string::npos) << reason;
  EXPECT_EQ(cuda::device_count(), 0);
  EXPECT_EQ(Device::parse("auto"), kCPU);
  for (const char* text : {"cuda", "cuda:0", "cuda:3"})
    EXPECT_TRUE(throws_error([&] { Device::parse(text); }, {std::string("device '") + text + "' requested, but ", reason}));
  const Device gpu(DeviceType::CUDA, 0);
  EXPECT_TRUE(throws_error([&] { zeros({2}, {.device = gpu}); }, {"device cuda:0", reason}));
  EXPECT_TRUE(throws_error([&] { ones({2}).to(gpu); }, {"cuda:0", reason}));
  EXPECT_TRUE(throws_error([&] { memory_stats(gpu); }, {"cuda:0"}));
}

namespace {

// Serves DeviceType::CUDA with a separate CPU backend while alive, so "cuda:0" tensors exist.
struct FakeCuda {
  cpu::CpuBackend backend;
  FakeCuda() { set_backend_override(DeviceType::CUDA, &backend); }
  ~FakeCuda() { set_backend_override(DeviceType::CUDA, nullptr); }
};

}  // namespace

TEST(Devices, MismatchMessages) {
  FakeCuda fake;  // declared first: outlives the tensors below
  const Device gpu(DeviceType::CUDA, 0);
  const Tensor c = make({1, 2, 3, 4}, {2, 2}).to(gpu);
  const Tensor h = ones({2, 2});
  EXPECT_EQ(c.device(), gpu);
  const auto mismatch = [](const char* op) {
    return std::string("tensors on different devices: cpu and cuda:0 in ") + op + "; move one with .to(...)";
  };
  EXPECT_TRUE(throws_error([&] { add(h, c); }, {mismatch("add")}));
  EXPECT_TRUE(throws_error([&] { h * c; }, {mismatch("mul")}));
  EXPECT_TRUE(throws_error([&] { h > c; }, {mismatch("gt")}));
  EXPECT_TRUE(throws_error([&] { matmul(h, c); }, {mismatch("matmul")}));
  EXPECT_TRUE(throws_error([&] { where(h > 0, h, c); }, {mismatch("where")}));
  EXPECT_TRUE(throws_error([&] { cat({h, c}); }, {mismatch("cat")}));
  EXPECT_TRUE(throws_error([&] { index_select(h, 0, from_vector<int64_t>({0}).to(gpu)); }, {mismatch("index_select")}));
  EXPECT_TRUE(throws_error([&] { gather(h, 0, zeros({1, 1}, {.dtype = DType::i64, .device = gpu})); },
                           {mismatch("gather")}));
  EXPECT_TRUE(throws_error([&] { h.clone().add_(c); }, {mismatch("add")}));
  // The other direction names the devices in argument order.
  EXPECT_TRUE(throws_error([&] { sub(c, h); },
                           {"tensors on different devices: cuda:0 and cpu in sub; move one with .to(...)"}));
  EXPECT_TRUE(throws_error([&] { c.data<float>(); }, {"data<T>(): the tensor is on cuda:0", ".to(kCPU)"}));
}

TEST(Devices, RoundTripsThroughStandIn) {
  FakeCuda fake;
  const Device gpu(DeviceType::CUDA, 0);
  const size_t before = memory_stats(gpu).allocated;
  for (DType dtype : {DType::f32, DType::f64, DType::i64}) {
    const Tensor h = make({1, 2, 3, 4, 5, 6}, {2, 3}, dtype);
    const Tensor c = h.t().to(gpu);  // a view moves as its logical values
    EXPECT_EQ(c.device(), gpu);
    EXPECT_EQ(c.dtype(), dtype);
    EXPECT_FALSE(c.shares_storage(h));
    EXPECT_TRUE(c.to(gpu).shares_storage(c));  // already there: no copy
    EXPECT_GT(memory_stats(gpu).allocated, before);
    const Tensor back = c.to(kCPU);
    EXPECT_EQ(back.device(), kCPU);
    EXPECT_TRUE(close_to(back, {1, 4, 2, 5, 3, 6}, {3, 2}));
    EXPECT_TRUE(close_to(c, {1, 4, 2, 5, 3, 6}, {3, 2}));  // to_vector copies to the host itself
    // Ops on the stand-in device stay there.
    const Tensor s = (c + c).sum({0});
    EXPECT_EQ(s.device(), gpu);
    EXPECT_TRUE(close_to(s, {12, 30}, {2}));
    const std::string z = dtype == DType::i64 ? "" : ".0000";  // how a whole number prints in this dtype
    EXPECT_EQ(c.str(), "tensor([[1" + z + ", 4" + z + "],\n        [2" + z + ", 5" + z + "],\n        [3" + z + ", 6" + z +
                           "]], shape=[3, 2], dtype=" + std::string(dtype_name(dtype)) + ", device=cuda:0)");
    // copy_ crosses devices (and converts dtype), in both directions.
    Tensor dst = zeros({3, 2}, {.dtype = DType::f64, .device = gpu});
    dst.copy_(h.t());
    EXPECT_TRUE(close_to(dst, {1, 4, 2, 5, 3, 6}, {3, 2}));
    Tensor host = zeros({2}, {.dtype = DType::f32});
    host.copy_(c.select(0, 2));
    EXPECT_TRUE(close_to(host, {3, 6}, {2}));
  }
}
