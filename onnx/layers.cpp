// The converters of the feed-forward and convolutional layers, the activations and Sequential: one entry per
// Module type (graph.h's table). Shapes: N batch, C channels, H, W spatial; the example value gives the static
// dims, dim 0 (N) stays symbolic.
#include <string>
#include <vector>

#include "nn/layers.h"
#include "onnx/graph.h"

namespace ember::onnx::detail {
namespace {

using nn::Module;

// A node with one input and no attributes (Relu, Tanh, Identity, ...).
template <typename M>
void add_unary(LayerTable& t, const std::string& type_name, const char* op) {
  add_layer<M>(t, type_name, [op](Graph& g, M&, const std::string& path, const Value& in) { return g.op(op, {in.name}, path); });
}

std::vector<int64_t> both(const nn::ExpandingArray<2>& a) { return {a[0], a[1]}; }
// ONNX pads: the starts of every spatial dim, then the ends (PyTorch pads both sides alike).
std::vector<int64_t> pads(const nn::ExpandingArray<2>& p) { return {p[0], p[1], p[0], p[1]}; }

void need_rank(const std::string& path, const Module& m, const Value& in, int64_t rank, const char* layout) {
  if (in.example.dim() != rank)
    unsupported(path, m, "export needs a batched input " + std::string(layout) + ", got " + in.example.shape().str());
}

::onnx::NodeProto& pool(Graph& g, const char* op, const nn::Pool2dOptions& o, const std::string& x, const std::string& path) {
  const nn::ExpandingArray<2> stride = o.stride()[0] == 0 ? o.kernel_size() : o.stride();
  ::onnx::NodeProto& n = g.node(op, {x}, path);
  attr_ints(n, "kernel_shape", both(o.kernel_size()));
  attr_ints(n, "strides", both(stride));
  attr_ints(n, "pads", pads(o.padding()));
  if (o.ceil_mode()) attr_int(n, "ceil_mode", 1);
  return n;
}

// Adaptive pooling whose windows are all alike (H, W multiples of the output): a plain pooling, or the global
// one for a 1×1 output. Other sizes have windows of different sizes, which ONNX's pooling cannot express.
std::string adaptive_pool(Graph& g, const Module& m, bool max, int64_t out_h, int64_t out_w, const std::string& path,
                          const Value& in) {
  need_rank(path, m, in, 4, "[N, C, H, W]");
  const int64_t h = in.example.size(2), w = in.example.size(3);
  if (out_h == 1 && out_w == 1) return g.op(max ? "GlobalMaxPool" : "GlobalAveragePool", {in.name}, path);
  if (h % out_h != 0 || w % out_w != 0)
    unsupported(path, m, "pooling " + std::to_string(h) + "x" + std::to_string(w) + " to " + std::to_string(out_h) + "x" +
                             std::to_string(out_w) + " needs windows of different sizes, which ONNX pooling cannot "
                             "express; choose an output size that divides the input's (as PyTorch's exporter requires)");
  ::onnx::NodeProto& n = g.node(max ? "MaxPool" : "AveragePool", {in.name}, path);
  attr_ints(n, "kernel_shape", {h / out_h, w / out_w});
  attr_ints(n, "strides", {h / out_h, w / out_w});
  return n.output(0);
}

std::string batch_norm(Graph& g, nn::BatchNorm& m, const std::string& path, const Value& in) {
  if (in.example.dim() < 2) unsupported(path, m, "export needs a batched input [N, C, ...], got " + in.example.shape().str());
  const int64_t c = m.num_features;
  const std::string scale = m.weight.defined() ? g.weight(m.weight, path + ".weight") : g.constant(ones({c}), path, "scale");
  const std::string shift = m.bias.defined() ? g.weight(m.bias, path + ".bias") : g.constant(zeros({c}), path, "shift");
  ::onnx::NodeProto& n = g.node("BatchNormalization",
                                {in.name, scale, shift, g.weight(m.running_mean, path + ".running_mean"),
                                 g.weight(m.running_var, path + ".running_var")},
                                path);
  attr_float(n, "epsilon", m.eps);
  return n.output(0);
}

// Instance norm in eval mode: InstanceNormalization (each sample's own statistics), or, with
// track_running_stats, BatchNormalization on the running statistics (what eval uses then, as PyTorch).
std::string instance_norm(Graph& g, nn::InstanceNorm& m, const std::string& path, const Value& in) {
  const int64_t rank = m.type_name() == "InstanceNorm2d" ? 4 : 3;
  need_rank(path, m, in, rank, rank == 4 ? "[N, C, H, W]" : "[N, C, L]");
  const int64_t c = m.options.num_features();
  const std::string scale = m.weight.defined() ? g.weight(m.weight, path + ".weight") : g.constant(ones({c}), path, "scale");
  const std::string shift = m.bias.defined() ? g.weight(m.bias, path + ".bias") : g.constant(zeros({c}), path, "shift");
  const bool running = m.options.track_running_stats();
  ::onnx::NodeProto& n =
      running ? g.node("BatchNormalization", {in.name, scale, shift, g.weight(m.running_mean, path + ".running_mean"),
                                              g.weight(m.running_var, path + ".running_var")},
                       path)
              : g.node("InstanceNormalization", {in.name, scale, shift}, path);
  attr_float(n, "epsilon", m.options.eps());
  return n.output(0);
}

}  // namespace

void add_basic_layers(LayerTable& t) {
  add_layer<nn::Sequential>(t, "Sequential", [](Graph& g, nn::Sequential& m, const std::string& path, const Value& in) {
    Value v = in;
    for (const auto& [name, child] : m.named_children()) v = g.convert(*child, join_path(path, name), v);
    return v.name;
  });
  add_layer<nn::Linear>(t, "Linear", [](Graph& g, nn::Linear& m, const std::string& path, const Value& in) {
    return g.linear(in.name, in.example.dim(), m.weight, m.bias, path);
  });
  add_layer<nn::Conv2d>(t, "Conv2d", [](Graph& g, nn::Conv2d& m, const std::string& path, const Value& in) {
    need_rank(path, m, in, 4, "[N, C, H, W]");
    const auto& o = m.options;
    std::vector<std::string> inputs{in.name, g.weight(m.weight, path + ".weight")};
    if (m.bias.defined()) inputs.push_back(g.weight(m.bias, path + ".bias"));
    ::onnx::NodeProto& n = g.node("Conv", inputs, path);
    attr_ints(n, "kernel_shape", {m.weight.size(2), m.weight.size(3)});
    attr_ints(n, "strides", both(o.stride()));
    attr_ints(n, "pads", pads(o.padding()));
    attr_ints(n, "dilations", both(o.dilation()));
    attr_int(n, "group", o.groups());
    return n.output(0);
  });
  add_layer<nn::Conv1d>(t, "Conv1d", [](Graph& g, nn::Conv1d& m, const std::string& path, const Value& in) {
    need_rank(path, m, in, 3, "[N, C, L]");
    const auto& o = m.options;
    std::vector<std::string> inputs{in.name, g.weight(m.weight, path + ".weight")};
    if (m.bias.defined()) inputs.push_back(g.weight(m.bias, path + ".bias"));
    ::onnx::NodeProto& n = g.node("Conv", inputs, path);
    attr_ints(n, "kernel_shape", {m.weight.size(2)});
    attr_ints(n, "strides", {o.stride()[0]});
    attr_ints(n, "pads", {o.padding()[0], o.padding()[0]});
    attr_ints(n, "dilations", {o.dilation()[0]});
    attr_int(n, "group", o.groups());
    return n.output(0);
  });
  add_layer<nn::MaxPool2d>(t, "MaxPool2d", [](Graph& g, nn::MaxPool2d& m, const std::string& path, const Value& in) {
    need_rank(path, m, in, 4, "[N, C, H, W]");
    return pool(g, "MaxPool", m.options, in.name, path).output(0);
  });
  add_layer<nn::AvgPool2d>(t, "AvgPool2d", [](Graph& g, nn::AvgPool2d& m, const std::string& path, const Value& in) {
    need_rank(path, m, in, 4, "[N, C, H, W]");
    ::onnx::NodeProto& n = pool(g, "AveragePool", m.options, in.name, path);
    // PyTorch's default divides by the whole window, padded zeros included.
    if (m.options.count_include_pad()) attr_int(n, "count_include_pad", 1);
    return n.output(0);
  });
  add_layer<nn::AdaptiveAvgPool2d>(t, "AdaptiveAvgPool2d",
                                   [](Graph& g, nn::AdaptiveAvgPool2d& m, const std::string& path, const Value& in) {
                                     return adaptive_pool(g, m, false, m.out_h, m.out_w, path, in);
                                   });
  add_layer<nn::AdaptiveMaxPool2d>(t, "AdaptiveMaxPool2d",
                                   [](Graph& g, nn::AdaptiveMaxPool2d& m, const std::string& path, const Value& in) {
                                     return adaptive_pool(g, m, true, m.out_h, m.out_w, path, in);
                                   });
  add_layer<nn::BatchNorm1d>(t, "BatchNorm1d", batch_norm);
  add_layer<nn::BatchNorm2d>(t, "BatchNorm2d", batch_norm);
  add_layer<nn::BatchNorm>(t, "BatchNorm", batch_norm);
  add_layer<nn::LayerNorm>(t, "LayerNorm", [](Graph& g, nn::LayerNorm& m, const std::string& path, const Value& in) {
    return g.layer_norm(in.name, m.normalized_shape.size(), m.weight, m.bias, m.eps, path);
  });
  // Group norm: x [N, C, *] as [N, G, C/G·*], normalised over its last dim, back to x's shape, then weight and
  // bias per channel (as [C, 1, ...]). GroupNormalization is opset 18, past kMaxOpset.
  add_layer<nn::GroupNorm>(t, "GroupNorm", [](Graph& g, nn::GroupNorm& m, const std::string& path, const Value& in) {
    const int64_t rank = in.example.dim();
    if (rank < 2) unsupported(path, m, "export needs a batched input [N, C, ...], got " + in.example.shape().str());
    const std::string grouped = g.op("Reshape", {in.name, g.ints({0, m.options.num_groups(), -1}, path, "groups")}, path);
    const std::string normed = g.layer_norm(grouped, 1, Tensor(), Tensor(), m.options.eps(), path);
    const std::string y = g.op("Reshape", {normed, g.op("Shape", {in.name}, path)}, path);
    if (!m.weight.defined()) return y;
    std::vector<int64_t> axes;  // [C] → [C, 1, ..., 1] against [N, C, *]
    for (int64_t d = 1; d + 1 < rank; ++d) axes.push_back(d);
    const std::string channel_axes = axes.empty() ? std::string() : g.ints(axes, path, "channel_axes");
    const auto per_channel = [&](const Tensor& p, const std::string& name) {
      const std::string v = g.weight(p, name);
      return axes.empty() ? v : g.op("Unsqueeze", {v, channel_axes}, path);
    };
    return g.op("Add", {g.op("Mul", {y, per_channel(m.weight, path + ".weight")}, path), per_channel(m.bias, path + ".bias")},
                path);
  });
  add_layer<nn::InstanceNorm1d>(t, "InstanceNorm1d", instance_norm);
  add_layer<nn::InstanceNorm2d>(t, "InstanceNorm2d", instance_norm);
  // Local response norm by PyTorch's own formula: x² as [N, 1, C, *], averaged over windows of `size` channels
  // (size/2 zero channels before, (size-1)/2 after, the zeros counted), then x / (k + alpha·avg)^beta. (ONNX's
  // LRN centres an even window one channel later than PyTorch's.)
  add_layer<nn::LocalResponseNorm>(t, "LocalResponseNorm", [](Graph& g, nn::LocalResponseNorm& m, const std::string& path,
                                                              const Value& in) {
    if (in.example.dim() < 3) unsupported(path, m, "export needs a batched input [N, C, ...], got " + in.example.shape().str());
    const int64_t size = m.options.size(), c = in.example.size(1);
    const std::string sq = g.op("Mul", {in.name, in.name}, path);
    const std::string planes = g.op("Reshape", {sq, g.ints({0, 1, c, -1}, path, "planes")}, path);
    ::onnx::NodeProto& avg = g.node("AveragePool", {planes}, path);
    attr_ints(avg, "kernel_shape", {size, 1});
    attr_ints(avg, "pads", {size / 2, 0, (size - 1) / 2, 0});
    attr_int(avg, "count_include_pad", 1);
    const std::string window = g.op("Reshape", {avg.output(0), g.op("Shape", {in.name}, path)}, path);
    const std::string base = g.op("Add", {g.op("Mul", {window, g.scalar(m.options.alpha(), path, "alpha")}, path),
                                          g.scalar(m.options.k(), path, "k")},
                                  path);
    return g.op("Div", {in.name, g.op("Pow", {base, g.scalar(m.options.beta(), path, "beta")}, path)}, path);
  });
  add_unary<nn::Dropout>(t, "Dropout", "Identity");  // exported as in eval mode
  add_layer<nn::Flatten>(t, "Flatten", [](Graph& g, nn::Flatten& m, const std::string& path, const Value& in) {
    const int64_t rank = in.example.dim();
    const int64_t start = m.start_dim < 0 ? m.start_dim + rank : m.start_dim;
    const int64_t end = m.end_dim < 0 ? m.end_dim + rank : m.end_dim;
    if (start == end) return g.op("Identity", {in.name}, path);
    if (start == 1 && end == rank - 1) {
      ::onnx::NodeProto& n = g.node("Flatten", {in.name}, path);
      attr_int(n, "axis", 1);
      return n.output(0);
    }
    // Dims before start_dim are copied (0, so the batch stays symbolic), the flattened ones become -1.
    std::vector<int64_t> shape(static_cast<size_t>(start), 0);
    shape.push_back(-1);
    for (int64_t i = end + 1; i < rank; ++i) shape.push_back(in.example.size(i));
    return g.op("Reshape", {in.name, g.ints(shape, path, "shape")}, path);
  });
  // --- activations ---
  add_unary<nn::ReLU>(t, "ReLU", "Relu");
  add_unary<nn::Tanh>(t, "Tanh", "Tanh");
  add_unary<nn::Sigmoid>(t, "Sigmoid", "Sigmoid");
  add_layer<nn::SiLU>(t, "SiLU", [](Graph& g, nn::SiLU&, const std::string& path, const Value& in) {
    return g.op("Mul", {in.name, g.op("Sigmoid", {in.name}, path)}, path);
  });
  add_layer<nn::GELU>(t, "GELU", [](Graph& g, nn::GELU& m, const std::string& path, const Value& in) {
    return g.gelu(in.name, m.approximate == "tanh", path);
  });
  add_layer<nn::LeakyReLU>(t, "LeakyReLU", [](Graph& g, nn::LeakyReLU& m, const std::string& path, const Value& in) {
    ::onnx::NodeProto& n = g.node("LeakyRelu", {in.name}, path);
    attr_float(n, "alpha", m.negative_slope);
    return n.output(0);
  });
  add_layer<nn::ELU>(t, "ELU", [](Graph& g, nn::ELU& m, const std::string& path, const Value& in) {
    ::onnx::NodeProto& n = g.node("Elu", {in.name}, path);
    attr_float(n, "alpha", m.alpha);
    return n.output(0);
  });
  add_layer<nn::Softplus>(t, "Softplus", [](Graph& g, nn::Softplus& m, const std::string& path, const Value& in) {
    // PyTorch's: x where β·x > threshold, else log(1 + exp(β·x)) / β.
    const std::string bx = g.op("Mul", {in.name, g.scalar(m.beta, path, "beta")}, path);
    const std::string soft = g.op("Div", {g.op("Softplus", {bx}, path), g.scalar(m.beta, path, "beta")}, path);
    const std::string linear = g.op("Greater", {bx, g.scalar(m.threshold, path, "threshold")}, path);
    return g.op("Where", {linear, in.name, soft}, path);
  });
  add_layer<nn::Hardtanh>(t, "Hardtanh", [](Graph& g, nn::Hardtanh& m, const std::string& path, const Value& in) {
    return g.op("Clip", {in.name, g.scalar(m.min_val, path, "min"), g.scalar(m.max_val, path, "max")}, path);
  });
  add_layer<nn::Softmax>(t, "Softmax", [](Graph& g, nn::Softmax& m, const std::string& path, const Value& in) {
    ::onnx::NodeProto& n = g.node("Softmax", {in.name}, path);
    attr_int(n, "axis", m.dim);
    return n.output(0);
  });
}

}  // namespace ember::onnx::detail
