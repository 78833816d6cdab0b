// Checkpoints: a run of N steps equals N/2 steps + save + load into freshly built objects + N/2 steps,
// bit for bit on the CPU — model (with dropout and batch norm), AdamW, a one-cycle schedule (lr and beta1),
// the data loader's position and every generator. Plus the Checkpoint container's own errors.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <filesystem>

#include "test_helpers.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {

struct Net : nn::Module {
  Generator dropout_gen;
  std::shared_ptr<nn::Sequential> body;
  explicit Net(uint64_t init_seed) : dropout_gen(99) {
    Generator init(init_seed);
    body = register_module("body", std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
                                       std::make_shared<nn::Linear>(20, 32, true, &init), std::make_shared<nn::BatchNorm1d>(32),
                                       std::make_shared<nn::ReLU>(), std::make_shared<nn::Dropout>(0.3, &dropout_gen),
                                       std::make_shared<nn::Linear>(32, 4, true, &init)}));
  }
  Tensor forward(const Tensor& x) override { return body->forward(x); }
};

data::DatasetPtr dataset() {
  Generator gen(5);
  return std::make_shared<data::TensorDataset>(randn({256, 20}, {}, &gen), (rand({256}, {}, &gen) * 4.0f).to(DType::i64));
}

struct TrainingRun {
  std::shared_ptr<Net> net;
  std::unique_ptr<optim::AdamW> opt;
  std::unique_ptr<optim::OneCycleLR> sched;
  std::unique_ptr<data::DataLoader> loader;
  int64_t step = 0;

  explicit TrainingRun(uint64_t init_seed) : net(std::make_shared<Net>(init_seed)) {
    opt = std::make_unique<optim::AdamW>(net->parameters(), optim::AdamWOptions{.lr = 0.01});
    sched = std::make_unique<optim::OneCycleLR>(*opt, std::vector<double>{0.05}, 40);
    loader = std::make_unique<data::DataLoader>(
        dataset(), data::DataLoaderOptions{.batch_size = 16, .shuffle = true, .num_workers = 2, .seed = 3});
  }
  // Trains until `until` steps are done, across epochs (16 batches each).
  void train(int64_t until) {
    while (step < until) {
      for (auto& batch : *loader) {
        opt->zero_grad();
        nn::functional::cross_entropy(net->forward(batch.input), batch.target).backward();
        opt->step();
        sched->step();
        if (++step == until) break;
      }
    }
  }
  Checkpoint checkpoint() const {
    Checkpoint c;
    c.put("model.", net->state_dict());
    c.put("optimizer.", opt->state_dict());
    c.put("sched.", sched->state_dict());
    c.put_generator("dropout", net->dropout_gen);
    c.put_generator("global", default_generator());
    c.set("loader", loader->state().str());
    c.set("step", std::to_string(step));
    return c;
  }
  void restore(const Checkpoint& c) {
    net->load_state_dict(c.take("model."));
    opt->load_state_dict(c.take("optimizer."));
    sched->load_state_dict(c.take("sched."));
    c.restore_generator("dropout", net->dropout_gen);
    c.restore_generator("global", default_generator());
    loader->load_state(data::LoaderState::parse(c.get("loader")));
    step = std::stoll(c.get("step"));
  }
  std::vector<std::vector<float>> params() const {
    std::vector<std::vector<float>> out;
    for (const auto& [name, t] : net->state_dict()) out.push_back(t.to_vector<float>());
    return out;
  }
};

}  // namespace

TEST(Checkpoint, ResumeEqualsAnUninterruptedRunBitForBit) {
  const fs::path path = fs::temp_directory_path() / ("ember_ckpt_" + std::to_string(::getpid()) + ".safetensors");
  manual_seed(1);
  TrainingRun straight(7);
  straight.train(40);  // 2.5 epochs

  manual_seed(1);
  {
    TrainingRun first(7);
    first.train(20);  // stops mid-epoch (epoch 1, batch 4)
    first.checkpoint().save(path.string());
  }  // everything destroyed, loader threads joined
  manual_seed(12345);  // the checkpoint must restore the global generator, not this
  TrainingRun resumed(999);    // different initial weights: the checkpoint must overwrite them
  resumed.restore(Checkpoint::load(path.string()));
  EXPECT_EQ(resumed.step, 20);
  resumed.train(40);
  EXPECT_EQ(resumed.params(), straight.params());
  EXPECT_EQ(resumed.loader->state(), straight.loader->state());
  fs::remove(path);
}

TEST(Checkpoint, ContainerErrors) {
  Checkpoint c;
  c.put("model.", {{"w", ones({2})}});
  EXPECT_TRUE(test::throws_error([&] { c.put("model.", {{"w", ones({2})}}); }, {"'model.w' is added twice"}));
  EXPECT_TRUE(test::throws_error([&] { c.get("epoch"); }, {"no 'epoch' entry"}));
  c.set("rng.bad", "12");
  Generator g;
  EXPECT_TRUE(test::throws_error([&] { c.restore_generator("bad", g); }, {"'rng.bad' is '12'", "<seed> <offset>"}));
  Generator src(42);
  src.advance(17);
  c.put_generator("ok", src);
  c.restore_generator("ok", g);
  EXPECT_EQ(g.state(), src.state());
  EXPECT_EQ(c.take("model.").size(), 1u);
  EXPECT_TRUE(c.take("optimizer.").empty());
}
