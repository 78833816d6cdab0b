// ONNX export (onnx/export.h), checked by the real runtime: every layer type of the registry alone, the five
// shipped configs' models and the model ember-export writes from a run are exported, fed 100 test examples in
// batches of different sizes (and, for token models, different sequence lengths: the symbolic dims) through
// Ember and through onnxruntime (tools/onnx_check.py under .venv-test's Python), and compared:
//   |onnxruntime - ember| <= 1e-5 · max(1, |ember|)   for every output element.
// The floor of 1 makes the bound absolute (1e-5) below magnitude 1: outputs near zero come from sums of terms of
// magnitude ~1 that cancel, and their rounding error is relative to those terms, not to the small result.
// Every file passes libonnx's checker (onnx::checker::check_model on the file as written).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <ember/ember.h>

#include "apps/config.h"
#include "apps/run_dir.h"
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

// Moves the f32 state tensors that start constant (norm weights of 1, zero biases, batch norm's running
// statistics 0 and 1) off their initial value, so that each one matters in the comparison; initialised
// weights keep their (realistic) scale.
void perturb(nn::Module& model, Generator& gen) {
  NamedTensors state = model.state_dict();
  for (auto& [name, t] : state) {
    if (t.dtype() != DType::f32) continue;
    const std::vector<float> v = t.to_vector<float>();
    if (std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) != v.end()) continue;  // not constant
    const Tensor noise = randn(t.shape(), {}, &gen) * 0.1;
    t = name.ends_with("running_var") ? abs(t + noise) + 0.5 : t + noise;
  }
  model.load_state_dict(state);
}

Shape batched(int64_t n, Shape sample) {
  sample.insert(0, n);
  return sample;
}

struct Case {
  std::string name;
  std::string model;  // the YAML of config key `model`
  Shape sample;       // one example (no batch dim)
  bool tokens = false;  // i64 token ids [T] (vocabulary kVocab), else f32
  int64_t opset = onnx::kMaxOpset;
};
constexpr int64_t kVocab = 11;

// 100 examples in batches of 1, 2, 7 and 90; token windows of T, 1, T/2 and min(T, 16) tokens (all <= the
// model's T, which a learned position table bounds; the largest batch's windows short, to keep the test fast).
struct Batch {
  int64_t size, length;
};
std::vector<Batch> batches(int64_t t, bool fixed_length) {
  if (fixed_length) return {{1, t}, {2, t}, {7, t}, {90, t}};
  return {{1, t}, {2, 1}, {7, std::max<int64_t>(1, t / 2)}, {90, std::min<int64_t>(t, 16)}};
}

// The checker's verdicts: runs tools/onnx_check.py on the manifest once for all models.
class Checker {
 public:
  explicit Checker(const Scratch& dir) : dir_(dir) {}

  // Exports `model` (its example: a batch of 2) to <name>.onnx, then as add_file.
  onnx::ExportResult add(const std::string& name, nn::Module& model, const Shape& sample, bool tokens, int64_t vocab,
                         int64_t opset = onnx::kMaxOpset) {
    Generator gen(3);
    const Tensor example = tokens ? randint(vocab, {2, sample[0]}, {.dtype = DType::i64}, &gen)
                                  : randn(batched(2, sample), {}, &gen);
    const std::string path = dir_.file(name + ".onnx");
    const onnx::ExportResult r = onnx::export_module(model, example, path, {.opset = opset});
    add_file(name, path, model, sample, tokens, vocab, !r.dynamic_sequence);
    return r;
  }

