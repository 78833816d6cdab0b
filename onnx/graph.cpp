#include "onnx/graph.h"

#include <cmath>

#include "onnx/export.h"

namespace ember::onnx::detail {

void attr_int(::onnx::NodeProto& node, const std::string& name, int64_t v) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}
void attr_float(::onnx::NodeProto& node, const std::string& name, double v) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(static_cast<float>(v));
}
void attr_ints(::onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void attr_str(::onnx::NodeProto& node, const std::string& name, const std::string& v) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::STRING);
  a->set_s(v);
}

const LayerTable& layer_table() {
  static const LayerTable table = [] {
    LayerTable t;
    add_basic_layers(t);
    add_sequence_layers(t);
    return t;
  }();
  return table;
}

std::string where(const std::string& path) { return path.empty() ? "(model)" : path; }
std::string join_path(const std::string& path, const std::string& child) {
  return path.empty() ? child : path + "." + child;
}

void unsupported(const std::string& path, const nn::Module& m, const std::string& why) {
  ember::detail::throw_error("ONNX export: layer '", where(path), "' (", m.type_name(), "): ", why);
}

Graph::Graph(::onnx::GraphProto& proto, int64_t opset, const nn::Module& root) : proto_(proto), opset_(opset) {
  // Every name of a tensor, the first one as state_dict (and so the safetensors file) spells it.
  for (const auto& [name, t] : root.state_dict()) state_names_.emplace(&t.impl(), name);
  for (const auto& [name, t] : root.named_parameters()) state_names_.emplace(&t.impl(), name);
  for (const auto& [name, t] : root.named_buffers()) state_names_.emplace(&t.impl(), name);
}

