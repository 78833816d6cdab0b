// Optimizers against PyTorch: 20-step trajectories on a quadratic (f64 and f32) and on a tiny MLP (f64),
// from tests/data/optim_golden.safetensors (tools/make_optim_golden.py); state_dict round trips (and
// states saved by an earlier Ember); clipping; parameter groups; each optimizer's options and their
// defaults against torch.optim's.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include "test_helpers.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "autograd/grad_mode.h"
#include "core/safetensors.h"
#include "nn/layers.h"
#include "optim/optimizer.h"
#include "optim/param_groups.h"

using namespace ember;

namespace {

Tensor get(const std::string& name) { return test::golden("optim_golden.safetensors", name); }

using Make = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

// The configurations of tools/make_optim_golden.py.
const std::vector<std::pair<std::string, Make>>& configs() {
  static const std::vector<std::pair<std::string, Make>> c = {
      {"sgd", [](auto p) { return std::make_unique<optim::SGD>(p, optim::SGDOptions{.lr = 0.1}); }},
      {"sgd_momentum", [](auto p) {
         return std::make_unique<optim::SGD>(p, optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01});
       }},
      {"sgd_nesterov", [](auto p) {
         return std::make_unique<optim::SGD>(p, optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
       }},
      {"adam", [](auto p) { return std::make_unique<optim::Adam>(p, optim::AdamOptions{.lr = 0.01}); }},
      {"adam_amsgrad", [](auto p) {
         return std::make_unique<optim::Adam>(
             p, optim::AdamOptions{.lr = 0.01, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1, .amsgrad = true});
       }},
      {"adamw", [](auto p) { return std::make_unique<optim::AdamW>(p, optim::AdamWOptions{.lr = 0.01, .weight_decay = 0.1}); }},
      {"rmsprop", [](auto p) { return std::make_unique<optim::RMSprop>(p, optim::RMSpropOptions{.lr = 0.01}); }},
      {"rmsprop_centered", [](auto p) {
         return std::make_unique<optim::RMSprop>(
             p, optim::RMSpropOptions{.lr = 0.01, .alpha = 0.9, .weight_decay = 0.01, .momentum = 0.5, .centered = true});
       }},
  };
  return c;
}

void expect_rel(const std::vector<double>& actual, const std::vector<double>& expected, double rtol, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i)
    ASSERT_NEAR(actual[i], expected[i], rtol * std::max(1.0, std::abs(expected[i]))) << what << " element " << i;
}

void quadratic(DType dtype, const std::string& key, double rtol) {
  const Tensor c = get("quad.c").to(dtype), d = get("quad.d").to(dtype);
  for (const auto& [name, make] : configs()) {
    Tensor x = get("quad.x0").to(dtype).clone().requires_grad_();
    auto opt = make({x});
    const Tensor expected = get(name + "." + key);
    for (int step = 0; step < 20; ++step) {
      opt->zero_grad();
      (sum(c * x * x) * 0.5 + sum(d * x)).backward();
      opt->step();
      expect_rel(x.to_vector<double>(), expected.select(0, step).to_vector<double>(), rtol,
                 name + " " + key + " step " + std::to_string(step + 1));
    }
  }
}

struct Mlp : nn::Module {
  std::shared_ptr<nn::Linear> l0 = register_module("0", std::make_shared<nn::Linear>(4, 8));
  std::shared_ptr<nn::Linear> l2 = register_module("2", std::make_shared<nn::Linear>(8, 3));
  Tensor forward(const Tensor& x) override { return l2->forward(tanh(l0->forward(x))); }
};

std::shared_ptr<Mlp> golden_mlp() {
  auto m = std::make_shared<Mlp>();
  m->to(DType::f64);
  nn::NamedTensors init;
  for (const auto& [name, t] : m->named_parameters()) init.emplace_back(name, get("mlp.init." + name));
  m->load_state_dict(init, /*strict=*/false);
  return m;
}

}  // namespace

TEST(Optim, QuadraticTrajectoriesMatchPyTorchF64) { quadratic(DType::f64, "quad64", 1e-12); }
TEST(Optim, QuadraticTrajectoriesMatchPyTorchF32) { quadratic(DType::f32, "quad32", 1e-6); }

