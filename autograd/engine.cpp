// The engine: topological sort from the root, reverse execution, gradient accumulation into leaves; and the
// Tensor methods backward/detach. Graph building and SavedTensor: node.cpp; hooks: hooks.cpp.
#include <algorithm>
#include <atomic>
#include <unordered_map>

#include "autograd/hooks.h"
#include "autograd/node.h"
#include "autograd/ops.h"
#include "core/raw.h"

namespace ember::autograd {

// --- the engine ----------------------------------------------------------------------------------------
class Engine {
 public:
  static void run(const Tensor& root, const Tensor& root_grad, bool retain_graph);

 private:
  static void topological_order(Node* root, std::vector<Node*>& order);
  static Tensor check_gradient(Tensor grad, const Edge& edge, const Node& node, size_t input);
  static void accumulate_into_leaf(TensorImpl& leaf, Tensor grad);
  // For the leaves with grad-ready hooks: (index in `order` of the last node with an edge to it, that
  // edge's index, the leaf), sorted — the hook fires after that node.
  struct Ready {
    size_t node, edge;
    std::shared_ptr<TensorImpl> leaf;
  };
  static std::vector<Ready> ready_points(const std::vector<Node*>& order);
  static void run_node(Node& node, Tensor grad, std::vector<Tensor>& grads, bool retain_graph);
};

std::vector<Engine::Ready> Engine::ready_points(const std::vector<Node*>& order) {
  std::unordered_map<TensorImpl*, Ready> last;
  for (size_t k = 0; k < order.size(); ++k) {
    const std::vector<Edge>& next = order[k]->next;
    for (size_t e = 0; e < next.size(); ++e) {
      const std::shared_ptr<TensorImpl>& leaf = next[e].leaf;
      if (leaf && leaf->grad_hooks && !leaf->grad_hooks->hooks.empty()) last[leaf.get()] = Ready{k, e, leaf};
    }
  }
  std::vector<Ready> out;
  out.reserve(last.size());
  for (auto& entry : last) out.push_back(std::move(entry.second));
  std::sort(out.begin(), out.end(), [](const Ready& a, const Ready& b) {
    return a.node != b.node ? a.node < b.node : a.edge < b.edge;
  });
  return out;
}

// Appends to `order` the nodes reachable from `root`, each after every node it sends gradients to
// (reverse DFS post-order). Iterative, so a graph thousands of ops deep does not overflow the stack.
void Engine::topological_order(Node* root, std::vector<Node*>& order) {
  static std::atomic<uint64_t> next_mark{1};
  const uint64_t mark = next_mark.fetch_add(1, std::memory_order_relaxed);
  thread_local std::vector<std::pair<Node*, size_t>> stack;  // node, index of its next edge to visit
  const size_t base = stack.size();  // non-zero only if a backward runs inside a backward
  root->visit_mark_ = mark;
  stack.emplace_back(root, 0);
  while (stack.size() > base) {
    auto& [node, edge] = stack.back();
    if (edge < node->next.size()) {
      Node* child = node->next[edge++].fn.get();
      if (child != nullptr && child->visit_mark_ != mark) {
        child->visit_mark_ = mark;
        stack.emplace_back(child, 0);
      }
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  std::reverse(order.begin(), order.end());
}

Tensor Engine::check_gradient(Tensor grad, const Edge& edge, const Node& node, size_t input) {
  EMBER_CHECK(grad.shape() == edge.shape, node.name(), " backward: returned a gradient of shape ", grad.shape(),
              " for input ", input, ", which has shape ", edge.shape, "; the op's backward is wrong");
  if (grad.dtype() != edge.dtype) grad = raw::to(grad, edge.dtype);
  if (grad.device() != edge.device) grad = raw::to(grad, edge.device);  // a CPU scalar used with GPU tensors
  return grad;
}

void Engine::accumulate_into_leaf(TensorImpl& leaf, Tensor grad) {
  if (leaf.grad == nullptr) {
    // Take the gradient as is when nothing else can see it; otherwise a later += would write into a
    // tensor shared with another leaf or another gradient (e.g. add's one grad for both inputs).
    const bool unshared = grad.impl_ptr().use_count() == 1 && grad.impl().storage.use_count() == 1;
    leaf.grad = (unshared && grad.is_contiguous()) ? grad.impl_ptr() : raw::clone(grad).impl_ptr();
  } else {
    raw::binary_(BinaryOp::add, Tensor(leaf.grad), grad);
  }
}

void Engine::run(const Tensor& root, const Tensor& root_grad, bool retain_graph) {
  AutoGradMode no_grad(false);  // backward formulas record nothing
  TensorImpl& root_impl = root.impl();
  std::vector<std::function<void()>> callbacks;  // queue_callback's, for this backward
  const detail::CallbackQueueScope callback_scope(&callbacks);
  const auto run_callbacks = [&callbacks] {
    for (size_t i = 0; i < callbacks.size(); ++i) {  // by index: a callback may queue another
      std::function<void()> fn = std::move(callbacks[i]);
      fn();
    }
  };
  if (!root_impl.grad_fn) {  // a leaf: its gradient is the given one
    accumulate_into_leaf(root_impl, root_grad);
    detail::fire_grad_ready_hooks(root.impl_ptr());
    run_callbacks();
    return;
  }
  // Scratch vectors reused across calls (swapped out, so a backward inside a backward gets its own).
  thread_local std::vector<Node*> order_buffer;
  thread_local std::vector<Tensor> grads_buffer;
  std::vector<Node*> order = std::move(order_buffer);
  std::vector<Tensor> grads = std::move(grads_buffer);
  order.clear();
  topological_order(root_impl.grad_fn.get(), order);
  root_impl.grad_fn->pending_grad_ = root_grad;
  std::vector<Ready> ready;
  if (detail::live_grad_hooks() > 0) ready = ready_points(order);
  size_t next_ready = 0;
  try {
    for (size_t k = 0; k < order.size(); ++k) {
      Node* node = order[k];
      Tensor grad = std::move(node->pending_grad_);
      node->pending_grad_ = Tensor();
      if (grad.defined()) run_node(*node, std::move(grad), grads, retain_graph);  // else: no gradient reached this node
      for (; next_ready < ready.size() && ready[next_ready].node == k; ++next_ready)
        detail::fire_grad_ready_hooks(ready[next_ready].leaf);
    }
    run_callbacks();
  } catch (...) {
    for (Node* node : order) node->pending_grad_ = Tensor();  // leave no half-run state behind
    throw;
  }
  grads.clear();
  order_buffer = std::move(order);
  grads_buffer = std::move(grads);
}

// Runs one node's backward and sends its input gradients on: into leaves, or summed into the pending
// gradient of the nodes that produced the inputs.
void Engine::run_node(Node& node, Tensor grad, std::vector<Tensor>& grads, bool retain_graph) {
  grads.assign(node.next.size(), Tensor());
  node.backward(grad, grads.data());
  grad = Tensor();  // a view of it may be among grads: unshared, it can become a leaf's .grad uncopied
  if (!retain_graph) node.release();
  for (size_t i = 0; i < grads.size(); ++i) {
    const Edge& edge = node.next[i];
    if (!edge.needed() || !grads[i].defined()) continue;
    Tensor g = check_gradient(std::move(grads[i]), edge, node, i);
    if (edge.leaf) {
      accumulate_into_leaf(*edge.leaf, std::move(g));
    } else if (edge.fn->pending_grad_.defined()) {
      edge.fn->pending_grad_ = raw::binary(BinaryOp::add, edge.fn->pending_grad_, g);
    } else {
      edge.fn->pending_grad_ = std::move(g);
    }
  }
}

}  // namespace ember::autograd

namespace ember {

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  const TensorImpl& i = impl();
  EMBER_CHECK(i.requires_grad, "backward: this tensor (shape ", i.shape, ") does not require grad and has no "
              "grad_fn, so there is nothing to differentiate; call requires_grad_() on the inputs you want "
              "gradients for before computing it, and do not compute it under NoGradGuard");
  Tensor grad = gradient;
  if (!grad.defined()) {
    EMBER_CHECK(numel() == 1, "backward: a gradient can be created implicitly only for a one-element tensor (a "
                "scalar loss); this one has shape ", i.shape, ": pass a gradient of the same shape, e.g. "
                "t.backward(ones_like(t)), or reduce it first (e.g. t.sum().backward())");
    grad = ones_like(*this);
  } else {
    EMBER_CHECK(grad.shape() == i.shape, "backward: the gradient has shape ", grad.shape(), " but the tensor has "
                "shape ", i.shape, "; they must match");
    EMBER_CHECK(grad.device() == device(), "backward: the gradient is on ", grad.device(), " but the tensor is on ",
                device(), "; move it with .to(...)");
    if (grad.dtype() != dtype()) grad = raw::to(grad, dtype());
  }
  autograd::Engine::run(*this, grad, retain_graph);
}

Tensor Tensor::detach() const { return raw::as_strided(*this, shape(), strides(), offset()); }

}  // namespace ember
