// The layer registry: models from specs with inferred input sizes, and every error a config can hit.
#include <gtest/gtest.h>

#include <map>

#include <ember/ember.h>

#include "nn/registry.h"
#include "nn/schema.h"
#include "test_helpers.h"

using namespace ember;
using nn::LayerSpec;

namespace {

LayerSpec spec(std::string type, std::vector<std::pair<std::string, nn::SpecValue>> args = {}, std::string where = "cfg.yaml:3: model[0]") {
  return {std::move(type), std::move(args), std::move(where)};
}

void expect_error(const std::vector<LayerSpec>& specs, const std::vector<std::string>& needles, Shape in = {1, 28, 28}) {
  try {
    nn::build_sequential(specs, in);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "'" << n << "' not in: " << e.what();
  }
}

// The module's output and the functional op's on the same input.
::testing::AssertionResult same(const Tensor& got, const Tensor& want) {
  return test::close_to(got, want.to_vector<double>(), want.shape(), 1e-6, 1e-6);
}

}  // namespace

TEST(Registry, BuildsTheFashionCnnWithInferredSizes) {
  const std::vector<LayerSpec> specs = {
      spec("conv2d", {{"out_channels", int64_t{32}}, {"kernel_size", int64_t{3}}, {"padding", int64_t{1}}}),
      spec("batch_norm"), spec("relu"), spec("max_pool2d", {{"kernel_size", int64_t{2}}}),
      spec("conv2d", {{"out_channels", int64_t{64}}, {"kernel_size", std::vector<int64_t>{3, 3}}, {"padding", int64_t{1}}}),
      spec("batch_norm"), spec("relu"), spec("max_pool2d", {{"kernel_size", int64_t{2}}}), spec("flatten"),
      spec("linear", {{"out_features", int64_t{128}}}), spec("relu"), spec("dropout", {{"p", 0.25}}),
      spec("linear", {{"out_features", int64_t{10}}})};
  Generator gen(0);
  auto model = nn::build_sequential(specs, {1, 28, 28}, &gen);
  ASSERT_EQ(model->size(), specs.size());
  auto bn = std::dynamic_pointer_cast<nn::BatchNorm2d>((*model)[1]);
  ASSERT_NE(bn, nullptr);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 0);  // the shape probe left no trace
  EXPECT_EQ(model->forward(zeros({5, 1, 28, 28})).shape(), Shape({5, 10}));
  const int64_t expected = (32 * 9 + 32) + 2 * 32 + (64 * 32 * 9 + 64) + 2 * 64 + (64 * 7 * 7 * 128 + 128) + (128 * 10 + 10);
  EXPECT_EQ(model->parameter_count(), expected);
  EXPECT_TRUE(model->is_training());  // building ran the layers in eval mode and restored it
  auto fc = std::dynamic_pointer_cast<nn::Linear>((*model)[9]);
  EXPECT_EQ(fc->in_features, 64 * 7 * 7);
}

TEST(Registry, MlpOnFlatInputAndEveryType) {
  auto mlp = nn::build_sequential({spec("flatten"), spec("linear", {{"out_features", int64_t{16}}, {"bias", false}}),
                                   spec("layer_norm"), spec("gelu"), spec("batch_norm"), spec("tanh"), spec("sigmoid"),
                                   spec("linear", {{"out_features", int64_t{3}}}), spec("softmax", {{"dim", int64_t{1}}})},
                                  {1, 4, 4});
  EXPECT_EQ(mlp->forward(randn({2, 1, 4, 4})).shape(), Shape({2, 3}));
  auto pools = nn::build_sequential({spec("avg_pool2d", {{"kernel_size", int64_t{2}}}), spec("adaptive_avg_pool2d")}, {3, 8, 8});
  EXPECT_EQ(pools->forward(randn({2, 3, 8, 8})).shape(), Shape({2, 3, 1, 1}));
  // adaptive pooling to any size: one int is out×out (PyTorch's AdaptiveAvgPool2d(7)), a list is [h, w]
  auto adaptive = nn::build_sequential({spec("adaptive_avg_pool2d", {{"output_size", int64_t{7}}}),
                                        spec("adaptive_max_pool2d", {{"output_size", std::vector<int64_t>{2, 3}}})},
                                       {3, 10, 9});
  EXPECT_EQ(adaptive->forward(randn({2, 3, 10, 9})).shape(), Shape({2, 3, 2, 3}));
  EXPECT_EQ((*adaptive)[0]->describe(), "AdaptiveAvgPool2d(output_size=[7, 7])");
  auto acts = nn::build_sequential({spec("silu"), spec("leaky_relu", {{"negative_slope", 0.2}}), spec("elu"),
                                   spec("softplus", {{"beta", 2.0}, {"threshold", int64_t{10}}}),
                                   spec("hardtanh", {{"min_val", -0.5}, {"max_val", 0.5}}),
                                   spec("gelu", {{"approximate", std::string("tanh")}})},
                                  {4});
  const Tensor x = from_vector<float>({-2, -0.1f, 0.3f, 3}, {1, 4});
  const Tensor y = gelu(hardtanh(softplus(elu(leaky_relu(silu(x), 0.2)), 2.0, 10.0), -0.5, 0.5), "tanh");
  EXPECT_EQ(acts->forward(x).to_vector<float>(), y.to_vector<float>());
  // 26 + 4 sequence types (nn/transformer.h) + lstm, gru, rnn_lm (nn/rnn.h) + 7 conv/pool/resample types (issue 30)
  // + resnet (nn/resnet.h) + rms_norm, swiglu (issue 31) + vit (nn/vit.h)
  EXPECT_EQ(nn::layer_types().size(), 44u);
  EXPECT_EQ(nn::layer_keys("linear"), (std::vector<std::string>{"out_features", "bias"}));
}

