#include "nn/resnet.h"

#include <sstream>

#include "nn/init.h"

namespace ember::nn {
namespace {

// torchvision's conv3x3 / conv1x1: no bias, padding 1 / 0. Init as ResNet.__init__ re-initialises every conv.
std::shared_ptr<Conv2d> conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, Generator* gen) {
  auto c = std::make_shared<Conv2d>(
      Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false), gen);
  init::kaiming_normal_(c->weight, 0, init::FanMode::fan_out, init::Nonlinearity::relu, gen);
  return c;
}

Tensor shortcut(const std::shared_ptr<Sequential>& downsample, const Tensor& x) {
  return downsample ? downsample->forward(x) : x;
}

std::string block_describe(const char* name, const Conv2d& first, const Conv2d& last, int64_t stride,
                           bool downsample) {
  std::ostringstream s;
  s << name << "(in=" << first.options.in_channels() << ", out=" << last.options.out_channels() << ", stride=" << stride
    << (downsample ? ", downsample" : "") << ")";
  return s.str();
}

// torchvision's ResNet._make_layer: the first block takes the stride and, when the stride or the channels
// change, a downsample shortcut (1x1 strided conv + batch norm); `inplanes` follows the channels.
template <typename Block>
std::shared_ptr<Sequential> make_layer(int64_t& inplanes, int64_t planes, int64_t blocks, int64_t stride,
                                       Generator* gen) {
  const int64_t out = planes * Block::expansion;
  std::shared_ptr<Sequential> downsample;
  if (stride != 1 || inplanes != out)
    downsample = std::make_shared<Sequential>(
        std::initializer_list<std::shared_ptr<Module>>{conv(inplanes, out, 1, stride, gen), std::make_shared<BatchNorm2d>(out)});
  auto layer = std::make_shared<Sequential>();
  layer->push_back(std::make_shared<Block>(inplanes, planes, stride, downsample, gen));
  inplanes = out;
  for (int64_t i = 1; i < blocks; ++i) layer->push_back(std::make_shared<Block>(inplanes, planes, 1, nullptr, gen));
  return layer;
}

}  // namespace

ResNetOptions resnet_options(int64_t depth) {
  switch (depth) {
    case 18: return {.block = ResNetBlock::basic, .layers = {2, 2, 2, 2}};
    case 34: return {.block = ResNetBlock::basic, .layers = {3, 4, 6, 3}};
    case 50: return {.block = ResNetBlock::bottleneck, .layers = {3, 4, 6, 3}};
    case 101: return {.block = ResNetBlock::bottleneck, .layers = {3, 4, 23, 3}};
    case 152: return {.block = ResNetBlock::bottleneck, .layers = {3, 8, 36, 3}};
    default: break;
  }
  throw Error("resnet_options: depth " + std::to_string(depth) + " is not one of torchvision's: 18, 34, 50, 101, 152");
}

// --- blocks ---------------------------------------------------------------------------------------------

BasicBlock::BasicBlock(int64_t inplanes, int64_t planes, int64_t stride, std::shared_ptr<Sequential> ds, Generator* gen) {
  conv1 = register_module("conv1", conv(inplanes, planes, 3, stride, gen));
  bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(planes));
  relu = register_module("relu", std::make_shared<ReLU>());
  conv2 = register_module("conv2", conv(planes, planes, 3, 1, gen));
  bn2 = register_module("bn2", std::make_shared<BatchNorm2d>(planes));
  if (ds) downsample = register_module("downsample", std::move(ds));
}

Tensor BasicBlock::forward(const Tensor& x) {
  const Tensor out = relu->forward(bn1->forward(conv1->forward(x)));
  return relu->forward(bn2->forward(conv2->forward(out)) + shortcut(downsample, x));
}

std::string BasicBlock::describe() const {
  return block_describe("BasicBlock", *conv1, *conv2, conv1->options.stride()[0], downsample != nullptr);
}

Bottleneck::Bottleneck(int64_t inplanes, int64_t planes, int64_t stride, std::shared_ptr<Sequential> ds, Generator* gen) {
  conv1 = register_module("conv1", conv(inplanes, planes, 1, 1, gen));
  bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(planes));
  conv2 = register_module("conv2", conv(planes, planes, 3, stride, gen));
  bn2 = register_module("bn2", std::make_shared<BatchNorm2d>(planes));
  conv3 = register_module("conv3", conv(planes, planes * expansion, 1, 1, gen));
  bn3 = register_module("bn3", std::make_shared<BatchNorm2d>(planes * expansion));
  relu = register_module("relu", std::make_shared<ReLU>());
  if (ds) downsample = register_module("downsample", std::move(ds));
}

Tensor Bottleneck::forward(const Tensor& x) {
  Tensor out = relu->forward(bn1->forward(conv1->forward(x)));
  out = relu->forward(bn2->forward(conv2->forward(out)));
  return relu->forward(bn3->forward(conv3->forward(out)) + shortcut(downsample, x));
}