TEST(Optim, MlpTrajectoriesMatchPyTorch) {
  const Tensor x = get("mlp.x"), y = get("mlp.y");
  for (const auto& [name, make] : configs()) {
    auto model = golden_mlp();
    auto opt = make(model->parameters());
    const Tensor expected = get(name + ".mlp");
    for (int step = 0; step < 20; ++step) {
      opt->zero_grad();
      nn::functional::cross_entropy(model->forward(x), y).backward();
      opt->step();
      std::vector<double> flat;
      for (const Tensor& p : model->parameters())
        for (double v : p.to_vector<double>()) flat.push_back(v);
      expect_rel(flat, expected.select(0, step).to_vector<double>(), 1e-6, name + " mlp step " + std::to_string(step + 1));
    }
  }
}

TEST(Optim, StateDictResumesExactly) {
  for (const auto& [name, make] : configs()) {
    // 10 steps, save, 10 more — against 10 steps, load into a fresh optimizer, 10 more.
    const auto run = [&](bool via_state) {
      auto model = golden_mlp();
      auto opt = make(model->parameters());
      const auto train = [&](optim::Optimizer& o, int steps) {
        for (int i = 0; i < steps; ++i) {
          o.zero_grad();
          nn::functional::cross_entropy(model->forward(get("mlp.x")), get("mlp.y")).backward();
          o.step();
        }
      };
      train(*opt, 10);
      if (via_state) {
        const auto state = opt->state_dict();
        auto fresh = make(model->parameters());
        fresh->load_state_dict(state);
        train(*fresh, 10);
      } else {
        train(*opt, 10);
      }
      return model->parameters()[0].to_vector<double>();
    };
    EXPECT_EQ(run(false), run(true)) << name;  // bit for bit
  }
}