TEST(Registry, PoolCeilMode) {
  // 7 x 7 → 4 x 4 with ceil_mode (3 x 3 without), as PyTorch's MaxPool2d(2, ceil_mode=True)
  auto pools = nn::build_sequential({spec("max_pool2d", {{"kernel_size", int64_t{2}}, {"ceil_mode", true}}),
                                     spec("avg_pool2d", {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"ceil_mode", true}})},
                                    {3, 7, 7});
  EXPECT_EQ(pools->forward(zeros({2, 3, 7, 7})).shape(), Shape({2, 3, 2, 2}));  // 4 → ⌈(4 - 3) / 2⌉ + 1 = 2
  const std::string d = (*pools)[0]->describe();
  EXPECT_NE(d.find("ceil_mode=true"), std::string::npos) << d;
  expect_error({spec("max_pool2d", {{"kernel_size", int64_t{2}}, {"ceil_mode", int64_t{1}}})}, {"'ceil_mode'", "true or false"});
}

TEST(Registry, Errors) {
  expect_error({spec("conv2", {{"out_channels", int64_t{4}}})},
               {"cfg.yaml:3: model[0]", "unknown layer type 'conv2'", "did you mean 'conv2d'", "valid types:", "max_pool2d"});
  expect_error({spec("conv2d", {{"out_channel", int64_t{4}}, {"kernel_size", int64_t{3}}})},
               {"unknown key 'out_channel'", "did you mean 'out_channels'", "valid keys: out_channels, kernel_size"});
  expect_error({spec("conv2d", {{"kernel_size", int64_t{3}}})}, {"(conv2d)", "missing required key 'out_channels'"});
  expect_error({spec("conv2d", {{"out_channels", int64_t{4}}, {"kernel_size", std::string("big")}})},
               {"'kernel_size' must be an integer or a list of two integers"});
  expect_error({spec("gelu", {{"approximate", std::string("fast")}})}, {"(gelu)", "'approximate' must be none or tanh"});
  expect_error({spec("softplus", {{"beta", 0.0}})}, {"(softplus)", "'beta' must not be 0"});
  expect_error({spec("linear", {{"out_features", 2.5}})}, {"'out_features' must be an integer"}, {4});
  expect_error({spec("relu", {{"inplace", true}})}, {"unknown key 'inplace'", "valid keys: none"});
  expect_error({spec("linear", {{"out_features", int64_t{10}}})}, {"linear needs input [features]", "[1, 28, 28]", "flatten"});
  expect_error({spec("flatten"), spec("conv2d", {{"out_channels", int64_t{4}}, {"kernel_size", int64_t{3}}}, "cfg.yaml:9: model[1]")},
               {"cfg.yaml:9: model[1]", "conv2d needs image input [C, H, W]", "[784]"});
  expect_error({spec("conv2d", {{"out_channels", int64_t{4}}, {"kernel_size", int64_t{9}}})},
               {"cfg.yaml:3: model[0] (conv2d)", "does not fit the input [1, 4, 4]", "output size is too small"}, {1, 4, 4});
  // A pool window larger than its (inferred) input fails when the model is built, naming the layer; it gave
  // a 1×1 output before (truncating division).
  expect_error({spec("max_pool2d", {{"kernel_size", int64_t{5}}, {"stride", int64_t{2}}})},
               {"cfg.yaml:3: model[0] (max_pool2d)", "does not fit the input [3, 4, 4]", "output size is too small",
                "kernel [5, 5]", "stride [2, 2]", "padding [0, 0]", "output [0, 0]"},
               {3, 4, 4});
  expect_error({spec("conv2d", {{"out_channels", int64_t{4}}, {"kernel_size", int64_t{3}}, {"stride", int64_t{2}}}),
                spec("avg_pool2d", {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}}, "cfg.yaml:7: model[1]")},
               {"cfg.yaml:7: model[1] (avg_pool2d)", "does not fit the input [4, 2, 2]", "output size is too small",
                "output [0, 0]"},
               {1, 5, 5});
  expect_error({spec("conv2d", {{"out_channels", int64_t{4}}, {"kernel_size", int64_t{3}}, {"dilation", int64_t{3}},
                                {"stride", int64_t{2}}})},
               {"(conv2d)", "output size is too small", "dilation [3, 3]", "effective [7, 7]"}, {1, 6, 6});
  expect_error({spec("max_pool2d", {{"kernel_size", int64_t{2}}, {"padding", int64_t{2}}})},
               {"(max_pool2d)", "at most half the kernel [2, 2]"}, {1, 6, 6});
  expect_error({spec("adaptive_avg_pool2d", {{"output_size", int64_t{0}}})},
               {"(adaptive_avg_pool2d)", "output size [0, 0] must be positive"}, {1, 3, 3});
  expect_error({spec("adaptive_max_pool2d")}, {"(adaptive_max_pool2d)", "output_size"}, {1, 3, 3});
  expect_error({spec("dropout", {{"p", 1.5}})}, {"'p' must be in [0, 1)"});
}

// conv1d over [C, L] samples: in_channels inferred, the output length PyTorch's.
TEST(Registry, Conv1d) {
  auto model = nn::build_sequential({spec("conv1d", {{"out_channels", int64_t{8}}, {"kernel_size", int64_t{5}}, {"stride", int64_t{2}},
                                                     {"padding", int64_t{1}}, {"bias", false}}),
                                     spec("relu"), spec("flatten"), spec("linear", {{"out_features", int64_t{3}}})},
                                    {4, 20});
  auto conv = std::dynamic_pointer_cast<nn::Conv1d>((*model)[0]);
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->weight.shape(), Shape({8, 4, 5}));
  EXPECT_FALSE(conv->bias.defined());
  EXPECT_EQ(model->forward(randn({2, 4, 20})).shape(), Shape({2, 3}));  // L: (20 + 2 - 5) / 2 + 1 = 9
  expect_error({spec("conv1d", {{"out_channels", int64_t{4}}, {"kernel_size", int64_t{3}}})},
               {"cfg.yaml:3: model[0] (conv1d)", "needs sequence input [C, L]", "[1, 28, 28]"});
}

