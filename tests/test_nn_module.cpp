// nn::Module and the layers: registration and naming, modes, moving, state dicts with their errors, PyTorch's
// default initialisation, the summary table, and small models that overfit a Fashion-MNIST-shaped batch.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include "nn_golden_cases.h"
#include "test_helpers.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "backends/cpu/cpu_backend.h"
#include "nn/layers.h"

using namespace ember;

namespace {

struct Block : nn::Module {
  std::shared_ptr<nn::Linear> fc;
  std::shared_ptr<nn::BatchNorm1d> bn;
  Block() : fc(register_module("fc", std::make_shared<nn::Linear>(4, 3))), bn(register_module("bn", std::make_shared<nn::BatchNorm1d>(3))) {}
  Tensor forward(const Tensor& x) override { return bn->forward(fc->forward(x)); }
};

struct Net : nn::Module {
  std::shared_ptr<Block> block;
  std::shared_ptr<nn::Sequential> head;
  Tensor scale;
  Net()
      : block(register_module("block", std::make_shared<Block>())),
        head(register_module("head", std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
                                         std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(3, 2)}))) {
    scale = register_parameter("scale", ones({1}));
  }
  Tensor forward(const Tensor& x) override { return head->forward(block->forward(x)) * scale; }
};

std::vector<std::string> names(const nn::NamedTensors& list) {
  std::vector<std::string> out;
  for (const auto& [n, t] : list) out.push_back(n);
  return out;
}


}  // namespace

TEST(Module, NamesParametersBuffersAndChildrenInOrder) {
  Net net;
  EXPECT_EQ(names(net.named_parameters()),
            (std::vector<std::string>{"scale", "block.fc.weight", "block.fc.bias", "block.bn.weight", "block.bn.bias",
                                      "head.1.weight", "head.1.bias"}));
  EXPECT_EQ(names(net.named_buffers()),
            (std::vector<std::string>{"block.bn.running_mean", "block.bn.running_var", "block.bn.num_batches_tracked"}));
  EXPECT_EQ(net.children().size(), 2u);
  EXPECT_EQ(net.parameter_count(), 1 + 12 + 3 + 3 + 3 + 6 + 2);
  EXPECT_EQ(net.state_dict().size(), 10u);
  for (const Tensor& p : net.parameters()) EXPECT_TRUE(p.requires_grad());
  EXPECT_TRUE(test::throws_error([&] { net.register_parameter("scale", ones({1})); }, {"'scale' is already registered"}));
  EXPECT_TRUE(test::throws_error([&] { net.register_buffer("a.b", ones({1})); }, {"'a.b'", "no '.'"}));
}

TEST(Module, TrainEvalPropagates) {
  Net net;
  net.eval();
  EXPECT_FALSE(net.block->bn->is_training());
  EXPECT_FALSE((*net.head)[0]->is_training());
  net.train();
  EXPECT_TRUE(net.block->bn->is_training());
}

