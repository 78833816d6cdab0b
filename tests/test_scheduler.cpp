// LR schedulers against PyTorch 1.13: every configuration's lr sequence (and the momentum OneCycleLR and
// CyclicLR cycle) over 35 steps on two parameter groups equals tests/data/scheduler_golden.safetensors
// (made by tools/make_scheduler_golden.py) bit for bit; a state_dict round trip through a safetensors
// file continues exactly; invalid arguments throw naming the scheduler, the argument and the range.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <functional>
#include <memory>

#include "test_helpers.h"

using namespace ember;
using namespace ember::optim;

namespace {

Tensor get(const std::string& name) { return test::golden("scheduler_golden.safetensors", name); }

// Two groups, lr 0.1 and 0.01: the script's OPTIMIZERS.
std::unique_ptr<Optimizer> make_optimizer(const std::string& kind) {
  std::vector<Tensor> first{zeros({2}).requires_grad_()}, second{zeros({3}).requires_grad_()};
  std::unique_ptr<Optimizer> opt;
  if (kind == "sgd") opt = std::make_unique<SGD>(first, SGDOptions{.lr = 0.1, .momentum = 0.9});
  else if (kind == "adam") opt = std::make_unique<Adam>(first, AdamOptions{.lr = 0.1});
  else if (kind == "rmsprop") opt = std::make_unique<RMSprop>(first, RMSpropOptions{.lr = 0.1, .momentum = 0.5});
  else opt = std::make_unique<AdamW>(first, AdamWOptions{.lr = 0.1});
  Hyper h = opt->param_groups()[0].hyper;
  h.lr = 0.01;
  opt->add_param_group(second, h);
  return opt;
}

using Make = std::function<std::unique_ptr<LRScheduler>(Optimizer&)>;
struct Config {
  std::string name, optimizer;
  Make make;
};
template <typename S, typename... Args>
Make make(Args... args) {
  return [=](Optimizer& o) { return std::make_unique<S>(o, args...); };
}
template <typename S, typename... Args>
Make warmup(int64_t steps, double factor, Args... args) {
  return [=](Optimizer& o) { return std::make_unique<LinearWarmup>(std::make_unique<S>(o, args...), steps, factor); };
}

using Ptr = std::shared_ptr<LRScheduler>;
std::unique_ptr<LRScheduler> sequential(Optimizer& o, std::vector<Ptr> schedulers, std::vector<int64_t> milestones) {
  return std::make_unique<SequentialLR>(o, std::move(schedulers), std::move(milestones));
}
std::unique_ptr<LRScheduler> chained(std::vector<Ptr> schedulers) { return std::make_unique<ChainedScheduler>(std::move(schedulers)); }

// The configurations of tools/make_scheduler_golden.py.
const std::vector<Config>& configs() {
  using V = std::vector<double>;
  using M = std::vector<int64_t>;
  static const std::vector<Config> c = {
      {"step_a", "sgd", make<StepLR>(int64_t{3}, 0.5)},
      {"step_b", "sgd", make<StepLR>(int64_t{7})},
      {"step_c", "adam", make<StepLR>(int64_t{1}, 1.05)},
      {"multistep_a", "sgd", make<MultiStepLR>(M{5, 10, 20}, 0.5)},
      {"multistep_b", "sgd", make<MultiStepLR>(M{3, 3, 12})},
      {"exp_a", "sgd", make<ExponentialLR>(0.9)},
      {"exp_b", "adam", make<ExponentialLR>(0.99)},
      {"cos_a", "sgd", make<CosineAnnealingLR>(int64_t{10})},
      {"cos_b", "sgd", make<CosineAnnealingLR>(int64_t{25}, 1e-3)},
      {"cos_c", "adam", make<CosineAnnealingLR>(int64_t{3}, 5e-3)},
      {"cos_d", "sgd", make<CosineAnnealingLR>(int64_t{1})},
      {"onecycle_cos_sgd", "sgd", make<OneCycleLR>(V{0.5, 0.05}, int64_t{35})},
      {"onecycle_linear_adam", "adam",
       make<OneCycleLR>(V{0.1}, int64_t{40},
                        OneCycleOptions{.pct_start = 0.25, .anneal_strategy = Anneal::linear, .div_factor = 10, .final_div_factor = 100})},
      {"onecycle_three_adamw", "adamw",
       make<OneCycleLR>(V{0.2, 0.02}, int64_t{36}, OneCycleOptions{.base_momentum = 0.8, .max_momentum = 0.9, .three_phase = true})},
      {"onecycle_nomom", "sgd", make<OneCycleLR>(V{0.3}, int64_t{35}, OneCycleOptions{.pct_start = 0.4, .cycle_momentum = false})},
      {"onecycle_short", "sgd", make<OneCycleLR>(V{1.0}, int64_t{2})},
      {"warmup_cos", "sgd", warmup<CosineAnnealingLR>(5, 0.1, int64_t{30}, 1e-4)},
      {"warmup_step", "adam", warmup<StepLR>(3, 0.25, int64_t{4}, 0.5)},
      {"warmup_multistep", "sgd", warmup<MultiStepLR>(4, 0.5, M{6, 9}, 0.3)},
      {"warmup_exp", "sgd", warmup<ExponentialLR>(1, 0.3, 0.95)},
      {"warmup_onecycle", "adam", warmup<OneCycleLR>(4, 0.5, V{0.3}, int64_t{31})},
      {"plateau_min_rel", "sgd", make<ReduceLROnPlateau>(PlateauOptions{.factor = 0.5, .patience = 2, .threshold = 1e-2})},
      {"plateau_max_abs", "sgd",
       make<ReduceLROnPlateau>(PlateauOptions{.mode = PlateauMode::max, .factor = 0.3, .patience = 1, .threshold = 0.05,
                                              .threshold_mode = ThresholdMode::abs, .cooldown = 2, .min_lr = {0.01, 0.001}})},
      {"plateau_default", "adam", make<ReduceLROnPlateau>(PlateauOptions{.patience = 3, .min_lr = {2e-4}})},
      {"plateau_max_rel", "sgd",
       make<ReduceLROnPlateau>(PlateauOptions{.mode = PlateauMode::max, .factor = 0.7, .patience = 0, .threshold = 0.02,
                                              .cooldown = 1, .eps = 1e-3})},
      // issue 30: the rest of torch.optim.lr_scheduler (the script's lambdas, in C++)
      {"lambda_a", "sgd", make<LambdaLR>(LrLambda([](int64_t e) { return std::pow(0.95, static_cast<double>(e)); }))},
      {"lambda_b", "adam",
       make<LambdaLR>(std::vector<LrLambda>{[](int64_t e) { return 1.0 / static_cast<double>(1 + e); },
                                            [](int64_t e) { return static_cast<double>(e / 3) * 0.5 + 1; }})},
      {"mult_a", "sgd", make<MultiplicativeLR>(LrLambda([](int64_t) { return 0.9; }))},
      {"mult_b", "adam",
       make<MultiplicativeLR>(std::vector<LrLambda>{[](int64_t) { return 0.97; },
                                                    [](int64_t e) { return 1.0 + 0.01 * static_cast<double>(e); }})},
      {"constant_a", "sgd", make<ConstantLR>()},
      {"constant_b", "adam", make<ConstantLR>(0.5, int64_t{8})},
      {"constant_c", "sgd", make<ConstantLR>(0.7, int64_t{0})},
      {"linear_a", "sgd", make<LinearLR>()},
      {"linear_b", "adam", make<LinearLR>(0.1, 0.9, int64_t{12})},
      {"linear_c", "sgd", make<LinearLR>(1.0, 0.0, int64_t{20})},
      {"poly_a", "sgd", make<PolynomialLR>()},
      {"poly_b", "adam", make<PolynomialLR>(int64_t{20}, 2.0)},
      {"poly_c", "sgd", make<PolynomialLR>(int64_t{30}, 0.5)},
      {"cawr_a", "sgd", make<CosineAnnealingWarmRestarts>(int64_t{10})},
      {"cawr_b", "adam", make<CosineAnnealingWarmRestarts>(int64_t{3}, int64_t{2}, 1e-3)},
      {"cawr_epochs_a", "sgd", make<CosineAnnealingWarmRestarts>(int64_t{4}, int64_t{2}, 1e-4)},
      {"cawr_epochs_b", "sgd", make<CosineAnnealingWarmRestarts>(int64_t{3}, int64_t{1}, 2e-3)},
      {"cyclic_tri", "sgd", make<CyclicLR>(V{0.01}, V{0.1}, CyclicOptions{.step_size_up = 4})},
      {"cyclic_tri2", "sgd",
       make<CyclicLR>(V{0.01, 0.001}, V{0.1, 0.01},
                      CyclicOptions{.step_size_up = 3, .step_size_down = 5, .mode = CyclicMode::triangular2})},
      {"cyclic_exp", "adam",
       make<CyclicLR>(V{0.001}, V{0.05},
                      CyclicOptions{.step_size_up = 2.5, .mode = CyclicMode::exp_range, .gamma = 0.97, .cycle_momentum = false})},
      {"cyclic_rms", "rmsprop",
       make<CyclicLR>(V{0.002}, V{0.02},
                      CyclicOptions{.step_size_up = 6, .step_size_down = 2, .base_momentum = {0.5}, .max_momentum = {0.7, 0.6}})},
      {"cyclic_fn_cycle", "sgd",
       make<CyclicLR>(V{0.01}, V{0.1},
                      CyclicOptions{.step_size_up = 2, .step_size_down = 3,
                                    .scale_fn = [](int64_t x) { return 1.0 / static_cast<double>(x); }})},
      {"cyclic_fn_iter", "sgd",
       make<CyclicLR>(V{0.01}, V{0.1},
                      CyclicOptions{.step_size_up = 5,
                                    .scale_fn = [](int64_t x) { return std::pow(0.99, static_cast<double>(x)); },
                                    .scale_mode = CyclicScaleMode::iterations,
                                    .cycle_momentum = false})},
      {"seq_const_exp", "sgd",
       [](Optimizer& o) { return sequential(o, {std::make_shared<ConstantLR>(o, 0.5, 3), std::make_shared<ExponentialLR>(o, 0.9)}, {3}); }},
      {"seq_linear_cos_step", "adam",
       [](Optimizer& o) {
         return sequential(o, {std::make_shared<LinearLR>(o, 0.1, 1.0, 4), std::make_shared<CosineAnnealingLR>(o, 10),
                               std::make_shared<StepLR>(o, 3, 0.5)}, {4, 14});
       }},
      {"seq_lambda_poly", "sgd",
       [](Optimizer& o) {
         return sequential(o, {std::make_shared<LambdaLR>(o, [](int64_t e) { return 1.0 + static_cast<double>(e); }),
                               std::make_shared<PolynomialLR>(o, 10, 2.0)}, {5});
       }},
      {"seq_mult_cawr", "sgd",
       [](Optimizer& o) {
         return sequential(o, {std::make_shared<MultiplicativeLR>(o, [](int64_t) { return 0.8; }),
                               std::make_shared<CosineAnnealingWarmRestarts>(o, 4, 2)}, {6});
       }},
      {"seq_cyclic_first", "sgd",
       [](Optimizer& o) {
         return sequential(o, {std::make_shared<CyclicLR>(o, V{0.01}, V{0.1}, CyclicOptions{.step_size_up = 3}),
                               std::make_shared<ExponentialLR>(o, 0.9)}, {10});
       }},
      {"seq_cyclic_second", "adam",
       [](Optimizer& o) {
         return sequential(o, {std::make_shared<LinearLR>(o, 0.5, 1.0, 3),
                               std::make_shared<CyclicLR>(o, V{0.02}, V{0.2}, CyclicOptions{.step_size_up = 2, .cycle_momentum = false})},
                           {5});
       }},
      {"seq_const_onecycle", "sgd",
       [](Optimizer& o) {
         return sequential(o, {std::make_shared<ConstantLR>(o, 0.1, 2), std::make_shared<OneCycleLR>(o, V{0.5}, 40)}, {2});
       }},
      {"chain_const_exp", "sgd",
       [](Optimizer& o) { return chained({std::make_shared<ConstantLR>(o, 0.1, 2), std::make_shared<ExponentialLR>(o, 0.9)}); }},
      {"chain_three", "adam",
       [](Optimizer& o) {
         return chained({std::make_shared<LinearLR>(o, 0.2, 1.0, 6), std::make_shared<StepLR>(o, 4, 0.5),
                         std::make_shared<MultiplicativeLR>(o, [](int64_t) { return 0.99; })});
       }},
      {"chain_cawr_const", "sgd",
       [](Optimizer& o) {
         return chained({std::make_shared<CosineAnnealingWarmRestarts>(o, 5), std::make_shared<ConstantLR>(o, 0.5, 7)});
       }},
  };
  return c;
}

// One row per recorded moment: each group's lr, then each group's momentum (SGD) or beta1 (Adam).
std::vector<double> snapshot(const Optimizer& opt) {
  std::vector<double> row;
  for (const ParamGroup& g : opt.param_groups()) row.push_back(g.hyper.lr);
  const bool beta1 = opt.name() == "Adam" || opt.name() == "AdamW";
  for (const ParamGroup& g : opt.param_groups()) row.push_back(beta1 ? g.hyper.beta1 : g.hyper.momentum);
  return row;
}

// Step i (0-based) as the script takes it: on the metric, at a given epoch, or plainly.
void advance(const std::string& name, LRScheduler& s, int64_t i) {
  if (auto* plateau = dynamic_cast<ReduceLROnPlateau*>(&s)) {
    plateau->step(get("plateau.metrics").to_vector<double>().at(i));
  } else if (name.rfind("cawr_epochs", 0) == 0 && !std::isnan(get("cawr.epochs").to_vector<double>().at(i))) {
    dynamic_cast<CosineAnnealingWarmRestarts&>(s).step(get("cawr.epochs").to_vector<double>().at(i));
  } else {
    s.step();
  }
}

bool has_momentum(const std::string& name) {
  return test::golden_file("scheduler_golden.safetensors").find(name + ".momentum") != nullptr;
}

TEST(Scheduler, SequencesMatchPyTorch) {
  ASSERT_EQ(configs().size(), 58u);  // every configuration of the script
  for (const Config& cfg : configs()) {
    SCOPED_TRACE(cfg.name);
    const std::vector<double> lr = get(cfg.name + ".lr").to_vector<double>();
    const std::vector<double> mom = has_momentum(cfg.name) ? get(cfg.name + ".momentum").to_vector<double>() : lr;
    const int64_t steps = static_cast<int64_t>(lr.size() / 2) - 1;
    ASSERT_GE(steps, cfg.name == "onecycle_short" ? 2 : 35);
    auto opt = make_optimizer(cfg.optimizer);
    auto sched = cfg.make(*opt);
    for (int64_t i = 0; i <= steps; ++i) {
      if (i > 0) advance(cfg.name, *sched, i - 1);
      const std::vector<double> row = snapshot(*opt);
      for (int g = 0; g < 2; ++g) {
        EXPECT_EQ(row[g], lr[2 * i + g]) << "lr, step " << i << " group " << g;  // bit for bit
        EXPECT_EQ(sched->last_lr()[g], row[g]) << "last_lr, step " << i;
        if (has_momentum(cfg.name)) {
          EXPECT_EQ(row[2 + g], mom[2 * i + g]) << "momentum, step " << i << " group " << g;
        }
      }
      if (cfg.name.rfind("cawr_epochs", 0) != 0) {
        EXPECT_EQ(sched->last_epoch(), i);
      }
    }
  }
}

TEST(Scheduler, StateDictRoundTripContinuesExactly) {
  const std::string path = ::testing::TempDir() + "ember_scheduler_state.safetensors";
  for (const Config& cfg : configs()) {
    SCOPED_TRACE(cfg.name);
    const int64_t steps = cfg.name == "onecycle_short" ? 2 : 34;
    auto opt = make_optimizer(cfg.optimizer);
    auto sched = cfg.make(*opt);
    std::vector<std::vector<double>> straight{snapshot(*opt)};
    for (int64_t i = 0; i < steps; ++i) {
      advance(cfg.name, *sched, i);
      straight.push_back(snapshot(*opt));
    }

    auto first_opt = make_optimizer(cfg.optimizer);
    auto first = cfg.make(*first_opt);
    for (int64_t i = 0; i < steps / 2; ++i) advance(cfg.name, *first, i);
    NamedTensors state = first_opt->state_dict();
    for (auto& kv : first->state_dict()) {
      ASSERT_EQ(kv.first.rfind("scheduler.", 0), 0u) << kv.first;
      state.push_back(kv);
    }
    safetensors::save(path, state);

    NamedTensors opt_state, sched_state;
    for (auto& kv : safetensors::load(path).tensors)
      (kv.first.rfind("scheduler.", 0) == 0 ? sched_state : opt_state).push_back(kv);
    auto opt2 = make_optimizer(cfg.optimizer);
    auto resumed = cfg.make(*opt2);
    opt2->load_state_dict(opt_state);
    resumed->load_state_dict(sched_state);
    EXPECT_EQ(resumed->last_epoch(), first->last_epoch());
    EXPECT_EQ(resumed->last_lr(), first->last_lr());
    EXPECT_EQ(snapshot(*opt2), straight[steps / 2]) << "right after loading";  // momentum too
    for (int64_t i = steps / 2; i < steps; ++i) {
      advance(cfg.name, *resumed, i);
      EXPECT_EQ(snapshot(*opt2), straight[i + 1]) << "step " << i + 1;
    }
  }
}

TEST(Scheduler, LoadingAloneRestoresTheLrs) {
  // Without the optimizer's state the scheduler still writes its lrs (and momentum) back.
  auto opt = make_optimizer("adam");
  OneCycleLR sched(*opt, {0.4}, 20);
  for (int i = 0; i < 7; ++i) sched.step();
  auto opt2 = make_optimizer("adam");
  OneCycleLR fresh(*opt2, {0.4}, 20);
  ASSERT_NE(snapshot(*opt2), snapshot(*opt));
  fresh.load_state_dict(sched.state_dict());
  EXPECT_EQ(snapshot(*opt2), snapshot(*opt));
}

TEST(Scheduler, LinearWarmupHandsOverAtTheMilestone) {
  // As SequentialLR: `after` sits at epoch -1 during the warmup, restarts at 0 on the milestone step.
  auto opt = make_optimizer("sgd");
  LinearWarmup sched(std::make_unique<ExponentialLR>(*opt, 0.5), 3, 0.25);
  EXPECT_EQ(opt->param_groups()[0].hyper.lr, 0.1 * 0.25);
  for (int64_t i = 1; i <= 5; ++i) {
    sched.step();
    EXPECT_EQ(sched.after().last_epoch(), i < 3 ? -1 : i - 3) << "step " << i;
  }
  EXPECT_NEAR(opt->param_groups()[1].hyper.lr, 0.01 * 0.25, 1e-18);  // two ExponentialLR steps after the milestone
}

TEST(Scheduler, StepsPastOneCycleEndThrowWithoutAdvancing) {
  auto opt = make_optimizer("sgd");
  OneCycleLR sched(*opt, {0.1}, 3);
  for (int i = 0; i < 3; ++i) sched.step();
  EXPECT_TRUE(test::throws_error([&] { sched.step(); }, {"OneCycleLR", "step 4", "total_steps = 3"}));
  EXPECT_EQ(sched.last_epoch(), 3);
}

TEST(Scheduler, InvalidArgumentsNameSchedulerArgumentAndRange) {
  auto opt = make_optimizer("sgd");
  Optimizer& o = *opt;
  using test::throws_error;
  EXPECT_TRUE(throws_error([&] { StepLR(o, 0); }, {"StepLR", "step_size", ">= 1", "0"}));
  EXPECT_TRUE(throws_error([&] { StepLR(o, 2, 0.0); }, {"StepLR", "gamma", "> 0"}));
  EXPECT_TRUE(throws_error([&] { MultiStepLR(o, {5, 3}); }, {"MultiStepLR", "milestones", "non-decreasing", "5 before 3"}));
  EXPECT_TRUE(throws_error([&] { MultiStepLR(o, {-1}); }, {"MultiStepLR", "milestones", ">= 0"}));
  EXPECT_TRUE(throws_error([&] { MultiStepLR(o, {1}, -0.5); }, {"MultiStepLR", "gamma", "> 0", "-0.5"}));
  EXPECT_TRUE(throws_error([&] { ExponentialLR(o, 0); }, {"ExponentialLR", "gamma", "> 0"}));
  EXPECT_TRUE(throws_error([&] { CosineAnnealingLR(o, 0); }, {"CosineAnnealingLR", "T_max", ">= 1"}));
  EXPECT_TRUE(throws_error([&] { CosineAnnealingLR(o, 5, -1); }, {"CosineAnnealingLR", "eta_min", ">= 0"}));
  EXPECT_TRUE(throws_error([&] { OneCycleLR(o, {0.1}, 0); }, {"OneCycleLR", "total_steps", ">= 1"}));
  for (double pct : {0.0, 1.0, 1.5})
    EXPECT_TRUE(throws_error([&] { OneCycleLR(o, {0.1}, 10, {.pct_start = pct}); }, {"OneCycleLR", "pct_start", "(0, 1)"}));
  EXPECT_TRUE(throws_error([&] { OneCycleLR(o, {0.1, 0.2, 0.3}, 10); }, {"OneCycleLR", "max_lr", "one per parameter group (2)", "got 3"}));
  EXPECT_TRUE(throws_error([&] { OneCycleLR(o, {-0.1}, 10); }, {"OneCycleLR", "max_lr", "> 0"}));
  EXPECT_TRUE(throws_error([&] { OneCycleLR(o, {0.1}, 10, {.div_factor = 0}); }, {"OneCycleLR", "div_factor", "> 0"}));
  EXPECT_TRUE(throws_error([&] { OneCycleLR(o, {0.1}, 10, {.max_momentum = 1.0}); }, {"OneCycleLR", "max_momentum", "[0, 1)"}));
  const auto cosine = [&] { return std::make_unique<CosineAnnealingLR>(o, 10); };
  EXPECT_TRUE(throws_error([&] { LinearWarmup(cosine(), 0); }, {"LinearWarmup", "warmup_steps", ">= 1"}));
  EXPECT_TRUE(throws_error([&] { LinearWarmup(cosine(), 5, 0.0); }, {"LinearWarmup", "start_factor", "(0, 1]"}));
  EXPECT_TRUE(throws_error([&] { LinearWarmup(cosine(), 5, 1.5); }, {"LinearWarmup", "start_factor", "(0, 1]"}));
  EXPECT_TRUE(throws_error([&] { LinearWarmup(std::make_unique<ReduceLROnPlateau>(o), 5); }, {"LinearWarmup", "ReduceLROnPlateau"}));
  EXPECT_TRUE(throws_error([&] { LinearWarmup(nullptr, 5); }, {"LinearWarmup", "null"}));
  EXPECT_TRUE(throws_error([&] { ReduceLROnPlateau(o, {.factor = 1.0}); }, {"ReduceLROnPlateau", "factor", "(0, 1)"}));
  EXPECT_TRUE(throws_error([&] { ReduceLROnPlateau(o, {.patience = -1}); }, {"ReduceLROnPlateau", "patience", ">= 0"}));
  EXPECT_TRUE(throws_error([&] { ReduceLROnPlateau(o, {.cooldown = -2}); }, {"ReduceLROnPlateau", "cooldown", ">= 0"}));
  EXPECT_TRUE(throws_error([&] { ReduceLROnPlateau(o, {.min_lr = {0, 0, 0}}); }, {"ReduceLROnPlateau", "min_lr", "got 3"}));
  ReduceLROnPlateau plateau(o);
  EXPECT_TRUE(throws_error([&] { static_cast<LRScheduler&>(plateau).step(); }, {"ReduceLROnPlateau", "step(metric)"}));
}

TEST(Scheduler, SequentialLRRestartsEachSchedulerAtItsMilestone) {
  // As torch: the later schedulers sit at epoch -1 until their milestone, then run from epoch 0.
  auto opt = make_optimizer("sgd");
  SequentialLR sched(*opt, {std::make_shared<ConstantLR>(*opt, 0.5, 10), std::make_shared<ExponentialLR>(*opt, 0.5),
                            std::make_shared<StepLR>(*opt, 2, 0.1)},
                     {2, 4});
  EXPECT_EQ(opt->param_groups()[0].hyper.lr, 0.1 * 0.5);  // the first's epoch 0, from initial_lr
  const std::vector<std::vector<int64_t>> epochs = {{1, -1, -1}, {1, 0, -1}, {1, 1, -1}, {1, 1, 0}, {1, 1, 1}};
  for (size_t i = 0; i < epochs.size(); ++i) {
    sched.step();
    for (size_t k = 0; k < 3; ++k) EXPECT_EQ(sched.schedulers()[k]->last_epoch(), epochs[i][k]) << "step " << i + 1;
  }
  EXPECT_EQ(opt->param_groups()[0].hyper.lr, 0.1);  // StepLR at its epoch 1, from its base
  EXPECT_EQ(sched.last_lr(), sched.schedulers()[2]->last_lr());
}

TEST(Scheduler, CosineAnnealingWarmRestartsFractionalEpochs) {
  // T_0 = 2, T_mult = 3: restarts at epochs 2 and 8; step(epoch) finds the period the epoch is in.
  auto opt = make_optimizer("sgd");
  CosineAnnealingWarmRestarts sched(*opt, 2, 3, 0.0);
  sched.step(9.5);
  EXPECT_EQ(sched.last_epoch(), 9);
  EXPECT_EQ(sched.T_i(), 18);
  EXPECT_EQ(sched.T_cur(), 1.5);
  sched.step(1.0);
  EXPECT_EQ(sched.T_i(), 2);
  EXPECT_EQ(sched.T_cur(), 1.0);
  EXPECT_NEAR(opt->param_groups()[0].hyper.lr, 0.05, 1e-15);  // halfway down the first period
  sched.step();                                                // epoch 2: the first restart
  EXPECT_EQ(sched.T_cur(), 0.0);
  EXPECT_EQ(sched.T_i(), 6);
  EXPECT_EQ(opt->param_groups()[0].hyper.lr, 0.1);
}

TEST(Scheduler, ConstantLRWithFactorZeroThrowsWhereTorchDividesByZero) {
  auto opt = make_optimizer("sgd");
  ConstantLR sched(*opt, 0.0, 2);
  EXPECT_EQ(opt->param_groups()[0].hyper.lr, 0.0);
  sched.step();
  EXPECT_TRUE(test::throws_error([&] { sched.step(); }, {"ConstantLR", "total_iters = 2", "factor 0", "factor > 0"}));
}

TEST(Scheduler, NewSchedulersRejectInvalidArguments) {
  auto opt = make_optimizer("sgd");
  auto adam = make_optimizer("adam");
  Optimizer& o = *opt;
  using test::throws_error;
  const LrLambda one = [](int64_t) { return 1.0; };
  EXPECT_TRUE(throws_error([&] { LambdaLR(o, {one, one, one}); }, {"LambdaLR", "expected 1 or 2 lr_lambdas", "got 3"}));
  EXPECT_TRUE(throws_error([&] { LambdaLR(o, LrLambda{}); }, {"LambdaLR", "lr_lambda 0 is empty"}));
  EXPECT_TRUE(throws_error([&] { MultiplicativeLR(o, {one, LrLambda{}}); }, {"MultiplicativeLR", "lr_lambda 1 is empty"}));
  EXPECT_TRUE(throws_error([&] { ConstantLR(o, 1.5); }, {"ConstantLR", "factor", "[0, 1]", "1.5"}));
  EXPECT_TRUE(throws_error([&] { ConstantLR(o, 0.5, -1); }, {"ConstantLR", "total_iters", ">= 0"}));
  EXPECT_TRUE(throws_error([&] { LinearLR(o, 0.0); }, {"LinearLR", "start_factor", "(0, 1]"}));
  EXPECT_TRUE(throws_error([&] { LinearLR(o, 0.5, 1.5); }, {"LinearLR", "end_factor", "[0, 1]"}));
  EXPECT_TRUE(throws_error([&] { LinearLR(o, 0.5, 1.0, 0); }, {"LinearLR", "total_iters", ">= 1"}));
  EXPECT_TRUE(throws_error([&] { PolynomialLR(o, 0); }, {"PolynomialLR", "total_iters", ">= 1"}));
  EXPECT_TRUE(throws_error([&] { PolynomialLR(o, 5, -1.0); }, {"PolynomialLR", "power", ">= 0"}));
  EXPECT_TRUE(throws_error([&] { CosineAnnealingWarmRestarts(o, 0); }, {"CosineAnnealingWarmRestarts", "T_0", ">= 1"}));
  EXPECT_TRUE(throws_error([&] { CosineAnnealingWarmRestarts(o, 5, 0); }, {"CosineAnnealingWarmRestarts", "T_mult", ">= 1"}));
  EXPECT_TRUE(throws_error([&] { CosineAnnealingWarmRestarts(o, 5, 1, -1.0); }, {"CosineAnnealingWarmRestarts", "eta_min"}));
  CosineAnnealingWarmRestarts cawr(o, 5);
  EXPECT_TRUE(throws_error([&] { cawr.step(-0.5); }, {"CosineAnnealingWarmRestarts.step", "epoch must be >= 0", "-0.5"}));
  EXPECT_TRUE(throws_error([&] { CyclicLR(*adam, {0.01}, {0.1}); }, {"CyclicLR", "Adam has no momentum", "cycle_momentum = false"}));
  EXPECT_TRUE(throws_error([&] { CyclicLR(o, {0.01}, {0.1}, {.step_size_up = 0}); }, {"CyclicLR", "step_size_up", "> 0"}));
  EXPECT_TRUE(throws_error([&] { CyclicLR(o, {0.01}, {0.1}, {.step_size_down = -1}); }, {"CyclicLR", "step_size_down", ">= 0"}));
  EXPECT_TRUE(throws_error([&] { CyclicLR(o, {0.1, 0.2, 0.3}, {1.0}); }, {"CyclicLR", "base_lr", "one per parameter group (2)", "got 3"}));
  EXPECT_TRUE(throws_error([&] { CyclicLR(o, {0.01}, {0.1}, {.max_momentum = {0.9, 0.9, 0.9}}); }, {"CyclicLR", "max_momentum"}));

  const auto step = [&](Optimizer& on) { return std::make_shared<StepLR>(on, 3); };
  EXPECT_TRUE(throws_error([&] { SequentialLR(o, {step(o), step(o)}, {}); },
                           {"SequentialLR", "one milestone fewer than schedulers", "2 schedulers and 0 milestones"}));
  EXPECT_TRUE(throws_error([&] { SequentialLR(o, {step(o), step(*adam)}, {3}); }, {"SequentialLR", "scheduler 1", "different optimizer"}));
  EXPECT_TRUE(throws_error([&] { SequentialLR(o, {step(o), std::make_shared<ReduceLROnPlateau>(o)}, {3}); },
                           {"SequentialLR", "scheduler 1 cannot be a ReduceLROnPlateau"}));
  EXPECT_TRUE(throws_error([&] { SequentialLR(o, {step(o), step(o)}, {0}); }, {"SequentialLR", "milestones", ">= 1", "got 0"}));
  EXPECT_TRUE(throws_error([&] { SequentialLR(o, {step(o), step(o), step(o)}, {5, 3}); },
                           {"SequentialLR", "milestones must be increasing", "got 3 after 5"}));
  EXPECT_TRUE(throws_error([&] { SequentialLR(o, {step(o), nullptr}, {3}); }, {"SequentialLR", "scheduler 1 is null"}));
  EXPECT_TRUE(throws_error([&] { SequentialLR(o, {}, {}); }, {"SequentialLR", "at least one"}));
  EXPECT_TRUE(throws_error([&] { ChainedScheduler({}); }, {"ChainedScheduler", "at least one"}));
  EXPECT_TRUE(throws_error([&] { ChainedScheduler({step(o), step(*adam)}); }, {"ChainedScheduler", "schedulers 0 and 1", "different optimizers"}));
  EXPECT_TRUE(throws_error([&] { ChainedScheduler({step(o), std::make_shared<ReduceLROnPlateau>(o)}); },
                           {"ChainedScheduler", "ReduceLROnPlateau", "step(metric)"}));
  auto chained = std::make_unique<ChainedScheduler>(std::vector<std::shared_ptr<LRScheduler>>{step(o)});
  EXPECT_TRUE(throws_error([&] { LinearWarmup(std::move(chained), 5); }, {"LinearWarmup", "cannot be a ChainedScheduler"}));
}

TEST(Scheduler, LoadStateDictNamesTheKey) {
  auto opt = make_optimizer("sgd");
  StepLR step(*opt, 3);
  ReduceLROnPlateau plateau(*opt);
  using test::throws_error;
  EXPECT_TRUE(throws_error([&] { step.load_state_dict(plateau.state_dict()); }, {"StepLR.load_state_dict", "missing", "scheduler.group.0.base_lr"}));
  EXPECT_TRUE(throws_error([&] { plateau.load_state_dict(step.state_dict()); }, {"ReduceLROnPlateau.load_state_dict", "missing", "scheduler.best"}));
  CosineAnnealingWarmRestarts cawr(*opt, 4);
  EXPECT_TRUE(throws_error([&] { cawr.load_state_dict(step.state_dict()); }, {"CosineAnnealingWarmRestarts.load_state_dict", "missing", "scheduler.T_cur"}));
  SequentialLR seq(*opt, {std::make_shared<StepLR>(*opt, 3), std::make_shared<ExponentialLR>(*opt, 0.9)}, {4});
  EXPECT_TRUE(throws_error([&] { seq.load_state_dict(step.state_dict()); }, {"StepLR.load_state_dict", "missing", "scheduler.schedulers.0.last_epoch"}));
  NamedTensors extra = step.state_dict();
  extra.emplace_back("scheduler.bogus", scalar_tensor(1.0));
  EXPECT_TRUE(throws_error([&] { step.load_state_dict(extra); }, {"unexpected key 'scheduler.bogus'"}));
}

}  // namespace