// Input sizes are inferred: a spec that gives one by hand hears so, not just "unknown key".
TEST(Registry, InferredSizesGivenByHandSaySo) {
  expect_error({spec("flatten"), spec("linear", {{"in_features", int64_t{784}}, {"out_features", int64_t{10}}}, "cfg.yaml:5: model[1]")},
               {"cfg.yaml:5: model[1] (linear)", "'in_features' is not set by hand",
                "input sizes are inferred from the previous layer", "here [784]", "remove the key"});
  expect_error({spec("conv2d", {{"in_channels", int64_t{1}}, {"out_channels", int64_t{4}}, {"kernel_size", int64_t{3}}})},
               {"(conv2d)", "'in_channels' is not set by hand", "inferred from the previous layer", "here [1, 28, 28]"});
  expect_error({spec("conv1d", {{"in_channels", int64_t{4}}, {"out_channels", int64_t{4}}, {"kernel_size", int64_t{3}}})},
               {"(conv1d)", "'in_channels' is not set by hand"}, {4, 10});
  // other unknown keys keep the did-you-mean message
  expect_error({spec("linear", {{"out_feature", int64_t{4}}})}, {"unknown key 'out_feature'", "did you mean 'out_features'"}, {4});
}

TEST(Registry, EmbeddingTakesTheVocabularyFromTheData) {
  Generator gen(0);
  const nn::ModelInput tokens{.sample_shape = {8}, .dtype = DType::i64, .vocab_size = 30};
  auto model = nn::build_model({spec("embedding", {{"embedding_dim", int64_t{16}}}), spec("linear", {{"out_features", int64_t{30}}})},
                               tokens, &gen);
  EXPECT_EQ(model->forward(zeros({4, 8}, {.dtype = DType::i64})).shape(), Shape({4, 8, 30}));
  EXPECT_EQ(model->named_parameters()[0].first, "0.weight");
  EXPECT_EQ(model->named_parameters()[0].second.shape(), Shape({30, 16}));
  // No vocabulary (image data), or float input: errors that say what embedding needs.
  EXPECT_TRUE(test::throws_error([&] { nn::build_model({spec("embedding", {{"embedding_dim", int64_t{4}}})}, {.sample_shape = {8}, .dtype = DType::i64}); },
                                 {"model[0] (embedding)", "vocabulary size", "data.dataset: text"}));
  EXPECT_TRUE(test::throws_error([&] { nn::build_model({spec("embedding", {{"embedding_dim", int64_t{4}}})}, {.sample_shape = {1, 28, 28}, .vocab_size = 5}); },
                                 {"takes token ids (i64)", "f32 [1, 28, 28]"}));
  EXPECT_TRUE(test::throws_error([&] { nn::build_model({spec("embedding", {{"num_embeddings", int64_t{4}}})}, tokens); },
                                 {"'num_embeddings' is not set by hand", "vocabulary size"}));
}

// Every layer type declares its keys as rows (nn/schema.h): a kind, a default (or required, or a computed
// default the docs describe) within its own range and choices, and help text — what docs/config.md lists.
TEST(Registry, EveryLayerKeyIsARowWithTypeAndDefault) {
  for (const std::string& type : nn::layer_types()) {
    const std::vector<const nn::schema::Key*> rows = nn::layer_key_rows(type);
    EXPECT_EQ(nn::schema::check_keys(rows), "") << type;
    ASSERT_EQ(rows.size(), nn::layer_keys(type).size()) << type;
    bool optional_seen = false;  // required ones first
    for (const nn::schema::Key* row : rows) {
      EXPECT_FALSE(row->required && optional_seen) << type << "." << row->path << ": required keys go first";
      optional_seen = optional_seen || !row->required;
    }
  }
  EXPECT_TRUE(nn::layer_key_rows("nope").empty());
  const auto rows = nn::layer_key_rows("conv2d");
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows[2]->path, "stride");
  EXPECT_EQ(rows[2]->kind, nn::schema::Kind::pair);
  EXPECT_EQ(std::get<int64_t>(*rows[2]->fallback), 1);
  // The rows' defaults are what a spec without the key builds.
  auto model = nn::build_sequential({spec("conv2d", {{"out_channels", int64_t{2}}, {"kernel_size", int64_t{3}}}),
                                     spec("flatten"), spec("dropout")},
                                    {1, 5, 5});
  EXPECT_EQ(model->forward(zeros({1, 1, 5, 5})).shape(), Shape({1, 18}));  // stride 1, padding 0: 3 × 3
  EXPECT_NE((*model)[0]->describe().find("stride=1, padding=0"), std::string::npos) << (*model)[0]->describe();
  EXPECT_NE((*model)[2]->describe().find("0.5"), std::string::npos) << (*model)[2]->describe();
}

// A value is checked against its row before the layer is built: the kind, the range, the choices.
TEST(Registry, ValuesAreCheckedAgainstTheirRows) {
  expect_error({spec("lstm", {{"hidden_size", int64_t{4}}, {"num_layers", int64_t{0}}})},
               {"cfg.yaml:3: model[0] (lstm)", "'num_layers' must be positive, got 0"}, {5, 3});
  expect_error({spec("lstm", {{"hidden_size", int64_t{4}}, {"dropout", 1.0}})}, {"'dropout' must be in [0, 1), got 1.000000"},
               {5, 3});
  expect_error({spec("transformer_block", {{"heads", int64_t{2}}, {"activation", std::string("tanh")}})},
               {"(transformer_block)", "'activation' must be relu or gelu, got 'tanh'"}, {5, 4});
  expect_error({spec("transformer_block", {{"heads", int64_t{2}}, {"dim_feedforward", int64_t{0}}})},
               {"'dim_feedforward' must be positive, got 0"}, {5, 4});
  expect_error({spec("layer_norm", {{"eps", std::string("small")}})}, {"(layer_norm)", "'eps' must be a number"}, {4});
  expect_error({spec("gelu", {{"approximate", int64_t{1}}})}, {"'approximate' must be a string"}, {4});
  expect_error({spec("adaptive_avg_pool2d", {{"output_size", std::vector<int64_t>{1, 2, 3}}})},
               {"'output_size' must be an integer or a list of two integers [h, w]"});
  // a number row takes an integer; an integer row does not take a number
  EXPECT_NO_THROW(nn::build_sequential({spec("leaky_relu", {{"negative_slope", int64_t{1}}})}, {4}));
  expect_error({spec("softmax", {{"dim", 1.0}})}, {"'dim' must be an integer"}, {4});
}

