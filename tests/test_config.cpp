// The ember-train config: the key table is consistent and docs/config.md is what it generates, the shipped
// configs parse (with the hashes their checkpoints hold), the resolved config round-trips, --set overrides
// are type-checked, duplicate keys are refused, and a table of bad configs each exits with code 2 and a
// message naming the file, line, key and what was expected.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "apps/config.h"
#include "apps/registries.h"
#include "apps/session.h"
#include "test_helpers.h"
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

// The table's rows agree with each other (defaults within their ranges, `when` keys that exist, ...).
TEST(Config, KeyTableIsConsistent) {
  EXPECT_EQ(schema::check_keys(schema::keys_of(config_fields())), "");
  EXPECT_EQ(schema::check_keys(schema::keys_of(transform_fields())), "");
  EXPECT_EQ(schema::check_keys(schema::keys_of(tokenizer_fields())), "");
  // The check finds what it should: a default outside the range, a `when` on an unknown key.
  schema::Key bad;
  bad.path = "x";
  bad.kind = schema::Kind::integer;
  bad.fallback = int64_t{0};
  bad.range = ">= 1";
  bad.help = "x";
  bad.when_key = "nope";
  bad.when_value = "a";
  const schema::Key* keys[] = {&bad};
  const std::string problems = schema::check_keys(keys);
  EXPECT_NE(problems.find("the default fails"), std::string::npos) << problems;
  EXPECT_NE(problems.find("'when' needs"), std::string::npos) << problems;
}

TEST(Config, RangeTexts) {
  using schema::in_range;
  EXPECT_TRUE(in_range(1, ">= 1"));
  EXPECT_FALSE(in_range(0.5, ">= 1"));
  EXPECT_FALSE(in_range(0, "> 0"));
  EXPECT_TRUE(in_range(0, ">= 0 (0: off)"));
  EXPECT_TRUE(in_range(0, "in [0, 1)"));
  EXPECT_FALSE(in_range(1, "in [0, 1)"));
  EXPECT_FALSE(in_range(0, "in (0, 1]"));
  EXPECT_TRUE(in_range(1, "in (0, 1]"));
  EXPECT_TRUE(in_range(64, "in [0, 64]"));
  EXPECT_TRUE(in_range(-5, ""));
  EXPECT_THROW(in_range(1, "between 0 and 1"), std::logic_error);
}

// docs/config.md is generated from the table; regenerate it when a row changes.
TEST(Config, ReferenceDocIsCurrent) {
  std::ifstream in(kSourceDir + "/docs/config.md");
  std::stringstream committed;
  committed << in.rdbuf();
  EXPECT_TRUE(committed.str() == config_reference())
      << "docs/config.md differs from the config key table (apps/config.cpp); regenerate it with\n"
         "  build/apps/ember-train --print-config-docs > docs/config.md";
  const test::Result r = test::run(std::string(EMBER_TRAIN_APP) + " --print-config-docs");
  EXPECT_EQ(r.rc, 0);
  EXPECT_TRUE(r.output == config_reference()) << r.output.substr(0, 500);
}

// Checkpoints hold config_hash(); a change of the hash of an unchanged config makes them refuse --resume.
TEST(Config, ShippedConfigHashesAreStable) {
  EXPECT_EQ(config_hash(load_config(kSourceDir + "/configs/fashion_mlp.yaml")), "4362e5fa26a911cb");
  EXPECT_EQ(config_hash(load_config(kSourceDir + "/configs/fashion_cnn.yaml")), "323d1de13a50ecc8");
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

// The fuzzer's property (fuzz/fuzz_config.cpp) on its seed corpus, in every test run: an input loads and its
// resolved config reads back to itself, or it is refused with a ConfigError.
TEST(Config, FuzzCorpusLoadsAndRoundTripsOrIsRefused) {
  int loaded = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSourceDir + "/fuzz/corpus/config")) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string t = text.str();
    std::vector<std::string> sets;
    if (t.rfind("#set ", 0) == 0) sets.push_back(t.substr(5, t.find('\n') - 5));
    TrainConfig c;
    try {
      c = parse_config(t, "fuzz.yaml", sets);
    } catch (const ConfigError&) {
      continue;
    }
    ++loaded;
    const std::string resolved = to_yaml(c);
    const TrainConfig again = parse_config(resolved, "resolved.yaml");
    EXPECT_EQ(to_yaml(again), resolved) << entry.path();
    EXPECT_EQ(config_hash(again), config_hash(c)) << entry.path();
  }
  EXPECT_GE(loaded, 3);  // the shipped configs, minimal.yaml, transforms.yaml ...
}

