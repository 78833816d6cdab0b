// summary(): a torchsummary-like table. Sequentials are walked child by child (so every leaf gets its
// output shape), and a ResNet stage by stage (one row per block); any other module is one row with the model's
// output shape.
#include <iomanip>
#include <sstream>

#include "autograd/grad_mode.h"
#include "base/format.h"
#include "nn/layers.h"
#include "nn/resnet.h"

namespace ember::nn {
namespace {

struct Row {
  std::string name, layer, shape;
  int64_t params;
};

Tensor walk(Module& m, const std::string& name, const Tensor& x, std::vector<Row>& rows) {
  if (auto* seq = dynamic_cast<Sequential*>(&m)) {
    Tensor y = x;
    for (const auto& [child_name, child] : seq->named_children())
      y = walk(*child, name.empty() ? child_name : name + "." + child_name, y, rows);
    return y;
  }
  if (auto* resnet = dynamic_cast<ResNet*>(&m)) {  // its forward: the children in order, flatten before fc
    Tensor y = x;
    for (const auto& [child_name, child] : resnet->named_children()) {
      if (child == resnet->fc) y = y.flatten(1);
      y = walk(*child, name.empty() ? child_name : name + "." + child_name, y, rows);
    }
    return y;
  }
  Tensor y = m.forward(x);
  rows.push_back({name.empty() ? "(model)" : name, m.describe(), y.shape().str(), m.parameter_count()});
  return y;
}

}  // namespace

std::string summary(Module& model, const Shape& input_shape, DType dtype) {
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();  // no dropout draws, no running-statistics updates
  std::vector<Row> rows;
  const Device device = model.parameters().empty() ? kCPU : model.parameters()[0].device();
  try {
    walk(model, "", zeros(input_shape, {.dtype = dtype, .device = device}), rows);
  } catch (...) {
    model.train(was_training);
    throw;
  }
  model.train(was_training);
  size_t w_name = 5, w_layer = 5, w_shape = 12;
  for (const Row& r : rows) {
    w_name = std::max(w_name, r.name.size());
    w_layer = std::max(w_layer, r.layer.size());
    w_shape = std::max(w_shape, r.shape.size());
  }
  std::ostringstream out;
  const auto line = [&](const std::string& a, const std::string& b, const std::string& c, const std::string& d) {
    out << std::left << std::setw(static_cast<int>(w_name) + 2) << a << std::setw(static_cast<int>(w_layer) + 2) << b
        << std::setw(static_cast<int>(w_shape) + 2) << c << std::right << std::setw(12) << d << "\n";
  };
  line("name", "layer", "output shape", "parameters");
  out << std::string(w_name + w_layer + w_shape + 18, '-') << "\n";
  line("input", "", input_shape.str(), "");
  for (const Row& r : rows) line(r.name, r.layer, r.shape, std::to_string(r.params));
  out << std::string(w_name + w_layer + w_shape + 18, '-') << "\n";
  const int64_t total = model.parameter_count();
  int64_t trainable = 0;
  double bytes = 0;  // in the parameters' own dtypes (the input may be token ids)
  for (const Tensor& p : model.parameters()) {
    if (p.requires_grad()) trainable += p.numel();
    bytes += static_cast<double>(p.numel()) * static_cast<double>(dtype_size(p.dtype()));
  }
  out << "total parameters: " << total << " (" << trainable << " trainable), " << format_mib(bytes, 2) << "\n";
  return out.str();
}

}  // namespace ember::nn