// Every type builds from its required keys alone (the rest from its rows' defaults): each factory reads its
// keys as its rows declare them (a read of another kind, or of a key without a row, is a table bug that
// throws std::logic_error here).
TEST(Registry, EveryTypeBuildsWithItsDefaults) {
  const nn::ModelInput image{.sample_shape = {3, 8, 8}}, flat{.sample_shape = {4}}, sequence{.sample_shape = {5, 6}};
  const nn::ModelInput tokens{.sample_shape = {8}, .dtype = DType::i64, .vocab_size = 11};
  const nn::ModelInput text_sequence{.sample_shape = {5, 6}, .vocab_size = 11};
  const std::map<std::string, std::pair<std::vector<std::pair<std::string, nn::SpecValue>>, nn::ModelInput>> cases = {
      {"linear", {{{"out_features", int64_t{3}}}, flat}},
      {"conv2d", {{{"out_channels", int64_t{2}}, {"kernel_size", int64_t{3}}}, image}},
      {"conv1d", {{{"out_channels", int64_t{2}}, {"kernel_size", int64_t{3}}}, sequence}},
      {"max_pool2d", {{{"kernel_size", int64_t{2}}}, image}},
      {"avg_pool2d", {{{"kernel_size", int64_t{2}}}, image}},
      {"adaptive_avg_pool2d", {{}, image}},
      {"adaptive_max_pool2d", {{{"output_size", int64_t{2}}}, image}},
      {"batch_norm", {{}, image}},
      {"layer_norm", {{}, flat}},
      {"rms_norm", {{}, flat}},
      {"swiglu", {{{"hidden", int64_t{5}}}, sequence}},
      {"embedding", {{{"embedding_dim", int64_t{4}}}, tokens}},
      {"embedding_bag", {{{"embedding_dim", int64_t{4}}}, tokens}},
      {"group_norm", {{{"num_groups", int64_t{3}}}, image}},
      {"instance_norm", {{}, image}},
      {"local_response_norm", {{{"size", int64_t{2}}}, image}},
      {"dropout", {{}, flat}},
      {"flatten", {{}, image}},
      {"relu", {{}, flat}},
      {"tanh", {{}, flat}},
      {"sigmoid", {{}, flat}},
      {"silu", {{}, flat}},
      {"gelu", {{}, flat}},
      {"leaky_relu", {{}, flat}},
      {"elu", {{}, flat}},
      {"softplus", {{}, flat}},
      {"hardtanh", {{}, flat}},
      {"softmax", {{}, flat}},
      {"position_embedding", {{}, sequence}},
      {"transformer_block", {{{"heads", int64_t{2}}}, sequence}},
      {"lm_head", {{}, text_sequence}},
      {"gpt", {{{"dim", int64_t{16}}, {"layers", int64_t{1}}}, tokens}},
      {"lstm", {{{"hidden_size", int64_t{3}}}, sequence}},
      {"gru", {{{"hidden_size", int64_t{3}}}, sequence}},
      {"rnn_lm", {{{"embedding_dim", int64_t{4}}, {"hidden_size", int64_t{4}}}, tokens}},
      // conv/pool round 3
      {"conv_transpose2d", {{{"out_channels", int64_t{2}}, {"kernel_size", int64_t{3}}}, image}},
      {"conv_transpose1d", {{{"out_channels", int64_t{2}}, {"kernel_size", int64_t{3}}}, sequence}},
      {"max_pool1d", {{{"kernel_size", int64_t{2}}}, sequence}},
      {"avg_pool1d", {{{"kernel_size", int64_t{2}}}, sequence}},
      {"upsample", {{{"scale_factor", int64_t{2}}}, image}},
      {"pixel_shuffle", {{{"upscale_factor", int64_t{1}}}, image}},
      {"pixel_unshuffle", {{{"downscale_factor", int64_t{2}}}, image}},
      // vision models
      {"resnet", {{{"num_classes", int64_t{10}}}, image}},
      // the Vision Transformer (its defaults are ViT-B/16's sizes: a small one here)
      {"vit", {{{"patch_size", int64_t{4}}, {"num_classes", int64_t{3}}, {"layers", int64_t{1}}, {"heads", int64_t{2}},
                {"hidden_dim", int64_t{8}}, {"mlp_dim", int64_t{8}}}, image}},
  };
  for (const std::string& type : nn::layer_types()) {
    const auto it = cases.find(type);
    ASSERT_NE(it, cases.end()) << "add a case for the layer type " << type;
    const auto& [args, input] = it->second;
    EXPECT_NO_THROW(nn::build_model({spec(type, args)}, input)) << type;
  }
}

