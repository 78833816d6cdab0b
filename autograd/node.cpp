// The graph-building helpers of node.h (edges, history, sum_to), ~Node without deep recursion, and
// SavedTensor's version check.
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

}  // namespace ember::autograd