  // Checks the ONNX file `path` of `model` with libonnx's checker, writes the 100 test examples and Ember's
  // outputs for them, and lists the model for expect_all_match.
  void add_file(const std::string& name, const std::string& path, nn::Module& model, const Shape& sample, bool tokens,
                int64_t vocab, bool fixed_length = false) {
    EXPECT_NO_THROW(onnx::check_file(path)) << name;
    Generator gen(7);
    nlohmann::json entry{{"name", name}, {"onnx", path}, {"batches", nlohmann::json::array()}};
    NoGradGuard no_grad;
    model.eval();
    int i = 0;
    for (const Batch& b : batches(tokens ? sample[0] : 1, fixed_length)) {
      const Tensor x = tokens ? randint(vocab, {b.size, b.length}, {.dtype = DType::i64}, &gen)
                              : randn(batched(b.size, sample), {}, &gen);
      const std::string in = dir_.file(name + ".in" + std::to_string(i) + ".npy");
      const std::string want = dir_.file(name + ".out" + std::to_string(i++) + ".npy");
      write_npy(in, x);
      write_npy(want, model.forward(x));
      entry["batches"].push_back({{"input", in}, {"expected", want}});
    }
    manifest_["models"].push_back(entry);
    names_.push_back(name);
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
      {"rms_norm", "[{type: rms_norm}]", {5, 8}},
      {"rms_norm_no_affine", "[{type: rms_norm, elementwise_affine: false, eps: 0.01}]", {8}},
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
      {"group_norm", "[{type: group_norm, num_groups: 2}]", {4, 5, 5}},
      {"group_norm_flat_no_affine", "[{type: group_norm, num_groups: 3, affine: false, eps: 0.001}]", {6}},
      {"group_norm_sequence", "[{type: group_norm, num_groups: 1}]", {3, 7}},
      {"instance_norm2d", "[{type: instance_norm, affine: true}]", {3, 5, 5}},
      {"instance_norm1d", "[{type: instance_norm}]", {4, 7}},
      {"instance_norm_running", "[{type: instance_norm, track_running_stats: true, affine: true}]", {3, 4, 4}},
      {"local_response_norm", "[{type: local_response_norm, size: 3, alpha: 0.5, beta: 0.6, k: 2}]", {5, 4, 4}},
      {"local_response_norm_even_1d", "[{type: local_response_norm, size: 4, alpha: 0.3}]", {6, 7}},
      {"embedding", "[{type: embedding, embedding_dim: 4}]", {6}, true},
      {"embedding_bag", "[{type: embedding_bag, embedding_dim: 4}]", {6}, true},
      {"embedding_bag_sum", "[{type: embedding_bag, embedding_dim: 3, mode: sum}, {type: linear, out_features: 2}]", {5}, true},
      {"embedding_bag_max", "[{type: embedding_bag, embedding_dim: 3, mode: max}]", {5}, true},
      {"embedding_flattened", "[{type: embedding, embedding_dim: 3}, {type: flatten}, {type: linear, out_features: 4}]", {5}, true},
      {"position_learned", "[{type: embedding, embedding_dim: 8}, {type: position_embedding}]", {6}, true},
      {"position_sinusoidal", "[{type: embedding, embedding_dim: 8}, {type: position_embedding, kind: sinusoidal}]", {6}, true},
      {"transformer_block", "[{type: embedding, embedding_dim: 16}, {type: transformer_block, heads: 4}, {type: lm_head}]", {6}, true},
      {"transformer_block_postnorm",
       "[{type: embedding, embedding_dim: 12}, {type: transformer_block, heads: 3, causal: false, norm_first: false, "
       "activation: relu, dim_feedforward: 20}]",
       {5}, true},
      {"swiglu", "[{type: swiglu, hidden: 10}]", {7}},
      {"swiglu_sequence_bias", "[{type: embedding, embedding_dim: 6}, {type: swiglu, hidden: 9, bias: true}]", {5}, true},
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
      // conv/pool round 3: conv padding same (an even kernel: the odd extra at the end) and padding_mode
      // (reflect, replicate: a Pad node; circular is refused, ErrorsNameTheLayer), transposed convolution,
      // pooling options, resampling
      {"conv2d_same_even_reflect", "[{type: conv2d, out_channels: 4, kernel_size: [4, 3], dilation: [1, 2], padding: same, padding_mode: reflect}]", {3, 7, 8}},
      {"conv2d_same_zeros", "[{type: conv2d, out_channels: 3, kernel_size: 4, padding: same}]", {2, 6, 7}},
      {"conv2d_valid_replicate", "[{type: conv2d, out_channels: 3, kernel_size: 3, padding: [2, 1], stride: 2, padding_mode: replicate}]", {2, 7, 8}},
      {"conv1d_same_replicate", "[{type: conv1d, out_channels: 4, kernel_size: 4, padding: same, padding_mode: replicate}]", {3, 10}},
      {"conv_transpose2d", "[{type: conv_transpose2d, out_channels: 6, kernel_size: 3, stride: 2, padding: [1, 2], output_padding: [1, 0], groups: 3, dilation: 2}]", {6, 3, 4}},
      {"conv_transpose1d", "[{type: conv_transpose1d, out_channels: 5, kernel_size: 4, stride: 2, padding: 1, output_padding: 1, bias: false}]", {3, 7}},
      {"max_pool2d_dilation", "[{type: max_pool2d, kernel_size: 3, stride: 2, padding: 1, dilation: 2}]", {2, 9, 10}},
      {"avg_pool2d_divisor_override", "[{type: avg_pool2d, kernel_size: 3, stride: 2, padding: 1, divisor_override: 5}]", {2, 7, 8}},
      {"max_pool1d", "[{type: max_pool1d, kernel_size: 3, stride: 2, padding: 1, dilation: 2}]", {3, 12}},
      {"avg_pool1d", "[{type: avg_pool1d, kernel_size: 4, stride: 3, padding: 2, count_include_pad: false}]", {3, 10}},
      {"upsample_nearest", "[{type: upsample, scale_factor: 2}]", {2, 3, 4}},
      {"upsample_nearest_size", "[{type: upsample, size: [7, 5]}]", {2, 3, 4}},
      {"upsample_bilinear", "[{type: upsample, size: [8, 11], mode: bilinear}]", {2, 5, 7}},
      {"upsample_bilinear_align_corners", "[{type: upsample, scale_factor: 1.5, mode: bilinear, align_corners: true}]", {2, 4, 6}},
      {"pixel_shuffle", "[{type: pixel_shuffle, upscale_factor: 2}]", {12, 3, 4}},
      {"pixel_unshuffle", "[{type: pixel_unshuffle, downscale_factor: 2}]", {3, 6, 8}},
      // vision models: torchvision's stem and BasicBlocks; the small stem and Bottlenecks
      {"resnet18", "[{type: resnet, num_classes: 5, width: 4}]", {3, 32, 32}},
      {"resnet50_small_stem", "[{type: resnet, num_classes: 4, depth: 50, width: 2, stem: small}]", {1, 12, 12}},
      // the Vision Transformer (issue 32), with and without the tanh pre-logits
      {"vit", "[{type: vit, patch_size: 4, num_classes: 5, layers: 2, heads: 2, hidden_dim: 8, mlp_dim: 12}]", {1, 8, 8}},
      {"vit_pre_logits",
       "[{type: vit, patch_size: 3, num_classes: 4, layers: 1, heads: 4, hidden_dim: 8, mlp_dim: 16, representation_size: 6}]",
       {3, 9, 9}},
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
    const onnx::ExportResult r = checker.add(c.name, *model, c.sample, c.tokens, kVocab, c.opset);
    // Token windows of any length, except where the model flattens them or reduces them to one bag (then fed
    // at their length only).
    EXPECT_EQ(r.dynamic_sequence, c.tokens && c.name != "embedding_flattened" && !c.name.starts_with("embedding_bag"));
  }
  checker.expect_all_match();
}