// YAML keeps the first of two equal keys silently; the config refuses them at any depth.
TEST(Config, DuplicateKeysAreRefused) {
  expect_error("epochs: 5\nmodel: [{type: relu}]\nepochs: 2\n", {},
               {"cfg.yaml:3", "epochs", "duplicate key", "first at line 1"});
  expect_error(std::string(kBase) + "  lr: 0.2\n", {}, {"cfg.yaml:15", "optimizer.lr", "duplicate key", "first at line 13"});
  expect_error("epochs: 1\nmodel:\n  - {type: relu}\n  - {type: linear, out_features: 3, out_features: 4}\n", {},
               {"cfg.yaml:4", "model[1].out_features", "duplicate key", "first at line 4"});
  expect_error("epochs: 1\nmodel: [{type: relu}]\ndata:\n  transforms:\n    - type: random_horizontal_flip\n"
               "      p: 0.1\n      p: 0.2\n",
               {}, {"cfg.yaml:7", "data.transforms[0].p", "first at line 6"});
  // A --set of a key the file gives once is an override, not a duplicate.
  EXPECT_EQ(parse_config(kBase, "cfg.yaml", {"epochs=7"}).epochs, 7);
}

// A key that applies only with another key's value is refused elsewhere, naming that key.
TEST(Config, KeysOfAnotherChoiceAreRefused) {
  expect_error("epochs: 1\nmodel: [{type: relu}]\ndata: {transforms: [{type: normalize, mean: 0.5, std: 0.5, p: 1}]}\n",
               {}, {"cfg.yaml:3", "data.transforms[0].p", "only used with type: random_horizontal_flip",
                    "type is normalize"});
  expect_error(kBase, {"data.dataset=idx", "data.dir=/data"},
               {"--set data.dir=/data", "data.dir", "only used with data.dataset: fashion_mnist"});
  expect_error("epochs: 1\nmodel: [{type: relu}]\noptimizer: {lr: 1, betas: [0.9]}\n", {},
               {"cfg.yaml:3", "optimizer.betas", "2 numbers in [0, 1)", "got 1"});
}

