// LibTorch's side: the same models, optimizer, batch shapes and steps as ember_train.cpp.
#include <torch/torch.h>

#include "common.h"

int main(int argc, char** argv) {
  const auto process_start = vs::Clock::now();
  const vs::Options o = vs::parse(argc, argv);
  torch::set_num_threads(o.threads);
  at::globalContext().setFlushDenormal(true);
  torch::manual_seed(0);
  torch::nn::Sequential model;
  torch::Tensor x, y;
  if (o.model == "tiny") {
    model = torch::nn::Sequential(torch::nn::Linear(10, 10), torch::nn::ReLU(), torch::nn::Linear(10, 10));
    x = torch::randn({1, 10});
    y = torch::zeros({1}, torch::kLong);
  } else {
    if (o.model == "mlp") {
      model = torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Linear(784, 256), torch::nn::ReLU(),
                                    torch::nn::Linear(256, 128), torch::nn::ReLU(), torch::nn::Linear(128, 10));
    } else {
      auto conv = [](int in, int out) { return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).padding(1)); };
      model = torch::nn::Sequential(conv(1, 32), torch::nn::BatchNorm2d(32), torch::nn::ReLU(), torch::nn::MaxPool2d(2),
                                    conv(32, 64), torch::nn::BatchNorm2d(64), torch::nn::ReLU(), torch::nn::MaxPool2d(2),
                                    torch::nn::Flatten(), torch::nn::Linear(64 * 7 * 7, 128), torch::nn::ReLU(),
                                    torch::nn::Linear(128, 10));
    }
    x = torch::rand({o.batch, 1, 28, 28});
    y = (torch::rand({o.batch}) * 10).to(torch::kLong);
  }
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (o.optimizer == "adam") opt = std::make_unique<torch::optim::Adam>(model->parameters(), torch::optim::AdamOptions(1e-3));
  else opt = std::make_unique<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  vs::run("libtorch", o, process_start, [&] {
    opt->zero_grad();
    torch::nn::functional::cross_entropy(model->forward(x), y).backward();
    opt->step();
  });
}
