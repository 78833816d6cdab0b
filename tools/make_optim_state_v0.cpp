// Wrote tests/data/optim_state_v0.safetensors: optimizer and scheduler states in the state_dict format
// of commit 8b6a2ae (before the per-optimizer options types), for Optim.StateSavedBeforeOptionsTypes-
// ResumesExactly in tests/test_optim.cpp. Per configuration CFG: CFG.x / CFG.y (the parameters six steps
// in), CFG.optimizer.* and CFG.scheduler.* (their state_dicts then), CFG.expected.{x,y,lr} (six steps
// later). Not built by CMake: it was compiled against that commit's optim/ sources,
//   c++ -std=c++20 -O3 -fopenmp -march=native -I<8b6a2ae tree> -Iinclude tools/make_optim_state_v0.cpp
//       <8b6a2ae's optim/*.cpp> <build>/{data,distributed,nn,observe,autograd,core,backends,base}/lib*.a ...
//   ./a.out tests/data/optim_state_v0.safetensors
// (the link line of build/tests/CMakeFiles/test_optim.dir/link.txt). Keep the file as it is: it stands
// for checkpoints users already have.
#include <ember/ember.h>
#include <functional>
#include <memory>
using namespace ember;
using namespace ember::optim;

struct Run {
  Tensor x, y;
  std::unique_ptr<Optimizer> opt;
  std::unique_ptr<LRScheduler> sched;
};

Tensor loss(const Tensor& x, const Tensor& y) {
  const Tensor c = from_vector<double>({1.0, 2.0, 0.5, 3.0, 0.1}), d = from_vector<double>({0.3, -0.2, 0.1, 0.0, -1.0});
  return sum(c * x * x) * 0.5 + sum(d * x) + sum(y * y * y * y) * 0.25;
}

void train(Run& r, int steps) {
  for (int i = 0; i < steps; ++i) {
    r.opt->zero_grad();
    const Tensor l = loss(r.x, r.y);
    l.backward();
    r.opt->step();
    if (auto* p = dynamic_cast<ReduceLROnPlateau*>(r.sched.get())) p->step(l.item<double>());
    else r.sched->step();
  }
}

int main(int argc, char** argv) {
  const std::map<std::string, std::function<void(Run&)>> configs = {
      {"sgd", [](Run& r) {
         r.opt = std::make_unique<SGD>(std::vector<Tensor>{r.x, r.y}, SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 0.01, .nesterov = true});
         r.sched = std::make_unique<LinearWarmup>(std::make_unique<CosineAnnealingLR>(*r.opt, 10), 3, 0.25);
       }},
      {"adamw", [](Run& r) {
         r.opt = std::make_unique<AdamW>(std::vector<Tensor>{r.x, r.y}, AdamWOptions{.lr = 0.01, .amsgrad = true});
         r.sched = std::make_unique<OneCycleLR>(*r.opt, std::vector<double>{0.05}, 20);
       }},
      {"rmsprop", [](Run& r) {
         r.opt = std::make_unique<RMSprop>(std::vector<Tensor>{r.x, r.y},
                                           RMSpropOptions{.lr = 0.01, .alpha = 0.9, .momentum = 0.5, .centered = true});
         r.sched = std::make_unique<StepLR>(*r.opt, 2, 0.5);
       }},
      {"adam_groups", [](Run& r) {
         r.opt = std::make_unique<Adam>(std::vector<ParamGroup>{{{r.x}, Hyper{.lr = 0.02, .weight_decay = 0.1}}, {{r.y}, Hyper{.lr = 0.005}}});
         r.sched = std::make_unique<ReduceLROnPlateau>(*r.opt, PlateauOptions{.factor = 0.5, .patience = 1});
       }},
  };
  NamedTensors out;
  for (const auto& [name, make] : configs) {
    Run r;
    r.x = from_vector<double>({1.0, -2.0, 3.0, 0.5, -0.25}).requires_grad_();
    r.y = from_vector<double>({0.7, -0.4, 1.1}).requires_grad_();
    make(r);
    train(r, 6);
    out.emplace_back(name + ".x", r.x.detach().clone());
    out.emplace_back(name + ".y", r.y.detach().clone());
    for (auto& [k, v] : r.opt->state_dict()) out.emplace_back(name + ".optimizer." + k, v.clone());  // live buffers
    for (auto& [k, v] : r.sched->state_dict()) out.emplace_back(name + "." + k, v.clone());
    train(r, 6);
    out.emplace_back(name + ".expected.x", r.x.detach().clone());
    out.emplace_back(name + ".expected.y", r.y.detach().clone());
    std::vector<double> lrs;
    for (auto& g : r.opt->param_groups()) lrs.push_back(g.hyper.lr);
    out.emplace_back(name + ".expected.lr", from_vector<double>(lrs));
  }
  safetensors::save(argv[1], out);
  std::printf("wrote %zu tensors\n", out.size());
}
