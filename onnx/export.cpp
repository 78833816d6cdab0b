#include "onnx/export.h"

#include <algorithm>
#include <climits>
#include <exception>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "autograd/grad_mode.h"
#include "core/atomic_file.h"
#include "onnx/graph.h"

namespace ember::onnx {
namespace {

::onnx::TensorProto::DataType elem_type(DType t, const char* what) {
  if (t == DType::f32) return ::onnx::TensorProto::FLOAT;
  if (t == DType::i64) return ::onnx::TensorProto::INT64;
  ember::detail::throw_error("ONNX export: the ", what, " is ", dtype_name(t),
                      "; the exporter writes f32 models with f32 or i64 (token id) inputs: convert with .to(DType::f32)");
}

// A graph input/output: its element type, and its dims with the symbolic ones named.
void describe_value(::onnx::ValueInfoProto& v, const std::string& name, const Tensor& example, bool batch, bool sequence,
                    const char* what) {
  v.set_name(name);
  auto* type = v.mutable_type()->mutable_tensor_type();
  type->set_elem_type(elem_type(example.dtype(), what));
  for (int64_t i = 0; i < example.dim(); ++i) {
    auto* d = type->mutable_shape()->add_dim();
    if (i == 0 && batch) d->set_dim_param("batch");
    else if (i == 1 && sequence) d->set_dim_param("sequence");
    else d->set_dim_value(example.size(i));
  }
}

// Token windows [N, T] whose length the model leaves free: its forward takes T - 1 tokens too and the
// output's dim 1 follows (a model that flattens the window does not).
bool free_sequence(nn::Module& module, const Tensor& x, const Tensor& y) {
  if (x.dtype() != DType::i64 || x.dim() != 2 || x.size(1) < 2 || y.dim() < 2 || y.size(1) != x.size(1)) return false;
  try {
    const Tensor shorter = module.forward(x.narrow(1, 0, x.size(1) - 1));
    return shorter.dim() == y.dim() && shorter.size(1) == x.size(1) - 1;
  } catch (const Error&) {
    return false;
  }
}

// Restores a module's training flag on scope exit (an export runs it in eval mode).
class EvalScope {
 public:
  explicit EvalScope(nn::Module& m) : module_(m), was_training_(m.is_training()) { m.eval(); }
  ~EvalScope() { module_.train(was_training_); }
  EvalScope(const EvalScope&) = delete;
  EvalScope& operator=(const EvalScope&) = delete;

 private:
  nn::Module& module_;
  bool was_training_;
};

}  // namespace

std::vector<std::string> exportable_layers() {
  std::vector<std::string> out;
  for (const auto& [type, entry] : detail::layer_table()) out.push_back(entry.type_name);
  std::sort(out.begin(), out.end());
  return out;
}

ExportResult export_module(nn::Module& module, const Tensor& example_input, const std::string& path,
                           const ExportOptions& options) {
  EMBER_CHECK(options.opset >= kMinOpset && options.opset <= kMaxOpset, "ONNX export: opset ", options.opset,
              " is not supported: Ember writes opsets ", kMinOpset, " to ", kMaxOpset, " (", kMaxOpset,
              " is the newest this build's libonnx knows); pick one in that range");
  EMBER_CHECK(example_input.defined() && example_input.dim() >= 1, "ONNX export: the example input must be a batch [N, ...]");
  for (const auto& [name, t] : module.state_dict())
    if (t.dtype() != DType::f32 && !(t.dtype() == DType::i64 && name.ends_with("num_batches_tracked")))
      ember::detail::throw_error("ONNX export: '", name, "' is ", dtype_name(t.dtype()),
                          "; the exporter writes f32 models: convert the model with module.to(DType::f32) first");
  EvalScope eval(module);
  NoGradGuard no_grad;

  ::onnx::ModelProto model;
  model.set_ir_version(::onnx::IR_VERSION);
  model.set_producer_name("ember");
  model.set_producer_version(EMBER_VERSION);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(options.opset);
  ::onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name(module.type_name());

  detail::Graph g(graph, options.opset, module);
  const detail::Value out = g.convert(module, "", {options.input_name, example_input});
  // The output under its own name (an Identity: the last node's output is named after the layer).
  g.node("Identity", {out.name}, "output").set_output(0, options.output_name);
  const bool sequence = free_sequence(module, example_input, out.example);
  describe_value(*graph.add_input(), options.input_name, example_input, true, sequence, "input");
  describe_value(*graph.add_output(), options.output_name, out.example, true, sequence, "output");

  // libonnx's checks before anything is written: the checker (node schemas, types, topological order), then
  // strict shape inference, which also proves the declared output shape agrees with the graph.
  try {
    ::onnx::checker::check_model(model);
    ::onnx::shape_inference::InferShapes(model, ::onnx::OpSchemaRegistry::Instance(),
                                         ::onnx::ShapeInferenceOptions(/*check_type=*/true, /*strict_mode=*/1));
  } catch (const std::exception& e) {
    ember::detail::throw_error("ONNX export of ", module.type_name(), ": libonnx rejected the graph (an exporter bug: please "
                        "report it with the model's config): ", e.what());
  }
  const size_t bytes = model.ByteSizeLong();
  EMBER_CHECK(bytes < static_cast<size_t>(INT_MAX), "ONNX export: the model is ", bytes,
              " bytes, past protobuf's 2 GiB limit for one file (external weight files are not supported)");
  std::string serialized;
  model.SerializeToString(&serialized);
  write_file_atomic(path, serialized);

  ExportResult result;
  result.output = out.example;
  result.nodes = g.node_count();
  result.dynamic_sequence = sequence;
  for (const auto& init : graph.initializer()) result.initializers.push_back(init.name());
  return result;
}

void check_file(const std::string& path) {
  try {
    ::onnx::checker::check_model(path);
  } catch (const std::exception& e) {
    ember::detail::throw_error(path, ": the ONNX checker rejected the file: ", e.what());
  }
}

}  // namespace ember::onnx