TEST(Module, ZeroGradAndForwardBackward) {
  Net net;
  const Tensor x = randn({5, 4});
  sum(net.forward(x)).backward();
  for (const Tensor& p : net.parameters()) EXPECT_TRUE(p.grad().defined());
  net.zero_grad(/*set_to_none=*/false);
  for (const Tensor& p : net.parameters()) EXPECT_EQ(sum(abs(p.grad())).item<float>(), 0.0f);
  net.zero_grad();
  for (const Tensor& p : net.parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(Module, ToDTypeAndDeviceKeepHandles) {
  Net net;
  const Tensor w = net.block->fc->weight;  // a handle taken before the move
  const std::vector<float> before = w.to_vector<float>();
  net.to(DType::f64);
  EXPECT_EQ(w.dtype(), DType::f64);
  EXPECT_EQ(net.block->bn->num_batches_tracked.dtype(), DType::i64);  // counters keep their type
  EXPECT_EQ(w.to_vector<float>(), before);
  EXPECT_TRUE(w.requires_grad());
  EXPECT_EQ(net.forward(randn({2, 4}, {.dtype = DType::f64})).dtype(), DType::f64);

  cpu::CpuBackend stand_in;  // serves "cuda" on this GPU-less machine
  set_backend_override(DeviceType::CUDA, &stand_in);
  {
    const Device gpu(DeviceType::CUDA, 0);
    net.to(gpu);
    EXPECT_EQ(w.device(), gpu);
    EXPECT_EQ(net.block->bn->running_mean.device(), gpu);
    EXPECT_TRUE(test::throws_error([&] { net.forward(randn({2, 4}, {.dtype = DType::f64})); }, {"different devices", "cpu", "cuda:0"}));
    net.to(kCPU);
  }
  set_backend_override(DeviceType::CUDA, nullptr);
  EXPECT_TRUE(w.device().is_cpu());
  EXPECT_EQ(w.to_vector<float>(), before);
}

TEST(Module, StateDictRoundTripAndErrors) {
  Net a, b;
  {
    NoGradGuard g;
    a.block->bn->running_mean.fill_(0.25);
  }
  EXPECT_TRUE(b.load_state_dict(a.state_dict()).empty());
  EXPECT_EQ(b.block->fc->weight.to_vector<float>(), a.block->fc->weight.to_vector<float>());
  EXPECT_EQ(b.block->bn->running_mean.to_vector<float>(), a.block->bn->running_mean.to_vector<float>());
  EXPECT_FALSE(b.block->fc->weight.shares_storage(a.block->fc->weight));  // copied, not aliased

  nn::NamedTensors state = a.state_dict();
  state.erase(state.begin() + 1);                          // drop block.fc.weight
  state.emplace_back("block.extra", ones({1}));           // unexpected
  state[0].second = ones({2});                             // scale: wrong shape
  EXPECT_TRUE(test::throws_error([&] { b.load_state_dict(state); },
               {"missing keys: block.fc.weight", "unexpected keys: block.extra", "mis-shaped keys: scale (model [1] f32, given [2] f32)"}));
  state[0].second = ones({1});
  const auto unused = b.load_state_dict(state, /*strict=*/false);
  EXPECT_EQ(unused, (std::vector<std::string>{"block.fc.weight", "block.extra"}));
}

TEST(Layers, PyTorchDefaultInitialisation) {
  Generator gen(3);
  nn::Linear fc(400, 300, true, &gen);
  const double bound = 1.0 / std::sqrt(400.0);
  EXPECT_LE(max(abs(fc.weight)).item<double>(), bound);
  EXPECT_GT(max(abs(fc.weight)).item<double>(), 0.99 * bound);
  EXPECT_NEAR(mean(square(fc.weight)).item<double>(), bound * bound / 3, 0.02 * bound * bound);  // var of U(-b, b)
  EXPECT_LE(max(abs(fc.bias)).item<double>(), bound);
  nn::Conv2d conv(nn::Conv2dOptions(8, 16, 3).padding(1).groups(2), &gen);
  EXPECT_EQ(conv.weight.shape(), Shape({16, 4, 3, 3}));
  EXPECT_LE(max(abs(conv.weight)).item<double>(), 1.0 / std::sqrt(36.0));
  nn::Embedding emb(1000, 20, &gen);
  EXPECT_NEAR(mean(emb.weight).item<double>(), 0.0, 0.02);
  EXPECT_NEAR(mean(square(emb.weight)).item<double>(), 1.0, 0.03);
  nn::BatchNorm2d bn(5);
  EXPECT_EQ(bn.weight.to_vector<float>(), std::vector<float>(5, 1.0f));
  EXPECT_EQ(bn.running_var.to_vector<float>(), std::vector<float>(5, 1.0f));
  // The same generator seed gives the same layer.
  Generator g1(11), g2(11);
  EXPECT_EQ(nn::Linear(3, 2, true, &g1).weight.to_vector<float>(), nn::Linear(3, 2, true, &g2).weight.to_vector<float>());
}

TEST(Layers, ShapesModesAndErrors) {
  auto model = std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 4, 3).padding(1)), std::make_shared<nn::BatchNorm2d>(4), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Dropout>(0.5), std::make_shared<nn::AdaptiveAvgPool2d>(1),
      std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(4, 3), std::make_shared<nn::Softmax>(1)});
  const Tensor y = model->forward(randn({2, 1, 8, 8}));
  EXPECT_EQ(y.shape(), Shape({2, 3}));
  EXPECT_NEAR(sum(y).item<float>(), 2.0f, 1e-5f);
  auto bn = std::dynamic_pointer_cast<nn::BatchNorm2d>((*model)[1]);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  model->eval();
  model->forward(randn({2, 1, 8, 8}));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);  // eval: running stats untouched
  EXPECT_TRUE(test::throws_error([&] { model->forward(randn({2, 3, 8, 8})); }, {"conv2d", "3 channels"}));
  EXPECT_TRUE(test::throws_error([&] { bn->forward(randn({2, 5, 4, 4})); }, {"BatchNorm2d", "5 channels", "built for 4"}));
  nn::LayerNorm ln({6});
  EXPECT_EQ(ln.forward(randn({3, 6})).shape(), Shape({3, 6}));
  nn::Embedding emb(10, 4);
  EXPECT_EQ(emb.forward(from_vector<int64_t>({1, 2, 3, 9}, {2, 2})).shape(), Shape({2, 2, 4}));
  nn::CrossEntropyLoss ce;
  EXPECT_GT(ce.forward(randn({4, 3}), from_vector<int64_t>({0, 1, 2, 0})).item<float>(), 0.0f);
}