// Layers built by hand with batch_first = false (the registry builds them batch-first): input [T, B, ...],
// whose dim 0, named batch in the file, is then the sequence; the examples vary it (T = 1, 2, 7, 90).
TEST(OnnxExport, SequenceFirstLayersMatchOnnxruntime) {
  Scratch dir;
  Checker checker(dir);
  Generator init(4);
  nn::LSTM lstm(nn::LSTMOptions(4, 3).num_layers(2).bidirectional(true), &init);
  checker.add("lstm_sequence_first", lstm, {2, 4}, false, 0);
  nn::GRU gru(nn::GRUOptions(4, 5), &init);
  checker.add("gru_sequence_first", gru, {3, 4}, false, 0);
  nn::MultiheadAttention attention(nn::MultiheadAttentionOptions{.embed_dim = 6, .num_heads = 2}, &init);
  perturb(attention, init);
  checker.add("attention_sequence_first", attention, {2, 6}, false, 0);
  nn::TransformerEncoderLayer layer({.d_model = 8, .nhead = 2, .dim_feedforward = 12}, &init);
  perturb(layer, init);
  checker.add("encoder_layer_sequence_first", layer, {3, 8}, false, 0);
  checker.expect_all_match();
}

// The shipped configs' models (seed-initialised, batch norm statistics and norms perturbed), at full size.
// The text models get a vocabulary of 64 characters (the corpus's own size needs the corpus; the graph is the
// same for any V).
TEST(OnnxExport, ShippedConfigsMatchOnnxruntime) {
  Scratch dir;
  Checker checker(dir);
  for (const char* name : {"fashion_mlp", "fashion_cnn", "char_gpt", "char_lstm", "fashion_resnet", "fashion_vit"}) {
    SCOPED_TRACE(name);
    const app::TrainConfig config =
        app::load_config(std::string(EMBER_SOURCE_DIR "/configs/") + name + ".yaml", {}, /*fashion_files=*/false);
    const bool text = config.data.dataset == "text";
    const Shape sample = text ? Shape{config.data.context} : Shape{1, 28, 28};
    Generator init(config.seed);
    auto model = nn::build_model(config.model, {.sample_shape = sample, .dtype = text ? DType::i64 : DType::f32,
                                                .vocab_size = text ? 64 : 0}, &init);
    perturb(*model, init);
    const onnx::ExportResult r = checker.add(name, *model, sample, text, 64);
    EXPECT_EQ(r.dynamic_sequence, text);
    // Every state_dict tensor is an initializer of the same name (the tied GPT head: one, tok_emb.weight).
    for (const auto& [key, t] : model->state_dict()) {
      if (key.ends_with("num_batches_tracked")) continue;  // not used by inference
      EXPECT_NE(std::find(r.initializers.begin(), r.initializers.end(), key), r.initializers.end()) << key;
    }
  }
  checker.expect_all_match();
}