// The round-3 norms: channels inferred, each key passed through, PyTorch's modules and defaults.
TEST(Registry, GroupInstanceAndLocalResponseNorm) {
  Generator gen(0);
  auto gn = nn::build_sequential({spec("group_norm", {{"num_groups", int64_t{2}}, {"eps", 1e-3}})}, {6, 4, 4}, &gen);
  const auto g = std::dynamic_pointer_cast<nn::GroupNorm>((*gn)[0]);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->options.num_groups(), 2);
  EXPECT_EQ(g->options.num_channels(), 6);
  EXPECT_DOUBLE_EQ(g->options.eps(), 1e-3);
  EXPECT_EQ(g->weight.shape(), Shape({6}));  // affine by default
  const Tensor x = randn({3, 6, 4, 4}, {}, &gen);
  EXPECT_TRUE(same(gn->forward(x), nn::functional::group_norm(x, 2, g->weight, g->bias, 1e-3)));
  auto gn_flat = nn::build_sequential({spec("group_norm", {{"num_groups", int64_t{1}}, {"affine", false}})}, {5});
  EXPECT_TRUE(std::dynamic_pointer_cast<nn::GroupNorm>((*gn_flat)[0])->named_parameters().empty());
  expect_error({spec("group_norm", {{"num_groups", int64_t{4}}})},
               {"model[0] (group_norm)", "num_groups = 4 does not divide the input's 6 channels", "[6, 4, 4]"}, {6, 4, 4});
  expect_error({spec("group_norm")}, {"(group_norm)", "missing required key 'num_groups'"}, {6, 4});
  expect_error({spec("group_norm", {{"num_groups", int64_t{0}}})}, {"'num_groups' must be positive, got 0"}, {6, 4});
  expect_error({spec("group_norm", {{"num_channels", int64_t{6}}, {"num_groups", int64_t{2}}})},
               {"'num_channels' is not set by hand", "the input's channels", "here [6, 4]"}, {6, 4});

  // instance_norm: InstanceNorm1d on [C, L], InstanceNorm2d on [C, H, W]; PyTorch's defaults
  auto in1 = nn::build_sequential({spec("instance_norm")}, {3, 7});
  const auto i1 = std::dynamic_pointer_cast<nn::InstanceNorm1d>((*in1)[0]);
  ASSERT_NE(i1, nullptr);
  EXPECT_EQ(i1->options.num_features(), 3);
  EXPECT_FALSE(i1->options.affine());
  EXPECT_FALSE(i1->options.track_running_stats());
  EXPECT_DOUBLE_EQ(i1->options.eps(), 1e-5);
  EXPECT_DOUBLE_EQ(i1->options.momentum(), 0.1);
  auto in2 = nn::build_sequential(
      {spec("instance_norm", {{"affine", true}, {"track_running_stats", true}, {"momentum", 0.3}, {"eps", 1e-4}})}, {4, 5, 5});
  const auto i2 = std::dynamic_pointer_cast<nn::InstanceNorm2d>((*in2)[0]);
  ASSERT_NE(i2, nullptr);
  EXPECT_EQ(i2->weight.shape(), Shape({4}));
  EXPECT_EQ(i2->running_mean.shape(), Shape({4}));
  EXPECT_DOUBLE_EQ(i2->options.momentum(), 0.3);
  EXPECT_DOUBLE_EQ(i2->options.eps(), 1e-4);
  EXPECT_EQ(in2->forward(randn({2, 4, 5, 5}, {}, &gen)).shape(), Shape({2, 4, 5, 5}));
  expect_error({spec("instance_norm")}, {"(instance_norm)", "needs input [C, L] (InstanceNorm1d) or [C, H, W]", "got [8]"}, {8});

  // local_response_norm: the keys as nn::LocalResponseNorm's options
  auto lrn = nn::build_sequential({spec("local_response_norm", {{"size", int64_t{3}}, {"alpha", 0.2}, {"beta", 0.5}, {"k", int64_t{2}}})},
                                  {5, 4});
  const auto l = std::dynamic_pointer_cast<nn::LocalResponseNorm>((*lrn)[0]);
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->options.size(), 3);
  EXPECT_DOUBLE_EQ(l->options.alpha(), 0.2);
  EXPECT_DOUBLE_EQ(l->options.beta(), 0.5);
  EXPECT_DOUBLE_EQ(l->options.k(), 2.0);
  const Tensor y = randn({2, 5, 4}, {}, &gen);
  EXPECT_TRUE(same(lrn->forward(y), nn::functional::local_response_norm(y, 3, 0.2, 0.5, 2.0)));
  auto lrn_default = nn::build_sequential({spec("local_response_norm", {{"size", int64_t{2}}})}, {3, 4, 4});
  const auto ld = std::dynamic_pointer_cast<nn::LocalResponseNorm>((*lrn_default)[0]);
  EXPECT_DOUBLE_EQ(ld->options.alpha(), 1e-4);
  EXPECT_DOUBLE_EQ(ld->options.beta(), 0.75);
  EXPECT_DOUBLE_EQ(ld->options.k(), 1.0);
  expect_error({spec("local_response_norm", {{"size", int64_t{2}}})}, {"(local_response_norm)", "needs input [C, L] or [C, H, W]"}, {8});
}

// embedding_bag: each sample [L] one bag; the vocabulary from the data; the keys as nn::EmbeddingBag's options.
TEST(Registry, EmbeddingBagTakesOneBagPerSample) {
  Generator gen(0);
  const nn::ModelInput tokens{.sample_shape = {6}, .dtype = DType::i64, .vocab_size = 20};
  auto model = nn::build_model({spec("embedding_bag", {{"embedding_dim", int64_t{5}}}), spec("linear", {{"out_features", int64_t{3}}})},
                               tokens, &gen);
  EXPECT_EQ(model->forward(zeros({4, 6}, {.dtype = DType::i64})).shape(), Shape({4, 3}));
  const auto bag = std::dynamic_pointer_cast<nn::EmbeddingBag>((*std::dynamic_pointer_cast<nn::Sequential>(model))[0]);
  ASSERT_NE(bag, nullptr);
  EXPECT_EQ(bag->weight.shape(), Shape({20, 5}));
  EXPECT_EQ(bag->options.mode, "mean");
  EXPECT_FALSE(bag->options.max_norm.has_value());
  EXPECT_FALSE(bag->options.padding_idx.has_value());
  EXPECT_DOUBLE_EQ(bag->options.norm_type, 2.0);
  // mean of each row's vectors
  const Tensor ids = from_vector<int64_t>({1, 4, 4, 0, 2, 3, 7, 7, 7, 7, 1, 2}, {2, 6});
  EXPECT_TRUE(same(bag->forward(ids), nn::functional::embedding(ids, bag->weight).mean({1})));

  auto summed = nn::build_model({spec("embedding_bag", {{"embedding_dim", int64_t{3}}, {"mode", std::string("sum")},
                                                        {"max_norm", 1.5}, {"norm_type", int64_t{1}}, {"padding_idx", int64_t{-1}},
                                                        {"scale_grad_by_freq", true}})},
                                tokens, &gen);
  const auto s = std::dynamic_pointer_cast<nn::EmbeddingBag>((*std::dynamic_pointer_cast<nn::Sequential>(summed))[0]);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->options.mode, "sum");
  EXPECT_DOUBLE_EQ(s->options.max_norm.value_or(0), 1.5);
  EXPECT_DOUBLE_EQ(s->options.norm_type, 1.0);
  EXPECT_EQ(s->options.padding_idx.value_or(0), 19);  // -1: the last row
  EXPECT_TRUE(s->options.scale_grad_by_freq);

  expect_error({spec("embedding_bag", {{"embedding_dim", int64_t{3}}, {"mode", std::string("median")}})},
               {"(embedding_bag)", "'mode' must be", "got 'median'"}, {6});
  EXPECT_TRUE(test::throws_error([&] { nn::build_model({spec("embedding_bag", {{"embedding_dim", int64_t{3}}, {"mode", std::string("max")}, {"scale_grad_by_freq", true}})}, tokens); },
                                 {"(embedding_bag)", "scale_grad_by_freq does not apply to mode max"}));
  EXPECT_TRUE(test::throws_error([&] { nn::build_model({spec("embedding_bag", {{"embedding_dim", int64_t{4}}})}, {.sample_shape = {2, 6}, .dtype = DType::i64, .vocab_size = 5}); },
                                 {"(embedding_bag)", "one bag of token ids [L] per sample", "[2, 6]"}));
  EXPECT_TRUE(test::throws_error([&] { nn::build_model({spec("embedding_bag", {{"embedding_dim", int64_t{4}}})}, {.sample_shape = {1, 28, 28}, .vocab_size = 5}); },
                                 {"takes token ids (i64)"}));
  EXPECT_TRUE(test::throws_error([&] { nn::build_model({spec("embedding_bag", {{"num_embeddings", int64_t{4}}})}, tokens); },
                                 {"'num_embeddings' is not set by hand", "vocabulary size"}));
}

