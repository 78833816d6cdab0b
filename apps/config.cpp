#include "apps/config.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/idx.h"

namespace ember::app {
namespace fs = std::filesystem;
namespace {

const std::vector<std::string> kTopKeys = {"seed", "epochs", "device", "skip_nonfinite", "data", "model",
                                           "loss", "optimizer", "scheduler", "output", "eval"};
auto positive = [](auto v) { return v > 0; };
auto non_negative = [](auto v) { return v >= 0; };

void check_file(Section& s, const std::string& key, const std::string& path) {
  if (!fs::is_regular_file(path)) s.fail(key, "the file '" + path + "' does not exist");
}

// Fashion-MNIST's four files, gzipped or not, must be in `dir`.
void check_fashion_dir(Section& s, const std::string& dir) {
  for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                           "t10k-labels-idx1-ubyte"}) {
    const fs::path p = fs::path(dir) / name;
    if (!fs::is_regular_file(p) && !fs::is_regular_file(p.string() + ".gz"))
      s.fail("dir", "the dataset file '" + p.string() + "[.gz]' does not exist; install Debian's "
                    "dataset-fashion-mnist (scripts/setup.sh does) or point data.dir at a folder holding the files");
  }
}

DataConfig read_data(Section s, bool fashion_files) {
  DataConfig d;
  d.dataset = s.choice("dataset", "fashion_mnist", {"fashion_mnist", "idx"});
  if (d.dataset == "fashion_mnist") {
    d.dir = s.string("dir", std::string(data::kFashionMnistDir));
    if (fashion_files) check_fashion_dir(s, d.dir);
  } else {
    for (auto [key, field] : {std::pair{"train_images", &d.train_images}, {"train_labels", &d.train_labels},
                              {"test_images", &d.test_images}, {"test_labels", &d.test_labels}}) {
      *field = s.string(key, std::nullopt);
      check_file(s, key, *field);
    }
  }
  d.batch_size = s.integer("batch_size", 64, positive, ">= 1");
  d.test_batch_size = s.integer("test_batch_size", 1000, positive, ">= 1");
  d.workers = s.integer("workers", 2, [](int64_t v) { return v >= 0 && v <= 64; }, "in [0, 64]");
  d.shuffle = s.boolean("shuffle", true);
  d.limit = s.integer("limit", 0, non_negative, ">= 0 (0: all examples)");
  d.test_limit = s.integer("test_limit", 0, non_negative, ">= 0 (0: all examples)");
  if (s.has("transforms")) {
    const YAML::Node list = s.node("transforms");
    if (!list.IsSequence()) s.fail("transforms", "expected a list of transforms");
    for (size_t i = 0; i < list.size(); ++i) {
      Section t(list[i], s.key_path("transforms") + "[" + std::to_string(i) + "]", s.origins());
      TransformConfig tc;
      tc.type = t.choice("type", "", {"normalize", "random_crop", "random_horizontal_flip"});
      std::vector<std::string> keys = {"type"};
      if (tc.type == "normalize") {
        tc.mean = t.numbers("mean", {});
        tc.std = t.numbers("std", {});
        if (tc.mean.empty() || tc.mean.size() != tc.std.size())
          t.fail("std", "normalize needs 'mean' and 'std' lists of the same non-zero length");
        for (double v : tc.std)
          if (v <= 0) t.fail("std", "every std must be > 0");
        keys.insert(keys.end(), {"mean", "std"});
      } else if (tc.type == "random_crop") {
        tc.size = t.integer("size", std::nullopt, positive, ">= 1");
        tc.padding = t.integer("padding", 0, non_negative, ">= 0");
        keys.insert(keys.end(), {"size", "padding"});
      } else {
        tc.p = t.number("p", 0.5, [](double v) { return v >= 0 && v <= 1; }, "in [0, 1]");
        keys.push_back("p");
      }
      t.reject_unknown(keys);
      d.transforms.push_back(tc);
    }
  }
  s.reject_unknown({"dataset", "dir", "train_images", "train_labels", "test_images", "test_labels", "batch_size",
                    "test_batch_size", "workers", "shuffle", "limit", "test_limit", "transforms"});
  return d;
}