// ember-export on two ember-train runs (a Fashion-MNIST MLP with the default out and opset; a GRU language
// model with --out and --opset 14), checked against the checkpoint's weights in Ember; and its errors.
TEST(OnnxExport, EmberExportWritesARunsModel) {
  Scratch dir;
  MlpConfig mlp;
  mlp.epochs = 1;
  mlp.limit = 100;
  mlp.test_limit = 20;
  const fs::path mlp_run = dir.dir() / "mlp";
  const Result t1 = train("--config " + dir.write("mlp.yaml", yaml(mlp)) + " --out " + mlp_run.string());
  ASSERT_EQ(t1.rc, 0) << t1.output;
  std::string corpus_text;
  for (int i = 0; i < 400; ++i) corpus_text += i % 3 ? "the cat sat. " : "a dog ran\n";
  const std::string corpus = dir.write("corpus.txt", corpus_text);
  const fs::path lm_run = dir.dir() / "lm";
  const Result t2 = train("--config " +
                          dir.write("lm.yaml", "task: language_model\nepochs: 1\nseed: 5\ndata: {dataset: text, path: " +
                                                   corpus + ", context: 8, batch_size: 16, samples_per_epoch: 64, "
                                                   "workers: 0}\nmodel: {type: rnn_lm, cell: gru, embedding_dim: 8, "
                                                   "hidden_size: 8, num_layers: 2}\noptimizer: {type: adam, lr: 0.01}\n") +
                          " --out " + lm_run.string());
  ASSERT_EQ(t2.rc, 0) << t2.output;

  const auto exporter = [](const std::string& args) { return run(std::string(EMBER_EXPORT_APP) + " " + args); };
  const Result e1 = exporter("--checkpoint " + mlp_run.string());
  ASSERT_EQ(e1.rc, 0) << e1.output;
  expect_in(e1.output, {"wrote " + (mlp_run / "model.onnx").string(), "opset 17", "input f32 [batch, 1, 28, 28]"});
  const std::string lm_file = dir.file("lm.onnx");
  const Result e2 = exporter("--checkpoint " + lm_run.string() + " --out " + lm_file + " --opset 14");
  ASSERT_EQ(e2.rc, 0) << e2.output;
  expect_in(e2.output, {"wrote " + lm_file, "opset 14", "input i64 [batch, sequence]", "output of shape [1, 8, "});

  // The same models in Ember, from each run's config and newest checkpoint.
  Checker checker(dir);
  for (const auto& [run_dir, file] : {std::pair{mlp_run, (mlp_run / "model.onnx").string()}, std::pair{lm_run, lm_file}}) {
    const app::TrainConfig config = app::load_config((run_dir / "config.yaml").string(), {}, false);
    const bool text = config.data.dataset == "text";
    const int64_t vocab = text ? data::Tokenizer::load((run_dir / "vocab.json").string()).vocab_size() : 0;
    const Shape sample = text ? Shape{config.data.context} : Shape{1, 28, 28};
    Generator init(config.seed);
    auto model = nn::build_model(config.model, {.sample_shape = sample, .dtype = text ? DType::i64 : DType::f32,
                                                .vocab_size = vocab}, &init);
    std::vector<std::string> problems;
    model->load_state_dict(app::newest_valid_checkpoint(run_dir, problems)->take("model."));
    checker.add_file(run_dir.filename().string(), file, *model, sample, text, vocab);
  }
  checker.expect_all_match();

  const Result opset = exporter("--checkpoint " + mlp_run.string() + " --opset 18");
  EXPECT_EQ(opset.rc, 2);
  expect_in(opset.output, {"--opset 18", "13 to 17"});
  const Result missing = exporter("--checkpoint " + (dir.dir() / "nope").string());
  EXPECT_EQ(missing.rc, 2);
  expect_in(missing.output, {"nope", "no such file or directory"});
}

