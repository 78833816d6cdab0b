#pragma once
// Internal to onnx/: the graph being built and the converter table. Each converter turns one Module type into
// ONNX nodes; Graph gives them the nodes, initializers and constants, named so that a file reads well in
// Netron: node "<layer path>/<Op>", value "<layer path>/<Op>_out", constant "<layer path>/<what>".
#include <functional>
#include <map>
#include <string>
#include <typeindex>
#include <vector>

#include <onnx/onnx_pb.h>

#include "nn/module.h"

namespace ember::onnx::detail {

// A value of the graph and Ember's value of it on the example input (what gives converters the static dims).
struct Value {
  std::string name;
  Tensor example;
};

void attr_int(::onnx::NodeProto& node, const std::string& name, int64_t v);
void attr_float(::onnx::NodeProto& node, const std::string& name, double v);
void attr_ints(::onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& v);
void attr_str(::onnx::NodeProto& node, const std::string& name, const std::string& v);

class Graph;
// Writes the nodes of `module` (at `path`, "" for the root) on input `in`; returns the output value's name.
using Converter = std::function<std::string(Graph&, nn::Module&, const std::string& path, const Value& in)>;
struct LayerEntry {
  std::string type_name;  // as Module::type_name() says it, for messages and exportable_layers()
  Converter convert;
};
using LayerTable = std::map<std::type_index, LayerEntry>;

// Registers converter `fn` for exactly the type M (a subclass is a different type and is refused).
template <typename M, typename Fn>
void add_layer(LayerTable& table, const std::string& type_name, Fn fn) {
  table[std::type_index(typeid(M))] = {type_name, [fn](Graph& g, nn::Module& m, const std::string& path, const Value& in) {
                                         return fn(g, static_cast<M&>(m), path, in);
                                       }};
}
// The entries of layers.cpp (feed-forward and convolutional layers, activations, containers) and
// layers_sequence.cpp (embeddings, attention, transformer, recurrent layers, whole language models).
void add_basic_layers(LayerTable& table);
void add_sequence_layers(LayerTable& table);
const LayerTable& layer_table();

// "(model)" for the root, else the dotted path: what error messages call a layer.
std::string where(const std::string& path);
std::string join_path(const std::string& path, const std::string& child);
// Throws the error of a layer whose settings ONNX (or this exporter) cannot express: names the layer and why.
[[noreturn]] void unsupported(const std::string& path, const nn::Module& m, const std::string& why);

class Graph {
 public:
  Graph(::onnx::GraphProto& proto, int64_t opset, const nn::Module& root);
  int64_t opset() const { return opset_; }

  // Adds node `op` on `inputs` ("" for an optional input left out) with `outputs` outputs.
  ::onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs, const std::string& scope,
                          int outputs = 1);
  // The same for a one-output node; returns its output.
  std::string op(const std::string& op, const std::vector<std::string>& inputs, const std::string& scope);

  // A model tensor as an initializer, named by its state_dict name (once: a tied tensor is one initializer);
  // a tensor outside state_dict (a non-persistent buffer) is named `fallback`.
  std::string weight(const Tensor& t, const std::string& fallback);
  // Constants of the graph's own (shapes, axes, scalars, computed tables): initializers "<scope>/<what>".
  std::string ints(const std::vector<int64_t>& values, const std::string& scope, const std::string& what);
  std::string scalar(double value, const std::string& scope, const std::string& what);  // f32, 0-d
  std::string constant(const Tensor& t, const std::string& scope, const std::string& what);

  // --- building blocks several converters share ---
  // y = x·Wᵀ + b for W [out, in] (b may be undefined): Gemm for rank-2 x, else MatMul on Transpose(W) and Add.
  std::string linear(const std::string& x, int64_t rank, const Tensor& w, const Tensor& b, const std::string& scope);
  // Dim `axis` of x's shape as a 1-D i64 tensor of one element.
  std::string dim(const std::string& x, int64_t axis, const std::string& scope);
  // Rows [0, n) of table (n: a 1-D one-element i64 value).
  std::string first_rows(const std::string& table, const std::string& n, const std::string& scope);
  // Layer norm over the last `dims` dims (weight/bias may be undefined): LayerNormalization from opset 17,
  // the mean/variance decomposition below.
  std::string layer_norm(const std::string& x, int64_t dims, const Tensor& w, const Tensor& b, double eps,
                         const std::string& scope);

  // GELU: exact 0.5·x·(1 + erf(x/√2)), or the tanh approximation (ONNX's Gelu op is opset 20).
  std::string gelu(const std::string& x, bool tanh_approximation, const std::string& scope);

  // Runs the table's converter for `m` at `path`; the result carries Ember's output on in.example.
  Value convert(nn::Module& m, const std::string& path, const Value& in);

  int64_t node_count() const { return proto_.node_size(); }

 private:
  std::string unique(const std::string& base);
  std::string add_initializer(const Tensor& t, const std::string& name);

  ::onnx::GraphProto& proto_;
  int64_t opset_;
  std::map<const TensorImpl*, std::string> state_names_;  // state_dict's first name of each tensor
  std::map<const TensorImpl*, std::string> written_;      // initializers already in the graph
  std::map<std::string, int> used_;                        // names taken, for unique()
};

}  // namespace ember::onnx::detail
