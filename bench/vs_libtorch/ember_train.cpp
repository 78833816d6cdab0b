// Ember's side: trains the chosen model on fixed random Fashion-MNIST-shaped batches and prints one JSON
// line (bench/vs_libtorch/common.h). EMBER_NUM_THREADS comes from --threads.
#include <ember/ember.h>

#include <cstdlib>

#include "common.h"

using namespace ember;

int main(int argc, char** argv) {
  const auto process_start = vs::Clock::now();
  const vs::Options o = vs::parse(argc, argv);
  setenv("EMBER_NUM_THREADS", std::to_string(o.threads).c_str(), 1);  // read once, at the first op
  Generator gen(0);
  std::shared_ptr<nn::Sequential> model;
  Tensor x, y;
  if (o.model == "tiny") {
    model = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
        std::make_shared<nn::Linear>(10, 10, true, &gen), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(10, 10, true, &gen)});
    x = randn({1, 10}, {}, &gen);
    y = zeros({1}, {.dtype = DType::i64});
  } else {
    if (o.model == "mlp") {
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
    x = rand({o.batch, 1, 28, 28}, {}, &gen);
    y = (rand({o.batch}, {}, &gen) * 10.0f).to(DType::i64);
  }
  std::unique_ptr<optim::Optimizer> opt;
  if (o.optimizer == "adam") opt = std::make_unique<optim::Adam>(model->parameters(), optim::AdamOptions{.lr = 1e-3});
  else opt = std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions{.lr = 0.01, .momentum = 0.9});
  vs::run("ember", o, process_start, [&] {
    opt->zero_grad();
    nn::functional::cross_entropy(model->forward(x), y).backward();
    opt->step();
  });
}
