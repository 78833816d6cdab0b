#pragma once
// Residual networks as torchvision 0.14's torchvision.models.resnet (He et al. 2015, "ResNet v1.5": a
// Bottleneck strides in its 3x3 conv2), with its module names, so state_dict files load into torchvision's
// models strictly and back: conv1.weight, bn1.running_mean, layer1.0.conv1.weight, layer2.0.downsample.0.weight,
// layer2.0.downsample.1.running_var, fc.weight, fc.bias. Its init: every conv kaiming_normal_(fan_out, relu),
// every batch norm weight 1 and bias 0, the fc Linear's default; zero_init_residual zeroes the last batch norm
// weight of each block (bn2 of a BasicBlock, bn3 of a Bottleneck).
//
//   auto model = nn::resnet18(/*num_classes=*/10);  // torchvision's resnet18(num_classes=10)
//   nn::ResNetOptions o = nn::resnet_options(18);    // BasicBlock, [2, 2, 2, 2]
//   o.num_classes = 10; o.in_channels = 1; o.width = 16; o.stem = nn::ResNetStem::small;
//   nn::ResNet small(o);
//
// Shapes: x [N, C_in, H, W] (any H, W: the head pools adaptively) → logits [N, num_classes].
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/layers.h"

namespace ember::nn {

enum class ResNetBlock { basic, bottleneck };
// imagenet: torchvision's 7x7 stride-2 conv (padding 3) and 3x3 stride-2 max pool (padding 1), 1/4 of the
// input's size into layer1; small: a 3x3 stride-1 conv (padding 1) and no pool, for 28x28 / 32x32 images
// (the CIFAR convention). Both name the conv conv1 and its batch norm bn1.
enum class ResNetStem { imagenet, small };

struct ResNetOptions {
  ResNetBlock block = ResNetBlock::basic;
  std::vector<int64_t> layers = {2, 2, 2, 2};  // blocks in layer1..layer4 (resnet18)
  int64_t num_classes = 1000;
  int64_t in_channels = 3;
  int64_t width = 64;  // the stem's and layer1's channels (torchvision's 64); layer2..4 double it each
  ResNetStem stem = ResNetStem::imagenet;
  bool zero_init_residual = false;
};

// The block type and blocks per layer of torchvision's resnet<depth> (18, 34: BasicBlock [2,2,2,2],
// [3,4,6,3]; 50, 101, 152: Bottleneck [3,4,6,3], [3,4,23,3], [3,8,36,3]); any other depth is an error
// listing these.
ResNetOptions resnet_options(int64_t depth);

// out = relu(bn2(conv2(relu(bn1(conv1(x))))) + shortcut(x)); conv1 3x3 with the block's stride, conv2 3x3;
// the shortcut is `downsample` (a 1x1 strided conv and a batch norm, Sequential "0", "1") when the stride or
// the channels change, else x.
class BasicBlock : public Module {
 public:
  static constexpr int64_t expansion = 1;
  // downsample may be null (an identity shortcut).
  BasicBlock(int64_t inplanes, int64_t planes, int64_t stride, std::shared_ptr<Sequential> downsample,
             Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "BasicBlock"; }
  std::string describe() const override;

  std::shared_ptr<Conv2d> conv1, conv2;
  std::shared_ptr<BatchNorm2d> bn1, bn2;
  std::shared_ptr<ReLU> relu;
  std::shared_ptr<Sequential> downsample;  // null: identity
};

// out = relu(bn3(conv3(relu(bn2(conv2(relu(bn1(conv1(x)))))))) + shortcut(x)); conv1 1x1 to `planes`,
// conv2 3x3 with the block's stride (v1.5), conv3 1x1 to 4·planes.
class Bottleneck : public Module {
 public:
  static constexpr int64_t expansion = 4;
  Bottleneck(int64_t inplanes, int64_t planes, int64_t stride, std::shared_ptr<Sequential> downsample,
             Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Bottleneck"; }
  std::string describe() const override;

  std::shared_ptr<Conv2d> conv1, conv2, conv3;
  std::shared_ptr<BatchNorm2d> bn1, bn2, bn3;
  std::shared_ptr<ReLU> relu;
  std::shared_ptr<Sequential> downsample;  // null: identity
};

// conv1, bn1, relu, maxpool (imagenet stem only), layer1..layer4 (Sequentials of blocks "0", "1", ...; layer1
// at stride 1 with `width` planes, layer2..4 at stride 2 with 2x, 4x, 8x), avgpool (adaptive, 1x1), flatten,
// fc [num_classes, 8·width·expansion].
class ResNet : public Module {
 public:
  explicit ResNet(const ResNetOptions& options, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "ResNet"; }
  std::string describe() const override;

  std::shared_ptr<Conv2d> conv1;
  std::shared_ptr<BatchNorm2d> bn1;
  std::shared_ptr<ReLU> relu;
  std::shared_ptr<MaxPool2d> maxpool;  // null with the small stem
  std::shared_ptr<Sequential> layer1, layer2, layer3, layer4;
  std::shared_ptr<AdaptiveAvgPool2d> avgpool;
  std::shared_ptr<Linear> fc;
  ResNetOptions options;
};

// torchvision's resnet18 / resnet34 / resnet50 (ImageNet stem, width 64) for num_classes and in_channels.
std::shared_ptr<ResNet> resnet18(int64_t num_classes = 1000, int64_t in_channels = 3, Generator* gen = nullptr);
std::shared_ptr<ResNet> resnet34(int64_t num_classes = 1000, int64_t in_channels = 3, Generator* gen = nullptr);
std::shared_ptr<ResNet> resnet50(int64_t num_classes = 1000, int64_t in_channels = 3, Generator* gen = nullptr);

}  // namespace ember::nn
