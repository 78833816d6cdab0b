// CPU-vs-CUDA parity (DESIGN.md, "Tests"): the CPU backend is the reference; every result the CUDA backend
// gives is compared with it on the same inputs. The cases are the lines of the op table (tests/op_table.h:
// every differentiable op and every fused nn op — conv, pooling, norms, softmax, the losses, dropout,
// embedding, attention, the recurrent cells), each in its layouts (four, or contiguous only where the line
// says why), f64 and f32: the output, any state the op updates (batch norm's running statistics) and every
// input gradient (after a backward from the same random upstream gradient).
//
// Both devices run on guarded buffers (tests/guarded_backend.h): every buffer an op allocates has a guard of
// 0xFE bytes before and after it, checked after each CPU backend entry and, on the GPU, after the op and
// after its backward (each check there is a synchronising copy), and when freed — so the first GPU run
// catches a kernel writing out of bounds, not only wrong values. tests/test_op_guards.cpp proves the guards
// on the CPU (an entry called with a too-small output is caught) and runs every line on them there.
//
// tests/test_cuda_backend.cpp has the rest (backend entries autograd does not reach, errors and memory,
// training). Every test skips itself (GTEST_SKIP, in the fixtures' SetUp, before any GPU work) where no
// usable GPU is present, saying why. Tolerances: tests/cuda_parity.h.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include <ember/ember.h>

#include "cuda_parity.h"
#include "f32_softmax_goldens.h"
#include "guarded_backend.h"
#include "op_table.h"

namespace ember {
namespace {

using namespace optable;  // op_table(), run_row, Layout, layouts_of, random_values, Kind
using namespace parity;   // Cuda, CudaWithParam, tolerance, matches, kGpu

// The guarded stand-ins for both backends, never destroyed: they outlive every tensor they served.
test::GuardedBackend& guarded_cpu() {
  static test::GuardedBackend& guard = *new test::GuardedBackend(backend(kCPU));
  return guard;
}
test::GuardedBackend& guarded_gpu() {
  static test::GuardedBackend& guard = *new test::GuardedBackend(backend(kGpu), /*check_every_entry=*/false);
  return guard;
}

using OpParam = std::tuple<size_t, Layout, DType>;
std::vector<OpParam> op_params() {
  std::vector<OpParam> out;
  for (size_t row = 0; row < op_table().size(); ++row)
    for (Layout l : layouts_of(op_table()[row]))
      for (DType dtype : {DType::f64, DType::f32}) out.emplace_back(row, l, dtype);
  return out;
}

class CudaOpParity : public CudaWithParam<OpParam> {
 protected:
  void SetUp() override {
    CudaWithParam<OpParam>::SetUp();
    if (IsSkipped()) return;
    load_goldens();  // loaded once, unguarded: each CPU check would walk their buffers
    guarded_cpu().take_violations();
    guarded_gpu().take_violations();
    set_backend_override(DeviceType::CPU, &guarded_cpu());
    set_backend_override(DeviceType::CUDA, &guarded_gpu());
  }
  void TearDown() override {
    set_backend_override(DeviceType::CPU, nullptr);
    set_backend_override(DeviceType::CUDA, nullptr);
  }
  // No guard damaged on either device since the last call; `when` says at which step of the case.
  static void expect_guards_intact(const std::string& when) {
    guarded_gpu().check(when);
    for (test::GuardedBackend* g : {&guarded_cpu(), &guarded_gpu()})
      for (const std::string& v : g->take_violations()) ADD_FAILURE() << "guard sentinel " << when << ": " << v;
  }
};

TEST_P(CudaOpParity, OutputAndGradients) {
  const auto [row, layout, dtype] = GetParam();
  const OpCase& c = op_table()[row];
  const OpRun cpu = run_row(row, layout, dtype, kCPU);
  if (layout != Layout::contiguous && !cpu.non_contiguous)  // as the gradcheck test
    GTEST_SKIP() << "no input of " << c.name << " can be made " << layout_name(layout);
  const OpRun gpu = run_row(row, layout, dtype, kGpu);
  expect_guards_intact("after " + c.name + " and its backward");
  for (size_t i = 0; i < cpu.leaves.size(); ++i) {  // the GPU ran on the same layout
    EXPECT_EQ(gpu.leaves[i].strides(), cpu.leaves[i].strides()) << "input " << i;
    EXPECT_EQ(gpu.leaves[i].offset(), cpu.leaves[i].offset()) << "input " << i;
  }
  ASSERT_EQ(cpu.outs.size(), gpu.outs.size());
  EXPECT_TRUE(matches(cpu.outs[0], gpu.outs[0], tolerance(c.o.out, cpu.outs[0].dtype()))) << c.name << " output";
  for (size_t i = 1; i < cpu.outs.size(); ++i)  // running mean / var after the training step
    EXPECT_TRUE(matches(cpu.outs[i], gpu.outs[i], tolerance(Kind::reduce, dtype))) << c.name << " state " << i;
  for (size_t i = 0; i < cpu.leaves.size(); ++i) {
    ASSERT_TRUE(cpu.leaves[i].grad().defined()) << "input " << i;
    EXPECT_TRUE(matches(cpu.leaves[i].grad(), gpu.leaves[i].grad(), tolerance(c.o.grad, dtype)))
        << c.name << " gradient of input " << i;
  }
}

std::string op_case_name(const ::testing::TestParamInfo<OpParam>& info) {
  const auto [row, layout, dtype] = info.param;
  return op_table()[row].name + "_" + layout_name(layout) + "_" + std::string(dtype_name(dtype));
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaOpParity, ::testing::ValuesIn(op_params()), op_case_name);

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

// The f32 goldens at large and nearly tied logits (tests/f32_softmax_goldens.h) on the GPU, against PyTorch's
// values directly: 8 ulp where the CPU is held to 4 (the device's expf/logf are within 2 ulp of glibc's, not
// correctly rounded). The old kernels missed by 12 to 1661 ulp.
TEST_F(Cuda, F32SoftmaxAndCrossEntropyGoldensAtLargeLogits) { test::check_f32_softmax_goldens(kGpu, 8); }

}  // namespace
}  // namespace ember