TEST(Optim, ErrorsAndSkips) {
  Tensor a = ones({3}).requires_grad_(), b = ones({2}).requires_grad_();
  optim::SGD opt({a, b}, {.lr = 0.5});
  sum(a * 2.0f).backward();
  opt.step();  // b has no gradient: untouched, as in PyTorch
  EXPECT_EQ(a.to_vector<float>(), std::vector<float>(3, 0.0f));
  EXPECT_EQ(b.to_vector<float>(), std::vector<float>(2, 1.0f));
  const auto expect_error = [](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error([&] { optim::SGD({a}, {.lr = -1}); }, "SGD: invalid learning rate -1");
  expect_error([&] { optim::SGD({a}, {.lr = 0.1, .nesterov = true}); }, "nesterov momentum needs momentum > 0");
  expect_error([&] { optim::Adam({a}, {.beta1 = 1.0}); }, "Adam: betas must be in [0, 1), got 1 and 0.999");
  expect_error([&] { optim::RMSprop({a}, {.alpha = 1.0}); }, "RMSprop: alpha must be in [0, 1), got 1");
  expect_error([&] { optim::Adam({a * 2.0f}); }, "can only optimize leaf tensors");
  optim::Adam adam({a});
  expect_error([&] { adam.load_state_dict({{"bogus", ones({1})}}); }, "missing group.0.lr");
}

TEST(Optim, ClipGradNormAndValue) {
  Tensor a = zeros({2}).requires_grad_(), b = zeros({1}).requires_grad_();
  a.set_grad(from_vector<float>({3, 0}));
  b.set_grad(from_vector<float>({4}));
  EXPECT_NEAR(optim::clip_grad_norm_({a, b}, 1.0), 5.0, 1e-9);
  EXPECT_NEAR(a.grad().to_vector<float>()[0], 0.6f, 1e-6f);
  EXPECT_NEAR(b.grad().to_vector<float>()[0], 0.8f, 1e-6f);
  EXPECT_NEAR(optim::clip_grad_norm_({a, b}, 10.0, INFINITY), 0.8, 1e-6);  // below max: unchanged
  EXPECT_NEAR(b.grad().to_vector<float>()[0], 0.8f, 1e-6f);
  optim::clip_grad_value_({a, b}, 0.7);
  EXPECT_EQ(b.grad().to_vector<float>()[0], 0.7f);
  EXPECT_NEAR(a.grad().to_vector<float>()[0], 0.6f, 1e-6f);
}

// --- parameter groups (optim/param_groups.h), against tools/make_param_groups_golden.py -----------------

namespace {

Tensor group_golden(const std::string& name) { return test::golden("param_groups_golden.safetensors", name); }

// Embedding(5, 4) -> LayerNorm(4) -> Linear(4, 3), f64, with the generator's initial weights.
std::shared_ptr<nn::Sequential> group_model() {
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(std::make_shared<nn::Embedding>(5, 4));
  m->push_back(std::make_shared<nn::LayerNorm>(Shape{4}));
  m->push_back(std::make_shared<nn::Linear>(4, 3));
  m->to(DType::f64);
  nn::NamedTensors init;
  for (const auto& [name, t] : m->named_parameters()) init.emplace_back(name, group_golden("init." + name));
  m->load_state_dict(init);
  return m;
}

void group_trajectory(const std::string& name, optim::Optimizer& opt, nn::Module& model) {
  const Tensor x = group_golden("x"), y = group_golden("y");
  const Tensor expected = group_golden(name);
  for (int step = 0; step < 10; ++step) {
    opt.zero_grad();
    const Tensor logits = model.forward(x);
    nn::functional::cross_entropy(logits.reshape({12, 3}), y.reshape({12})).backward();
    opt.step();
    std::vector<double> flat;
    for (const Tensor& p : model.parameters())
      for (double v : p.to_vector<double>()) flat.push_back(v);
    expect_rel(flat, expected.select(0, step).to_vector<double>(), 1e-9, name + " step " + std::to_string(step + 1));
  }
}

}  // namespace

TEST(ParamGroups, KindsByModuleTypeAndName) {
  using optim::ParamKind;
  EXPECT_EQ(optim::param_kinds("Linear", "bias"), std::vector<ParamKind>{ParamKind::bias});
  EXPECT_TRUE(optim::param_kinds("Linear", "weight").empty());
  EXPECT_EQ(optim::param_kinds("LSTM", "bias_ih_l0"), std::vector<ParamKind>{ParamKind::bias});
  EXPECT_EQ(optim::param_kinds("MultiheadAttention", "in_proj_bias"), std::vector<ParamKind>{ParamKind::bias});
  EXPECT_TRUE(optim::param_kinds("MultiheadAttention", "in_proj_weight").empty());
  EXPECT_EQ(optim::param_kinds("LayerNorm", "weight"), std::vector<ParamKind>{ParamKind::norm});
  EXPECT_EQ(optim::param_kinds("LayerNorm", "bias"), (std::vector<ParamKind>{ParamKind::bias, ParamKind::norm}));
  EXPECT_EQ(optim::param_kinds("BatchNorm2d", "weight"), std::vector<ParamKind>{ParamKind::norm});
  EXPECT_EQ(optim::param_kinds("Embedding", "weight"), std::vector<ParamKind>{ParamKind::embedding});
  EXPECT_EQ(optim::param_kinds("PositionalEmbedding", "weight"), std::vector<ParamKind>{ParamKind::embedding});
  EXPECT_EQ(optim::parse_param_kind("norm"), ParamKind::norm);
  EXPECT_FALSE(optim::parse_param_kind("weight").has_value());
}

TEST(ParamGroups, WeightDecayGroupsSplitByKindInModelOrder) {
  auto m = group_model();
  std::vector<std::vector<std::string>> names;
  const auto all = optim::weight_decay_groups(*m, optim::kAllNoDecay, {.lr = 0.01, .weight_decay = 0.1}, &names);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(names[0], std::vector<std::string>{"2.weight"});
  EXPECT_EQ(names[1], (std::vector<std::string>{"0.weight", "1.weight", "1.bias", "2.bias"}));
  EXPECT_EQ(all[0].hyper.weight_decay, 0.1);
  EXPECT_EQ(all[1].hyper.weight_decay, 0.0);
  EXPECT_EQ(all[1].hyper.lr, 0.01);
  EXPECT_TRUE(all[0].params[0].shares_storage(m->parameters()[3]));  // the model's own 2.weight
  // Only biases: the embedding and the LayerNorm weight are decayed.
  optim::weight_decay_groups(*m, {optim::ParamKind::bias}, {.weight_decay = 0.1}, &names);
  EXPECT_EQ(names[0], (std::vector<std::string>{"0.weight", "1.weight", "2.weight"}));
  EXPECT_EQ(names[1], (std::vector<std::string>{"1.bias", "2.bias"}));
  // No kinds: everything decays, the second group is empty.
  const auto none = optim::weight_decay_groups(*m, {}, {.weight_decay = 0.1}, &names);
  EXPECT_EQ(names[0].size(), 5u);
  EXPECT_TRUE(none[1].params.empty());
}

// A parameter shared by two modules (weight tying) is in one group once, with the kinds of both.
TEST(ParamGroups, TiedParameterListedOnceWithTheUnionOfItsKinds) {
  struct TiedHead : nn::Module {  // an output projection whose weight is the embedding's
    explicit TiedHead(const Tensor& weight) {
      register_parameter("weight", weight);
      register_parameter("bias", zeros({5}));
    }
    std::string type_name() const override { return "Linear"; }
  };
  auto emb = std::make_shared<nn::Embedding>(5, 4);
  auto head = std::make_shared<TiedHead>(emb->named_parameters()[0].second);
  auto m = std::make_shared<nn::Sequential>();
  m->push_back(emb);
  m->push_back(head);
  std::vector<std::vector<std::string>> names;
  optim::weight_decay_groups(*m, {optim::ParamKind::embedding}, {.weight_decay = 0.1}, &names);
  EXPECT_EQ(names[0], std::vector<std::string>{"1.bias"});
  EXPECT_EQ(names[1], std::vector<std::string>{"0.weight"});
}

TEST(ParamGroups, AdamWGroupsMatchPyTorch) {
  auto m = group_model();
  optim::AdamW opt(optim::weight_decay_groups(*m, optim::kAllNoDecay, {.lr = 0.01, .weight_decay = 0.1}));
  ASSERT_EQ(opt.param_groups().size(), 2u);
  group_trajectory("adamw", opt, *m);
}

TEST(ParamGroups, SgdGroupsWithTheirOwnLrMatchPyTorch) {
  auto m = group_model();
  auto groups = optim::weight_decay_groups(*m, optim::kAllNoDecay, {.lr = 0.1, .weight_decay = 0.05, .momentum = 0.9});
  groups[1].hyper.lr = 0.02;
  optim::SGD opt(std::move(groups));
  EXPECT_EQ(opt.param_groups()[1].initial_lr, 0.02);
  group_trajectory("sgd", opt, *m);
}

TEST(ParamGroups, TypedWeightDecayGroupsMatchPyTorch) {
  // The same AdamW and SGD runs as above, with the groups in each optimizer's own options.
  auto m = group_model();
  optim::AdamW adamw(optim::weight_decay_groups(*m, optim::kAllNoDecay, optim::AdamWOptions(0.01).weight_decay(0.1)));
  EXPECT_EQ(adamw.options(1).weight_decay, 0.0);
  group_trajectory("adamw", adamw, *m);

  auto m2 = group_model();
  auto groups = optim::weight_decay_groups(*m2, optim::kAllNoDecay, optim::SGDOptions(0.1).momentum(0.9).weight_decay(0.05));
  groups[1].options->lr(0.02);
  optim::SGD sgd(std::move(groups));
  EXPECT_EQ(sgd.param_groups()[1].initial_lr, 0.02);
  group_trajectory("sgd", sgd, *m2);
}

TEST(ParamGroups, GroupOptionsDefaultToTheOptimizersAsTorchOptim) {
  // torch.optim.AdamW([{"params": decayed}, {"params": rest, "lr": 1e-3}], lr=0.01): the second group has
  // AdamW's weight decay 1e-2 (a Hyper would have had 0); RMSprop's groups have alpha 0.99 (not 0.999).
  auto m = group_model();
  auto [decayed, rest] = optim::split_weight_decay(*m, optim::kAllNoDecay);
  optim::AdamW adamw({{decayed}, {rest, optim::AdamWOptions(0.001)}}, optim::AdamWOptions(0.01));
  EXPECT_EQ(adamw.options(0).weight_decay, 1e-2);
  EXPECT_EQ(adamw.options(1).weight_decay, 1e-2);
  EXPECT_EQ(adamw.options(1).lr, 1e-3);
  group_trajectory("adamw_defaults", adamw, *m);

  auto m2 = group_model();
  auto [decayed2, rest2] = optim::split_weight_decay(*m2, optim::kAllNoDecay);
  optim::RMSprop rmsprop({{decayed2}, {rest2, {.lr = 0.003}}}, {.lr = 0.01});
  EXPECT_EQ(rmsprop.options(1).alpha, 0.99);
  EXPECT_EQ(rmsprop.param_groups()[1].hyper.beta2, 0.99);  // where the generic Hyper keeps RMSprop's alpha
  group_trajectory("rmsprop_defaults", rmsprop, *m2);
}

// --- each optimizer's options (optim/options.h) ------------------------------------------------------

namespace {

// Every option as a number (flags 0/1), by torch's name for it.
std::map<std::string, double> fields(const optim::SGDOptions& o) {
  return {{"lr", o.lr}, {"momentum", o.momentum}, {"dampening", o.dampening}, {"weight_decay", o.weight_decay},
          {"nesterov", o.nesterov}, {"maximize", o.maximize}};
}
template <class AdamLike>
std::map<std::string, double> adam_fields(const AdamLike& o) {
  return {{"lr", o.lr}, {"beta1", o.beta1}, {"beta2", o.beta2}, {"eps", o.eps}, {"weight_decay", o.weight_decay},
          {"amsgrad", o.amsgrad}, {"maximize", o.maximize}};
}
std::map<std::string, double> fields(const optim::AdamOptions& o) { return adam_fields(o); }
std::map<std::string, double> fields(const optim::AdamWOptions& o) { return adam_fields(o); }
std::map<std::string, double> fields(const optim::RMSpropOptions& o) {
  return {{"lr", o.lr}, {"alpha", o.alpha}, {"eps", o.eps}, {"weight_decay", o.weight_decay}, {"momentum", o.momentum},
          {"centered", o.centered}, {"maximize", o.maximize}};
}

// Ember's defaults for `name` against torch's constructor defaults, which tools/make_optim_golden.py read
// from the signatures of the installed torch (1.13, the file's metadata): the same options, the same values.
void expect_torch_defaults(const std::string& name, const std::map<std::string, double>& ember) {
  SCOPED_TRACE(name);
  const std::string prefix = "defaults." + name + ".";
  std::set<std::string> torch_has;
  for (const auto& [key, value] : test::golden_file("optim_golden.safetensors").tensors) {
    if (key.rfind(prefix, 0) != 0) continue;
    const std::string field = key.substr(prefix.size());
    torch_has.insert(field);
    const auto it = ember.find(field);
    if (it == ember.end()) {
      ADD_FAILURE() << "torch's " << name << " has option '" << field << "', Ember's options do not";
      continue;
    }
    EXPECT_EQ(it->second, value.item<double>()) << field;
  }
  for (const auto& [field, value] : ember)
    if (!(name == "sgd" && field == "lr")) {
      EXPECT_TRUE(torch_has.count(field)) << "Ember's option '" << field << "' is not torch's";
    }
}

}  // namespace

TEST(OptimOptions, DefaultsEqualTorchOptims) {
  expect_torch_defaults("sgd", fields(optim::SGDOptions{}));
  expect_torch_defaults("adam", fields(optim::AdamOptions{}));
  expect_torch_defaults("adamw", fields(optim::AdamWOptions{}));
  expect_torch_defaults("rmsprop", fields(optim::RMSpropOptions{}));
  // torch 1.13's SGD requires lr; Ember's default is LibTorch's SGDOptions' and torch >= 2.2's.
  EXPECT_EQ(optim::SGDOptions{}.lr, 1e-3);
  // An optimizer built without options runs with them.
  Tensor x = zeros({2}).requires_grad_();
  EXPECT_EQ(fields(optim::AdamW({x}).options(0)), fields(optim::AdamWOptions{}));
  EXPECT_EQ(fields(optim::RMSprop({x}).options(0)), fields(optim::RMSpropOptions{}));
  EXPECT_EQ(optim::AdamW({x}).param_groups()[0].hyper.weight_decay, 1e-2);
}

TEST(OptimOptions, BuilderAndDesignatedFormsAgree) {
  using optim::SGDOptions, optim::AdamOptions, optim::AdamWOptions, optim::RMSpropOptions;
  EXPECT_EQ(fields(SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(1e-4)),
            fields(SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-4, .nesterov = true}));
  const AdamOptions a = AdamOptions(2e-3).betas({0.8, 0.99}).eps(1e-6).amsgrad(true);
  EXPECT_EQ(fields(a), fields(AdamOptions{.lr = 2e-3, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .amsgrad = true}));
  EXPECT_EQ(a.betas(), (std::array<double, 2>{0.8, 0.99}));
  EXPECT_EQ(a.lr(), 2e-3);  // LibTorch's getter
  EXPECT_EQ(fields(RMSpropOptions{}.alpha(0.9).centered(true)), fields(RMSpropOptions{.alpha = 0.9, .centered = true}));
  // On an lvalue the setters change it in place and chain.
  AdamWOptions w;
  w.weight_decay(0.0).amsgrad(true).lr = a.lr;
  EXPECT_EQ(fields(w), fields(AdamWOptions{.lr = 2e-3, .weight_decay = 0.0, .amsgrad = true}));
  EXPECT_EQ(std::max(w.lr(), 1e-3) * 2, 4e-3);  // a field reads as its value
}

