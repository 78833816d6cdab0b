// LibTorch's side: the same models, optimizer, data, batch order and steps as ember_train.cpp (common.h says
// what one step is). LibTorch 1.13's C++ Optimizer::zero_grad() zeroes each gradient in place (no
// set_to_none argument before 2.0): with --zero-grad none (the default, Ember's semantics) this program resets
// every parameter's gradient to an undefined tensor instead, as Python's zero_grad(set_to_none=True) does.
#include <torch/torch.h>

#include "common.h"

int main(int argc, char** argv) {
  const int64_t main_ns = vs::realtime_ns();
  const vs::Options o = vs::parse(argc, argv);
  torch::set_num_threads(o.threads);
  at::globalContext().setFlushDenormal(true);
  torch::manual_seed(0);
  torch::nn::Sequential model;
  if (o.model == "tiny") {
    model = torch::nn::Sequential(torch::nn::Linear(10, 10), torch::nn::ReLU(), torch::nn::Linear(10, 10));
  } else if (o.model == "mlp") {
    model = torch::nn::Sequential(torch::nn::Flatten(), torch::nn::Linear(784, 256), torch::nn::ReLU(),
                                  torch::nn::Linear(256, 128), torch::nn::ReLU(), torch::nn::Linear(128, 10));
  } else {
    auto conv = [](int in, int out) { return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).padding(1)); };
    model = torch::nn::Sequential(conv(1, 32), torch::nn::BatchNorm2d(32), torch::nn::ReLU(), torch::nn::MaxPool2d(2),
                                  conv(32, 64), torch::nn::BatchNorm2d(64), torch::nn::ReLU(), torch::nn::MaxPool2d(2),
                                  torch::nn::Flatten(), torch::nn::Linear(64 * 7 * 7, 128), torch::nn::ReLU(),
                                  torch::nn::Linear(128, 10));
  }
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (o.optimizer == "adam") opt = std::make_unique<torch::optim::Adam>(model->parameters(), torch::optim::AdamOptions(1e-3));
  else opt = std::make_unique<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  std::vector<torch::Tensor> params = model->parameters();
  const auto zero_grad = [&] {
    if (o.zero_grad == "zero") {
      opt->zero_grad();
      return;
    }
    for (torch::Tensor& p : params) p.mutable_grad().reset();
  };

  if (o.model == "tiny") {  // one fixed batch: framework overhead
    const torch::Tensor x = torch::randn({1, 10}), y = torch::zeros({1}, torch::kLong);
    vs::run("libtorch", o, main_ns, vs::realtime_ns(), [&] {
      zero_grad();
      torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
      loss.backward();
      opt->step();
      return loss.item<float>();
    });
    return 0;
  }
  const vs::Dataset data = vs::load_train(o.data);
  vs::Order order(data.n, o.batch, o.seed);
  vs::run("libtorch", o, main_ns, vs::realtime_ns(), [&] {
    torch::Tensor x = torch::empty({o.batch, 1, 28, 28}), y = torch::empty({o.batch}, torch::kLong);
    vs::gather_batch(data, order.next(), o.batch, x.data_ptr<float>(), y.data_ptr<int64_t>());
    zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt->step();
    return loss.item<float>();
  });
}