TEST(Layers, SummaryTable) {
  nn::Sequential model{std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(784, 256), std::make_shared<nn::ReLU>(),
                       std::make_shared<nn::Linear>(256, 10)};
  const std::string s = nn::summary(model, {64, 1, 28, 28});
  EXPECT_NE(s.find("Linear(in=784, out=256)"), std::string::npos) << s;
  EXPECT_NE(s.find("[64, 256]"), std::string::npos) << s;
  EXPECT_NE(s.find("[64, 10]"), std::string::npos) << s;
  EXPECT_NE(s.find("200960"), std::string::npos) << s;  // 784·256 + 256
  EXPECT_NE(s.find("total parameters: 203530"), std::string::npos) << s;
}

namespace {
// Hand-written gradient descent (heavy-ball momentum when momentum > 0) on a fixed batch; returns the
// final loss.
float overfit(nn::Module& model, const Tensor& x, const Tensor& y, int steps, double lr, double momentum) {
  std::vector<Tensor> velocity;
  for (const Tensor& p : model.parameters()) velocity.push_back(zeros_like(p));
  float loss_value = 0;
  for (int i = 0; i < steps; ++i) {
    model.zero_grad();
    Tensor loss = nn::functional::cross_entropy(model.forward(x), y);
    loss.backward();
    loss_value = loss.item<float>();
    NoGradGuard no_grad;
    std::vector<Tensor> params = model.parameters();
    for (size_t k = 0; k < params.size(); ++k) {
      velocity[k].mul_(momentum).add_(params[k].grad());
      params[k].add_(velocity[k] * static_cast<float>(-lr));
    }
  }
  return loss_value;
}
}  // namespace

TEST(Layers, MlpAndCnnOverfitAFashionMnistShapedBatch) {
  Generator gen(0);
  const Tensor x = randn({256, 1, 28, 28}, {}, &gen);
  const Tensor y = (rand({256}, {}, &gen) * 10.0f).to(DType::i64);
  nn::Sequential mlp{std::make_shared<nn::Flatten>(), std::make_shared<nn::Linear>(784, 256, true, &gen),
                     std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(256, 10, true, &gen)};
  EXPECT_LT(overfit(mlp, x, y, 200, 0.1, 0.0), 0.05f);
  nn::Sequential cnn{std::make_shared<nn::Conv2d>(nn::Conv2dOptions(1, 8, 3).padding(1), &gen),
                     std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2),
                     std::make_shared<nn::Conv2d>(nn::Conv2dOptions::Fields{.in_channels = 8, .out_channels = 16, .padding = 1}, &gen),
                     std::make_shared<nn::ReLU>(), std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Flatten>(),
                     std::make_shared<nn::Linear>(16 * 7 * 7, 10, true, &gen)};
  EXPECT_LT(overfit(cnn, x, y, 200, 0.01, 0.9), 0.05f);
}