// --- conv/pool round 3 ---
namespace {
std::shared_ptr<nn::Sequential> build(const std::vector<LayerSpec>& specs, const Shape& in) {
  Generator gen(7);
  return nn::build_sequential(specs, in, &gen);
}
void expect_same(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
}
}  // namespace

// conv padding "same" / "valid" and padding_mode: the layer is the functional op on the padded input.
TEST(Registry, ConvPaddingSameValidAndPaddingMode) {
  Generator gen(1);
  const Tensor x = randn({2, 3, 5, 6}, {}, &gen);
  auto m = build({spec("conv2d", {{"out_channels", int64_t{4}}, {"kernel_size", std::vector<int64_t>{3, 4}},
                                  {"padding", std::string("same")}, {"padding_mode", std::string("reflect")}})},
                 {3, 5, 6});
  auto conv = std::dynamic_pointer_cast<nn::Conv2d>((*m)[0]);
  ASSERT_NE(conv, nullptr);
  // same with kernel [3, 4]: rows 1 | 1, columns 1 | 2 (the odd extra on the right), mirrored
  const Tensor padded = nn::functional::pad(x, nn::functional::PadFuncOptions({1, 2, 1, 1}).mode(nn::functional::PadMode::reflect));
  expect_same(m->forward(x), nn::functional::conv2d(padded, conv->weight, conv->bias));
  EXPECT_EQ(m->forward(x).shape(), Shape({2, 4, 5, 6}));
  auto c1 = build({spec("conv1d", {{"out_channels", int64_t{2}}, {"kernel_size", int64_t{3}}, {"padding", std::string("valid")},
                                   {"padding_mode", std::string("circular")}})},
                  {3, 9});
  EXPECT_EQ(c1->forward(zeros({1, 3, 9})).shape(), Shape({1, 2, 7}));
  auto c1same = build({spec("conv1d", {{"out_channels", int64_t{2}}, {"kernel_size", int64_t{4}}, {"padding", std::string("same")},
                                       {"padding_mode", std::string("replicate")}})},
                      {3, 9});
  EXPECT_EQ(c1same->forward(zeros({1, 3, 9})).shape(), Shape({1, 2, 9}));
  expect_error({spec("conv2d", {{"out_channels", int64_t{4}}, {"kernel_size", int64_t{3}}, {"padding", std::string("full")}})},
               {"(conv2d)", "'padding' must be an integer, [h, w], \"same\" or \"valid\", got 'full'"});
  expect_error({spec("conv1d", {{"out_channels", int64_t{4}}, {"kernel_size", int64_t{3}}, {"padding", std::string("full")}})},
               {"(conv1d)", "'padding' must be an integer, \"same\" or \"valid\", got 'full'"}, {3, 9});
  expect_error({spec("conv2d", {{"out_channels", int64_t{4}}, {"kernel_size", int64_t{3}}, {"padding_mode", std::string("mirror")}})},
               {"'padding_mode' must be zeros, reflect, replicate or circular, got 'mirror'"});
  expect_error({spec("conv2d", {{"out_channels", int64_t{4}}, {"kernel_size", int64_t{3}}, {"padding", std::string("same")},
                                {"stride", int64_t{2}}})},
               {"(conv2d)", "same"});
  // strings are for conv padding only
  expect_error({spec("max_pool2d", {{"kernel_size", int64_t{2}}, {"padding", std::string("same")}})},
               {"'padding' must be an integer or a list of two integers"});
}

TEST(Registry, ConvTranspose) {
  Generator gen(2);
  const Tensor x = randn({2, 3, 4, 4}, {}, &gen);
  auto m = build({spec("conv_transpose2d", {{"out_channels", int64_t{4}}, {"kernel_size", int64_t{3}}, {"stride", int64_t{2}},
                                            {"padding", int64_t{1}}, {"output_padding", int64_t{1}}, {"groups", int64_t{1}},
                                            {"dilation", int64_t{1}}})},
                 {3, 4, 4});
  auto t = std::dynamic_pointer_cast<nn::ConvTranspose2d>((*m)[0]);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->weight.shape(), Shape({3, 4, 3, 3}));  // in_channels inferred: [C_in, C_out/groups, KH, KW]
  expect_same(m->forward(x), nn::functional::conv_transpose2d(
                                 x, t->weight, t->bias,
                                 nn::functional::ConvTranspose2dOptions().stride(2).padding(1).output_padding(1)));
  EXPECT_EQ(m->forward(x).shape(), Shape({2, 4, 8, 8}));  // (4 - 1)·2 - 2 + 3 + 1
  auto m1 = build({spec("conv_transpose1d", {{"out_channels", int64_t{5}}, {"kernel_size", int64_t{4}}, {"stride", int64_t{3}},
                                             {"groups", int64_t{1}}, {"bias", false}})},
                  {2, 5});
  EXPECT_EQ(m1->forward(zeros({1, 2, 5})).shape(), Shape({1, 5, 16}));
  EXPECT_FALSE(std::dynamic_pointer_cast<nn::ConvTranspose1d>((*m1)[0])->bias.defined());
  expect_error({spec("conv_transpose2d", {{"in_channels", int64_t{3}}, {"out_channels", int64_t{4}}, {"kernel_size", int64_t{3}}})},
               {"(conv_transpose2d)", "'in_channels' is not set by hand"});
  expect_error({spec("conv_transpose2d", {{"out_channels", int64_t{4}}, {"kernel_size", int64_t{3}}, {"output_padding", int64_t{2}}})},
               {"(conv_transpose2d)", "does not fit the input"});
  expect_error({spec("conv_transpose1d", {{"out_channels", int64_t{4}}, {"kernel_size", int64_t{3}}})},
               {"conv_transpose1d needs sequence input [C, L]"});
}

