#pragma once
// Hooks into backward, for code that must act while backward runs (DistributedDataParallel starts a
// bucket's all-reduce as soon as its gradients are in, overlapping communication with the rest of the
// backward):
//
//   auto handle = autograd::add_grad_ready_hook(weight, [](const Tensor& w) { ... w.grad() is final ... });
//   autograd::queue_callback([] { ... });  // from inside a hook: runs when this backward has finished
//
// A grad-ready hook (PyTorch's register_post_accumulate_grad_hook) fires once per backward that reaches
// the leaf, after the last gradient that backward sends it has been accumulated into its .grad — for a
// tensor used several times in the graph, after the last use's contribution, not after the first. It runs
// on the backward's thread with grad mode off, in the engine's node order (so the same order on every
// process running the same graph). A leaf the graph depends on only through ops whose gradient turned out
// to be "none" still gets its hook, with its .grad as it was (possibly undefined).
// queue_callback() runs `fn` after the current backward's last node (and its hooks); called outside a
// backward it throws. If backward throws, queued callbacks are dropped.
// Cost when no hook is registered: one relaxed atomic load per backward.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/tensor.h"

namespace ember::autograd {

using GradReadyHook = std::function<void(const Tensor& leaf)>;

struct GradHooks {
  std::vector<std::pair<uint64_t, GradReadyHook>> hooks;  // id, hook; in registration order
};

// Removes its hook when remove() is called or it is destroyed (move-only).
class HookHandle {
 public:
  HookHandle() = default;
  HookHandle(std::weak_ptr<TensorImpl> leaf, uint64_t id) : leaf_(std::move(leaf)), id_(id) {}
  HookHandle(HookHandle&& other) noexcept : leaf_(std::move(other.leaf_)), id_(std::exchange(other.id_, 0)) {}
  HookHandle& operator=(HookHandle&& other) noexcept;
  HookHandle(const HookHandle&) = delete;
  HookHandle& operator=(const HookHandle&) = delete;
  ~HookHandle() { remove(); }
  void remove();

 private:
  std::weak_ptr<TensorImpl> leaf_;
  uint64_t id_ = 0;
};

// Throws ember::Error unless `leaf` is a leaf that requires grad (a parameter).
[[nodiscard]] HookHandle add_grad_ready_hook(const Tensor& leaf, GradReadyHook hook);
void queue_callback(std::function<void()> fn);

namespace detail {
// Number of grad-ready hooks alive in the process: the engine skips all hook bookkeeping when it is 0.
uint64_t live_grad_hooks();
// The engine's side: runs `leaf`'s hooks once its gradient is complete, and points queue_callback() at the
// running backward's queue for the scope's lifetime (restoring the outer backward's queue after it).
void fire_grad_ready_hooks(const std::shared_ptr<TensorImpl>& leaf);
class CallbackQueueScope {
 public:
  explicit CallbackQueueScope(std::vector<std::function<void()>>* queue);
  ~CallbackQueueScope();
  CallbackQueueScope(const CallbackQueueScope&) = delete;
  CallbackQueueScope& operator=(const CallbackQueueScope&) = delete;

 private:
  std::vector<std::function<void()>>* previous_;
};
}  // namespace detail

}  // namespace ember::autograd