TEST(OptimOptions, GroupsOptionsAndErrors) {
  Tensor x = zeros({2}).requires_grad_(), y = zeros({3}).requires_grad_();
  optim::AdamW opt({x}, optim::AdamWOptions(0.05).weight_decay(0.2));
  opt.add_param_group({{y}});  // no options: the optimizer's defaults
  EXPECT_EQ(fields(opt.options(1)), fields(opt.defaults()));
  opt.add_param_group({{y}, optim::AdamWOptions{}});
  EXPECT_EQ(opt.options(2).weight_decay, 1e-2);
  opt.param_groups()[0].hyper.lr = 0.01;  // as a scheduler does
  EXPECT_EQ(opt.options(0).lr, 0.01);
  opt.set_options(1, opt.options(1).eps(1e-5));
  EXPECT_EQ(opt.param_groups()[1].hyper.eps, 1e-5);
  EXPECT_EQ(opt.param_groups()[1].initial_lr, 0.05);
  EXPECT_TRUE(test::throws_error([&] { opt.set_options(0, {.beta1 = 1.5}); }, {"AdamW", "betas must be in [0, 1)", "1.5"}));
  EXPECT_TRUE(test::throws_error([&] { (void)opt.options(3); }, {"AdamW.options", "no parameter group 3", "there are 3"}));
  EXPECT_TRUE(test::throws_error([&] { optim::SGD({x}, optim::SGDOptions(0.1).nesterov(true)); }, {"SGD", "nesterov", "momentum > 0"}));
  EXPECT_TRUE(test::throws_error([&] { optim::RMSprop({{{x}}, {{y}, {.lr = -1}}}); }, {"RMSprop", "invalid learning rate -1"}));
}