TEST(Registry, PoolOptionsRound3) {
  Generator gen(3);
  const Tensor x = randn({2, 3, 9, 10}, {}, &gen);
  namespace F = nn::functional;
  auto mp = build({spec("max_pool2d", {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}},
                                       {"dilation", int64_t{2}}})},
                  {3, 9, 10});
  expect_same(mp->forward(x), F::max_pool2d(x, F::MaxPool2dOptions(3).stride(2).padding(1).dilation(2)));
  auto ap = build({spec("avg_pool2d", {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}},
                                       {"divisor_override", int64_t{5}}})},
                  {3, 9, 10});
  expect_same(ap->forward(x), F::avg_pool2d(x, F::AvgPool2dOptions(3).stride(2).padding(1).divisor_override(5)));
  expect_error({spec("avg_pool2d", {{"kernel_size", int64_t{2}}, {"divisor_override", int64_t{0}}})},
               {"'divisor_override' must be positive, got 0"});
  expect_error({spec("avg_pool2d", {{"kernel_size", int64_t{2}}, {"dilation", int64_t{2}}})}, {"unknown key 'dilation'"});
  const Tensor s = randn({2, 3, 12}, {}, &gen);
  auto p1 = build({spec("max_pool1d", {{"kernel_size", int64_t{3}}, {"stride", int64_t{2}}, {"padding", int64_t{1}},
                                       {"dilation", int64_t{2}}, {"ceil_mode", true}})},
                  {3, 12});
  expect_same(p1->forward(s), F::max_pool1d(s, F::MaxPool1dOptions(3).stride(2).padding(1).dilation(2).ceil_mode(true)));
  auto a1 = build({spec("avg_pool1d", {{"kernel_size", int64_t{4}}, {"stride", int64_t{3}}, {"padding", int64_t{2}},
                                       {"ceil_mode", true}, {"count_include_pad", false}})},
                  {3, 12});
  expect_same(a1->forward(s), F::avg_pool1d(s, F::AvgPool1dOptions(4).stride(3).padding(2).ceil_mode(true).count_include_pad(false)));
  auto d1 = build({spec("max_pool1d", {{"kernel_size", int64_t{4}}})}, {3, 12});
  EXPECT_EQ(d1->forward(s).shape(), Shape({2, 3, 3}));  // stride = kernel_size
  expect_error({spec("max_pool1d", {{"kernel_size", std::vector<int64_t>{2, 2}}})}, {"'kernel_size' must be an integer"}, {3, 12});
}

TEST(Registry, UpsampleAndPixelShuffle) {
  Generator gen(4);
  namespace F = nn::functional;
  const Tensor x = randn({2, 3, 4, 5}, {}, &gen);
  auto near = build({spec("upsample", {{"size", int64_t{8}}})}, {3, 4, 5});
  expect_same(near->forward(x), F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{8, 8})));
  auto bil = build({spec("upsample", {{"scale_factor", 1.5}, {"mode", std::string("bilinear")}, {"align_corners", true}})}, {3, 4, 5});
  expect_same(bil->forward(x), F::interpolate(x, F::InterpolateFuncOptions().scale_factor(std::vector<double>{1.5, 1.5})
                                                      .mode(nn::InterpolateMode::bilinear).align_corners(true)));
  auto exact = build({spec("upsample", {{"size", std::vector<int64_t>{7, 3}}, {"mode", std::string("nearest-exact")}})}, {3, 4, 5});
  expect_same(exact->forward(x), F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{7, 3})
                                                        .mode(nn::InterpolateMode::nearest_exact)));
  auto rec = build({spec("upsample", {{"scale_factor", 1.7}, {"mode", std::string("linear")}, {"recompute_scale_factor", true}})}, {3, 6});
  const Tensor s = randn({2, 3, 6}, {}, &gen);
  expect_same(rec->forward(s), F::interpolate(s, F::InterpolateFuncOptions().scale_factor(std::vector<double>{1.7})
                                                      .mode(nn::InterpolateMode::linear).recompute_scale_factor(true)));
  expect_error({spec("upsample")}, {"(upsample)", "exactly one of 'size' and 'scale_factor'"}, {3, 4, 5});
  expect_error({spec("upsample", {{"size", int64_t{8}}, {"scale_factor", 2.0}})}, {"exactly one of 'size' and 'scale_factor'"}, {3, 4, 5});
  expect_error({spec("upsample", {{"size", std::vector<int64_t>{8, 8, 8}}})}, {"'size' has 3 values", "2 spatial dims"}, {3, 4, 5});
  expect_error({spec("upsample", {{"size", int64_t{0}}})}, {"'size' must be a list of integers"}, {3, 4, 5});
  expect_error({spec("upsample", {{"scale_factor", 2.0}, {"align_corners", false}})},
               {"'align_corners' goes with the linear modes", "not mode nearest"}, {3, 4, 5});
  expect_error({spec("upsample", {{"scale_factor", 2.0}, {"mode", std::string("cubic")}})}, {"'mode' must be nearest"}, {3, 4, 5});
  expect_error({spec("upsample", {{"scale_factor", 2.0}, {"mode", std::string("trilinear")}})}, {"(upsample)", "does not fit"}, {3, 4, 5});
  const Tensor y = randn({2, 8, 3, 3}, {}, &gen);
  auto ps = build({spec("pixel_shuffle", {{"upscale_factor", int64_t{2}}}), spec("pixel_unshuffle", {{"downscale_factor", int64_t{2}}})},
                  {8, 3, 3});
  expect_same((*ps)[0]->forward(y), F::pixel_shuffle(y, 2));
  expect_same(ps->forward(y), y);
  expect_error({spec("pixel_shuffle", {{"upscale_factor", int64_t{3}}})}, {"(pixel_shuffle)", "does not fit"}, {8, 3, 3});
  expect_error({spec("pixel_unshuffle")}, {"missing required key 'downscale_factor'"}, {8, 4, 4});
}