// device: its spelling is checked with the config; whether the machine has it, where it is used — and
// either error names where it was given: the YAML key, the --set override, or --device.
TEST(Config, DeviceErrorsNameWhereTheDeviceWasGiven) {
  expect_error(std::string(kBase) + "device: gpu\n", {}, {"cfg.yaml:15", "device", "'gpu' is not a device"});
  expect_error(kBase, {"device=gpu"}, {"--set device=gpu", "device", "'gpu' is not a device"});
  const TrainConfig from_yaml = parse_config(std::string(kBase) + "device: cuda:63\n", "cfg.yaml");
  EXPECT_EQ(from_yaml.origin.at("device"), "cfg.yaml:15");
  try {
    config_device(from_yaml);
    ADD_FAILURE() << "cuda:63 was served";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("cfg.yaml:15: device: device 'cuda:63' requested", 0), 0u) << e.what();
  }
  const TrainConfig from_set = parse_config(kBase, "cfg.yaml", {"device=cuda:63"});
  EXPECT_THROW(config_device(from_set), ConfigError);
  EXPECT_NO_THROW(config_device(parse_config(kBase, "cfg.yaml")));  // auto: served on every machine
  // --device replaces the config's device before it is parsed.
  test::Scratch scratch;
  const std::string path = scratch.write("cfg.yaml", std::string(kBase) + "device: cuda:63\n");
  const test::Result r = test::run(std::string(EMBER_TRAIN_APP) + " --dry-run --device cpu --config " + test::quoted(path) +
                                   " --out " + test::quoted((scratch.dir() / "run").string()));
  EXPECT_EQ(r.rc, 0) << r.output;
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
      {"input size given by hand", "epochs: 1\nmodel:\n  - {type: flatten}\n  - {type: linear, in_features: 784, out_features: 10}\noptimizer: {lr: 0.1}\n",
       {}, {"bad.yaml:4: model[1] (linear)", "'in_features' is not set by hand", "inferred from the previous layer", "remove the key"}},
      {"in_channels given by hand", "epochs: 1\nmodel:\n  - {type: conv2d, in_channels: 1, out_channels: 4, kernel_size: 3}\noptimizer: {lr: 0.1}\n",
       {}, {"bad.yaml:3: model[0] (conv2d)", "'in_channels' is not set by hand", "inferred from the previous layer"}},
      {"shapes do not connect", "epochs: 1\nmodel:\n  - {type: linear, out_features: 10}\n  - {type: conv2d, out_channels: 4, kernel_size: 3}\noptimizer: {lr: 0.1}\n",
       {}, {"bad.yaml:3: model[0] (linear)", "needs input [features]", "add {type: flatten}"}},
      {"pool larger than its input", "epochs: 1\nmodel:\n  - {type: conv2d, out_channels: 4, kernel_size: 3, stride: 4}\n  - {type: max_pool2d, kernel_size: 8, stride: 2}\noptimizer: {lr: 0.1}\n",
       {}, {"bad.yaml:4: model[1] (max_pool2d)", "[4, 7, 7]", "output size is too small", "kernel [8, 8]", "output [0, 0]"}},
      {"lr NaN", "epochs: 1\nmodel: [{type: flatten}]\noptimizer: {lr: .nan}\n", {}, {"bad.yaml:3", "optimizer.lr", "finite number > 0", "'.nan'"}},
      {"a layer given as the whole model", "epochs: 1\nmodel: {type: linear, out_features: 3}\noptimizer: {lr: 0.1}\n",
       {}, {"bad.yaml:2: model (linear)", "linear is a layer", "a model of layers is a list"}},
      {"unknown layer type", "epochs: 1\nmodel: [{type: flatten}, {type: lineer, out_features: 3}]\noptimizer: {lr: 0.1}\n",
       {}, {"bad.yaml:2", "model[1].type", "'lineer'", "did you mean 'linear'"}},
      {"bad --set", base, {"--set", "data.batch_size=0"}, {"--set data.batch_size=0", "data.batch_size", ">= 1"}},
      {"bad --set syntax", base, {"--set", "nokey"}, {"--set nokey", "key.path=value"}},
      {"unavailable device", base, {"--device", "cuda"}, {"--device cuda", "device 'cuda' requested", "--device cpu"}},
      {"unavailable device in the YAML", base + "device: cuda:63\n", {},
       {"bad.yaml:15: device: device 'cuda:63' requested", "device: cpu works"}},
      {"unavailable device by --set", base, {"--set", "device=cuda:63"},
       {"--set device=cuda:63: device: device 'cuda:63' requested"}},
      {"misspelt device in the YAML", base + "device: gpu\n", {}, {"bad.yaml:15: device: 'gpu' is not a device"}},
      {"misspelt device by --device", base, {"--device", "gpu"}, {"--device gpu: device 'gpu' is not a device"}},
      {"duplicate key", base + "epochs: 3\n", {}, {"bad.yaml:15: epochs: duplicate key (first at line 1)"}},
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