TEST(Module, SaveAndLoadWeightsFiles) {
  const std::string path = "/tmp/ember_weights_" + std::to_string(::getpid()) + ".safetensors";
  Net a, b;
  save(a, path, {{"note", "test"}});
  load(b, path);
  EXPECT_EQ(b.block->fc->weight.to_vector<float>(), a.block->fc->weight.to_vector<float>());
  EXPECT_EQ(b.block->bn->running_var.to_vector<float>(), a.block->bn->running_var.to_vector<float>());
  // A file for another model: the error names the file and the keys that do not fit.
  nn::Linear other(4, 3);
  EXPECT_TRUE(test::throws_error([&] { load(other, path); }, {path, "missing keys: weight, bias", "unexpected keys"}));
  nn::Sequential wrong_shape{std::make_shared<nn::Linear>(5, 3)};
  save(wrong_shape, path);
  nn::Sequential model{std::make_shared<nn::Linear>(4, 3)};
  EXPECT_TRUE(test::throws_error([&] { load(model, path); }, {path, "mis-shaped keys: 0.weight (model [3, 4] f32, given [3, 5] f32)"}));
  std::remove(path.c_str());
  EXPECT_TRUE(test::throws_error([&] { load(model, path); }, {"cannot open", path}));
}

// An f64 file into an f32 model: the error says dtype (each tensor's name, the file's dtype and the
// parameter's) and how to convert, not "mis-shaped".
TEST(Module, LoadingAnotherDtypeSaysDtype) {
  const std::string path = "/tmp/ember_weights_dtype_" + std::to_string(::getpid()) + ".safetensors";
  nn::Sequential f64_model{std::make_shared<nn::Linear>(4, 3)};
  f64_model.to(DType::f64);
  save(f64_model, path);
  nn::Sequential model{std::make_shared<nn::Linear>(4, 3)};
  const std::vector<float> before = model.parameters()[0].to_vector<float>();
  EXPECT_TRUE(test::throws_error([&] { load(model, path); },
                                 {path, "dtype mismatch: 0.weight (given f64, the model's parameter is f32)",
                                  "0.bias (given f64", "model.to(DType::f64)", ".to(DType::f32)"}));
  EXPECT_TRUE(test::throws_error([&] { model.load_state_dict(f64_model.state_dict()); }, {"dtype mismatch"}));
  try {
    load(model, path);
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("mis-shaped"), std::string::npos) << e.what();
  }
  EXPECT_EQ(model.parameters()[0].to_vector<float>(), before);  // nothing copied
  model.to(DType::f64);  // the fix the message gives
  load(model, path);
  EXPECT_EQ(model.parameters()[0].to_vector<double>(), f64_model.parameters()[0].to_vector<double>());
  std::remove(path.c_str());
}

// register_buffer(name, t, /*persistent=*/false): listed by buffers(), moved by to(), left out of
// state_dict() and not expected by a strict load_state_dict, as PyTorch's.
struct WithMask : nn::Module {
  Tensor mask, count;
  std::shared_ptr<nn::Linear> fc = register_module("fc", std::make_shared<nn::Linear>(2, 2));
  WithMask() {
    mask = register_buffer("mask", ones({2}), /*persistent=*/false);
    count = register_buffer("count", zeros({1}));
  }
};

