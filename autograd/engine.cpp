// The engine: topological sort from the root, reverse execution, gradient accumulation into leaves.
// Also the graph-building helpers of node.h, SavedTensor, and the Tensor methods backward/detach.
#include <algorithm>
#include <atomic>
#include <unordered_map>

#include "autograd/hooks.h"
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

// --- hooks (hooks.h) ---------------------------------------------------------------------------------
namespace {
std::atomic<uint64_t> g_live_hooks{0};
std::atomic<uint64_t> g_next_hook_id{1};
thread_local std::vector<std::function<void()>>* t_callbacks = nullptr;  // the running backward's queue

void fire_grad_ready_hooks(const std::shared_ptr<TensorImpl>& leaf) {
  if (!leaf->grad_hooks || leaf->grad_hooks->hooks.empty()) return;
  const auto hooks = leaf->grad_hooks->hooks;  // a copy: a hook may remove itself
  const Tensor t(leaf);
  for (const auto& entry : hooks) entry.second(t);
}
}  // namespace

namespace detail {
uint64_t live_grad_hooks() { return g_live_hooks.load(std::memory_order_relaxed); }
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
  struct CallbackScope {
    std::vector<std::function<void()>>* previous = t_callbacks;
    explicit CallbackScope(std::vector<std::function<void()>>* mine) { t_callbacks = mine; }
    ~CallbackScope() { t_callbacks = previous; }
  } callback_scope(&callbacks);
  const auto run_callbacks = [&callbacks] {
    for (size_t i = 0; i < callbacks.size(); ++i) {  // by index: a callback may queue another
      std::function<void()> fn = std::move(callbacks[i]);
      fn();
    }
  };
  if (!root_impl.grad_fn) {  // a leaf: its gradient is the given one
    accumulate_into_leaf(root_impl, root_grad);
    fire_grad_ready_hooks(root.impl_ptr());
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
        fire_grad_ready_hooks(ready[next_ready].leaf);
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