// data.tokenizer: a name, or a map whose keys are checked; a SentencePiece map is written back as one (and
// a char or byte tokenizer as its name, so the config hash of such runs did not change).
TEST(Config, TokenizerIsANameOrAMap) {
  const std::string lm = "epochs: 1\ntask: language_model\nmodel: [{type: embedding, embedding_dim: 8}]\n"
                         "optimizer: {lr: 0.1}\n";
  const TrainConfig byte = parse_config(lm, "cfg.yaml", {"data.tokenizer=byte"});
  EXPECT_EQ(byte.data.tokenizer, "byte");
  EXPECT_NE(to_yaml(byte).find("tokenizer: byte\n"), std::string::npos) << to_yaml(byte);
  EXPECT_EQ(config_hash(byte), config_hash(parse_config(lm, "cfg.yaml", {"data.tokenizer={type: byte}"})));
  EXPECT_NE(config_hash(byte), config_hash(parse_config(lm, "cfg.yaml")));

  const TrainConfig sp = parse_config(lm + "data: {tokenizer: {type: sentencepiece, vocab_size: 512, model_type: unigram, "
                                           "character_coverage: 0.9995, byte_fallback: false}}\n",
                                      "cfg.yaml");
  EXPECT_EQ(sp.data.tokenizer, "sentencepiece");
  EXPECT_EQ(sp.data.sentencepiece.vocab_size, 512);
  EXPECT_EQ(sp.data.sentencepiece.model_type, "unigram");
  EXPECT_EQ(sp.data.sentencepiece.character_coverage, 0.9995);
  EXPECT_FALSE(sp.data.sentencepiece.byte_fallback);
  EXPECT_EQ(sp.data.sentencepiece.model_file, "");
  EXPECT_EQ(sp.origin.at("data.tokenizer"), "cfg.yaml:5");
  const TrainConfig back = parse_config(to_yaml(sp), "resolved.yaml");
  EXPECT_EQ(back.data.sentencepiece.vocab_size, 512);
  EXPECT_EQ(back.data.sentencepiece.model_type, "unigram");
  EXPECT_FALSE(back.data.sentencepiece.byte_fallback);
  EXPECT_EQ(to_yaml(back), to_yaml(sp));
  EXPECT_EQ(config_hash(back), config_hash(sp));
  EXPECT_NE(config_hash(sp), config_hash(parse_config(lm, "cfg.yaml", {"data.tokenizer={type: sentencepiece, "
                                                                       "vocab_size: 513, model_type: unigram, "
                                                                       "character_coverage: 0.9995, byte_fallback: false}"})));
  // The name alone takes the defaults.
  const TrainConfig plain = parse_config(lm, "cfg.yaml", {"data.tokenizer=sentencepiece"});
  EXPECT_EQ(plain.data.sentencepiece.vocab_size, 4096);
  EXPECT_EQ(plain.data.sentencepiece.model_type, "bpe");
  EXPECT_TRUE(plain.data.sentencepiece.byte_fallback);
  // A model file instead of training (opened by a new run, not here: a run keeps its own copy).
  const TrainConfig file = parse_config(lm, "cfg.yaml", {"data.tokenizer={type: sentencepiece, model_file: /m/t.model}"});
  EXPECT_EQ(file.data.sentencepiece.model_file, "/m/t.model");
  EXPECT_EQ(parse_config(to_yaml(file), "resolved.yaml").data.sentencepiece.model_file, "/m/t.model");

  expect_error(lm, {"data.tokenizer={type: sentencepiece, vocab_sise: 300}"},
               {"data.tokenizer.vocab_sise", "unknown key", "did you mean 'vocab_size'"});
  expect_error(lm, {"data.tokenizer={type: sentencepiece, model_type: word}"},
               {"data.tokenizer.model_type", "unknown value 'word'", "bpe, unigram"});
  expect_error(lm, {"data.tokenizer={type: sentencepiece, vocab_size: 0}"}, {"data.tokenizer.vocab_size", ">= 1"});
  expect_error(lm, {"data.tokenizer={type: sentencepiece, character_coverage: 1.5}"},
               {"data.tokenizer.character_coverage", "in (0, 1]"});
  expect_error(lm, {"data.tokenizer={type: sentencepiece, byte_fallback: maybe}"}, {"data.tokenizer.byte_fallback"});
  expect_error(lm, {"data.tokenizer={vocab_size: 300}"}, {"data.tokenizer.type", "missing required key"});
  expect_error(lm, {"data.tokenizer={type: char, vocab_size: 300}"},
               {"data.tokenizer.vocab_size", "only used with type: sentencepiece"});
  expect_error(lm, {"data.tokenizer={type: sentencepiece, model_file: /m/t.model, vocab_size: 300}"},
               {"data.tokenizer.vocab_size", "model_file gives one", "remove one of them"});
  expect_error(lm, {"data.tokenizer=[char]"}, {"data.tokenizer"});
  expect_error(kBase, {"data.tokenizer=byte"}, {"data.tokenizer", "only used with data.dataset: text"});
}

