#pragma once
// ONNX export: a Module and an example input in, a standard ONNX model file out (Debian's libonnx builds the
// protobuf, runs its checker and shape inference before anything is written).
//
//   auto model = nn::build_model(specs, {.sample_shape = {1, 28, 28}});
//   onnx::export_module(*model, zeros({2, 1, 28, 28}), "model.onnx");            // opset 17
//   onnx::export_module(*lm, tokens, "lm.onnx", {.opset = 14});                 // tokens i64 [B, T]
//
// The graph has one input (`input`, the example's dtype and shape with dim 0 the symbolic "batch") and one
// output (`output`, dim 0 "batch" too). For token ids i64 [B, T], dim 1 of both is the symbolic "sequence"
// when the model takes windows of any length (Ember's forward accepts T - 1 tokens, and the output's dim 1
// follows the input's: GPT, RNN language models, embedding + transformer stacks); a model that fixes T (a
// flatten of the embeddings) keeps the example's T. Every weight is an
// initializer named as in the model's state_dict (so as in its safetensors file), holding the same data in the
// same layout; where ONNX wants another layout (LSTM/GRU gate order, Linear's transposed weight) the graph
// reorders it with Transpose/Split/Concat nodes on the initializer, which runtimes fold at load time. The other
// initializers (reshape targets, scalars, the sinusoidal table) are named "<layer path>/<what>".
//
// The model is exported as in eval mode (dropout: identity, batch norm: running statistics); its training
// flag is restored afterwards. Supported layers: exportable_layers() (docs/onnx.md has the op table). The
// dispatch is a table in onnx/layers*.cpp keyed by the exact C++ type, so nn/ knows nothing of ONNX (the part is
// optional) and a subclass that overrides forward() is refused rather than exported as its base.
#include <cstdint>
#include <string>
#include <vector>

#include "nn/module.h"

namespace ember::onnx {

// The opsets Ember writes: 13 (the first with Split/Squeeze/Unsqueeze taking their sizes as inputs) up to the
// newest that Debian's libonnx 1.12 knows. LayerNorm is LayerNormalization from 17 on, and a mean/variance
// decomposition below.
constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = 17;

struct ExportOptions {
  int64_t opset = kMaxOpset;
  std::string input_name = "input";
  std::string output_name = "output";
};

struct ExportResult {
  Tensor output;  // the module's output on the example input (eval mode, no graph)
  int64_t nodes = 0;
  bool dynamic_sequence = false;  // dim 1 of the token input is the symbolic "sequence" (see above)
  std::vector<std::string> initializers;  // in the file's order
};

// Writes `module` as an ONNX model to `path` (atomically, core/atomic_file.h). `example_input` is a batch
// ([N, ...], token ids i64 [N, T]) that the module's forward takes; it fixes every dim but the dynamic ones.
// Throws ember::Error naming the layer (its path in the model and its type) that has no ONNX mapping or
// whose settings ONNX cannot express, an opset outside [kMinOpset, kMaxOpset], parameters that are not f32,
// a model past protobuf's 2 GiB, or what the ONNX checker or shape inference rejected.
ExportResult export_module(nn::Module& module, const Tensor& example_input, const std::string& path,
                           const ExportOptions& options = {});

// The Module types export_module maps ("Linear", "Conv2d", ... as type_name() spells them).
std::vector<std::string> exportable_layers();

// Checks an ONNX file with libonnx's checker (full check, as onnx.checker.check_model(path)); throws
// ember::Error naming the file and the checker's complaint.
void check_file(const std::string& path);

}  // namespace ember::onnx