TEST(Module, NonPersistentBuffers) {
  WithMask m;
  EXPECT_EQ(m.buffers().size(), 2u);
  std::vector<std::string> names;
  for (const auto& [name, t] : m.state_dict()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc.weight", "fc.bias", "count"}));
  WithMask other;
  EXPECT_TRUE(other.load_state_dict(m.state_dict(), /*strict=*/true).empty());
  // a state that has the key anyway is refused in strict mode (it is not the model's state)
  NamedTensors with_mask = m.state_dict();
  with_mask.emplace_back("mask", ones({2}));
  EXPECT_TRUE(test::throws_error([&] { other.load_state_dict(with_mask); }, {"unexpected keys: mask"}));
  // nested: the parent's state_dict leaves the child's non-persistent buffer out too
  nn::Sequential seq{std::make_shared<WithMask>()};
  for (const auto& [name, t] : seq.state_dict()) EXPECT_NE(name, "0.mask");
  EXPECT_EQ(seq.named_buffers().size(), 2u);
  m.to(DType::f64);
  EXPECT_EQ(m.mask.dtype(), DType::f64);  // moved/converted with the module
}

// ModuleList: children "0", "1", ... so state_dict keys match PyTorch's nn.ModuleList.
struct Tower : nn::Module {
  std::shared_ptr<nn::ModuleList> layers = register_module("layers", std::make_shared<nn::ModuleList>());
  Tower() {
    layers->push_back(std::make_shared<nn::Linear>(4, 8));
    layers->append(std::make_shared<nn::ReLU>());
    layers->push_back(std::make_shared<nn::Linear>(8, 2));
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = x;
    for (const auto& layer : *layers) y = layer->forward(y);
    return y;
  }
};

TEST(Module, ModuleList) {
  Tower t;
  EXPECT_EQ(t.layers->size(), 3u);
  std::vector<std::string> names;
  for (const auto& [name, p] : t.state_dict()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias"}));
  EXPECT_EQ((*t.layers)[1]->type_name(), "ReLU");
  EXPECT_EQ(t.layers->at<nn::Linear>(2)->out_features, 2);
  EXPECT_EQ(t.layers->at<nn::Linear>(1), nullptr);
  EXPECT_EQ(t.forward(randn({5, 4})).shape(), Shape({5, 2}));
  EXPECT_EQ(t.parameters().size(), 4u);
  t.eval();
  EXPECT_FALSE((*t.layers)[0]->is_training());
  EXPECT_TRUE(test::throws_error([&] { (*t.layers)[3]; }, {"ModuleList: index 3 is out of range for a list of 3"}));
  nn::ModuleList braced{std::make_shared<nn::Linear>(1, 1), std::make_shared<nn::Tanh>()};
  EXPECT_EQ(braced.named_children()[1].first, "1");
}

TEST(Module, ModuleDict) {
  nn::ModuleDict heads{{"cls", std::make_shared<nn::Linear>(4, 3)}, {"box", std::make_shared<nn::Linear>(4, 2)}};
  heads.insert("act", std::make_shared<nn::ReLU>());
  EXPECT_EQ(heads.keys(), (std::vector<std::string>{"cls", "box", "act"}));  // insertion order, not sorted
  EXPECT_EQ(heads.size(), 3u);
  EXPECT_TRUE(heads.contains("box"));
  EXPECT_EQ(heads.at<nn::Linear>("box")->out_features, 2);
  EXPECT_EQ(heads["cls"]->forward(randn({2, 4})).shape(), Shape({2, 3}));
  std::vector<std::string> names;
  for (const auto& [name, p] : heads.state_dict()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"cls.weight", "cls.bias", "box.weight", "box.bias"}));
  std::vector<std::string> iterated;
  for (const auto& [name, module] : heads) iterated.push_back(name + ":" + module->type_name());
  EXPECT_EQ(iterated, (std::vector<std::string>{"cls:Linear", "box:Linear", "act:ReLU"}));
  EXPECT_TRUE(test::throws_error([&] { heads["bbox"]; }, {"no module named 'bbox'", "the keys are: cls, box, act"}));
  EXPECT_TRUE(test::throws_error([&] { heads.insert("cls", std::make_shared<nn::ReLU>()); }, {"'cls' is already present"}));
  EXPECT_TRUE(test::throws_error([&] { heads.insert("a.b", std::make_shared<nn::ReLU>()); }, {"'a.b'", "no '.'"}));
}