// The task section: text data and language_model go together, regression takes CSV and mse/l1, and the
// optimizer's no_decay kinds and accumulate_steps are checked.
TEST(Config, TaskDataAndLossMustAgree) {
  const std::string lm = "epochs: 1\ntask: language_model\nmodel: [{type: embedding, embedding_dim: 8}]\n"
                         "optimizer: {lr: 0.1}\n";
  const TrainConfig c = parse_config(lm, "cfg.yaml");
  EXPECT_EQ(c.data.dataset, "text");  // the default for language_model
  EXPECT_EQ(c.data.tokenizer, "char");
  EXPECT_EQ(c.data.context, 128);
  EXPECT_EQ(c.data.val_fraction, 0.1);
  EXPECT_EQ(c.loss, "cross_entropy");
  EXPECT_EQ(c.optimizer.accumulate_steps, 1);
  EXPECT_TRUE(c.optimizer.no_decay.empty());
  EXPECT_EQ(to_yaml(parse_config(to_yaml(c), "resolved.yaml")), to_yaml(c));
  expect_error(lm, {"data.dataset=fashion_mnist"}, {"task", "language_model trains on text", "data.dataset: text"});
  expect_error(kBase, {"data.dataset=text"}, {"data.dataset", "text data trains a language model", "task: language_model"});
  expect_error(lm, {"data.path=/no/such/corpus"}, {"data.path", "'/no/such/corpus' does not exist"});
  expect_error(lm, {"data.tokenizer=word"}, {"data.tokenizer", "unknown value 'word'", "char, byte"});
  expect_error(lm, {"data.context=0"}, {"data.context", ">= 1"});
  expect_error(lm, {"data.val_fraction=0"}, {"data.val_fraction", "in (0, 1)"});
  expect_error(lm, {"data.transforms=[{type: normalize, mean: 0.5, std: 0.25}]"},
               {"data.transforms", "text data takes none"});
  expect_error(kBase, {"data.context=64"}, {"data.context", "only used with data.dataset: text"});
  expect_error(lm, {"loss.type=mse"}, {"loss.type", "mse is a regression loss", "needs cross_entropy"});
  expect_error(kBase, {"task=regression"}, {"task", "regression trains on CSV tables", "data.dataset: csv"});
  const std::string csv = "epochs: 1\ntask: regression\ndata: {dataset: csv, train_file: /nope.csv}\n"
                          "model: [{type: linear, out_features: 1}]\noptimizer: {lr: 0.1}\n";
  expect_error(csv, {}, {"data.train_file", "'/nope.csv' does not exist"});
  test::Scratch s;
  const std::string table = s.write("t.csv", "x,target\n1,2\n");
  const std::string ok_csv = "epochs: 1\ntask: regression\ndata: {dataset: csv, train_file: " + table + ", test_file: " +
                             table + "}\nmodel: [{type: linear, out_features: 1}]\noptimizer: {lr: 0.1}\n";
  const TrainConfig r = parse_config(ok_csv, "cfg.yaml");
  EXPECT_EQ(r.loss, "mse");  // the default for regression
  EXPECT_EQ(r.data.target_column, "target");
  expect_error(ok_csv, {"loss.type=cross_entropy"}, {"loss.type", "regression needs mse, l1, smooth_l1 or huber"});
  expect_error(ok_csv, {"loss.label_smoothing=0.1"}, {"loss.label_smoothing", "only applies to cross_entropy"});
  // smooth_l1 and huber, with their thresholds (each only with its own loss), as the losses the trainer computes
  const TrainConfig sl1 = parse_config(ok_csv, "cfg.yaml", {"loss.type=smooth_l1", "loss.beta=0.5"});
  EXPECT_EQ(sl1.loss, "smooth_l1");
  EXPECT_DOUBLE_EQ(sl1.loss_beta, 0.5);
  const TrainConfig hub = parse_config(ok_csv, "cfg.yaml", {"loss.type=huber", "loss.delta=2"});
  EXPECT_DOUBLE_EQ(hub.loss_delta, 2.0);
  EXPECT_DOUBLE_EQ(parse_config(ok_csv, "cfg.yaml", {"loss.type=huber"}).loss_delta, 1.0);  // PyTorch's default
  const Tensor out = from_vector<float>({0.0f, 3.0f, -0.2f}, {3, 1}), target = from_vector<float>({0.25f, 0.0f, 0.0f}, {3});
  const Tensor t = target.reshape({3, 1});
  EXPECT_NEAR(app::task_loss(sl1, out, target).item<float>(), nn::functional::smooth_l1_loss(out, t, {.beta = 0.5}).item<float>(), 1e-7);
  EXPECT_NEAR(app::task_loss(hub, out, target, true).item<float>(),
              nn::functional::huber_loss(out, t, {.reduction = nn::functional::Reduction::sum, .delta = 2.0}).item<float>(), 1e-7);
  expect_error(ok_csv, {"loss.beta=0.5"}, {"loss.beta", "only used with loss.type: smooth_l1", "here loss.type is mse"});
  expect_error(ok_csv, {"loss.type=smooth_l1", "loss.delta=0.5"}, {"loss.delta", "only used with loss.type: huber"});
  expect_error(ok_csv, {"loss.type=huber", "loss.delta=0"}, {"loss.delta", "> 0"});
  expect_error(ok_csv, {"loss.type=smooth_l1", "loss.beta=-1"}, {"loss.beta", ">= 0"});
  expect_error(kBase, {"loss.type=huber"}, {"loss.type", "huber is a regression loss"});
}

