#pragma once
// The autograd graph: Nodes (one per recorded op) linked by Edges to the Nodes that produced their
// inputs, or to the leaf tensors themselves. The engine (autograd/engine.cpp) runs it backwards.
//
// Writing a differentiable op (what every op in autograd/functions_*.cpp does):
//
//   struct ScaleBackward : autograd::Node {                  // one Node subclass per op family
//     double factor = 1;
//     std::string_view name() const override { return "scale"; }
//     void backward(const Tensor& grad, Tensor* grad_inputs) override {
//       if (needs_grad(0)) grad_inputs[0] = grad * factor;   // the gradient for input 0
//     }
//   };
//   Tensor scale(const Tensor& x, double factor) {
//     Tensor y = raw::unary(...);                            // forward: forward-only raw ops
//     if (auto node = autograd::make_node<ScaleBackward>(x)) {  // nullptr: no graph needed
//       node->factor = factor;
//       autograd::set_history(y, node);
//     }
//     return y;
//   }
//
// Backward formulas run with grad mode off (no graph of the backward is recorded: no double backward).
// Nodes have exactly one differentiable output.
#include <memory>
#include <string_view>
#include <vector>

#include "autograd/grad_mode.h"
#include "core/tensor.h"

namespace ember::autograd {

class Node;

// Where the gradient of one input goes: the Node that produced the input, or the input itself when it
// is a leaf that requires grad. Neither is set for an input that needs no gradient.
struct Edge {
  std::shared_ptr<Node> fn;
  std::shared_ptr<TensorImpl> leaf;
  Shape shape;               // the input's shape, dtype and device: what its gradient must have
  DType dtype = DType::f32;
  Device device;

  bool needed() const { return fn != nullptr || leaf != nullptr; }
};

// A tensor a backward formula needs, with the storage version it had when saved. unpack() throws when
// the tensor was modified in place since (its gradient would be silently wrong) or already released.
// An op's own output is saved as a fresh alias without grad_fn, so the graph has no reference cycle.
class SavedTensor {
 public:
  SavedTensor() = default;
  void save(const Tensor& t, bool is_output = false);
  Tensor unpack(const Node& owner) const;
  void release();  // after a backward without retain_graph
  bool defined() const { return tensor_.defined(); }

 private:
  Tensor tensor_;
  uint64_t version_ = 0;
  bool released_ = false;
};

// Releases each of a node's saved tensors: `void release() override { release_all(x, w); }`.
template <class... Saved>
void release_all(Saved&... saved) {
  (saved.release(), ...);
}

class Node {
 public:
  virtual ~Node();  // iterative: freeing a graph thousands of ops deep must not overflow the stack
  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // The op's name, for error messages ("mul", "matmul").
  virtual std::string_view name() const = 0;
  // grad: the gradient of the op's output (the output's shape). Writes grad_inputs[i] for every input i
  // with needs_grad(i); leaving one undefined means "zero". The engine checks shapes and converts dtypes.
  virtual void backward(const Tensor& grad, Tensor* grad_inputs) = 0;
  // Drops the saved tensors; called after a backward that does not retain the graph.
  virtual void release() {}

  bool needs_grad(size_t input) const { return next[input].needed(); }

  std::vector<Edge> next;  // one per input of the op, in order

 private:
  friend class Engine;
  Tensor pending_grad_;     // sum of the gradients received so far during a backward
  uint64_t visit_mark_ = 0;  // the engine's DFS mark
};

// The edge for one input: to its grad_fn, to itself (a leaf that requires grad), or empty.
Edge edge_to(const Tensor& input);

// Whether an op on these inputs records a graph: grad mode is on and one of them requires grad.
template <typename... Ts>
bool needs_graph(const Ts&... inputs) {
  return GradMode::is_enabled() && (inputs.requires_grad() || ...);
}
bool needs_graph(const std::vector<Tensor>& inputs);

// A new node of type F with one edge per input, or nullptr when no graph is needed.
template <typename F, typename... Ts>
std::shared_ptr<F> make_node(const Ts&... inputs) {
  if (!needs_graph(inputs...)) return nullptr;
  auto node = std::make_shared<F>();
  node->next.reserve(sizeof...(inputs));
  (node->next.push_back(edge_to(inputs)), ...);
  return node;
}
template <typename F>
std::shared_ptr<F> make_node(const std::vector<Tensor>& inputs) {
  if (!needs_graph(inputs)) return nullptr;
  auto node = std::make_shared<F>();
  node->next.reserve(inputs.size());
  for (const Tensor& t : inputs) node->next.push_back(edge_to(t));
  return node;
}

// Makes `output` the result of `node`: it requires grad and backward flows through the node.
// NOTE: `output` must be a new TensorImpl, never one of the op's inputs returned unchanged.
void set_history(const Tensor& output, std::shared_ptr<Node> node);

// Sums `grad` down to `shape` over the dims that broadcasting added or expanded (shape must broadcast
// to grad's shape). Returns grad itself when the shapes already match.
Tensor sum_to(const Tensor& grad, const Shape& shape);

}  // namespace ember::autograd
