// data.transforms' image transforms in ember-train configs (apps/config.cpp rows, apps/session.cpp
// make_transforms): torchvision's argument names, their checks, and what the loaders get.
#include <gtest/gtest.h>

#include "apps/config.h"
#include "apps/session.h"

using namespace ember;
using namespace ember::app;

namespace {

std::string config_with(const std::string& transforms) {
  return "epochs: 1\nmodel: [{type: flatten}, {type: linear, out_features: 10}]\noptimizer: {lr: 0.1}\ndata:\n"
         "  transforms:\n" + transforms;
}

void expect_error(const std::string& transforms, const std::vector<std::string>& pieces) {
  try {
    parse_config(config_with(transforms), "cfg.yaml");
    ADD_FAILURE() << "no error for:\n" << transforms;
  } catch (const ConfigError& e) {
    for (const auto& piece : pieces)
      EXPECT_NE(std::string(e.what()).find(piece), std::string::npos) << "message: " << e.what() << "\nmissing: " << piece;
  }
}

std::vector<std::string> names(const std::vector<data::AnyTransform>& ts) {
  std::vector<std::string> out;
  for (const auto& t : ts) out.push_back(t->name());
  return out;
}

Shape shape_after(const std::vector<data::AnyTransform>& ts, Shape shape) {
  for (const auto& t : ts) shape = t->output_shape(shape);
  return shape;
}

}  // namespace

TEST(ConfigImageTransforms, KeysDefaultsAndTheLoadersTransforms) {
  const TrainConfig c = parse_config(config_with(R"(    - {type: resize, size: 40}
    - {type: random_resized_crop, size: [24, 32]}
    - {type: color_jitter, brightness: 0.4, hue: 0.1}
    - {type: random_rotation, degrees: 15, fill: [0.5]}
    - {type: grayscale, num_output_channels: 3}
    - {type: center_crop, size: 20}
)"), "cfg.yaml");
  const auto& t = c.data.transforms;
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[0].size_hw, std::vector<int64_t>{40});  // one number stands for a list of one
  EXPECT_EQ(t[1].size_hw, (std::vector<int64_t>{24, 32}));
  EXPECT_EQ(t[1].scale, (std::vector<double>{0.08, 1.0}));  // torchvision's defaults
  EXPECT_EQ(t[1].ratio, (std::vector<double>{3.0 / 4.0, 4.0 / 3.0}));
  EXPECT_EQ(t[2].brightness, 0.4);
  EXPECT_EQ(t[2].contrast, 0.0);
  EXPECT_EQ(t[2].hue, 0.1);
  EXPECT_EQ(t[3].degrees, std::vector<double>{15});
  EXPECT_EQ(t[3].fill, std::vector<double>{0.5});
  EXPECT_EQ(t[4].num_output_channels, 3);

  // Training gets every transform; evaluation drops the random augmentations and sees the same shapes:
  // random_resized_crop becomes resize (shorter side 32) + center_crop [24, 32].
  const auto train = make_transforms(c.data, true), eval = make_transforms(c.data, false);
  EXPECT_EQ(names(train), (std::vector<std::string>{"Resize", "RandomResizedCrop", "ColorJitter", "RandomRotation",
                                                    "Grayscale", "CenterCrop"}));
  EXPECT_EQ(names(eval), (std::vector<std::string>{"Resize", "Resize", "CenterCrop", "Grayscale", "CenterCrop"}));
  EXPECT_EQ(shape_after(train, {1, 28, 28}), Shape({3, 20, 20}));
  EXPECT_EQ(shape_after(eval, {1, 28, 28}), Shape({3, 20, 20}));
  EXPECT_EQ(shape_after(eval, {1, 28, 28}), shape_after(train, {1, 28, 28}));

  // The resolved config reads back to the same transforms.
  const TrainConfig again = parse_config(to_yaml(c), "config.yaml");
  EXPECT_EQ(to_yaml(again), to_yaml(c));
  EXPECT_EQ(config_hash(again), config_hash(c));
}

TEST(ConfigImageTransforms, BadValuesNameTheKey) {
  expect_error("    - {type: resize, size: [1, 2, 3]}\n", {"data.transforms[0].size", "[height, width]"});
  expect_error("    - {type: resize}\n", {"data.transforms[0].size", "missing required key"});
  expect_error("    - {type: random_resized_crop, size: []}\n", {"data.transforms[0].size", "[height, width]"});
  expect_error("    - {type: center_crop, size: 0}\n", {"data.transforms[0].size", ">= 1"});
  expect_error("    - {type: random_resized_crop, size: 8, scale: [0.9, 0.1]}\n", {"data.transforms[0].scale", "min <= max"});
  expect_error("    - {type: random_resized_crop, size: 8, ratio: [1]}\n", {"data.transforms[0].ratio", "2 numbers"});
  expect_error("    - {type: color_jitter, hue: 0.7}\n", {"data.transforms[0].hue", "in [0, 0.5]"});
  expect_error("    - {type: color_jitter, brightness: -1}\n", {"data.transforms[0].brightness", ">= 0"});
  expect_error("    - {type: random_rotation, degrees: -5}\n", {"data.transforms[0].degrees", "d >= 0"});
  expect_error("    - {type: random_rotation, degrees: [10, -10]}\n", {"data.transforms[0].degrees", "min <= max"});
  expect_error("    - {type: grayscale, num_output_channels: 2}\n", {"data.transforms[0].num_output_channels", "1 or 3"});
  // A key of another type is refused, naming every type that takes it.
  expect_error("    - {type: normalize, mean: 0.5, std: 0.5, size: 3}\n",
               {"data.transforms[0].size", "only used with type: random_crop or resize or center_crop or "
                                           "random_resized_crop", "type is normalize"});
  expect_error("    - {type: grayscale, degrees: 3}\n", {"data.transforms[0].degrees", "only used with type: random_rotation"});
}

// A config without the new transforms hashes as before (checkpoints of earlier runs still resume).
TEST(ConfigImageTransforms, ExistingTransformsKeepTheirMeaning) {
  const TrainConfig c = parse_config(config_with("    - {type: random_crop, size: 28, padding: 4}\n"), "cfg.yaml");
  EXPECT_EQ(c.data.transforms[0].size, 28);
  EXPECT_EQ(names(make_transforms(c.data, true)), std::vector<std::string>{"RandomCrop"});
  EXPECT_TRUE(make_transforms(c.data, false).empty());
}