TEST(Config, NoDecayKindsAndAccumulation) {
  const TrainConfig c = parse_config(kBase, "cfg.yaml",
                                     {"optimizer.weight_decay=0.1", "optimizer.no_decay=[bias, norm]",
                                      "optimizer.accumulate_steps=4"});
  EXPECT_EQ(c.optimizer.no_decay, (std::vector<std::string>{"bias", "norm"}));
  EXPECT_EQ(c.optimizer.accumulate_steps, 4);
  EXPECT_NE(to_yaml(c).find("no_decay: [bias, norm]"), std::string::npos) << to_yaml(c);
  EXPECT_EQ(to_yaml(parse_config(to_yaml(c), "resolved.yaml")), to_yaml(c));
  EXPECT_NE(config_hash(c), config_hash(parse_config(kBase, "cfg.yaml", {"optimizer.weight_decay=0.1"})));
  // One kind stands for a list of one.
  EXPECT_EQ(parse_config(kBase, "cfg.yaml", {"optimizer.weight_decay=0.1", "optimizer.no_decay=embedding"})
                .optimizer.no_decay,
            std::vector<std::string>{"embedding"});
  expect_error(kBase, {"optimizer.weight_decay=0.1", "optimizer.no_decay=[biases]"},
               {"optimizer.no_decay", "'biases' is not one of bias, norm, embedding", "did you mean 'bias'"});
  expect_error(kBase, {"optimizer.weight_decay=0.1", "optimizer.no_decay=[bias, bias]"}, {"'bias' is listed twice"});
  expect_error(kBase, {"optimizer.no_decay=[bias]"}, {"optimizer.no_decay", "has no effect with weight_decay 0"});
  expect_error(kBase, {"optimizer.accumulate_steps=0"}, {"optimizer.accumulate_steps", ">= 1"});
  // Keys added with the task section leave the hash of configs that do not use them as it was (their old
  // checkpoints still resume); any other value is part of it.
  const std::string base = config_hash(parse_config(kBase, "cfg.yaml"));
  EXPECT_EQ(config_hash(parse_config(kBase, "cfg.yaml", {"optimizer.accumulate_steps=1", "task=classification"})), base);
  EXPECT_NE(config_hash(parse_config(kBase, "cfg.yaml", {"optimizer.accumulate_steps=2"})), base);
}

