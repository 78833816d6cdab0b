// Guard sentinels (tests/guarded_backend.h), on the CPU: the mechanism the CPU-vs-CUDA parity test runs both
// devices under is proved here, where it runs on every machine. A backend entry called with an output one
// element too small (or starting one element early) writes into a guard, and the guard reports it, naming
// the entry; then every line of the op table (tests/op_table.h) runs forward and backward on guarded
// buffers in each of its layouts, f64 and f32, and must leave every guard intact; and every compute entry
// of the Backend interface must be reached by some line, so a new fused entry gets parity (and guards) from
// a table line before it can pass.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "backends/backend.h"
#include "guarded_backend.h"
#include "op_table.h"
#include "test_helpers.h"

namespace ember {
namespace {

using namespace optable;  // op_table(), run_row, Layout, layouts_of
using test::GuardedBackend;

// Never destroyed: a GuardedBackend must outlive every tensor it served (tests/guarded_backend.h).
GuardedBackend& guard() {
  static GuardedBackend& g = *new GuardedBackend(backend(kCPU));
  return g;
}
GuardedBackend& guard_checked_at_free() {
  static GuardedBackend& g = *new GuardedBackend(backend(kCPU), /*check_every_entry=*/false);
  return g;
}

// Serves the CPU with `g` for the test's duration.
class Guarded : public ::testing::Test {
 protected:
  void SetUp() override {
    // The goldens some lines read stay loaded for the whole run: read them before the guard serves the CPU,
    // so that each check does not walk their hundreds of buffers.
    load_goldens();
    guard().take_violations();
    set_backend_override(DeviceType::CPU, &guard());
  }
  void TearDown() override { set_backend_override(DeviceType::CPU, nullptr); }
};

// A contiguous view of `t`'s memory as the backend sees operands, with another shape and an element offset:
// what a kernel given a wrong output size would write through.
TensorArg arg(const Tensor& t, const Shape& shape, int64_t offset = 0) {
  TensorArg a;
  a.data = static_cast<char*>(t.data_ptr()) + offset * static_cast<int64_t>(t.element_size());
  a.dtype = t.dtype();
  a.ndim = shape.size();
  int64_t stride = 1;
  for (int d = shape.size() - 1; d >= 0; --d) {
    a.shape[d] = shape[d];
    a.strides[d] = stride;
    stride *= shape[d];
  }
  return a;
}

::testing::AssertionResult one_violation(GuardedBackend& g, std::initializer_list<std::string_view> pieces) {
  const std::vector<std::string> v = g.take_violations();
  if (v.size() != 1) {
    auto failure = ::testing::AssertionFailure() << v.size() << " violations reported, expected 1";
    for (const std::string& m : v) failure << "\n  " << m;
    return failure;
  }
  for (std::string_view p : pieces)
    if (v[0].find(p) == std::string::npos) return ::testing::AssertionFailure() << "\"" << v[0] << "\" lacks \"" << p << "\"";
  return ::testing::AssertionSuccess();
}

TEST_F(Guarded, CatchesAnEntryWritingOnePastItsOutput) {
  const Tensor t = zeros({5}, {.dtype = DType::f64});  // 40 bytes, from the guarded backend
  ASSERT_GT(guard().live_buffers(), 0u);
  backend(kCPU).fill(arg(t, {5}), 2.0);  // the right size: nothing to report
  EXPECT_TRUE(guard().take_violations().empty());
  backend(kCPU).fill(arg(t, {6}), 1.0);  // one element too many
  EXPECT_TRUE(one_violation(guard(), {"after fill", "the 40-byte buffer on cpu", "written past its end",
                                      "bytes 0 to 7 after it changed", "0x00"}));
  EXPECT_EQ(t.to_vector<double>(), std::vector<double>(5, 1.0));
  guard().check("again");  // the guard was repaired: one overrun is reported once
  EXPECT_TRUE(guard().take_violations().empty());
}

TEST_F(Guarded, CatchesAnEntryWritingBeforeItsOutput) {
  const Tensor t = zeros({5}, {.dtype = DType::f32});
  backend(kCPU).fill(arg(t, {6}, -1), 3.0);  // starts one element early
  EXPECT_TRUE(one_violation(guard(), {"after fill", "the 20-byte buffer", "written before its start",
                                      "bytes 1 to 4 before it changed"}));
}

// Fused kernels with an output one element short: the last element lands in the guard.
TEST_F(Guarded, CatchesAFusedKernelWithATooSmallOutput) {
  Generator gen(3);
  const Tensor x = randn({4, 5}, {.dtype = DType::f64}, &gen);
  const Tensor y = zeros({19}, {.dtype = DType::f64});
  backend(kCPU).softmax_forward(arg(x, {4, 5}), arg(y, {4, 5}), /*log=*/false);
  EXPECT_TRUE(one_violation(guard(), {"after softmax_forward", "the 152-byte buffer", "past its end", "bytes 0 to 7"}));

  const Tensor image = randn({1, 2, 4, 4}, {.dtype = DType::f64}, &gen), w = randn({3, 2, 3, 3}, {.dtype = DType::f64}, &gen);
  const Tensor out = zeros({3 * 2 * 2 - 1}, {.dtype = DType::f64});  // [1, 3, 2, 2] less one element
  backend(kCPU).conv2d_forward(arg(image, {1, 2, 4, 4}), arg(w, {3, 2, 3, 3}), nullptr, arg(out, {1, 3, 2, 2}), {});
  EXPECT_TRUE(one_violation(guard(), {"after conv2d_forward", "the 88-byte buffer", "past its end"}));
  // the right size: intact
  const Tensor full = zeros({1, 3, 2, 2}, {.dtype = DType::f64});
  backend(kCPU).conv2d_forward(arg(image, {1, 2, 4, 4}), arg(w, {3, 2, 3, 3}), nullptr, arg(full, {1, 3, 2, 2}), {});
  EXPECT_TRUE(guard().take_violations().empty());
}

// A guard checked only when its buffer is freed (the GPU's mode between the harness's checks) still reports.
TEST(GuardedAtFree, ReportsWhenTheBufferIsFreed) {
  guard_checked_at_free().take_violations();
  set_backend_override(DeviceType::CPU, &guard_checked_at_free());
  {
    const Tensor t = zeros({3}, {.dtype = DType::i64});
    backend(kCPU).fill(arg(t, {4}), 7.0);
    EXPECT_TRUE(guard_checked_at_free().take_violations().empty()) << "checked before the buffer was freed";
  }
  set_backend_override(DeviceType::CPU, nullptr);
  EXPECT_TRUE(one_violation(guard_checked_at_free(), {"freeing it", "the last entry called: fill", "the 24-byte buffer",
                                                      "past its end"}));
}

// --- every line of the op table on guarded buffers -------------------------------------------------------------
// One test for the whole table (CTest starts a process per test): each line forward and backward in each of
// its layouts, f64 and f32, checked after every entry; a failure names the line, layout and dtype. Then every
// compute entry of the Backend interface must have been called by some line, so it gets CPU-vs-CUDA parity
// and guards from the table; the few that no op of the table can reach are listed with where they are tested.
TEST_F(Guarded, EveryLineStaysWithinItsBuffersAndEveryEntryIsReached) {
  guard().reset_calls();
  for (size_t row = 0; row < op_table().size(); ++row) {
    const OpCase& c = op_table()[row];
    for (Layout layout : layouts_of(c))
      for (DType dtype : {DType::f64, DType::f32}) {
        const std::string when = "after " + c.name + " (" + layout_name(layout) + ", " + std::string(dtype_name(dtype)) + ")";
        {
          const OpRun r = run_row(row, layout, dtype, kCPU);
          ASSERT_TRUE(r.outs[0].defined()) << when;
          guard().check(when);
        }
        for (const std::string& v : guard().take_violations()) ADD_FAILURE() << "guard sentinel " << when << ": " << v;
      }
  }
  const std::map<std::string, std::string> elsewhere = {
      {"optimizer_step", "the optimizers' fused steps: tests/test_optim.cpp, and CPU vs CUDA in tests/test_cuda_backend.cpp"},
      {"copy_bytes_host", "transfers between the host and a device (Tensor::to): tests/test_cuda_standin.cpp, "
                          "tests/test_cuda_backend.cpp, and the parity test's CPU-to-GPU leaves"},
  };
  const std::map<std::string, uint64_t> calls = guard().calls();
  for (const std::string& entry : test::backend_entry_names()) {
    if (elsewhere.count(entry)) continue;
    EXPECT_TRUE(calls.count(entry) > 0) << "no line of the op table (tests/op_table.h) reaches the backend entry "
                                        << entry << ": add one, so it gets gradcheck, CPU-vs-CUDA parity and guards";
  }
  for (const auto& [entry, why] : elsewhere)
    EXPECT_EQ(calls.count(entry), 0u) << entry << " is reached by a line now (it was listed as tested by " << why
                                      << "): drop it from the list";
}

}  // namespace
}  // namespace ember
