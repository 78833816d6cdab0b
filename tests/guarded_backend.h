#pragma once
// Guard sentinels for the op-table runs (tests/test_op_guards.cpp on the CPU, tests/test_cuda_parity.cpp on
// both devices): a Backend that serves a device in place of its real backend (set_backend_override) and
// hands out every buffer with a guard region of kGuard bytes before and after it, filled with kPattern.
// Every tensor an op makes (outputs, gradients, saved intermediates) comes from Backend::allocate, so a
// kernel that writes past the end of its output (or before its start) lands in a guard; the guards of
// every live buffer are checked after each backend entry (or, where that is too slow — a GPU, where each
// check is a synchronising copy — when the test calls check()), and when a buffer is freed. A damaged
// guard is recorded, naming the entry that ran last and the buffer, and repaired, so one overrun is
// reported once. The entries are forwarded unchanged to the real backend; each call is counted, so a test
// can ask which entries a set of ops reached.
//
// NOTE: a Storage frees its memory through the backend that allocated it, so a GuardedBackend must outlive
// every tensor it served, static ones freed at exit included: create it once and never destroy it
// (`static GuardedBackend& g = *new GuardedBackend(...)`).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ember/ember.h>

#include "backends/backend.h"

namespace ember::test {

class GuardedBackend final : public Backend {
 public:
  static constexpr size_t kGuard = 256;           // bytes on each side (a multiple of every alignment used)
  static constexpr unsigned char kPattern = 0xFE;  // f32 -1.7e38, f64 -5.5e303: no kernel writes these by chance

  // check_every_entry: check all live guards after each entry (CPU); otherwise only in check() and at free.
  explicit GuardedBackend(Backend& inner, bool check_every_entry = true)
      : inner_(inner), every_entry_(check_every_entry), pattern_(kGuard, kPattern) {}

  DeviceType type() const override { return inner_.type(); }

  void* allocate(size_t bytes, int device_index) override {
    if (device_index == kPinnedHostIndex) return inner_.allocate(bytes, device_index);  // host memory, not guarded
    auto* base = static_cast<unsigned char*>(inner_.allocate(bytes + 2 * kGuard, device_index));
    unsigned char* user = base + kGuard;
    inner_.copy_bytes_host(base, pattern_.data(), kGuard, /*to_host=*/false, device_index);
    inner_.copy_bytes_host(user + bytes, pattern_.data(), kGuard, /*to_host=*/false, device_index);
    std::lock_guard lock(mutex_);
    live_[user] = {bytes, device_index};
    return user;
  }
  void deallocate(void* ptr, size_t bytes, int device_index) override {
    auto* user = static_cast<unsigned char*>(ptr);
    {
      std::lock_guard lock(mutex_);
      const auto it = live_.find(user);
      if (it == live_.end()) return inner_.deallocate(ptr, bytes, device_index);
      check_block_locked(user, it->second, "freeing it");
      live_.erase(it);
    }
    inner_.deallocate(user - kGuard, bytes + 2 * kGuard, device_index);
  }
  MemoryStats memory_stats(int device_index) override { return inner_.memory_stats(device_index); }
  void reset_peak_memory_stats(int device_index) override { inner_.reset_peak_memory_stats(device_index); }
  void empty_cache(int device_index) override { inner_.empty_cache(device_index); }
  void synchronize(int device_index) override { inner_.synchronize(device_index); }
  std::string describe() override { return "guarded " + inner_.describe(); }