nn::SpecValue spec_value(const Section& layer, const std::string& key, const YAML::Node& n) {
  if (n.IsScalar()) {
    const std::string& t = n.Scalar();
    if (const auto i = parse_int(t)) return *i;
    if (const auto b = parse_bool(t)) return *b;
    if (const auto d = parse_number(t)) return *d;
    return t;
  }
  if (n.IsSequence()) {
    std::vector<int64_t> out;
    for (const auto& item : n) {
      const auto i = item.IsScalar() ? parse_int(item.Scalar()) : std::nullopt;
      if (!i) layer.fail(key, "expected a list of integers");
      out.push_back(*i);
    }
    return out;
  }
  layer.fail(key, "expected a number, true/false, a string or a list of integers");
}

std::vector<nn::LayerSpec> read_model(const YAML::Node& list, const Origins& origins) {
  if (!list.IsDefined() || list.IsNull())
    throw ConfigError(origins.file + ": model: missing required key (a list of layer specs, e.g. "
                                     "- {type: linear, out_features: 10})");
  if (!list.IsSequence() || list.size() == 0)
    throw ConfigError(origins.where("model", list) + ": model: expected a non-empty list of layer specs");
  std::vector<nn::LayerSpec> specs;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string path = "model[" + std::to_string(i) + "]";
    Section layer(list[i], path, origins);
    nn::LayerSpec spec;
    spec.where = origins.where("model." + std::to_string(i), list[i]) + ": " + path;
    spec.type = layer.choice("type", "", nn::layer_types());
    std::vector<std::string> keys = nn::layer_keys(spec.type);
    for (const auto& kv : list[i]) {
      const std::string key = kv.first.Scalar();
      if (key == "type") continue;
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        keys.insert(keys.begin(), "type");
        layer.reject_unknown(keys);
      }
      spec.args.emplace_back(key, spec_value(layer, key, kv.second));
    }
    specs.push_back(std::move(spec));
  }
  return specs;
}

OptimizerConfig read_optimizer(Section s) {
  OptimizerConfig o;
  o.type = s.choice("type", "adam", {"sgd", "adam", "adamw", "rmsprop"});
  o.lr = s.number("lr", std::nullopt, positive, "> 0");
  o.weight_decay = s.number("weight_decay", o.type == "adamw" ? 1e-2 : 0.0, non_negative, ">= 0");
  o.momentum = s.number("momentum", 0, [](double v) { return v >= 0 && v < 1; }, "in [0, 1)");
  o.dampening = s.number("dampening", 0, [](double v) { return v >= 0 && v <= 1; }, "in [0, 1]");
  o.nesterov = s.boolean("nesterov", false);
  const std::vector<double> betas = s.numbers("betas", {0.9, 0.999});
  if (betas.size() != 2 || betas[0] < 0 || betas[0] >= 1 || betas[1] < 0 || betas[1] >= 1)
    s.fail("betas", "expected two numbers in [0, 1), e.g. [0.9, 0.999]");
  o.beta1 = betas[0];
  o.beta2 = betas[1];
  o.eps = s.number("eps", 1e-8, positive, "> 0");
  o.amsgrad = s.boolean("amsgrad", false);
  o.alpha = s.number("alpha", 0.99, [](double v) { return v >= 0 && v < 1; }, "in [0, 1)");
  o.centered = s.boolean("centered", false);
  o.clip_grad_norm = s.number("clip_grad_norm", 0, non_negative, ">= 0 (0: no clipping)");
  if (o.nesterov && (o.type != "sgd" || o.momentum <= 0)) s.fail("nesterov", "needs type: sgd and momentum > 0");
  s.reject_unknown({"type", "lr", "weight_decay", "momentum", "dampening", "nesterov", "betas", "eps", "amsgrad",
                    "alpha", "centered", "clip_grad_norm"});
  return o;
}

