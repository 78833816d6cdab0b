// Grad-ready hooks (hooks.h): registration, removal, firing, and queue_callback's per-backward queue.
#include "autograd/hooks.h"

#include <atomic>

namespace ember::autograd {

namespace {
std::atomic<uint64_t> g_live_hooks{0};
std::atomic<uint64_t> g_next_hook_id{1};
thread_local std::vector<std::function<void()>>* t_callbacks = nullptr;  // the running backward's queue
}  // namespace

namespace detail {
uint64_t live_grad_hooks() { return g_live_hooks.load(std::memory_order_relaxed); }

void fire_grad_ready_hooks(const std::shared_ptr<TensorImpl>& leaf) {
  if (!leaf->grad_hooks || leaf->grad_hooks->hooks.empty()) return;
  const auto hooks = leaf->grad_hooks->hooks;  // a copy: a hook may remove itself
  const Tensor t(leaf);
  for (const auto& entry : hooks) entry.second(t);
}

CallbackQueueScope::CallbackQueueScope(std::vector<std::function<void()>>* queue) : previous_(t_callbacks) {
  t_callbacks = queue;
}
CallbackQueueScope::~CallbackQueueScope() { t_callbacks = previous_; }
}  // namespace detail

HookHandle add_grad_ready_hook(const Tensor& leaf, GradReadyHook hook) {
  EMBER_CHECK(leaf.defined() && leaf.requires_grad() && !leaf.impl().grad_fn, "add_grad_ready_hook: the tensor ",
              leaf.defined() ? "(shape " + leaf.shape().str() + ") " : std::string(),
              "is not a leaf that requires grad; hooks go on parameters (requires_grad_() tensors made by the "
              "user, not results of ops)");
  TensorImpl& impl = leaf.impl();
  if (!impl.grad_hooks) impl.grad_hooks = std::make_shared<GradHooks>();
  const uint64_t id = g_next_hook_id.fetch_add(1, std::memory_order_relaxed);
  impl.grad_hooks->hooks.emplace_back(id, std::move(hook));
  g_live_hooks.fetch_add(1, std::memory_order_relaxed);
  return HookHandle(leaf.impl_ptr(), id);
}

void HookHandle::remove() {
  if (id_ == 0) return;
  if (auto leaf = leaf_.lock(); leaf && leaf->grad_hooks) {
    auto& hooks = leaf->grad_hooks->hooks;
    std::erase_if(hooks, [this](const auto& entry) { return entry.first == id_; });
  }
  g_live_hooks.fetch_sub(1, std::memory_order_relaxed);  // a dead leaf's hooks died with it: count them out
  id_ = 0;
}

HookHandle& HookHandle::operator=(HookHandle&& other) noexcept {
  if (this != &other) {
    remove();
    leaf_ = std::move(other.leaf_);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

void queue_callback(std::function<void()> fn) {
  EMBER_CHECK(t_callbacks != nullptr, "autograd::queue_callback: called outside a backward; call it from a "
              "grad-ready hook (autograd/hooks.h)");
  t_callbacks->push_back(std::move(fn));
}

}  // namespace ember::autograd