// Conv1d: PyTorch's parameter shapes [O, C/groups, K] and init bound 1/√(C/groups · K); [N, C, L] and [C, L].
TEST(Layers, Conv1d) {
  Generator gen(3);
  nn::Conv1d conv(nn::Conv1dOptions(4, 6, 5).stride(2).padding(2).groups(2), &gen);
  EXPECT_EQ(conv.weight.shape(), Shape({6, 2, 5}));
  EXPECT_EQ(conv.bias.shape(), Shape({6}));
  const double bound = 1.0 / std::sqrt(2.0 * 5.0);
  for (const Tensor& p : {conv.weight, conv.bias})
    for (float v : p.to_vector<float>()) EXPECT_LE(std::abs(v), bound);
  EXPECT_GT(max(abs(conv.weight)).item<float>(), 0.8 * bound);  // spread over the range, not all tiny
  EXPECT_EQ(conv.forward(randn({3, 4, 11})).shape(), Shape({3, 6, 6}));
  EXPECT_EQ(conv.forward(randn({4, 11})).shape(), Shape({6, 6}));
  EXPECT_EQ(conv.describe(), "Conv1d(4, 6, kernel=5, stride=2, padding=2, groups=2)");
  nn::Conv1d plain(2, 3, 3);
  EXPECT_EQ(plain.weight.shape(), Shape({3, 2, 3}));
  nn::Conv1d designated({.in_channels = 2, .out_channels = 3, .kernel_size = 3, .bias = false});
  EXPECT_FALSE(designated.bias.defined());
  EXPECT_TRUE(test::throws_error([] { nn::Conv1d(nn::Conv1dOptions(4, 6, 3).groups(4)); }, {"Conv1d", "multiples of groups (4)"}));
  EXPECT_TRUE(test::throws_error([] { nn::Conv1d(nn::Conv1dOptions()); }, {"Conv1d: in_channels (0)", "Conv1dOptions(in_channels"}));
}

// The option forms a LibTorch user writes.
TEST(Layers, LibTorchOptionForms) {
  nn::Conv2d built(nn::Conv2dOptions(1, 32, 3).stride(1).padding(1));
  nn::Conv2d designated({.in_channels = 1, .out_channels = 32, .kernel_size = 3, .padding = 1});
  nn::Conv2d short_form(1, 32, 3);
  EXPECT_EQ(built.weight.shape(), Shape({32, 1, 3, 3}));
  EXPECT_EQ(built.describe(), designated.describe());
  EXPECT_EQ(short_form.describe(), "Conv2d(1, 32, kernel=3, stride=1, padding=0)");
  EXPECT_EQ(built.forward(randn({2, 1, 8, 8})).shape(), Shape({2, 32, 8, 8}));
  nn::MaxPool2d pool(2);
  nn::AvgPool2d avg(nn::AvgPool2dOptions(3).stride(2).ceil_mode(true));
  nn::MaxPool2d pool_designated({.kernel_size = 3, .stride = 2, .padding = 1});
  EXPECT_EQ(pool.describe(), "MaxPool2d(kernel=2, stride=2, padding=0)");
  EXPECT_EQ(pool.forward(randn({1, 2, 8, 8})).shape(), Shape({1, 2, 4, 4}));
  EXPECT_EQ(avg.forward(randn({1, 2, 7, 7})).shape(), Shape({1, 2, 3, 3}));
  EXPECT_EQ(pool_designated.describe(), "MaxPool2d(kernel=3, stride=2, padding=1)");
}