SchedulerConfig read_scheduler(Section s) {
  SchedulerConfig c;
  c.type = s.choice("type", "none", {"none", "step", "multistep", "exponential", "cosine", "onecycle", "plateau"});
  c.interval = s.choice("interval", c.type == "onecycle" ? "step" : "epoch", {"epoch", "step"});
  c.step_size = s.integer("step_size", 1, positive, ">= 1");
  c.gamma = s.number("gamma", 0.1, positive, "> 0");
  c.milestones = s.integers("milestones", {});
  c.t_max = s.integer("t_max", 0, non_negative, ">= 0 (0: the whole run)");
  c.eta_min = s.number("eta_min", 0, non_negative, ">= 0");
  c.max_lr = s.number("max_lr", 0, non_negative, ">= 0 (0: optimizer.lr)");
  c.pct_start = s.number("pct_start", 0.3, [](double v) { return v > 0 && v < 1; }, "in (0, 1)");
  c.warmup_steps = s.integer("warmup_steps", 0, non_negative, ">= 0");
  c.warmup_start_factor = s.number("warmup_start_factor", 1.0 / 3, [](double v) { return v > 0 && v <= 1; }, "in (0, 1]");
  c.factor = s.number("factor", 0.1, [](double v) { return v > 0 && v < 1; }, "in (0, 1)");
  c.patience = s.integer("patience", 10, non_negative, ">= 0");
  if (c.type == "multistep" && c.milestones.empty()) s.fail("milestones", "multistep needs a list of milestones");
  if (c.type == "onecycle" && c.interval != "step") s.fail("interval", "onecycle steps every batch: use interval: step");
  if (c.type == "plateau" && c.interval != "epoch") s.fail("interval", "plateau steps on the test loss: use interval: epoch");
  if (c.warmup_steps > 0 && (c.type == "plateau" || c.type == "onecycle"))
    s.fail("warmup_steps", "warmup cannot precede a " + c.type + " scheduler");
  s.reject_unknown({"type", "interval", "step_size", "gamma", "milestones", "t_max", "eta_min", "max_lr", "pct_start",
                    "warmup_steps", "warmup_start_factor", "factor", "patience"});
  return c;
}

OutputConfig read_output(Section s, const std::string& source) {
  OutputConfig o;
  o.dir = s.string("dir", "runs/" + fs::path(source).stem().string());
  o.checkpoint_every_epochs = s.integer("checkpoint_every_epochs", 1, non_negative, ">= 0 (0: off)");
  o.checkpoint_every_steps = s.integer("checkpoint_every_steps", 0, non_negative, ">= 0 (0: off)");
  o.keep_last = s.integer("keep_last", 3, positive, ">= 1");
  o.log_every_steps = s.integer("log_every_steps", 100, positive, ">= 1");
  s.reject_unknown({"dir", "checkpoint_every_epochs", "checkpoint_every_steps", "keep_last", "log_every_steps"});
  return o;
}

}  // namespace

TrainConfig parse_config(const std::string& text, const std::string& name, const std::vector<std::string>& overrides,
                         bool fashion_files) {
  Origins origins{name, {}};
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(name + ":" + std::to_string(e.mark.line + 1) + ": YAML syntax error: " + e.msg);
  }
  if (root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  for (const std::string& o : overrides) apply_override(root, o, origins);

  Section top(root, "", origins);
  top.reject_unknown(kTopKeys);
  TrainConfig c;
  c.source = name;
  c.epochs = top.integer("epochs", std::nullopt, positive, ">= 1");
  c.seed = static_cast<uint64_t>(top.integer("seed", 0, non_negative, ">= 0"));
  c.device = top.string("device", "auto");
  c.skip_nonfinite = top.boolean("skip_nonfinite", false);
  c.data = read_data(top.section("data"), fashion_files);
  c.model = read_model(root["model"], origins);
  Section loss = top.section("loss");
  c.loss = loss.choice("type", "cross_entropy", {"cross_entropy"});
  c.label_smoothing = loss.number("label_smoothing", 0, [](double v) { return v >= 0 && v < 1; }, "in [0, 1)");
  loss.reject_unknown({"type", "label_smoothing"});
  c.optimizer = read_optimizer(top.section("optimizer"));
  c.scheduler = read_scheduler(top.section("scheduler"));
  c.output = read_output(top.section("output"), name);
  Section eval = top.section("eval");
  c.eval_every_epochs = eval.integer("every_epochs", 1, non_negative, ">= 0 (0: never)");
  eval.reject_unknown({"every_epochs"});
  if (c.scheduler.type == "plateau" && c.eval_every_epochs != 1)
    throw ConfigError(name + ": scheduler.type: plateau steps on the test loss, which needs eval.every_epochs: 1");
  return c;
}

TrainConfig load_config(const std::string& path, const std::vector<std::string>& overrides, bool fashion_files) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": cannot read the config file (" + (fs::exists(path) ? "permission denied" : "no such file") + ")");
  std::stringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), path, overrides, fashion_files);
}

}  // namespace ember::app
