// ONNX export (onnx/export.h), checked by the real runtime: every layer type of the registry alone, the four
// shipped configs' models and the model ember-export writes from a run are exported, fed 100 test examples in
// batches of different sizes (and, for token models, different sequence lengths: the symbolic dims) through
// Ember and through onnxruntime (tools/onnx_check.py under .venv-test's Python), and compared:
//   |onnxruntime - ember| <= 1e-5 · max(1, |ember|)   for every output element.
// The floor of 1 makes the bound absolute (1e-5) below magnitude 1: outputs near zero come from sums of terms of
// magnitude ~1 that cancel, and their rounding error is relative to those terms, not to the small result.
// Every file passes libonnx's checker (onnx::checker::check_model on the file as written).
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ember/ember.h>

#include "apps/config.h"
#include "onnx/export.h"
#include "python_checks.h"
#include "test_train_util.h"

namespace ember::test {
namespace {

constexpr double kTolerance = 1e-5;

// A .npy file (format 1.0) of a contiguous f32 or i64 tensor: what numpy.load reads.
void write_npy(const std::string& path, const Tensor& tensor) {
  const Tensor t = tensor.to(kCPU).contiguous();
  std::string shape = "(";
  for (int64_t s : t.shape()) shape += std::to_string(s) + ", ";
  shape += ")";
  std::string header = std::string("{'descr': '") + (t.dtype() == DType::i64 ? "<i8" : "<f4") +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  header += std::string(63 - (10 + header.size()) % 64, ' ') + "\n";  // the data starts 64-byte aligned
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  out.put(static_cast<char>(len & 0xff)).put(static_cast<char>(len >> 8));
  out << header;
  if (t.dtype() == DType::i64) {
    const std::vector<int64_t> v = t.to_vector<int64_t>();
    out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(int64_t)));
  } else {
    const std::vector<float> v = t.to_vector<float>();
    out.write(reinterpret_cast<const char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  }
}

// Moves every f32 state tensor off its initial value (norm weights of 1, zero biases, batch norm's
// running statistics 0 and 1), so that each one matters in the comparison.
void perturb(nn::Module& model, Generator& gen) {
  NamedTensors state = model.state_dict();
  for (auto& [name, t] : state) {
    if (t.dtype() != DType::f32) continue;
    Tensor noise = randn(t.shape(), {}, &gen) * 0.1;
    t = name.ends_with("running_var") ? abs(t + noise) + 0.5 : t + noise;
  }
  model.load_state_dict(state);
}

struct Case {
  std::string name;
  std::string model;  // the YAML of config key `model`
  Shape sample;       // one example (no batch dim)
  bool tokens = false;  // i64 token ids [T] (vocabulary kVocab), else f32
  int64_t opset = onnx::kMaxOpset;
};
constexpr int64_t kVocab = 11;

// 100 examples in batches of 1, 2, 7 and 90; token windows of T, 1, T/2 and T tokens (all <= the model's T).
struct Batch {
  int64_t size, length;
};
std::vector<Batch> batches(int64_t t) { return {{1, t}, {2, 1}, {7, std::max<int64_t>(1, t / 2)}, {90, t}}; }

// The checker's verdicts: runs tools/onnx_check.py on the manifest once for all models.
class Checker {
 public:
  explicit Checker(const Scratch& dir) : dir_(dir) {}

  // Exports `model` (its example: a batch of 2), writes the test batches and Ember's outputs.
  onnx::ExportResult add(const std::string& name, nn::Module& model, const Shape& sample, bool tokens, int64_t vocab,
                         int64_t opset = onnx::kMaxOpset) {
    Generator gen(7);
    const auto input = [&](int64_t n, int64_t length) {
      Shape shape{n};
      if (tokens) return randint(vocab, {n, length}, {.dtype = DType::i64}, &gen);
      for (int64_t s : sample) shape.push_back(s);
      return randn(shape, {}, &gen);
    };
    const std::string path = dir_.file(name + ".onnx");
    const onnx::ExportResult r = onnx::export_module(model, input(2, sample.empty() ? 1 : sample[0]), path, {.opset = opset});
    onnx::check_file(path);
    nlohmann::json entry{{"name", name}, {"onnx", path}, {"batches", nlohmann::json::array()}};
    NoGradGuard no_grad;
    model.eval();
    int i = 0;
    for (const Batch& b : batches(tokens ? sample[0] : 1)) {
      const Tensor x = input(b.size, b.length);
      const std::string in = dir_.file(name + ".in" + std::to_string(i) + ".npy");
      const std::string want = dir_.file(name + ".out" + std::to_string(i++) + ".npy");
      write_npy(in, x);
      write_npy(want, model.forward(x));
      entry["batches"].push_back({{"input", in}, {"expected", want}});
    }
    manifest_["models"].push_back(entry);
    names_.push_back(name);
    return r;
  }

