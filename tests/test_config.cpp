// The ember-train config: the shipped configs parse, the resolved config round-trips, --set overrides are
// type-checked, and a table of bad configs each exits with code 2 and a message naming the file, line,
// key and what was expected.
#include <gtest/gtest.h>

#include "apps/config.h"
#include "test_train_util.h"

using namespace ember;
using namespace ember::app;

namespace {

const std::string kSourceDir = EMBER_TEST_DATA_DIR "/../..";

const char* kBase = R"(epochs: 2
seed: 3
data:
  batch_size: 32
  limit: 256
model:
  - {type: flatten}
  - {type: linear, out_features: 16}
  - {type: relu}
  - {type: linear, out_features: 10}
optimizer:
  type: sgd
  lr: 0.1
  momentum: 0.9
)";

// Expects parse_config to throw ConfigError whose message holds every piece.
void expect_error(const std::string& text, const std::vector<std::string>& sets, const std::vector<std::string>& pieces) {
  try {
    parse_config(text, "cfg.yaml", sets);
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const ConfigError& e) {
    for (const auto& piece : pieces) EXPECT_NE(std::string(e.what()).find(piece), std::string::npos)
        << "message: " << e.what() << "\nmissing: " << piece;
  }
}

}  // namespace

TEST(Config, ShippedConfigsParse) {
  const TrainConfig mlp = load_config(kSourceDir + "/configs/fashion_mlp.yaml");
  EXPECT_EQ(mlp.optimizer.type, "adamw");
  EXPECT_EQ(mlp.model.front().type, "flatten");
  EXPECT_EQ(mlp.data.dataset, "fashion_mnist");
  const TrainConfig cnn = load_config(kSourceDir + "/configs/fashion_cnn.yaml");
  EXPECT_EQ(cnn.model.front().type, "conv2d");
  EXPECT_EQ(cnn.scheduler.type, "onecycle");
}

TEST(Config, DefaultsAndValues) {
  const TrainConfig c = parse_config(kBase, "cfg.yaml");
  EXPECT_EQ(c.epochs, 2);
  EXPECT_EQ(c.seed, 3u);
  EXPECT_EQ(c.data.batch_size, 32);
  EXPECT_EQ(c.data.limit, 256);
  EXPECT_EQ(c.data.workers, 2);
  EXPECT_EQ(c.optimizer.type, "sgd");
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 0.1);
  EXPECT_DOUBLE_EQ(c.optimizer.momentum, 0.9);
  EXPECT_EQ(c.scheduler.type, "none");
  EXPECT_EQ(c.output.dir, "runs/cfg");
  ASSERT_EQ(c.model.size(), 4u);
  EXPECT_EQ(c.model[1].type, "linear");
  ASSERT_EQ(c.model[1].args.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(c.model[1].args[0].second), 16);
  EXPECT_EQ(c.model[1].where, "cfg.yaml:8: model[1]");
}

TEST(Config, ResolvedConfigRoundTripsAndHashes) {
  const TrainConfig c = parse_config(kBase, "cfg.yaml");
  const std::string yaml = to_yaml(c);
  const TrainConfig back = parse_config(yaml, "resolved.yaml");
  EXPECT_EQ(to_yaml(back), yaml);
  EXPECT_EQ(config_hash(back), config_hash(c));
  // Output and device do not change the trajectory; the lr does.
  EXPECT_EQ(config_hash(parse_config(kBase, "cfg.yaml", {"output.dir=/elsewhere", "device=cpu"})), config_hash(c));
  EXPECT_NE(config_hash(parse_config(kBase, "cfg.yaml", {"optimizer.lr=0.05"})), config_hash(c));
}

TEST(Config, SetOverridesAreTypeChecked) {
  const TrainConfig c = parse_config(kBase, "cfg.yaml",
                                     {"optimizer.lr=0.01", "model.1.out_features=32", "scheduler.type=cosine",
                                      "data.transforms=[{type: normalize, mean: 0.5, std: 0.25}]"});
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 0.01);
  EXPECT_EQ(std::get<int64_t>(c.model[1].args[0].second), 32);
  EXPECT_EQ(c.scheduler.type, "cosine");
  ASSERT_EQ(c.data.transforms.size(), 1u);
  EXPECT_EQ(c.data.transforms[0].std, std::vector<double>{0.25});
  expect_error(kBase, {"optimizer.lr=abc"}, {"--set optimizer.lr=abc", "optimizer.lr", "a finite number > 0", "'abc'"});
  expect_error(kBase, {"optimizer.momentm=0.5"}, {"--set optimizer.momentm=0.5", "unknown key", "did you mean 'momentum'"});
  expect_error(kBase, {"optimizer.lr"}, {"--set optimizer.lr", "expected key.path=value"});
  expect_error(kBase, {"model.9.out_features=3"}, {"'9' is not an index", "0..3"});
  expect_error(kBase, {"epochs.x=3"}, {"'epochs' is a value, not a section"});
}

