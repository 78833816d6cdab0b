// The converters of the feed-forward and convolutional layers, the activations and Sequential: one entry per
// Module type (graph.h's table). Shapes: N batch, C channels, H, W spatial; the example value gives the static
// dims, dim 0 (N) stays symbolic.
#include <algorithm>
#include <string>
#include <vector>

#include "autograd/grad_mode.h"

#include "nn/layers.h"
#include "nn/resnet.h"
#include "onnx/graph.h"

namespace ember::onnx::detail {
namespace {

using nn::Module;

// A node with one input and no attributes (Relu, Tanh, Identity, ...).
template <typename M>
void add_unary(LayerTable& t, const std::string& type_name, const char* op) {
  add_layer<M>(t, type_name, [op](Graph& g, M&, const std::string& path, const Value& in) { return g.op(op, {in.name}, path); });
}

void need_rank(const std::string& path, const Module& m, const Value& in, int64_t rank, const char* layout) {
  if (in.example.dim() != rank)
    unsupported(path, m, "export needs a batched input " + std::string(layout) + ", got " + in.example.shape().str());
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

// --- conv/pool round 3: conv padding "same" and padding_mode, transposed conv, 1-D pools, resampling ---
template <size_t D>
std::vector<int64_t> list(const nn::ExpandingArray<D>& a) {
  return std::vector<int64_t>(a.values.begin(), a.values.end());
}
// A convolution's ONNX pads (the starts of every spatial dim, then the ends): the options' ints, none for
// "valid", and for "same" PyTorch's split of dilation·(K-1): ⌊total/2⌋ first, the odd extra at the end.
template <size_t D>
std::vector<int64_t> conv_pads(const nn::ConvOptions<D>& o, const Tensor& weight) {
  std::vector<int64_t> begins, ends;
  for (size_t d = 0; d < D; ++d) {
    const auto [left, right] = o.padding().before_after(d, weight.size(static_cast<int64_t>(2 + d)), o.dilation()[d]);
    begins.push_back(left);
    ends.push_back(right);
  }
  begins.insert(begins.end(), ends.begin(), ends.end());
  return begins;
}
// Conv1d / Conv2d: a Conv node with the pads above; padding_mode reflect / replicate pad first with a Pad node
// (ONNX's reflect and edge modes are PyTorch's reflect and replicate), then an unpadded Conv. ONNX has no
// circular Pad before opset 19 (Ember writes 13 to 17): refused.
template <size_t D, typename M>
std::string conv(Graph& g, M& m, const std::string& path, const Value& in) {
  need_rank(path, m, in, static_cast<int64_t>(D) + 2, D == 2 ? "[N, C, H, W]" : "[N, C, L]");
  const auto& o = m.options;
  std::vector<int64_t> p = conv_pads(o, m.weight);
  std::string x = in.name;
  if (o.padding_mode() != nn::PaddingMode::zeros) {
    if (o.padding_mode() == nn::PaddingMode::circular)
      unsupported(path, m, "padding_mode circular needs ONNX Pad's wrap mode, which is opset 19 (Ember writes "
                           "opsets 13 to 17); use padding_mode zeros, reflect or replicate to export");
    // Pad's pads: the starts of every dim (N and C: 0), then the ends.
    std::vector<int64_t> all(2 * (D + 2), 0);
    for (size_t d = 0; d < D; ++d) all[2 + d] = p[d], all[D + 4 + d] = p[D + d];
    ::onnx::NodeProto& pad = g.node("Pad", {x, g.ints(all, path, "pads")}, path);
    attr_str(pad, "mode", o.padding_mode() == nn::PaddingMode::reflect ? "reflect" : "edge");
    x = pad.output(0);
    p.assign(2 * D, 0);
  }
  std::vector<std::string> inputs{x, g.weight(m.weight, path + ".weight")};
  if (m.bias.defined()) inputs.push_back(g.weight(m.bias, path + ".bias"));
  ::onnx::NodeProto& n = g.node("Conv", inputs, path);
  std::vector<int64_t> kernel;
  for (size_t d = 0; d < D; ++d) kernel.push_back(m.weight.size(static_cast<int64_t>(2 + d)));
  attr_ints(n, "kernel_shape", kernel);
  attr_ints(n, "strides", list(o.stride()));
  attr_ints(n, "pads", p);
  attr_ints(n, "dilations", list(o.dilation()));
  attr_int(n, "group", o.groups());
  return n.output(0);
}
// ConvTranspose1d / 2d: ONNX's ConvTranspose has PyTorch's weight layout [C_in, C_out/groups, K...], pads on
// both sides and output_padding at the end, so its output size (in - 1)·stride - 2·pad + dilation·(K - 1) +
// output_padding + 1 is PyTorch's.
template <size_t D, typename M>
std::string conv_transpose(Graph& g, M& m, const std::string& path, const Value& in) {
  need_rank(path, m, in, static_cast<int64_t>(D) + 2, D == 2 ? "[N, C, H, W]" : "[N, C, L]");
  const auto& o = m.options;
  std::vector<std::string> inputs{in.name, g.weight(m.weight, path + ".weight")};
  if (m.bias.defined()) inputs.push_back(g.weight(m.bias, path + ".bias"));
  ::onnx::NodeProto& n = g.node("ConvTranspose", inputs, path);
  std::vector<int64_t> kernel, pads = list(o.padding());
  for (size_t d = 0; d < D; ++d) kernel.push_back(m.weight.size(static_cast<int64_t>(2 + d)));
  pads.insert(pads.end(), o.padding().values.begin(), o.padding().values.end());
  attr_ints(n, "kernel_shape", kernel);
  attr_ints(n, "strides", list(o.stride()));
  attr_ints(n, "pads", pads);
  attr_ints(n, "output_padding", list(o.output_padding()));
  attr_ints(n, "dilations", list(o.dilation()));
  attr_int(n, "group", o.groups());
  return n.output(0);
}
// MaxPool / AveragePool of D spatial dims (stride 0: the kernel size), max pooling with its dilation.
template <size_t D>
::onnx::NodeProto& pool_nd(Graph& g, const char* op, const nn::PoolOptions<D>& o, const std::string& x,
                           const std::string& path) {
  const nn::ExpandingArray<D> stride = o.stride()[0] == 0 ? o.kernel_size() : o.stride();
  ::onnx::NodeProto& n = g.node(op, {x}, path);
  std::vector<int64_t> pads = list(o.padding());
  pads.insert(pads.end(), o.padding().values.begin(), o.padding().values.end());
  attr_ints(n, "kernel_shape", list(o.kernel_size()));
  attr_ints(n, "strides", list(stride));
  attr_ints(n, "pads", pads);
  if (o.ceil_mode()) attr_int(n, "ceil_mode", 1);
  if (std::string(op) == "MaxPool") {
    const std::vector<int64_t> dilation = list(o.dilation());
    if (std::any_of(dilation.begin(), dilation.end(), [](int64_t d) { return d != 1; })) attr_ints(n, "dilations", dilation);
  }
  return n;
}
// Average pooling: PyTorch's count_include_pad; divisor_override d divides each window's sum by d instead.
// Without ceil_mode every window lies inside the padded input, so the sum is the count_include_pad average
// times the window's size; with it, the last windows are cut and ONNX cannot give their sums: refused.
template <size_t D, typename M>
std::string avg_pool(Graph& g, M& m, const std::string& path, const Value& in) {
  need_rank(path, m, in, static_cast<int64_t>(D) + 2, D == 2 ? "[N, C, H, W]" : "[N, C, L]");
  const auto& o = m.options;
  const bool override = o.divisor_override().has_value();
  if (override && o.ceil_mode())
    unsupported(path, m, "divisor_override with ceil_mode: ONNX AveragePool cannot give the sums of the cut last "
                         "windows; drop ceil_mode or divisor_override to export");
  ::onnx::NodeProto& n = pool_nd(g, "AveragePool", o, in.name, path);
  // PyTorch's default divides by the whole window, padded zeros included.
  if (o.count_include_pad() || override) attr_int(n, "count_include_pad", 1);
  if (!override) return n.output(0);
  double window = 1;
  for (size_t d = 0; d < D; ++d) window *= static_cast<double>(o.kernel_size()[d]);
  return g.op("Mul", {n.output(0), g.scalar(window / static_cast<double>(*o.divisor_override()), path, "divisor")}, path);
}

// Upsample → Resize. nearest: PyTorch's src = ⌊dst · in/out⌋ (asymmetric, floor); nearest-exact: ⌊(dst + ½) ·
// in/out⌋ (half_pixel, round_prefer_ceil); the linear modes: align_corners, else pytorch_half_pixel. A given
// scale_factor (not recomputed) is the ratio PyTorch samples at: Resize's scales; else the output size:
// Resize's sizes (the batch dim read from the input's shape). area (adaptive average pooling) is refused.
std::string upsample(Graph& g, nn::Upsample& m, const std::string& path, const Value& in) {
  const auto& o = m.options;
  const int64_t rank = in.example.dim();
  if (rank < 3 || rank > 5) unsupported(path, m, "export needs a batched input [N, C, L], [N, C, H, W] or [N, C, D, H, W], got " + in.example.shape().str());
  if (o.mode() == nn::InterpolateMode::area)
    unsupported(path, m, "mode area is adaptive average pooling, which ONNX Resize has no mode for; use nearest or a linear mode");
  Tensor y;
  {
    NoGradGuard no_grad;
    y = m.forward(in.example);
  }
  const bool use_scales = o.scale_factor().has_value() && !o.recompute_scale_factor().value_or(false);
  std::string scales, sizes;
  if (use_scales) {
    std::vector<float> s(2, 1.0f);
    const std::vector<double>& f = *o.scale_factor();
    for (int64_t d = 0; d < rank - 2; ++d) s.push_back(static_cast<float>(f.size() == 1 ? f[0] : f[static_cast<size_t>(d)]));
    scales = g.constant(from_vector<float>(s), path, "scales");
  } else {
    std::vector<int64_t> rest;
    for (int64_t d = 1; d < rank; ++d) rest.push_back(y.size(d));
    ::onnx::NodeProto& cat = g.node("Concat", {g.dim(in.name, 0, path), g.ints(rest, path, "sizes")}, path);
    attr_int(cat, "axis", 0);
    sizes = cat.output(0);
  }
  // Resize's inputs: X, roi, scales, sizes ("": left out; scales or sizes, not both)
  ::onnx::NodeProto& n = g.node("Resize", use_scales ? std::vector<std::string>{in.name, "", scales}
                                                     : std::vector<std::string>{in.name, "", "", sizes}, path);
  if (o.mode() == nn::InterpolateMode::nearest || o.mode() == nn::InterpolateMode::nearest_exact) {
    const bool exact = o.mode() == nn::InterpolateMode::nearest_exact;
    attr_str(n, "mode", "nearest");
    attr_str(n, "coordinate_transformation_mode", exact ? "half_pixel" : "asymmetric");
    attr_str(n, "nearest_mode", exact ? "round_prefer_ceil" : "floor");
  } else {
    attr_str(n, "mode", "linear");
    attr_str(n, "coordinate_transformation_mode", o.align_corners().value_or(false) ? "align_corners" : "pytorch_half_pixel");
  }
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
  add_layer<nn::Conv2d>(t, "Conv2d", conv<2, nn::Conv2d>);
  add_layer<nn::Conv1d>(t, "Conv1d", conv<1, nn::Conv1d>);
  add_layer<nn::ConvTranspose2d>(t, "ConvTranspose2d", conv_transpose<2, nn::ConvTranspose2d>);
  add_layer<nn::ConvTranspose1d>(t, "ConvTranspose1d", conv_transpose<1, nn::ConvTranspose1d>);
  add_layer<nn::MaxPool2d>(t, "MaxPool2d", [](Graph& g, nn::MaxPool2d& m, const std::string& path, const Value& in) {
    need_rank(path, m, in, 4, "[N, C, H, W]");
    return pool_nd(g, "MaxPool", m.options, in.name, path).output(0);
  });
  add_layer<nn::MaxPool1d>(t, "MaxPool1d", [](Graph& g, nn::MaxPool1d& m, const std::string& path, const Value& in) {
    need_rank(path, m, in, 3, "[N, C, L]");
    return pool_nd(g, "MaxPool", m.options, in.name, path).output(0);
  });
  add_layer<nn::AvgPool2d>(t, "AvgPool2d", avg_pool<2, nn::AvgPool2d>);
  add_layer<nn::AvgPool1d>(t, "AvgPool1d", avg_pool<1, nn::AvgPool1d>);
  add_layer<nn::Upsample>(t, "Upsample", upsample);
  add_layer<nn::PixelShuffle>(t, "PixelShuffle", [](Graph& g, nn::PixelShuffle& m, const std::string& path, const Value& in) {
    // PyTorch's [N, C·r², H, W] → [N, C, r, r, H, W] → [N, C, H, r, W, r] is DepthToSpace's CRD mode.
    need_rank(path, m, in, 4, "[N, C, H, W]");
    ::onnx::NodeProto& n = g.node("DepthToSpace", {in.name}, path);
    attr_int(n, "blocksize", m.upscale_factor);
    attr_str(n, "mode", "CRD");
    return n.output(0);
  });
  add_layer<nn::PixelUnshuffle>(t, "PixelUnshuffle", [](Graph& g, nn::PixelUnshuffle& m, const std::string& path, const Value& in) {
    // PyTorch's [N, C, H/r, r, W/r, r] → [N, C, r, r, H/r, W/r]: channel c·r² + i·r + j. ONNX's SpaceToDepth
    // orders the channels (i·r + j)·C + c, so: Reshape, Transpose, Reshape (0: the batch dim, symbolic).
    need_rank(path, m, in, 4, "[N, C, H, W]");
    const int64_t r = m.downscale_factor, c = in.example.size(1), h = in.example.size(2), w = in.example.size(3);
    if (h % r != 0 || w % r != 0)
      unsupported(path, m, "the input's " + std::to_string(h) + "x" + std::to_string(w) + " is not divisible by " + std::to_string(r));
    const std::string split = g.op("Reshape", {in.name, g.ints({0, c, h / r, r, w / r, r}, path, "split")}, path);
    ::onnx::NodeProto& tr = g.node("Transpose", {split}, path);
    attr_ints(tr, "perm", {0, 1, 3, 5, 2, 4});
    return g.op("Reshape", {tr.output(0), g.ints({0, c * r * r, h / r, w / r}, path, "shape")}, path);
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
  // RMS norm by its formula, x / sqrt(mean(x·x) + eps) · weight over the last dims (RMSNormalization is opset
  // 23, past kMaxOpset).
  add_layer<nn::RMSNorm>(t, "RMSNorm", [](Graph& g, nn::RMSNorm& m, const std::string& path, const Value& in) {
    std::vector<int64_t> axes;
    for (int64_t i = m.normalized_shape.size(); i >= 1; --i) axes.push_back(-i);
    ::onnx::NodeProto& mean_sq = g.node("ReduceMean", {g.op("Mul", {in.name, in.name}, path)}, path);
    attr_ints(mean_sq, "axes", axes);
    const double eps = m.options.eps().value_or(nn::functional::rms_norm_default_eps(in.example.dtype()));
    const std::string rms = g.op("Sqrt", {g.op("Add", {mean_sq.output(0), g.scalar(eps, path, "eps")}, path)}, path);
    const std::string y = g.op("Div", {in.name, rms}, path);
    return m.weight.defined() ? g.op("Mul", {y, g.weight(m.weight, path + ".weight")}, path) : y;
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
  // --- vision models (nn/resnet.h): the children in order, the residual Add, then Relu ---
  // A block's (conv, batch norm) stages with `relu` between them, then Relu(stages + shortcut), the shortcut
  // being `downsample` (null: the input).
  const auto residual_block = [](Graph& g, Module& relu, const std::vector<std::pair<Module*, Module*>>& stages,
                                 Module* downsample, const std::string& path, const Value& in) {
    const std::string relu_path = join_path(path, "relu");
    Value v = in;
    for (size_t i = 0; i < stages.size(); ++i) {
      const std::string n = std::to_string(i + 1);
      v = g.convert(*stages[i].second, join_path(path, "bn" + n), g.convert(*stages[i].first, join_path(path, "conv" + n), v));
      if (i + 1 < stages.size()) v = g.convert(relu, relu_path, v);
    }
    const std::string shortcut = downsample != nullptr ? g.convert(*downsample, join_path(path, "downsample"), in).name : in.name;
    return g.op("Relu", {g.op("Add", {v.name, shortcut}, path)}, relu_path);
  };
  add_layer<nn::BasicBlock>(t, "BasicBlock", [residual_block](Graph& g, nn::BasicBlock& m, const std::string& path, const Value& in) {
    return residual_block(g, *m.relu, {{m.conv1.get(), m.bn1.get()}, {m.conv2.get(), m.bn2.get()}}, m.downsample.get(), path, in);
  });
  add_layer<nn::Bottleneck>(t, "Bottleneck", [residual_block](Graph& g, nn::Bottleneck& m, const std::string& path, const Value& in) {
    return residual_block(g, *m.relu, {{m.conv1.get(), m.bn1.get()}, {m.conv2.get(), m.bn2.get()}, {m.conv3.get(), m.bn3.get()}},
                          m.downsample.get(), path, in);
  });
  add_layer<nn::ResNet>(t, "ResNet", [](Graph& g, nn::ResNet& m, const std::string& path, const Value& in) {
    need_rank(path, m, in, 4, "[N, C, H, W]");
    Value v = in;
    for (const auto& [name, child] : m.named_children()) {
      if (name == "fc") break;
      v = g.convert(*child, join_path(path, name), v);  // conv1, bn1, relu, (maxpool), layer1..4, avgpool
    }
    ::onnx::NodeProto& flat = g.node("Flatten", {v.name}, path);
    attr_int(flat, "axis", 1);
    return g.linear(flat.output(0), 2, m.fc->weight, m.fc->bias, join_path(path, "fc"));
  });
}

}  // namespace ember::onnx::detail