// Every layer with parameters runs after .to(DType::f64), forward and backward; an f32 input then gets an
// error that names the layer and both ways to convert (never an op inside the layer, as
// "lstm_sequence: w_hh must be f64" once did).
TEST(Layers, RunInF64AndNameTheLayerOnADtypeMismatch) {
  using namespace nn;
  using ModulePtr = std::shared_ptr<Module>;
  struct Case {
    ModulePtr module;
    Shape input;
    std::string name;
  };
  Generator gen(3);
  std::vector<Case> cases = {
      {std::make_shared<Linear>(4, 3, true, &gen), {2, 4}, "Linear"},
      {std::make_shared<Conv1d>(2, 3, 3), {2, 2, 6}, "Conv1d"},
      {std::make_shared<Conv2d>(2, 3, 3, &gen), {1, 2, 5, 5}, "Conv2d"},
      {std::make_shared<ConvTranspose2d>(2, 3, 3, &gen), {1, 2, 4, 4}, "ConvTranspose2d"},
      {std::make_shared<BatchNorm2d>(2), {3, 2, 3, 3}, "BatchNorm2d"},
      {std::make_shared<LayerNorm>(Shape{4}), {2, 4}, "LayerNorm"},
      {std::make_shared<RMSNorm>(Shape{4}), {2, 4}, "RMSNorm"},
      {std::make_shared<SwiGLU>(SwiGLUOptions{.dim = 4, .hidden = 6}, &gen), {2, 3, 4}, "SwiGLU"},
      {std::make_shared<GroupNorm>(2, 4), {2, 4, 3}, "GroupNorm"},
      {std::make_shared<InstanceNorm2d>(2, 1e-5, 0.1, true), {2, 2, 3, 3}, "InstanceNorm2d"},
      {std::make_shared<LSTM>(LSTMOptions(4, 3).num_layers(2), &gen), {2, 5, 4}, "LSTM"},
      {std::make_shared<GRU>(GRUOptions(4, 3), &gen), {5, 2, 4}, "GRU"},
      {std::make_shared<LSTMCell>(4, 3, true, &gen), {2, 4}, "LSTMCell"},
      {std::make_shared<GRUCell>(4, 3, true, &gen), {2, 4}, "GRUCell"},
      {std::make_shared<MultiheadAttention>(4, 2, &gen), {3, 2, 4}, "MultiheadAttention"},
      {std::make_shared<TransformerEncoderLayer>(
           TransformerEncoderLayerOptions{.d_model = 4, .nhead = 2, .dim_feedforward = 8, .dropout = 0.0}, &gen),
       {2, 3, 4}, "MultiheadAttention"},  // its first layer is the one that sees the input
      {std::make_shared<LearnedPositionalEmbedding>(8, 4, &gen), {2, 3, 4}, "LearnedPositionalEmbedding"},
  };
  for (Case& c : cases) {
    SCOPED_TRACE(c.name);
    c.module->to(DType::f64);
    const Tensor x = randn(c.input, {.dtype = DType::f64}, &gen).requires_grad_();
    const Tensor y = c.module->forward(x);
    EXPECT_EQ(y.dtype(), DType::f64);
    y.sum().backward();
    ASSERT_TRUE(x.grad().defined());
    EXPECT_EQ(x.grad().dtype(), DType::f64);
    for (const Tensor& p : c.module->parameters()) EXPECT_EQ(p.dtype(), DType::f64);
    EXPECT_TRUE(test::throws_error([&] { c.module->forward(randn(c.input, {}, &gen)); },
                                   {c.name + ": the input is f32 but the layer's parameters are f64",
                                    "convert the input with .to(DType::f64) or the layer with .to(DType::f32)"}));
  }
}

// --- language-model layers (issue 31) ---------------------------------------------------------------------