std::string Bottleneck::describe() const {
  return block_describe("Bottleneck", *conv1, *conv3, conv2->options.stride()[0], downsample != nullptr);
}

// --- ResNet ---------------------------------------------------------------------------------------------

ResNet::ResNet(const ResNetOptions& o, Generator* gen) : options(o) {
  EMBER_CHECK(o.layers.size() == 4, "ResNet: layers needs the blocks of the 4 stages (layer1..layer4), got ",
              o.layers.size(), " values");
  for (const int64_t n : o.layers)
    EMBER_CHECK(n > 0, "ResNet: every stage needs at least one block, got layers [", o.layers[0], ", ", o.layers[1],
                ", ", o.layers[2], ", ", o.layers[3], "]");
  EMBER_CHECK(o.num_classes > 0 && o.in_channels > 0 && o.width > 0, "ResNet: num_classes (", o.num_classes,
              "), in_channels (", o.in_channels, ") and width (", o.width, ") must be positive");
  const bool imagenet = o.stem == ResNetStem::imagenet;
  int64_t inplanes = o.width;
  conv1 = register_module("conv1", conv(o.in_channels, inplanes, imagenet ? 7 : 3, imagenet ? 2 : 1, gen));
  bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(inplanes));
  relu = register_module("relu", std::make_shared<ReLU>());
  if (imagenet) maxpool = register_module("maxpool", std::make_shared<MaxPool2d>(MaxPool2dOptions(3).stride(2).padding(1)));
  std::shared_ptr<Sequential>* layers[] = {&layer1, &layer2, &layer3, &layer4};
  for (size_t i = 0; i < 4; ++i) {
    const int64_t planes = o.width << i, stride = i == 0 ? 1 : 2;
    *layers[i] = register_module("layer" + std::to_string(i + 1),
                                 o.block == ResNetBlock::basic
                                     ? make_layer<BasicBlock>(inplanes, planes, o.layers[i], stride, gen)
                                     : make_layer<Bottleneck>(inplanes, planes, o.layers[i], stride, gen));
  }
  avgpool = register_module("avgpool", std::make_shared<AdaptiveAvgPool2d>(1));
  fc = register_module("fc", std::make_shared<Linear>(inplanes, o.num_classes, true, gen));
  if (o.zero_init_residual)
    for (auto* layer : layers)
      for (const auto& [name, block] : (*layer)->named_children()) {
        if (auto* b = dynamic_cast<BasicBlock*>(block.get())) init::zeros_(b->bn2->weight);
        if (auto* b = dynamic_cast<Bottleneck*>(block.get())) init::zeros_(b->bn3->weight);
      }
}

Tensor ResNet::forward(const Tensor& x) {
  check_input_dtype(x, conv1->weight);
  EMBER_CHECK(x.dim() == 4 && x.size(1) == options.in_channels, "ResNet: expected images [N, ", options.in_channels,
              ", H, W], got shape ", x.shape());
  Tensor y = relu->forward(bn1->forward(conv1->forward(x)));
  if (maxpool) y = maxpool->forward(y);
  for (const auto* layer : {&layer1, &layer2, &layer3, &layer4}) y = (*layer)->forward(y);
  return fc->forward(avgpool->forward(y).flatten(1));
}

std::string ResNet::describe() const {
  std::ostringstream s;
  s << "ResNet(" << (options.block == ResNetBlock::basic ? "BasicBlock" : "Bottleneck") << ", layers=[" << options.layers[0]
    << ", " << options.layers[1] << ", " << options.layers[2] << ", " << options.layers[3] << "], width=" << options.width
    << ", stem=" << (options.stem == ResNetStem::imagenet ? "imagenet" : "small") << ", in_channels=" << options.in_channels
    << ", num_classes=" << options.num_classes << ")";
  return s.str();
}

namespace {
std::shared_ptr<ResNet> torchvision_resnet(int64_t depth, int64_t num_classes, int64_t in_channels, Generator* gen) {
  ResNetOptions o = resnet_options(depth);
  o.num_classes = num_classes;
  o.in_channels = in_channels;
  return std::make_shared<ResNet>(o, gen);
}
}  // namespace

std::shared_ptr<ResNet> resnet18(int64_t num_classes, int64_t in_channels, Generator* gen) {
  return torchvision_resnet(18, num_classes, in_channels, gen);
}
std::shared_ptr<ResNet> resnet34(int64_t num_classes, int64_t in_channels, Generator* gen) {
  return torchvision_resnet(34, num_classes, in_channels, gen);
}
std::shared_ptr<ResNet> resnet50(int64_t num_classes, int64_t in_channels, Generator* gen) {
  return torchvision_resnet(50, num_classes, in_channels, gen);
}

}  // namespace ember::nn