std::string Graph::unique(const std::string& base) {
  const int n = used_[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

::onnx::NodeProto& Graph::node(const std::string& op, const std::vector<std::string>& inputs, const std::string& scope,
                               int outputs) {
  ::onnx::NodeProto& n = *proto_.add_node();
  n.set_op_type(op);
  n.set_name(unique(scope.empty() ? op : scope + "/" + op));
  for (const std::string& in : inputs) n.add_input(in);
  for (int i = 0; i < outputs; ++i) n.add_output(n.name() + (outputs == 1 ? "_out" : "_out" + std::to_string(i)));
  return n;
}

std::string Graph::op(const std::string& op, const std::vector<std::string>& inputs, const std::string& scope) {
  return node(op, inputs, scope).output(0);
}

std::string Graph::add_initializer(const Tensor& tensor, const std::string& name) {
  const Tensor t = tensor.to(kCPU).contiguous();
  ::onnx::TensorProto& p = *proto_.add_initializer();
  p.set_name(name);
  for (int64_t s : t.shape()) p.add_dims(s);
  if (t.dtype() == DType::f32) {
    p.set_data_type(::onnx::TensorProto::FLOAT);
    const std::vector<float> v = t.to_vector<float>();
    p.set_raw_data(v.data(), v.size() * sizeof(float));  // ONNX raw data is little-endian, as x86/ARM memory
  } else if (t.dtype() == DType::i64) {
    p.set_data_type(::onnx::TensorProto::INT64);
    const std::vector<int64_t> v = t.to_vector<int64_t>();
    p.set_raw_data(v.data(), v.size() * sizeof(int64_t));
  } else {
    ember::detail::throw_error("ONNX export: tensor '", name, "' is ", dtype_name(t.dtype()),
                        "; the exporter writes f32 models: convert the model with module.to(DType::f32)");
  }
  return name;
}

std::string Graph::weight(const Tensor& t, const std::string& fallback) {
  if (const auto it = written_.find(&t.impl()); it != written_.end()) return it->second;
  const auto named = state_names_.find(&t.impl());
  const std::string name = named != state_names_.end() ? named->second : unique(fallback);
  used_[name]++;
  written_.emplace(&t.impl(), name);
  return add_initializer(t, name);
}

std::string Graph::ints(const std::vector<int64_t>& values, const std::string& scope, const std::string& what) {
  return add_initializer(from_vector(values), unique(scope + "/" + what));
}

std::string Graph::scalar(double value, const std::string& scope, const std::string& what) {
  return add_initializer(scalar_tensor(value), unique(scope + "/" + what));
}

std::string Graph::constant(const Tensor& t, const std::string& scope, const std::string& what) {
  return add_initializer(t, unique(scope + "/" + what));
}

std::string Graph::linear(const std::string& x, int64_t rank, const Tensor& w, const Tensor& b, const std::string& scope) {
  const std::string wn = weight(w, scope + ".weight");
  if (rank == 2) {
    // Gemm takes W [out, in] as stored (transB), so the initializer is the state_dict tensor as is.
    ::onnx::NodeProto& n = node("Gemm", b.defined() ? std::vector<std::string>{x, wn, weight(b, scope + ".bias")}
                                                    : std::vector<std::string>{x, wn},
                                scope);
    attr_int(n, "transB", 1);
    return n.output(0);
  }
  ::onnx::NodeProto& t = node("Transpose", {wn}, scope);
  attr_ints(t, "perm", {1, 0});
  const std::string y = op("MatMul", {x, t.output(0)}, scope);
  return b.defined() ? op("Add", {y, weight(b, scope + ".bias")}, scope) : y;
}

std::string Graph::dim(const std::string& x, int64_t axis, const std::string& scope) {
  const std::string shape = op("Shape", {x}, scope);
  ::onnx::NodeProto& n = node("Gather", {shape, ints({axis}, scope, "axis")}, scope);
  attr_int(n, "axis", 0);
  return n.output(0);
}

std::string Graph::first_rows(const std::string& table, const std::string& n, const std::string& scope) {
  return op("Slice", {table, ints({0}, scope, "start"), n, ints({0}, scope, "axes")}, scope);
}

std::string Graph::layer_norm(const std::string& x, int64_t dims, const Tensor& w, const Tensor& b, double eps,
                              const std::string& scope) {
  if (opset_ >= 17 && w.defined()) {  // (LayerNormalization needs a scale: a layer without one is decomposed)
    const std::string scale = weight(w, scope + ".weight");
    ::onnx::NodeProto& n = node("LayerNormalization", b.defined() ? std::vector<std::string>{x, scale, weight(b, scope + ".bias")}
                                                                  : std::vector<std::string>{x, scale},
                                scope);
    attr_int(n, "axis", -dims);
    attr_float(n, "epsilon", eps);
    return n.output(0);
  }
  // (x - mean) / sqrt(var + eps) · w + b, mean and (biased) variance over the last `dims` dims.
  std::vector<int64_t> axes;
  for (int64_t i = dims; i >= 1; --i) axes.push_back(-i);
  ::onnx::NodeProto& mean = node("ReduceMean", {x}, scope);
  attr_ints(mean, "axes", axes);
  const std::string centred = op("Sub", {x, mean.output(0)}, scope);
  ::onnx::NodeProto& var = node("ReduceMean", {op("Mul", {centred, centred}, scope)}, scope);
  attr_ints(var, "axes", axes);
  const std::string stdev = op("Sqrt", {op("Add", {var.output(0), scalar(eps, scope, "eps")}, scope)}, scope);
  std::string y = op("Div", {centred, stdev}, scope);
  if (w.defined()) y = op("Mul", {y, weight(w, scope + ".weight")}, scope);
  if (b.defined()) y = op("Add", {y, weight(b, scope + ".bias")}, scope);
  return y;
}

std::string Graph::gelu(const std::string& x, bool tanh_approximation, const std::string& scope) {
  std::string inner;
  if (tanh_approximation) {  // tanh(√(2/π)·(x + 0.044715·x³))
    const std::string cube = op("Mul", {op("Mul", {x, x}, scope), x}, scope);
    const std::string sum = op("Add", {x, op("Mul", {cube, scalar(0.044715, scope, "c")}, scope)}, scope);
    inner = op("Tanh", {op("Mul", {sum, scalar(std::sqrt(2.0 / M_PI), scope, "sqrt_2_over_pi")}, scope)}, scope);
  } else {
    inner = op("Erf", {op("Mul", {x, scalar(M_SQRT1_2, scope, "inv_sqrt2")}, scope)}, scope);
  }
  const std::string half_x = op("Mul", {x, scalar(0.5, scope, "half")}, scope);
  return op("Mul", {half_x, op("Add", {inner, scalar(1.0, scope, "one")}, scope)}, scope);
}

Value Graph::convert(nn::Module& m, const std::string& path, const Value& in) {
  const auto it = layer_table().find(std::type_index(typeid(m)));
  if (it == layer_table().end()) {
    std::string known;
    for (const std::string& type : exportable_layers()) known += (known.empty() ? "" : ", ") + type;
    unsupported(path, m,
                "no ONNX mapping for this module type; the exportable layers are " + known +
                    "; Ember does not trace a forward(): build the model from these (as nn/registry.h does) or add "
                    "the type's converter to onnx/layers.cpp (docs/onnx.md)");
  }
  Value out;
  out.name = it->second.convert(*this, m, path, in);
  out.example = m.forward(in.example);
  return out;
}

}  // namespace ember::onnx::detail