// --- files written before the per-optimizer options ------------------------------------------------------

namespace {

// tools/make_optim_state_v0.cpp's run: two f64 parameters on a quadratic + quartic loss.
Tensor v0_loss(const Tensor& x, const Tensor& y) {
  const Tensor c = from_vector<double>({1.0, 2.0, 0.5, 3.0, 0.1}), d = from_vector<double>({0.3, -0.2, 0.1, 0.0, -1.0});
  return sum(c * x * x) * 0.5 + sum(d * x) + sum(y * y * y * y) * 0.25;
}

}  // namespace

// tests/data/optim_state_v0.safetensors holds optimizer and scheduler states saved at commit 8b6a2ae (six
// steps in) and where the run was six steps later: loaded into optimizers built with the new options,
// the run continues to the same values bit for bit.
TEST(Optim, StateSavedBeforeOptionsTypesResumesExactly) {
  using namespace optim;
  const auto file = [](const std::string& name) { return test::golden("optim_state_v0.safetensors", name); };
  struct Case {
    std::string name;
    std::function<std::unique_ptr<Optimizer>(Tensor, Tensor)> optimizer;
    std::function<std::unique_ptr<LRScheduler>(Optimizer&)> scheduler;
  };
  const std::vector<Case> cases = {
      {"sgd", [](Tensor x, Tensor y) { return std::make_unique<SGD>(std::vector<Tensor>{x, y}, SGDOptions(0.1).momentum(0.9).weight_decay(0.01).nesterov(true)); },
       [](Optimizer& o) { return std::make_unique<LinearWarmup>(std::make_unique<CosineAnnealingLR>(o, 10), 3, 0.25); }},
      {"adamw", [](Tensor x, Tensor y) { return std::make_unique<AdamW>(std::vector<Tensor>{x, y}, AdamWOptions{.lr = 0.01, .amsgrad = true}); },
       [](Optimizer& o) { return std::make_unique<OneCycleLR>(o, std::vector<double>{0.05}, 20); }},
      {"rmsprop", [](Tensor x, Tensor y) { return std::make_unique<RMSprop>(std::vector<Tensor>{x, y}, RMSpropOptions(0.01).alpha(0.9).momentum(0.5).centered(true)); },
       [](Optimizer& o) { return std::make_unique<StepLR>(o, 2, 0.5); }},
      {"adam_groups",
       [](Tensor x, Tensor y) {
         return std::make_unique<Adam>(std::vector<Adam::Group>{{{x}, AdamOptions{.lr = 0.02, .weight_decay = 0.1}}, {{y}, AdamOptions{.lr = 0.005}}});
       },
       [](Optimizer& o) { return std::make_unique<ReduceLROnPlateau>(o, PlateauOptions{.factor = 0.5, .patience = 1}); }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Tensor x = file(c.name + ".x").clone().requires_grad_(), y = file(c.name + ".y").clone().requires_grad_();
    auto opt = c.optimizer(x, y);
    auto sched = c.scheduler(*opt);
    NamedTensors opt_state, sched_state;
    for (const auto& [key, t] : test::golden_file("optim_state_v0.safetensors").tensors) {
      if (key.rfind(c.name + ".optimizer.", 0) == 0) opt_state.emplace_back(key.substr(c.name.size() + 11), t);
      if (key.rfind(c.name + ".scheduler.", 0) == 0) sched_state.emplace_back(key.substr(c.name.size() + 1), t);
    }
    ASSERT_FALSE(opt_state.empty());
    opt->load_state_dict(opt_state);
    sched->load_state_dict(sched_state);
    for (int i = 0; i < 6; ++i) {
      opt->zero_grad();
      const Tensor l = v0_loss(x, y);
      l.backward();
      opt->step();
      if (auto* p = dynamic_cast<ReduceLROnPlateau*>(sched.get())) p->step(l.item<double>());
      else sched->step();
    }
    // The state resumes the old trajectory; the last bits of six f64 steps depend on the build (the file was
    // written by an optimised build, whose compiler fuses multiply-adds; a Debug or sanitizer build does not).
    const auto expect_close = [](const std::vector<double>& got, const std::vector<double>& want, const char* what) {
      ASSERT_EQ(got.size(), want.size()) << what;
      for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], want[i], 1e-12 * (1 + std::abs(want[i]))) << what << "[" << i << "]";
    };
    expect_close(x.to_vector<double>(), file(c.name + ".expected.x").to_vector<double>(), "x");
    expect_close(y.to_vector<double>(), file(c.name + ".expected.y").to_vector<double>(), "y");
    std::vector<double> lrs;
    for (const ParamGroup& g : opt->param_groups()) lrs.push_back(g.hyper.lr);
    expect_close(lrs, file(c.name + ".expected.lr").to_vector<double>(), "lr");
  }
}