// rms_norm normalises over the input's last dim with eps none (the dtype's machine epsilon) unless given;
// swiglu infers its dim and has no biases unless asked.
TEST(Registry, LanguageModelLayers) {
  auto m = nn::build_sequential({spec("swiglu", {{"hidden", int64_t{12}}}), spec("rms_norm"),
                                 spec("rms_norm", {{"eps", 1e-3}, {"elementwise_affine", false}})},
                                {5, 8});
  ASSERT_EQ(m->size(), 3u);
  const auto mlp = std::dynamic_pointer_cast<nn::SwiGLU>((*m)[0]);
  ASSERT_NE(mlp, nullptr);
  EXPECT_EQ(mlp->options.dim, 8);
  EXPECT_EQ(mlp->options.hidden, 12);
  EXPECT_FALSE(mlp->gate_proj->bias.defined());
  const auto n1 = std::dynamic_pointer_cast<nn::RMSNorm>((*m)[1]), n2 = std::dynamic_pointer_cast<nn::RMSNorm>((*m)[2]);
  ASSERT_TRUE(n1 && n2);
  EXPECT_EQ(n1->normalized_shape, Shape({8}));
  EXPECT_FALSE(n1->options.eps().has_value());
  EXPECT_TRUE(n1->weight.defined());
  EXPECT_EQ(n2->options.eps(), std::optional<double>(1e-3));
  EXPECT_FALSE(n2->weight.defined());
  const Tensor x = randn({2, 5, 8});
  EXPECT_TRUE(same(m->forward(x), nn::functional::rms_norm(nn::functional::rms_norm(mlp->forward(x), {8}, n1->weight), {8}, {}, 1e-3)));
  auto biased = nn::build_sequential({spec("swiglu", {{"hidden", int64_t{3}}, {"bias", true}})}, {4});
  EXPECT_EQ(biased->parameter_count(), 2 * (4 * 3 + 3) + (3 * 4 + 4));

  expect_error({spec("rms_norm", {{"normalized_shape", int64_t{8}}})}, {"(rms_norm)", "'normalized_shape' is not set by hand"}, {8});
  expect_error({spec("swiglu", {{"hidden", int64_t{4}}, {"dim", int64_t{8}}})}, {"(swiglu)", "'dim' is not set by hand"}, {8});
  expect_error({spec("swiglu")}, {"(swiglu)", "missing required key 'hidden'"}, {8});
  expect_error({spec("swiglu", {{"hidden", int64_t{0}}})}, {"(swiglu)", "'hidden' must be positive"}, {8});
  expect_error({spec("rms_norm", {{"eps", -1.0}})}, {"(rms_norm)", "'eps'"}, {8});
  expect_error({spec("swiglu", {{"hidden", int64_t{4}}})}, {"(swiglu)", "[features] or [T, features]"}, {2, 3, 4});
}

// vit: a whole model (its own state_dict names, torchvision's), image size and channels from the input.
TEST(Registry, VitIsAWholeModelSizedByItsInput) {
  Generator gen(0);
  const std::vector<std::pair<std::string, nn::SpecValue>> small = {
      {"patch_size", int64_t{7}}, {"num_classes", int64_t{10}}, {"layers", int64_t{2}}, {"heads", int64_t{2}},
      {"hidden_dim", int64_t{16}}, {"mlp_dim", int64_t{32}}, {"dropout", 0.1}, {"representation_size", int64_t{8}}};
  auto model = nn::build_model({spec("vit", small)}, {.sample_shape = {1, 28, 28}}, &gen);
  const auto vit = std::dynamic_pointer_cast<nn::VisionTransformer>(model);
  ASSERT_NE(vit, nullptr);
  EXPECT_EQ(vit->options.image_size, 28);
  EXPECT_EQ(vit->options.in_channels, 1);
  EXPECT_EQ(vit->options.num_layers, 2);
  EXPECT_DOUBLE_EQ(vit->options.dropout, 0.1);
  EXPECT_EQ(vit->options.representation_size, 8);
  EXPECT_EQ(model->state_dict()[0].first, "class_token");
  EXPECT_EQ(model->state_dict().back().first, "heads.head.bias");
  EXPECT_EQ(model->forward(zeros({2, 1, 28, 28})).shape(), Shape({2, 10}));
  EXPECT_TRUE(nn::is_whole_model("vit"));

  auto with = [&](const std::string& key, nn::SpecValue value) {  // small, with key set to value
    auto args = small;
    std::erase_if(args, [&](const auto& arg) { return arg.first == key; });
    args.emplace_back(key, std::move(value));
    return std::vector<LayerSpec>{spec("vit", args)};
  };
  expect_error(with("patch_size", int64_t{5}), {"model[0] (vit)", "'patch_size' 5 does not divide the image size 28"});
  expect_error(with("heads", int64_t{3}), {"model[0] (vit)", "hidden_dim 16 is not divisible by num_heads 3"});
  expect_error(with("attention_dropout", 1.0), {"'attention_dropout' must be in [0, 1)"});
  expect_error({spec("vit", small)}, {"(vit)", "square images", "[1, 28, 24]"}, {1, 28, 24});
  expect_error({spec("vit", small)}, {"(vit)", "needs image input [C, H, W]", "[784]"}, {784});
  expect_error({spec("vit", {{"patch_size", int64_t{7}}})}, {"(vit)", "missing required key 'num_classes'"});
  expect_error({spec("flatten"), spec("vit", small)}, {"vit is a whole model", "the only entry"});
}
