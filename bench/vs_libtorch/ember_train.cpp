// Ember's side: trains the chosen model on real Fashion-MNIST batches (bench/vs_libtorch/common.h says what
// one step is, the same on both sides) and prints one JSON line. EMBER_NUM_THREADS comes from --threads.
#include <ember/ember.h>

#include <cstdlib>

#include "common.h"

using namespace ember;

int main(int argc, char** argv) {
  const int64_t main_ns = vs::realtime_ns();
  const vs::Options o = vs::parse(argc, argv);
  setenv("EMBER_NUM_THREADS", std::to_string(o.threads).c_str(), 1);  // read once, at the first op
  Generator gen(0);
  std::shared_ptr<nn::Sequential> model;
  if (o.model == "tiny") {
    model = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(10, 10, true, &gen), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(10, 10, true, &gen)});
  } else if (o.model == "mlp") {
    model = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(784, 256, true, &gen), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::Linear>(256, 128, true, &gen), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::Linear>(128, 10, true, &gen)});
  } else {  // cnn: conv 32 + BN + ReLU + pool, conv 64 + BN + ReLU + pool, linear 128, linear 10
    const auto conv = [&](int64_t in, int64_t out) {  // as torch_train.cpp writes it
      return std::make_shared<nn::Conv2d>(nn::Conv2dOptions(in, out, 3).padding(1), &gen);
    };
    model = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        conv(1, 32), std::make_shared<nn::BatchNorm2d>(32), std::make_shared<nn::ReLU>(),
        std::make_shared<nn::MaxPool2d>(2), conv(32, 64),
        std::make_shared<nn::BatchNorm2d>(64), std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
        std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(64 * 7 * 7, 128, true, &gen),
        std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(128, 10, true, &gen)});
  }
  std::unique_ptr<optim::Optimizer> opt;
  if (o.optimizer == "adam") opt = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions{.lr = 1e-3});
  else opt = std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions{.lr = 0.01, .momentum = 0.9});
  const bool set_to_none = o.zero_grad == "none";

  if (o.model == "tiny") {  // one fixed batch: framework overhead
    const Tensor x = randn({1, 10}, {}, &gen), y = zeros({1}, {.dtype = DType::i64});
    vs::run("ember", o, main_ns, vs::realtime_ns(), [&] {
      opt->zero_grad(set_to_none);
      Tensor loss = nn::functional::cross_entropy(model->forward(x), y);
      loss.backward();
      opt->step();
      return loss.item<float>();
    });
    return 0;
  }
  const vs::Dataset data = vs::load_train(o.data);
  vs::Order order(data.n, o.batch, o.seed);
  vs::run("ember", o, main_ns, vs::realtime_ns(), [&] {
    Tensor x = empty({o.batch, 1, 28, 28}), y = empty({o.batch}, {.dtype = DType::i64});
    vs::gather_batch(data, order.next(), o.batch, x.data<float>(), y.data<int64_t>());
    opt->zero_grad(set_to_none);
    Tensor loss = nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt->step();
    return loss.item<float>();
  });
}