  // The compute entries, forwarded (backends/backend.h, EMBER_BACKEND_OPS: a new entry fails to compile here
  // until it is added).
  void copy(const TensorArg& src, const TensorArg& dst) override {
    inner_.copy(src, dst);
    after("copy");
  }
  void copy_bytes_host(void* device_ptr, void* host_ptr, size_t bytes, bool to_host, int device_index) override {
    inner_.copy_bytes_host(device_ptr, host_ptr, bytes, to_host, device_index);
    after("copy_bytes_host");
  }
  void fill(const TensorArg& out, double value) override {
    inner_.fill(out, value);
    after("fill");
  }
  void unary(UnaryOp op, const TensorArg& in, const TensorArg& out, double alpha, double beta) override {
    inner_.unary(op, in, out, alpha, beta);
    after("unary");
  }
  void unary_backward(UnaryOp op, const TensorArg& grad_out, const TensorArg& saved, const TensorArg& grad_in, double alpha, double beta) override {
    inner_.unary_backward(op, grad_out, saved, grad_in, alpha, beta);
    after("unary_backward");
  }
  void binary(BinaryOp op, const TensorArg& a, const TensorArg& b, const TensorArg& out) override {
    inner_.binary(op, a, b, out);
    after("binary");
  }
  void where(const TensorArg& cond, const TensorArg& a, const TensorArg& b, const TensorArg& out) override {
    inner_.where(cond, a, b, out);
    after("where");
  }
  void reduce(ReduceOp op, const TensorArg& in, const TensorArg& out) override {
    inner_.reduce(op, in, out);
    after("reduce");
  }
  void arg_reduce(ArgReduceOp op, const TensorArg& in, const TensorArg& out, int dim) override {
    inner_.arg_reduce(op, in, out, dim);
    after("arg_reduce");
  }
  void cumsum(const TensorArg& in, const TensorArg& out, int dim, bool reverse) override {
    inner_.cumsum(in, out, dim, reverse);
    after("cumsum");
  }
  void sort(const TensorArg& in, const TensorArg& values, const TensorArg& indices, int dim, bool descending) override {
    inner_.sort(in, values, indices, dim, descending);
    after("sort");
  }
  void index(IndexOp op, const TensorArg& in, const TensorArg& index, const TensorArg& out, int dim) override {
    inner_.index(op, in, index, out, dim);
    after("index");
  }
  void scatter_reduce(ScatterReduceOp op, const TensorArg& src, const TensorArg& index, const TensorArg& out,
                      int dim) override {
    inner_.scatter_reduce(op, src, index, out, dim);
    after("scatter_reduce");
  }
  void random(RandomOp op, const TensorArg& out, uint64_t seed, uint64_t offset, double a, double b) override {
    inner_.random(op, out, seed, offset, a, b);
    after("random");
  }
  void matmul(const TensorArg& a, const TensorArg& b, const TensorArg& out) override {
    inner_.matmul(a, b, out);
    after("matmul");
  }
  void optimizer_step(OptimizerOp op, const OptimizerParams& p, const TensorArg& param, const TensorArg& grad, const TensorArg* s0, const TensorArg* s1, const TensorArg* s2) override {
    inner_.optimizer_step(op, p, param, grad, s0, s1, s2);
    after("optimizer_step");
  }
  void conv2d_forward(const TensorArg& x, const TensorArg& w, const TensorArg* bias, const TensorArg& y, const Conv2dParams& p) override {
    inner_.conv2d_forward(x, w, bias, y, p);
    after("conv2d_forward");
  }
  void conv2d_backward(const TensorArg& x, const TensorArg& w, const TensorArg& grad_y, const TensorArg* grad_x, const TensorArg* grad_w, const TensorArg* grad_bias, const Conv2dParams& p) override {
    inner_.conv2d_backward(x, w, grad_y, grad_x, grad_w, grad_bias, p);
    after("conv2d_backward");
  }
  void pool2d_forward(PoolOp op, const TensorArg& x, const TensorArg& y, const TensorArg* indices, const Pool2dParams& p) override {
    inner_.pool2d_forward(op, x, y, indices, p);
    after("pool2d_forward");
  }
  void pool2d_backward(PoolOp op, const TensorArg& grad_y, const TensorArg* indices, const TensorArg& grad_x, const Pool2dParams& p) override {
    inner_.pool2d_backward(op, grad_y, indices, grad_x, p);
    after("pool2d_backward");
  }
  void softmax_forward(const TensorArg& x, const TensorArg& y, bool log) override {
    inner_.softmax_forward(x, y, log);
    after("softmax_forward");
  }
  void softmax_backward(const TensorArg& grad_y, const TensorArg& y, const TensorArg& grad_x, bool log) override {
    inner_.softmax_backward(grad_y, y, grad_x, log);
    after("softmax_backward");
  }
  void cross_entropy_forward(const TensorArg& logits, const TensorArg& target, const TensorArg& loss, const TensorArg& lse, int64_t ignore_index, double label_smoothing) override {
    inner_.cross_entropy_forward(logits, target, loss, lse, ignore_index, label_smoothing);
    after("cross_entropy_forward");
  }
  void cross_entropy_backward(const TensorArg& logits, const TensorArg& target, const TensorArg& lse, const TensorArg& grad_loss, const TensorArg& grad_logits, int64_t ignore_index, double label_smoothing) override {
    inner_.cross_entropy_backward(logits, target, lse, grad_loss, grad_logits, ignore_index, label_smoothing);
    after("cross_entropy_backward");
  }
  void batch_norm_forward(const TensorArg& x, const TensorArg* weight, const TensorArg* bias, const TensorArg* running_mean, const TensorArg* running_var, const TensorArg& y, const TensorArg& save_mean, const TensorArg& save_invstd, bool training, double momentum, double eps) override {
    inner_.batch_norm_forward(x, weight, bias, running_mean, running_var, y, save_mean, save_invstd, training, momentum, eps);
    after("batch_norm_forward");
  }
  void batch_norm_backward(const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight, const TensorArg& save_mean, const TensorArg& save_invstd, const TensorArg* grad_x, const TensorArg* grad_weight, const TensorArg* grad_bias, bool training) override {
    inner_.batch_norm_backward(grad_y, x, weight, save_mean, save_invstd, grad_x, grad_weight, grad_bias, training);
    after("batch_norm_backward");
  }
  void layer_norm_forward(const TensorArg& x, const TensorArg* weight, const TensorArg* bias, const TensorArg& y, const TensorArg& save_mean, const TensorArg& save_invstd, double eps) override {
    inner_.layer_norm_forward(x, weight, bias, y, save_mean, save_invstd, eps);
    after("layer_norm_forward");
  }
  void layer_norm_backward(const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight, const TensorArg& save_mean, const TensorArg& save_invstd, const TensorArg* grad_x, const TensorArg* grad_weight, const TensorArg* grad_bias) override {
    inner_.layer_norm_backward(grad_y, x, weight, save_mean, save_invstd, grad_x, grad_weight, grad_bias);
    after("layer_norm_backward");
  }
  void rms_norm_forward(const TensorArg& x, const TensorArg* weight, const TensorArg& y, const TensorArg& save_invrms, double eps) override {
    inner_.rms_norm_forward(x, weight, y, save_invrms, eps);
    after("rms_norm_forward");
  }
  void rms_norm_backward(const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight, const TensorArg& save_invrms, const TensorArg* grad_x, const TensorArg* grad_weight) override {
    inner_.rms_norm_backward(grad_y, x, weight, save_invrms, grad_x, grad_weight);
    after("rms_norm_backward");
  }
  void lstm_cell_forward(const TensorArg& gates, const TensorArg& c_prev, const TensorArg& h, const TensorArg& c, const TensorArg& workspace) override {
    inner_.lstm_cell_forward(gates, c_prev, h, c, workspace);
    after("lstm_cell_forward");
  }
  void lstm_cell_backward(const TensorArg* grad_h, const TensorArg* grad_c, const TensorArg& c_prev, const TensorArg& c, const TensorArg& workspace, const TensorArg& grad_gates, const TensorArg* grad_c_prev) override {
    inner_.lstm_cell_backward(grad_h, grad_c, c_prev, c, workspace, grad_gates, grad_c_prev);
    after("lstm_cell_backward");
  }
  void gru_cell_forward(const TensorArg& input_gates, const TensorArg& hidden_gates, const TensorArg& h_prev, const TensorArg& h, const TensorArg& workspace) override {
    inner_.gru_cell_forward(input_gates, hidden_gates, h_prev, h, workspace);
    after("gru_cell_forward");
  }
  void gru_cell_backward(const TensorArg& grad_h, const TensorArg& h_prev, const TensorArg& workspace, const TensorArg* grad_input_gates, const TensorArg* grad_hidden_gates, const TensorArg* grad_h_prev) override {
    inner_.gru_cell_backward(grad_h, h_prev, workspace, grad_input_gates, grad_hidden_gates, grad_h_prev);
    after("gru_cell_backward");
  }
  void attention_forward(const TensorArg& q, const TensorArg& k, const TensorArg& v, const TensorArg* mask, const TensorArg& out, const TensorArg& lse, const AttentionParams& p) override {
    inner_.attention_forward(q, k, v, mask, out, lse, p);
    after("attention_forward");
  }
  void attention_backward(const TensorArg& q, const TensorArg& k, const TensorArg& v, const TensorArg* mask, const TensorArg& out, const TensorArg& lse, const TensorArg& grad_out, const TensorArg* grad_q, const TensorArg* grad_k, const TensorArg* grad_v, const AttentionParams& p) override {
    inner_.attention_backward(q, k, v, mask, out, lse, grad_out, grad_q, grad_k, grad_v, p);
    after("attention_backward");
  }
  void rotary(const TensorArg& x, const TensorArg& cos, const TensorArg& sin, const TensorArg& out, const RotaryParams& p) override {
    inner_.rotary(x, cos, sin, out, p);
    after("rotary");
  }

