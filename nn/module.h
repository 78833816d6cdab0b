#pragma once
// nn::Module: the base of every layer and model (LibTorch's torch::nn::Module, fewer templates).
//
//   struct Net : nn::Module {
//     std::shared_ptr<nn::Linear> fc1, fc2;
//     Net() : fc1(register_module("fc1", std::make_shared<nn::Linear>(784, 256))),
//             fc2(register_module("fc2", std::make_shared<nn::Linear>(256, 10))) {}
//     Tensor forward(const Tensor& x) override { return fc2->forward(relu(fc1->forward(x.flatten(1)))); }
//   };
//
// Parameters, buffers and children live in insertion-ordered lists; names join with dots
// ("features.0.weight"), as PyTorch's state_dict keys. Moving a module (to(Device), to(DType)) swaps the
// data inside each parameter's TensorImpl, so Tensor handles taken before the move stay valid.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/ops.h"
#include "core/named_tensors.h"
#include "core/tensor.h"

namespace ember::nn {

using ember::NamedTensors;

class Module : public std::enable_shared_from_this<Module> {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The layer's kind ("Linear"), and a one-line description of its configuration for summaries
  // ("Linear(in=784, out=256)").
  virtual std::string type_name() const { return "Module"; }
  virtual std::string describe() const { return type_name(); }

  // Refuses a floating input of another dtype than `like` (one of this module's own parameters or buffers),
  // naming the module and the fix: "LSTM: the input is f32 but the layer's parameters are f64; convert the
  // input with .to(DType::f64) or the layer with .to(DType::f32)". Layers call it first in forward, so a
  // mismatch is never reported by an op inside them. Integer inputs (token ids, indices) pass.
  void check_input_dtype(const Tensor& x, const Tensor& like) const;

  // One tensor in, one out: what Sequential chains. Modules with other signatures define their own.
  virtual Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x) { return forward(x); }

  // Registration. Names must be non-empty, without dots, and unique within this module.
  Tensor& register_parameter(const std::string& name, Tensor value, bool requires_grad = true);
  // A buffer is state that is not trained (running statistics, masks). persistent = false keeps it out of
  // state_dict() (so out of checkpoints, and load_state_dict does not expect it), as PyTorch's; buffers()
  // still lists it and to() still moves it.
  Tensor& register_buffer(const std::string& name, Tensor value, bool persistent = true);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }

  // Recursive views (children's entries after this module's own, depth first, in registration order).
  // Weight tying: a tensor registered in several places (the same TensorImpl, e.g. a language model's
  // output layer sharing the token embedding's weight) is listed once, under the first name met, as
  // PyTorch's remove_duplicate — so an optimizer over parameters() updates it once.
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  NamedTensors named_buffers(bool recurse = true) const;
  std::vector<std::shared_ptr<Module>> children() const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& named_children() const { return children_; }
  int64_t parameter_count() const;  // elements in all parameters

  // Training mode (dropout, batch norm), recursively.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Moves/converts every parameter and buffer in place (floating buffers only, for to(DType)).
  void to(Device device);
  void to(DType dtype);
  // Clears gradients: to undefined (PyTorch's default), or to zeros with set_to_none = false.
  void zero_grad(bool set_to_none = true);

  // Parameters then persistent buffers, named recursively, sharing storage with the module. A tied tensor
  // is saved once, under its first name (safetensors files cannot hold two names for one tensor).
  NamedTensors state_dict() const;
  // Copies values in (converting device; shapes and dtypes must match). strict: every key must match;
  // the error lists missing, unexpected, mis-shaped keys and dtype mismatches together. The other names of
  // a tied tensor are neither required nor rejected (PyTorch's files list every name; a given one must
  // have the tensor's shape and is not copied: the first name's value is the one loaded). Returns the keys it did not use.
  std::vector<std::string> load_state_dict(const NamedTensors& state, bool strict = true);

 private:
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  void check_name(const std::string& name, const char* what) const;
  enum class Kind { parameters, buffers, persistent_buffers };
  // Appends the entries of `kind`; with `seen`, only tensors not in it (and adds them): the de-duplicated view.
  void collect(const std::string& prefix, bool recurse, Kind kind, NamedTensors& out,
               std::vector<const TensorImpl*>* seen) const;

  NamedTensors parameters_;
  NamedTensors buffers_;
  std::vector<std::string> non_persistent_;  // names in buffers_ that state_dict() leaves out
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// A text table of the model: one row per leaf module (name, description, output shape, parameters) for an
// input of `input_shape` (batch dim included), then the totals — like torchsummary.
std::string summary(Module& model, const Shape& input_shape, DType dtype = DType::f32);

}  // namespace ember::nn