// optimizer.type, scheduler.type and data.transforms' type take their choices from the tables that build
// them (apps/registries.h): every choice builds, and a name that got past the config some other way is an
// error naming the key and the choices, never another optimizer or schedule.
TEST(Config, EveryChoiceOfTheFactoryTablesBuilds) {
  EXPECT_EQ(optimizer_types(), (std::vector<std::string>{"sgd", "adam", "adamw", "rmsprop"}));
  const TrainConfig base = parse_config(kBase, "cfg.yaml", {}, false);
  const TrainShape shape{.sample_shape = {1, 4, 4}, .steps_per_epoch = 3};
  for (const std::string& type : optimizer_types()) {
    const TrainConfig c = parse_config(kBase, "cfg.yaml", {"optimizer.type=" + type}, false);
    EXPECT_NE(make_model_session(c, kCPU, shape)->optimizer, nullptr) << type;
  }
  for (const std::string& type : scheduler_types()) {
    std::vector<std::string> sets = {"scheduler.type=" + type};
    if (type == "multistep") sets.push_back("scheduler.milestones=[1]");
    const TrainConfig c = parse_config(kBase, "cfg.yaml", sets, false);
    EXPECT_EQ(make_model_session(c, kCPU, shape)->scheduler == nullptr, type == "none") << type;
  }
  // One item of each transform type, each building its training and evaluation transforms.
  const std::map<std::string, std::string> items = {
      {"normalize", "{type: normalize, mean: [0.5], std: [0.25]}"},
      {"random_crop", "{type: random_crop, size: 4, padding: 1}"},
      {"random_horizontal_flip", "{type: random_horizontal_flip}"},
      {"resize", "{type: resize, size: 4}"},
      {"center_crop", "{type: center_crop, size: [3, 4]}"},
      {"random_resized_crop", "{type: random_resized_crop, size: 4}"},
      {"color_jitter", "{type: color_jitter, brightness: 0.2}"},
      {"random_rotation", "{type: random_rotation, degrees: 10}"},
      {"grayscale", "{type: grayscale}"},
  };
  for (const std::string& type : transform_types()) {
    ASSERT_TRUE(items.count(type)) << "add an item of the transform type " << type << " to this test";
    std::string yaml = kBase;
    yaml.replace(yaml.find("data:\n"), 6, "data:\n  transforms: [" + items.at(type) + "]\n");
    const TrainConfig c = parse_config(yaml, "cfg.yaml", {}, false);
    const size_t train = make_transforms(c.data, true).size(), eval = make_transforms(c.data, false).size();
    const bool augmentation = type.rfind("random_", 0) == 0 || type == "color_jitter";
    EXPECT_EQ(train, 1u) << type;
    EXPECT_EQ(eval, type == "random_resized_crop" ? 2u : augmentation ? 0u : 1u) << type;  // resize + center crop
  }
  // Names the config refuses, given to the builders directly.
  TrainConfig bad = base;
  bad.optimizer.type = "lion";
  EXPECT_TRUE(test::throws_error([&] { make_model_session(bad, kCPU, shape); },
                                 {"optimizer.type: unknown value 'lion'", "valid values: sgd, adam, adamw, rmsprop"}));
  bad = base;
  bad.scheduler.type = "cosin";
  EXPECT_TRUE(test::throws_error([&] { make_model_session(bad, kCPU, shape); },
                                 {"scheduler.type: unknown value 'cosin'", "did you mean 'cosine'", "valid values: none, step"}));
  bad = base;
  bad.data.transforms.assign(1, TransformConfig());
  bad.data.transforms[0].type = "blur";
  EXPECT_TRUE(test::throws_error([&] { make_transforms(bad.data, true); },
                                 {"data.transforms type: unknown value 'blur'", "normalize, random_crop"}));
}

// Section's lists: one scalar is a list of one; a bad item, a bad scalar, a map and a missing key are each
// named in the error, with the range the items must be in.
TEST(YamlSection, ListsOfNumbersAndIntegers) {
  const Origins origins{.file = "cfg.yaml"};
  Section s(YAML::Load("a: [1, 2.5]\nb: 3\nc: [1, x]\nd: {k: 1}\ne: [1, -2]\nf: y\n"), "", origins);
  EXPECT_EQ(s.numbers("a", std::nullopt), (std::vector<double>{1, 2.5}));
  EXPECT_EQ(s.numbers("b", std::nullopt), (std::vector<double>{3}));
  EXPECT_EQ(s.integers("b", std::nullopt), (std::vector<int64_t>{3}));
  EXPECT_EQ(s.integers("z", std::vector<int64_t>{7, 8}), (std::vector<int64_t>{7, 8}));
  const auto positive = [](auto v) { return v > 0; };
  EXPECT_TRUE(test::throws_error([&] { s.numbers("c", std::nullopt); }, {"c: expected a list of finite numbers, got the item 'x'"}));
  EXPECT_TRUE(test::throws_error([&] { s.integers("a", std::nullopt); }, {"a: expected a list of integers, got the item '2.5'"}));
  EXPECT_TRUE(test::throws_error([&] { s.integers("d", std::nullopt, positive, "> 0"); },
                                 {"d: expected a list of integers > 0, got a map"}));
  EXPECT_TRUE(test::throws_error([&] { s.integers("e", std::nullopt, positive, "> 0"); },
                                 {"e: expected a list of integers > 0, got the item '-2'"}));
  EXPECT_TRUE(test::throws_error([&] { s.numbers("f", std::nullopt, positive, "> 0"); },
                                 {"f: expected a list of finite numbers > 0 (or one of them), got 'y'"}));
  EXPECT_TRUE(test::throws_error([&] { s.numbers("z", std::nullopt, positive, "> 0"); },
                                 {"z: missing required key (a list of numbers > 0)"}));
  EXPECT_TRUE(test::throws_error([&] { s.integers("z", std::nullopt); }, {"z: missing required key (a list of integers )"}));
}
