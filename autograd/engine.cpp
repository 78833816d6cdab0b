// The engine: topological sort from the root, reverse execution, gradient accumulation into leaves.
// Also the graph-building helpers of node.h, SavedTensor, and the Tensor methods backward/detach.
#include <algorithm>
#include <atomic>

#include "autograd/node.h"
#include "autograd/ops.h"
#include "core/raw.h"

namespace ember::autograd {

// --- graph building ---------------------------------------------------------------------------------
Edge edge_to(const Tensor& input) {
  Edge e;
  const TensorImpl& impl = input.impl();
  if (!impl.requires_grad) return e;
  if (impl.grad_fn) e.fn = impl.grad_fn;
  else e.leaf = input.impl_ptr();
  e.shape = impl.shape;
  e.dtype = impl.dtype;
  e.device = impl.storage->device();
  return e;
}

bool needs_graph(const std::vector<Tensor>& inputs) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.requires_grad()) return true;
  return false;
}

void set_history(const Tensor& output, std::shared_ptr<Node> node) {
  TensorImpl& impl = output.impl();
  impl.requires_grad = true;
  impl.grad_fn = std::move(node);
  impl.output_nr = 0;
}

Tensor sum_to(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const int lead = grad.dim() - shape.size();
  Shape dims;
  for (int d = 0; d < lead; ++d) dims.push_back(d);
  for (int d = 0; d < shape.size(); ++d)
    if (shape[d] == 1 && grad.shape()[lead + d] != 1) dims.push_back(lead + d);
  if (dims.empty()) return grad.reshape(shape);  // only size-1 dims differ
  return sum(grad, dims, /*keepdim=*/true).reshape(shape);
}

// A recursive destructor (node → its inputs' nodes → ...) would be one stack frame per op of a chain.
// Instead the outermost ~Node on a thread collects the nodes it solely owns into a list and destroys them
// one at a time; a ~Node running inside it only hands its own sole inputs to that list.
Node::~Node() {
  thread_local std::vector<std::shared_ptr<Node>>* pending = nullptr;  // the outermost ~Node's list
  const auto hand_over_sole_inputs = [](Node& node, std::vector<std::shared_ptr<Node>>& list) {
    for (Edge& e : node.next)
      if (e.fn != nullptr && e.fn.use_count() == 1) list.push_back(std::move(e.fn));
  };
  if (pending != nullptr) {
    hand_over_sole_inputs(*this, *pending);
    return;
  }
  std::vector<std::shared_ptr<Node>> list;  // NOTE: not a reused thread_local: graphs held by static
  pending = &list;                           // tensors die after thread_locals do
  hand_over_sole_inputs(*this, list);
  while (!list.empty()) {
    std::shared_ptr<Node> node = std::move(list.back());
    list.pop_back();
    node.reset();  // its ~Node (nested) appends its own sole inputs to `list`
  }
  pending = nullptr;
}

// --- saved tensors -----------------------------------------------------------------------------------
void SavedTensor::save(const Tensor& t, bool is_output) {
  // An output saved as itself would own its own grad_fn (a cycle): keep an alias of its data instead.
  tensor_ = is_output ? raw::as_strided(t, t.shape(), t.strides(), t.offset()) : t;
  version_ = t.impl().storage->version();
  released_ = false;
}

Tensor SavedTensor::unpack(const Node& owner) const {
  EMBER_CHECK(!released_, owner.name(), " backward: its saved tensors were already freed by an earlier backward(); "
              "call backward(grad, /*retain_graph=*/true) the first time to run backward through a graph twice");
  const uint64_t now = tensor_.impl().storage->version();
  EMBER_CHECK(now == version_, owner.name(), " backward: a tensor it saved (shape ", tensor_.shape(), ", ",
              dtype_name(tensor_.dtype()), ") was modified by an in-place operation after the forward (version ",
              version_, " when saved, ", now, " now), so its gradient would be wrong; clone() the tensor before "
              "modifying it in place, or do the in-place op after backward()");
  return tensor_;
}

void SavedTensor::release() {
  tensor_ = Tensor();
  released_ = true;
}

// --- the engine ----------------------------------------------------------------------------------------
class Engine {
 public:
  static void run(const Tensor& root, const Tensor& root_grad, bool retain_graph);

 private:
  static void topological_order(Node* root, std::vector<Node*>& order);
  static Tensor check_gradient(Tensor grad, const Edge& edge, const Node& node, size_t input);
  static void accumulate_into_leaf(TensorImpl& leaf, Tensor grad);
};

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
  if (!root_impl.grad_fn) {  // a leaf: its gradient is the given one
    accumulate_into_leaf(root_impl, root_grad);
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
  try {
    for (Node* node : order) {
      Tensor grad = std::move(node->pending_grad_);
      node->pending_grad_ = Tensor();
      if (!grad.defined()) continue;  // no gradient reached this node
      grads.assign(node->next.size(), Tensor());
      node->backward(grad, grads.data());
      grad = Tensor();  // a view of it may be among grads: unshared, it can become a leaf's .grad uncopied
      if (!retain_graph) node->release();
      for (size_t i = 0; i < grads.size(); ++i) {
        const Edge& edge = node->next[i];
        if (!edge.needed() || !grads[i].defined()) continue;
        Tensor g = check_gradient(std::move(grads[i]), edge, *node, i);
        if (edge.leaf) {
          accumulate_into_leaf(*edge.leaf, std::move(g));
        } else if (edge.fn->pending_grad_.defined()) {
          edge.fn->pending_grad_ = raw::binary(BinaryOp::add, edge.fn->pending_grad_, g);
        } else {
          edge.fn->pending_grad_ = std::move(g);
        }
      }
    }
  } catch (...) {
    for (Node* node : order) node->pending_grad_ = Tensor();  // leave no half-run state behind
    throw;
  }
  grads.clear();
  order_buffer = std::move(order);
  grads_buffer = std::move(grads);
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