// A layer without an ONNX mapping, one whose settings ONNX cannot express, an opset out of range and a model
// that is not f32: each an error that names the layer (its path and type) or the setting.
TEST(OnnxExport, ErrorsNameTheLayer) {
  Scratch dir;
  const std::string path = dir.file("m.onnx");
  const auto expect_error = [&](nn::Module& m, const Tensor& x, const std::vector<std::string>& pieces,
                                onnx::ExportOptions o = {}) {
    try {
      onnx::export_module(m, x, path, o);
      ADD_FAILURE() << "no error; expected " << pieces[0];
    } catch (const Error& e) {
      expect_in(e.what(), pieces);
    }
    EXPECT_FALSE(fs::exists(path)) << "a failed export left a file";
  };
  nn::Sequential cell{std::make_shared<nn::Linear>(4, 4), std::make_shared<nn::LSTMCell>(4, 3)};
  expect_error(cell, zeros({2, 4}), {"layer '1' (LSTMCell)", "no ONNX mapping", "Linear", "GRU"});
  struct Custom : nn::Linear {
    Custom() : nn::Linear(3, 3) {}
    Tensor forward(const Tensor& x) override { return nn::Linear::forward(x) * 2.0; }
  };
  nn::Sequential custom{std::make_shared<nn::ReLU>(), std::make_shared<Custom>()};
  expect_error(custom, zeros({2, 3}), {"layer '1' (Linear)", "no ONNX mapping"});
  nn::LSTM unbatched(nn::LSTMOptions(4, 3));
  expect_error(unbatched, zeros({5, 4}), {"layer '(model)' (LSTM)", "batched input [T, B, I]", "[5, 4]"});
  nn::Sequential adaptive{std::make_shared<nn::AdaptiveAvgPool2d>(3)};
  expect_error(adaptive, zeros({1, 2, 7, 7}), {"layer '0' (AdaptiveAvgPool2d)", "7x7 to 3x3", "divides"});
  nn::Linear linear(3, 2);
  expect_error(linear, zeros({2, 3}), {"opset 12", "13 to 17"}, {.opset = 12});
  expect_error(linear, zeros({2, 3}), {"opset 18", "13 to 17"}, {.opset = 18});
  linear.to(DType::f64);
  expect_error(linear, zeros({2, 3}, {.dtype = DType::f64}), {"'weight' is f64", "module.to(DType::f32)"});
  // conv/pool round 3: what ONNX (opsets 13 to 17) cannot express is refused, naming the layer and why
  nn::Sequential circular{std::make_shared<nn::Conv2d>(nn::Conv2dOptions(2, 3, 3).padding(1).padding_mode(nn::PaddingMode::circular))};
  expect_error(circular, zeros({1, 2, 5, 5}), {"layer '0' (Conv2d)", "padding_mode circular", "opset 19"});
  nn::Sequential circular1d{std::make_shared<nn::Conv1d>(nn::Conv1dOptions(2, 3, 3).padding("same").padding_mode(nn::PaddingMode::circular))};
  expect_error(circular1d, zeros({1, 2, 5}), {"layer '0' (Conv1d)", "padding_mode circular"});
  nn::Sequential divisor{std::make_shared<nn::AvgPool2d>(nn::AvgPool2dOptions(3).stride(2).ceil_mode(true).divisor_override(4))};
  expect_error(divisor, zeros({1, 2, 8, 8}), {"layer '0' (AvgPool2d)", "divisor_override with ceil_mode"});
  nn::Sequential area{std::make_shared<nn::Upsample>(nn::UpsampleOptions().size(std::vector<int64_t>{2, 2}).mode(nn::InterpolateMode::area))};
  expect_error(area, zeros({1, 2, 4, 4}), {"layer '0' (Upsample)", "mode area"});
  nn::Sequential shuffle5d{std::make_shared<nn::PixelShuffle>(2)};
  expect_error(shuffle5d, zeros({1, 2, 8, 3, 3}), {"layer '0' (PixelShuffle)", "[N, C, H, W]"});
  // The training flag survives an export.
  nn::Linear trained(3, 2);
  onnx::export_module(trained, zeros({1, 3}), path);
  EXPECT_TRUE(trained.is_training());
}

}  // namespace
}  // namespace ember::test