  // Runs the checker and expects every model within the tolerance on all 100 examples.
  void expect_all_match() {
    const std::string py = checker_python();
    if (py.empty()) return;
    const std::string manifest = dir_.write("manifest.json", manifest_.dump());
    const Result r = run(py + " " + quoted(EMBER_SOURCE_DIR "/tools/onnx_check.py") + " " + quoted(manifest));
    ASSERT_EQ(r.rc, 0) << r.output;
    const nlohmann::json verdicts = nlohmann::json::parse(lines(r.output).back());
    for (const std::string& name : names_) {
      SCOPED_TRACE(name);
      ASSERT_TRUE(verdicts.contains(name)) << r.output;
      const nlohmann::json& v = verdicts[name];
      EXPECT_TRUE(v["error"].is_null()) << v["error"];
      EXPECT_TRUE(v["shapes_ok"].get<bool>());
      EXPECT_EQ(v["examples"].get<int64_t>(), 100);
      EXPECT_LE(v["max_rel_error"].get<double>(), kTolerance);
    }
    std::printf("max relative error per model: %s\n", verdicts.dump().c_str());
  }

 private:
  const Scratch& dir_;
  nlohmann::json manifest_{{"models", nlohmann::json::array()}};
  std::vector<std::string> names_;
};

std::vector<nn::LayerSpec> parse_model(const std::string& yaml) {
  return app::parse_config("epochs: 1\noptimizer: {type: sgd, lr: 0.1}\nmodel: " + yaml + "\n", "case.yaml", {}, /*fashion_files=*/false).model;
}

TEST(OnnxExport, EveryRegistryLayerMatchesOnnxruntime) {
  const std::vector<Case> cases = {
      {"linear", "[{type: linear, out_features: 7}]", {20}},
      {"linear_sequence", "[{type: linear, out_features: 6, bias: false}]", {5, 8}},
      {"conv2d", "[{type: conv2d, out_channels: 4, kernel_size: 3, stride: 2, padding: 1}]", {3, 9, 9}},
      {"conv2d_groups", "[{type: conv2d, out_channels: 6, kernel_size: [3, 2], dilation: 2, groups: 2, padding: [2, 1], bias: false}]", {4, 8, 8}},
      {"conv1d", "[{type: conv1d, out_channels: 5, kernel_size: 3, stride: 2, padding: 1}]", {3, 12}},
      {"max_pool2d", "[{type: max_pool2d, kernel_size: 3, stride: 2, padding: 1}]", {2, 9, 9}},
      {"max_pool2d_ceil", "[{type: max_pool2d, kernel_size: 3, stride: 2, ceil_mode: true}]", {2, 8, 8}},
      {"avg_pool2d", "[{type: avg_pool2d, kernel_size: 3, stride: 2, padding: 1}]", {2, 9, 9}},
      {"avg_pool2d_exclude_pad", "[{type: avg_pool2d, kernel_size: 3, stride: 2, padding: 1, count_include_pad: false}]", {2, 9, 9}},
      {"adaptive_avg_pool2d", "[{type: adaptive_avg_pool2d, output_size: [2, 4]}]", {2, 8, 8}},
      {"adaptive_avg_pool2d_global", "[{type: adaptive_avg_pool2d}]", {3, 5, 7}},
      {"adaptive_max_pool2d", "[{type: adaptive_max_pool2d, output_size: 4}]", {2, 8, 8}},
      {"batch_norm2d", "[{type: batch_norm}]", {3, 5, 5}},
      {"batch_norm1d", "[{type: batch_norm, eps: 0.001}]", {6}},
      {"batch_norm1d_sequence", "[{type: batch_norm, affine: false}]", {4, 7}},
      {"layer_norm", "[{type: layer_norm}]", {5, 8}},
      {"layer_norm_opset13", "[{type: layer_norm}]", {5, 8}, false, 13},
      {"layer_norm_no_affine", "[{type: layer_norm, affine: false, eps: 0.01}]", {8}},
      {"dropout", "[{type: dropout, p: 0.5}]", {10}},
      {"flatten", "[{type: flatten}]", {2, 3, 4}},
      {"flatten_from_2", "[{type: flatten, start_dim: 2}]", {2, 3, 4}},
      {"relu", "[{type: relu}]", {3, 7}},
      {"tanh", "[{type: tanh}]", {3, 7}},
      {"sigmoid", "[{type: sigmoid}]", {3, 7}},
      {"silu", "[{type: silu}]", {3, 7}},
      {"gelu", "[{type: gelu}]", {3, 7}},
      {"gelu_tanh", "[{type: gelu, approximate: tanh}]", {3, 7}},
      {"leaky_relu", "[{type: leaky_relu, negative_slope: 0.2}]", {3, 7}},
      {"elu", "[{type: elu, alpha: 0.7}]", {3, 7}},
      {"softplus", "[{type: softplus, beta: 2, threshold: 1}]", {3, 7}},
      {"hardtanh", "[{type: hardtanh, min_val: -0.5, max_val: 0.8}]", {3, 7}},
      {"softmax", "[{type: softmax, dim: 1}]", {3, 7}},
      {"embedding", "[{type: embedding, embedding_dim: 4}]", {6}, true},
      {"position_learned", "[{type: embedding, embedding_dim: 8}, {type: position_embedding}]", {6}, true},
      {"position_sinusoidal", "[{type: embedding, embedding_dim: 8}, {type: position_embedding, kind: sinusoidal}]", {6}, true},
      {"transformer_block", "[{type: embedding, embedding_dim: 16}, {type: transformer_block, heads: 4}, {type: lm_head}]", {6}, true},
      {"transformer_block_postnorm",
       "[{type: embedding, embedding_dim: 12}, {type: transformer_block, heads: 3, causal: false, norm_first: false, "
       "activation: relu, dim_feedforward: 20}]",
       {5}, true},
      {"transformer_block_opset13", "[{type: embedding, embedding_dim: 8}, {type: transformer_block, heads: 2}]", {4}, true, 13},
      {"lstm", "[{type: lstm, hidden_size: 4}]", {6, 5}},
      {"lstm_bidirectional_2_layers", "[{type: lstm, hidden_size: 3, num_layers: 2, bidirectional: true}]", {5, 4}},
      {"gru", "[{type: gru, hidden_size: 4, bias: false}]", {6, 5}},
      {"gru_bidirectional_2_layers", "[{type: gru, hidden_size: 3, num_layers: 2, bidirectional: true}]", {5, 4}},
      {"lstm_on_tokens", "[{type: embedding, embedding_dim: 5}, {type: lstm, hidden_size: 6}, {type: lm_head}]", {7}, true},
      {"gpt", "[{type: gpt, layers: 2, heads: 2, dim: 8, context: 6, dropout: 0.1}]", {6}, true},
      {"gpt_sinusoidal_untied",
       "[{type: gpt, layers: 1, heads: 2, dim: 8, position: sinusoidal, tie_weights: false, bias: false}]", {5}, true},
      {"rnn_lm_lstm", "[{type: rnn_lm, embedding_dim: 6, hidden_size: 5, num_layers: 2}]", {7}, true},
      {"rnn_lm_gru_tied", "[{type: rnn_lm, cell: gru, embedding_dim: 6, hidden_size: 6, tie_weights: true}]", {7}, true},
  };
  // Every layer type the registry builds is in a case above.
  std::string all;
  for (const Case& c : cases) all += c.model;
  for (const std::string& type : nn::layer_types()) EXPECT_NE(all.find("type: " + type), std::string::npos) << type;

  Scratch dir;
  Checker checker(dir);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Generator init(1);
    auto model = nn::build_model(parse_model(c.model),
                                 {.sample_shape = c.sample, .dtype = c.tokens ? DType::i64 : DType::f32, .vocab_size = kVocab}, &init);
    perturb(*model, init);
    checker.add(c.name, *model, c.sample, c.tokens, kVocab, c.opset);
  }
  checker.expect_all_match();
}

}  // namespace
}  // namespace ember::test