  // Checks the guards of every live buffer now; `when` names the moment in the messages.
  void check(std::string_view when) {
    std::lock_guard lock(mutex_);
    for (const auto& [user, block] : live_) check_block_locked(user, block, when);
  }
  // The damaged guards found so far (and forgets them).
  std::vector<std::string> take_violations() {
    std::lock_guard lock(mutex_);
    return std::exchange(violations_, {});
  }
  // How often each entry was called since the last reset_calls().
  std::map<std::string, uint64_t> calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  void reset_calls() {
    std::lock_guard lock(mutex_);
    calls_.clear();
  }
  size_t live_buffers() const {
    std::lock_guard lock(mutex_);
    return live_.size();
  }

 private:
  struct Block {
    size_t bytes = 0;
    int device_index = 0;
  };

  void after(const char* entry) {
    std::lock_guard lock(mutex_);
    ++calls_[entry];
    last_entry_ = entry;
    if (!every_entry_) return;
    const std::string when = std::string("after ") + entry;
    for (const auto& [user, block] : live_) check_block_locked(user, block, when);
  }

  // Compares both guards of a buffer with the pattern; records and repairs a damaged one.
  void check_block_locked(unsigned char* user, const Block& b, std::string_view when) {
    std::vector<unsigned char> seen(kGuard);
    for (const bool tail : {false, true}) {
      unsigned char* guard = tail ? user + b.bytes : user - kGuard;
      try {
        inner_.copy_bytes_host(guard, seen.data(), kGuard, /*to_host=*/true, b.device_index);
      } catch (const Error& e) {  // a kernel error pending on the device: say so rather than throw (destructors)
        violations_.push_back(std::string(when) + ": the guards of a " + std::to_string(b.bytes) +
                              "-byte buffer could not be read: " + e.what());
        return;
      }
      size_t first = kGuard, last = 0;
      for (size_t i = 0; i < kGuard; ++i)
        if (seen[i] != kPattern) first = std::min(first, i), last = i;
      if (first == kGuard) continue;
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02x", seen[first]);
      std::string msg = std::string(when) + " (the last entry called: " + last_entry_ + "): the " +
                        std::to_string(b.bytes) + "-byte buffer on " + Device(inner_.type(), b.device_index).str() +
                        " was written ";
      if (tail)
        msg += "past its end: bytes " + std::to_string(first) + " to " + std::to_string(last) + " after it";
      else
        msg += "before its start: bytes " + std::to_string(kGuard - last) + " to " + std::to_string(kGuard - first) +
               " before it";
      msg += " changed (the first now " + std::string(byte) + ")";
      violations_.push_back(std::move(msg));
      inner_.copy_bytes_host(guard, pattern_.data(), kGuard, /*to_host=*/false, b.device_index);  // report it once
    }
  }

  Backend& inner_;
  const bool every_entry_;
  std::vector<unsigned char> pattern_;
  mutable std::mutex mutex_;
  std::map<unsigned char*, Block> live_;
  std::vector<std::string> violations_;
  std::map<std::string, uint64_t> calls_;
  std::string last_entry_ = "none yet";
};

// The names of every compute entry of the Backend interface (EMBER_BACKEND_OPS).
inline std::vector<std::string> backend_entry_names() {
#define EMBER_ENTRY_NAME(name, params) #name,
  return {EMBER_BACKEND_OPS(EMBER_ENTRY_NAME)};
#undef EMBER_ENTRY_NAME
}

}  // namespace ember::test
