// A complete training program against the C++ API: an MLP on Fashion-MNIST (Debian's dataset-fashion-mnist),
// Adam, a test-set evaluation after every epoch, and the weights saved as safetensors for PyTorch.
//
//   ./build/examples/train_fashion_mnist [epochs=5] [device=auto] [out=fashion_mlp.safetensors]
#include <ember/ember.h>

#include <chrono>
#include <cstdio>
#include <string>

using namespace ember;

struct Net : nn::Module {
  std::shared_ptr<nn::Linear> fc1, fc2, fc3;
  Net()
      : fc1(register_module("fc1", std::make_shared<nn::Linear>(784, 256))),
        fc2(register_module("fc2", std::make_shared<nn::Linear>(256, 128))),
        fc3(register_module("fc3", std::make_shared<nn::Linear>(128, 10))) {}
  Tensor forward(const Tensor& x) override {
    return fc3->forward(relu(fc2->forward(relu(fc1->forward(x.flatten(1))))));
  }
};

// Test loss and accuracy, without recording a graph.
std::pair<double, double> evaluate(Net& net, data::DataLoader& loader, Device device) {
  NoGradGuard no_grad;
  net.eval();
  double loss = 0, correct = 0, seen = 0;
  for (auto& batch : loader) {
    const Tensor logits = net.forward(batch.input.to(device));
    const Tensor target = batch.target.to(device);
    loss += nn::functional::cross_entropy(logits, target, {.reduction = nn::functional::Reduction::sum}).item<double>();
    correct += sum(eq(argmax(logits, 1), target)).item<double>();
    seen += static_cast<double>(target.numel());
  }
  net.train();
  return {loss / seen, correct / seen};
}

int main(int argc, char** argv) try {
  const int epochs = argc > 1 ? std::stoi(argv[1]) : 5;
  const Device device = Device::parse(argc > 2 ? argv[2] : "auto");  // cuda if usable, else cpu (logged)
  const std::string out = argc > 3 ? argv[3] : "fashion_mlp.safetensors";

  manual_seed(0);  // the initial weights
  auto net = std::make_shared<Net>();
  net->to(device);
  data::DataLoader train(data::fashion_mnist(data::Split::Train),
                         {.batch_size = 64, .shuffle = true, .num_workers = 2, .seed = 0});
  data::DataLoader test(data::fashion_mnist(data::Split::Test), {.batch_size = 1000});
  optim::Adam opt(net->parameters(), {.lr = 1e-3});

  for (int epoch = 1; epoch <= epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    double loss_sum = 0;
    int64_t steps = 0;
    for (auto& batch : train) {
      opt.zero_grad();
      Tensor loss = nn::functional::cross_entropy(net->forward(batch.input.to(device)), batch.target.to(device));
      loss.backward();
      opt.step();
      loss_sum += loss.item<double>();
      ++steps;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const auto [test_loss, test_acc] = evaluate(*net, test, device);
    std::printf("epoch %d: train loss %.4f, test loss %.4f, test accuracy %.2f%%, %.0f samples/s\n", epoch,
                loss_sum / steps, test_loss, 100 * test_acc, steps * 64 / seconds);
  }
  save(*net, out, {{"model", "fashion_mlp 784-256-128-10"}});
  std::printf("saved %s (load it in Python with safetensors.torch.load_file)\n", out.c_str());
  return 0;
} catch (const Error& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