TEST(Config, ErrorsNameFileLineKeyAndExpectation) {
  expect_error("epochs: 1\nmodel: [{type: relu}]\noptimizer: {lr: 0.1, momentm: 0.9}\n", {},
               {"cfg.yaml:3", "optimizer.momentm", "unknown key", "did you mean 'momentum'", "valid keys in 'optimizer'"});
  expect_error("epochs: 1\nmodel: [{type: relu}]\ndata:\n  batch_size: many\n", {},
               {"cfg.yaml:4", "data.batch_size", "an integer >= 1", "'many'"});
  expect_error("epochs: 0\nmodel: [{type: relu}]\n", {}, {"cfg.yaml:1", "epochs", ">= 1", "'0'"});
  expect_error("model: [{type: relu}]\n", {}, {"epochs", "missing required key"});
  expect_error("epochs: 1\n", {}, {"model", "missing required key"});
  expect_error("epochs: 1\nmodel: [{type: relu}]\noptimizer: {type: adam}\n", {}, {"optimizer.lr", "missing required key"});
  expect_error("epochs: 1\nmodel: [{type: relu}]\noptimizer: {type: adamm, lr: 1}\n", {},
               {"optimizer.type", "unknown value 'adamm'", "did you mean 'adam'", "sgd, adam, adamw, rmsprop"});
  expect_error("epochs: 1\nmodel: [{type: relu}]\nskip_nonfinite: maybe\n", {}, {"skip_nonfinite", "true or false"});
  expect_error("epochs: 1\nmodel:\n  - {type: relu}\n  - {type: linear, out_feature: 3}\n", {},
               {"cfg.yaml:4", "model[1].out_feature", "did you mean 'out_features'"});
  expect_error("epochs: 1\nmodel: [{type: relu}]\nepoch: 3\n", {}, {"cfg.yaml:3", "unknown key", "did you mean 'epochs'"});
  expect_error("epochs: [1\n", {}, {"cfg.yaml", "YAML syntax error"});
  expect_error("epochs: 1\nmodel: [{type: relu}]\ndata: {dataset: idx, train_images: /nope, train_labels: /nope,"
               " test_images: /nope, test_labels: /nope}\n",
               {}, {"cfg.yaml:3", "data.train_images", "'/nope' does not exist"});
  expect_error("epochs: 1\nmodel: [{type: relu}]\ndata: {transforms: [{type: normalize, mean: [0.5], std: [0]}]}\n", {},
               {"data.transforms[0].std", "> 0"});
}

// Each bad config through the real app: exit code 2, and the message on stderr.
TEST(Config, BadConfigsExitWithCode2) {
  test::Scratch scratch;
  struct Case {
    const char* name;
    std::string yaml;
    std::vector<std::string> args, pieces;
  };
  const std::string base = kBase;
  const std::vector<Case> cases = {
      {"unknown key", base + "optimiser: {lr: 1}\n", {}, {"bad.yaml:15", "optimiser", "did you mean 'optimizer'"}},
      {"wrong type", base + "eval: {every_epochs: often}\n", {}, {"bad.yaml:15", "eval.every_epochs", "an integer"}},
      {"negative batch size", "epochs: 1\ndata: {batch_size: -8}\nmodel: [{type: flatten}]\noptimizer: {lr: 0.1}\n", {},
       {"bad.yaml:2", "data.batch_size", ">= 1", "'-8'"}},
      {"missing dataset file", base + "", {"--set", "data.dir=/nonexistent"},
       {"data.dir", "/nonexistent/train-images-idx3-ubyte[.gz]' does not exist", "dataset-fashion-mnist"}},
      {"shapes do not connect", "epochs: 1\nmodel:\n  - {type: linear, out_features: 10}\n  - {type: conv2d, out_channels: 4, kernel_size: 3}\noptimizer: {lr: 0.1}\n",
       {}, {"bad.yaml:3: model[0] (linear)", "needs flat input", "add {type: flatten}"}},
      {"pool larger than its input", "epochs: 1\nmodel:\n  - {type: conv2d, out_channels: 4, kernel_size: 3, stride: 4}\n  - {type: max_pool2d, kernel_size: 8, stride: 2}\noptimizer: {lr: 0.1}\n",
       {}, {"bad.yaml:4: model[1] (max_pool2d)", "[4, 7, 7]", "output size is too small", "kernel [8, 8]", "output [0, 0]"}},
      {"lr NaN", "epochs: 1\nmodel: [{type: flatten}]\noptimizer: {lr: .nan}\n", {}, {"bad.yaml:3", "optimizer.lr", "finite number > 0", "'.nan'"}},
      {"unknown layer type", "epochs: 1\nmodel: [{type: flatten}, {type: lineer, out_features: 3}]\noptimizer: {lr: 0.1}\n",
       {}, {"bad.yaml:2", "model[1].type", "'lineer'", "did you mean 'linear'"}},
      {"bad --set", base, {"--set", "data.batch_size=0"}, {"--set data.batch_size=0", "data.batch_size", ">= 1"}},
      {"bad --set syntax", base, {"--set", "nokey"}, {"--set nokey", "key.path=value"}},
      {"unavailable device", base, {"--device", "cuda"}, {"--device cuda", "device 'cuda' requested", "--device cpu"}},
      {"missing config file", "", {"--config", "/nonexistent.yaml"}, {"/nonexistent.yaml", "no such file"}},
      {"unknown option", base, {"--epochs", "3"}, {"--epochs"}},
  };
  for (const Case& c : cases) {
    const std::string path = scratch.write("bad.yaml", c.yaml);
    std::string cmd = std::string(EMBER_TRAIN_APP) + " --dry-run --out " + test::quoted((scratch.dir() / "run").string());
    if (c.args.empty() || c.args[0] != "--config") cmd += " --config " + test::quoted(path);
    for (const auto& a : c.args) cmd.append(" ").append(test::quoted(a));
    const test::Result r = test::run(cmd);
    EXPECT_EQ(r.rc, 2) << c.name << "\n" << r.output;
    for (const auto& piece : c.pieces)
      EXPECT_NE(r.output.find(piece), std::string::npos) << c.name << ": missing '" << piece << "' in\n" << r.output;
  }
}