// RMSNorm: weight = 1 of normalized_shape (the only parameter, "weight"), the three ways of writing its
// options, eps none (the dtype's machine epsilon) or given, and its errors.
TEST(Layers, RMSNorm) {
  nn::RMSNorm a(Shape{6});
  EXPECT_EQ(names(a.named_parameters()), std::vector<std::string>{"weight"});
  EXPECT_EQ(a.weight.shape(), Shape({6}));
  EXPECT_EQ(a.weight.to_vector<float>(), std::vector<float>(6, 1.0f));
  EXPECT_EQ(a.describe(), "RMSNorm([6])");
  Generator gen(4);
  const Tensor x = randn({4, 6}, {}, &gen);
  a.weight.detach().copy_(randn({6}, {}, &gen));
  EXPECT_EQ(a.forward(x).to_vector<float>(), nn::functional::rms_norm(x, {6}, a.weight).to_vector<float>());

  const nn::RMSNorm b(nn::RMSNormOptions({2, 3}).eps(1e-3).elementwise_affine(false));
  EXPECT_TRUE(b.parameters().empty());
  EXPECT_EQ(b.describe(), "RMSNorm([2, 3], eps=0.001, elementwise_affine=false)");
  nn::RMSNorm c({.normalized_shape = {2, 3}, .eps = 1e-3, .elementwise_affine = false});
  const Tensor x3 = randn({4, 2, 3}, {}, &gen);
  EXPECT_EQ(c.forward(x3).to_vector<float>(), nn::functional::rms_norm(x3, {2, 3}, {}, 1e-3).to_vector<float>());
  EXPECT_EQ(nn::RMSNorm(Shape{3}, 0.5, false).options.eps(), std::optional<double>(0.5));

  EXPECT_TRUE(test::throws_error([&] { a.forward(randn({4, 5})); },
                                 {"rms_norm: normalized_shape [6] does not match the trailing dims of the input [4, 5]"}));
  EXPECT_TRUE(test::throws_error([] { nn::RMSNorm(Shape{}); }, {"RMSNorm: normalized_shape must name at least one dim"}));
  EXPECT_TRUE(test::throws_error([] { nn::RMSNorm(Shape{3}, -1.0); }, {"RMSNorm: eps must be >= 0, got -1"}));
}

// SwiGLU against PyTorch (tools/make_nn_golden.py's case swiglu: dim 6, hidden 10, f64): the golden's weights
// loaded by the layer's state-dict names (Hugging Face's LlamaMLP's), then the output and the gradients of
// the input and of the three weights.
TEST(Layers, SwiGLUMatchesPyTorch) {
  using test::nn_golden::get;
  nn::SwiGLU m({.dim = 6, .hidden = 10});
  EXPECT_EQ(names(m.named_parameters()),
            (std::vector<std::string>{"gate_proj.weight", "up_proj.weight", "down_proj.weight"}));
  EXPECT_EQ(m.gate_proj->weight.shape(), Shape({10, 6}));
  EXPECT_EQ(m.down_proj->weight.shape(), Shape({6, 10}));
  EXPECT_EQ(m.describe(), "SwiGLU(dim=6, hidden=10)");
  m.to(DType::f64);
  m.load_state_dict({{"gate_proj.weight", get("swiglu.gate")}, {"up_proj.weight", get("swiglu.up")},
                     {"down_proj.weight", get("swiglu.down")}});
  const Tensor x = get("swiglu.x").clone().requires_grad_();
  const Tensor y = m.forward(x);
  test::nn_golden::expect_close(y, get("swiglu.y"), "output");
  sum(y * get("swiglu.r")).backward();
  test::nn_golden::expect_close(x.grad(), get("swiglu.gx"), "input gradient", 1e-9);
  test::nn_golden::expect_close(m.gate_proj->weight.grad(), get("swiglu.ggate"), "gate_proj gradient", 1e-9);
  test::nn_golden::expect_close(m.up_proj->weight.grad(), get("swiglu.gup"), "up_proj gradient", 1e-9);
  test::nn_golden::expect_close(m.down_proj->weight.grad(), get("swiglu.gdown"), "down_proj gradient", 1e-9);

  const nn::SwiGLU biased({.dim = 4, .hidden = 3, .bias = true});
  EXPECT_EQ(biased.named_parameters().size(), 6u);
  EXPECT_EQ(biased.describe(), "SwiGLU(dim=4, hidden=3, bias=True)");
  EXPECT_TRUE(test::throws_error([&] { m.forward(zeros({2, 5}, {.dtype = DType::f64})); },
                                 {"SwiGLU: expected input [*, 6] (the layer's dim), got shape [2, 5]"}));
  EXPECT_TRUE(test::throws_error([] { nn::SwiGLU({.dim = 4}); }, {"SwiGLU: dim (4) and hidden (0) must be positive"}));
}
