// The image transforms (data/image_transforms.h) against torchvision 0.14 / Pillow goldens
// (tools/make_image_transform_golden.py), their random parameters' bounds and distributions, and
// determinism per seed through the DataLoader.
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "data_test_util.h"
#include "test_helpers.h"

using namespace ember;
using namespace ember::testing;

namespace {

const char* kFile = "image_transform_golden.safetensors";
Tensor golden(const std::string& name) { return test::golden(kFile, name); }

// Pillow rounds to 8 bits after each of its two resampling passes, Ember keeps floats: each rounding is
// at most half a level, so 1/255 apart at most (the bar), plus float rounding.
constexpr double kPillowResample = 1.0 / 255 + 1e-6;

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return INFINITY;
  const std::vector<float> va = a.to_vector<float>(), vb = b.to_vector<float>();
  double worst = 0;
  for (size_t i = 0; i < va.size(); ++i) worst = std::max(worst, std::abs(double(va[i]) - double(vb[i])));
  return worst;
}

// y [shape] ← fn(x's data, x's shape, y's data).
template <typename Fn>
Tensor run(const Tensor& x, const Shape& shape, Fn fn) {
  Tensor y = zeros(shape);
  fn(x.data<float>(), x.shape(), y.data<float>());
  return y;
}

Tensor apply(const data::Transform& t, const Tensor& x, uint64_t key = 1, uint64_t index = 0) {
  data::ExampleRng rng(key, index);
  return run(x, t.output_shape(x.shape()), [&](const float* in, const Shape& s, float* out) { t.apply(in, s, out, rng); });
}

Shape with_hw(Shape s, int64_t h, int64_t w) {
  s[s.size() - 2] = h;
  s[s.size() - 1] = w;
  return s;
}

}  // namespace

// --- Geometry against Pillow (torchvision on PIL images) --------------------------------------------------

TEST(ImageTransformsGolden, ResizeMatchesPillowBilinearWithin1Over255) {
  struct Case { const char* name; int64_t h, w; };  // w == 0: Resize(h), the shorter side
  const Case cases[] = {{"15_40", 15, 40}, {"44_61", 44, 61}, {"50_20", 50, 20}, {"s20", 20, 0}, {"s41", 41, 0}, {"7_9", 7, 9}};
  for (const char* img : {"rgb", "gray"}) {
    const Tensor x = golden(std::string(img) + ".x");
    for (const Case& c : cases) {
      const std::string name = std::string("resize_") + img + "_" + c.name;
      const data::Resize resize = c.w == 0 ? data::Resize(c.h) : data::Resize(c.h, c.w);
      const Tensor y = apply(resize, x);
      const double diff = max_abs_diff(y, golden(name + ".y"));
      EXPECT_LE(diff, kPillowResample) << name << ": " << diff * 255 << "/255";
      std::printf("%-28s max |Ember - Pillow| = %.3f/255\n", name.c_str(), diff * 255);
    }
  }
  // torchvision's shorter-side rule: 37 x 53 -> 20 x int(20 * 53 / 37) = 20 x 28; portrait likewise.
  EXPECT_EQ(data::Resize(20).output_shape({3, 37, 53}), Shape({3, 20, 28}));
  EXPECT_EQ(data::Resize(20).output_shape({3, 53, 37}), Shape({3, 28, 20}));
  EXPECT_EQ(data::Resize(224).output_shape({3, 375, 500}), Shape({3, 224, 298}));
}

TEST(ImageTransformsGolden, ResizedCropMatchesTorchvisionWithin1Over255) {
  struct Case { const char* name; data::image::Box box; int64_t h, w; };
  const Case cases[] = {{"5_7_25_30_16_16", {5, 7, 25, 30}, 16, 16},
                        {"3_2_10_12_32_29", {3, 2, 10, 12}, 32, 29},
                        {"0_0_37_53_30_30", {0, 0, 37, 53}, 30, 30}};
  for (const char* img : {"rgb", "gray"}) {
    const Tensor x = golden(std::string(img) + ".x");
    for (const Case& c : cases) {
      const std::string name = std::string("resized_crop_") + img + "_" + c.name;
      const Tensor y = run(x, with_hw(x.shape(), c.h, c.w), [&](const float* in, const Shape& s, float* out) {
        data::image::resized_crop(in, s, c.box, c.h, c.w, out);
      });
      const double diff = max_abs_diff(y, golden(name + ".y"));
      EXPECT_LE(diff, kPillowResample) << name << ": " << diff * 255 << "/255";
    }
  }
}

TEST(ImageTransformsGolden, CenterCropMatchesTorchvisionExactly) {
  // Offsets round((37 - 20) / 2) = 8 (half to even), 11; round(6.5) = 6, round(14.5) = 14; and zero padding.
  EXPECT_EQ(max_abs_diff(apply(data::CenterCrop(20, 31), golden("rgb.x")), golden("center_crop_rgb_20_31.y")), 0.0);
  EXPECT_EQ(max_abs_diff(apply(data::CenterCrop(24), golden("rgb.x")), golden("center_crop_rgb_24_24.y")), 0.0);
  EXPECT_EQ(max_abs_diff(apply(data::CenterCrop(45, 60), golden("gray.x")), golden("center_crop_gray_45_60.y")), 0.0);
}

TEST(ImageTransformsGolden, RotationPicksPillowsPixels) {
  struct Case { const char* img; double degrees; int fill; const char* tag; };
  const Case cases[] = {{"gray", 30, 0, "30_0"},  {"gray", -45, 0, "m45_0"}, {"gray", 180, 0, "180_0"},
                        {"gray", 7, 0, "7_0"},    {"rgb", 30, 200, "30_200"}, {"rgb", 90, 0, "90_0"}};
  for (const Case& c : cases) {
    const std::string name = std::string("rotate_") + c.img + "_" + c.tag;
    const Tensor x = golden(std::string(c.img) + ".x");
    const std::vector<float> fill = {static_cast<float>(c.fill) / 255.0f};
    const Tensor y = run(x, x.shape(), [&](const float* in, const Shape& s, float* out) {
      data::image::rotate(in, s, c.degrees, fill, out);
    });
    EXPECT_EQ(max_abs_diff(y, golden(name + ".y")), 0.0) << name;
  }
}

TEST(ImageTransformsGolden, GrayscaleIsPillowsLuma) {
  const Tensor x = golden("rgb.x");
  const Tensor one = apply(data::Grayscale(), x), three = apply(data::Grayscale(3), x);
  // Pillow rounds the luma to 8 bits: half a level.
  EXPECT_LE(max_abs_diff(one, golden("grayscale_rgb_1.y")), 0.5 / 255 + 1e-6);
  ASSERT_EQ(three.shape(), Shape({3, 37, 53}));
  for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(max_abs_diff(three.narrow(0, c, 1).contiguous(), one), 0.0);
  const Tensor gray = golden("gray.x");
  EXPECT_EQ(max_abs_diff(apply(data::Grayscale(), gray), gray), 0.0);
}

// --- Colour against torchvision's float formulas -------------------------------------------------------

TEST(ImageTransformsGolden, ColorAdjustmentsMatchTorchvision) {
  using Adjust = void (*)(float*, const Shape&, float);
  struct Case { const char* name; Adjust fn; std::vector<int> factors; std::vector<const char*> images; };
  const Case cases[] = {{"brightness", data::image::adjust_brightness, {140, 60}, {"patch", "gray"}},
                        {"contrast", data::image::adjust_contrast, {150, 50}, {"patch", "gray"}},
                        {"saturation", data::image::adjust_saturation, {170, 30}, {"patch"}},
                        {"hue", data::image::adjust_hue, {20, -35}, {"patch"}}};
  for (const Case& c : cases) {
    for (const char* img : c.images) {
      for (int f : c.factors) {
        const std::string name = std::string(c.name) + "_" + img + "_" + (f < 0 ? "m" : "") + std::to_string(std::abs(f));
        Tensor y = golden(std::string(img) + ".x").clone();
        c.fn(y.data<float>(), y.shape(), static_cast<float>(f) / 100.0f);
        // Float rounding, and torchvision's tensor luma (0.2989 red) against Pillow's 0.299.
        EXPECT_LE(max_abs_diff(y, golden(name + ".y")), 2e-4) << name;
      }
    }
  }
  // Saturation and hue leave a gray image as it is (as torchvision); factor 1 / shift 0 are the identity.
  const Tensor gray = golden("gray.x"), patch = golden("patch.x");
  for (Adjust fn : {data::image::adjust_saturation, data::image::adjust_hue}) {
    Tensor y = gray.clone();
    fn(y.data<float>(), y.shape(), 0.3f);
    EXPECT_EQ(max_abs_diff(y, gray), 0.0);
  }
  Tensor y = patch.clone();
  data::image::adjust_hue(y.data<float>(), y.shape(), 0.0f);
  EXPECT_LE(max_abs_diff(y, patch), 1e-6);
}

// --- The random transforms: parameters and determinism -------------------------------------------------

TEST(RandomResizedCrop, WindowsFollowTorchvisionsSampling) {
  // Always accepted (ratio 1, at most half the area): area fraction uniform in [0.25, 0.5], offsets uniform.
  const data::RandomResizedCrop square(8, {0.25, 0.5}, {1.0, 1.0});
  double area_sum = 0;
  int64_t max_top = 0, min_top = 1000;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    data::ExampleRng rng(3, static_cast<uint64_t>(i));
    const data::image::Box b = square.sample(100, 100, rng);
    ASSERT_EQ(b.height, b.width);
    const double fraction = double(b.height * b.width) / 1e4;
    ASSERT_GE(fraction, 0.25 - 0.011) << "side " << b.height;  // the side is sqrt(area) rounded
    ASSERT_LE(fraction, 0.5 + 0.015) << "side " << b.height;
    ASSERT_TRUE(b.top >= 0 && b.left >= 0 && b.top + b.height <= 100 && b.left + b.width <= 100);
    area_sum += fraction;
    max_top = std::max(max_top, b.top + b.height), min_top = std::min(min_top, b.top);
  }
  EXPECT_NEAR(area_sum / n, 0.375, 0.01);
  EXPECT_EQ(min_top, 0);  // windows reach both edges
  EXPECT_EQ(max_top, 100);

  // The aspect ratio is log-uniform in [1/2, 2]: log(w / h) has mean 0 and spans the range.
  const data::RandomResizedCrop wide(8, {0.1, 0.1}, {0.5, 2.0});
  double log_sum = 0, log_min = 1, log_max = -1;
  for (int i = 0; i < n; ++i) {
    data::ExampleRng rng(4, static_cast<uint64_t>(i));
    const data::image::Box b = wide.sample(300, 300, rng);
    const double lr = std::log(double(b.width) / double(b.height));
    log_sum += lr, log_min = std::min(log_min, lr), log_max = std::max(log_max, lr);
    ASSERT_LE(std::abs(lr), std::log(2.0) + 0.05);
  }
  EXPECT_NEAR(log_sum / n, 0.0, 0.02);
  EXPECT_LT(log_min, -0.6);
  EXPECT_GT(log_max, 0.6);

  // 10 failed tries (an area larger than the image) fall back to the central crop at the widest allowed
  // ratio: a 10 x 100 strip gives h 10, w round(10 * 4/3) = 13, centred.
  const data::RandomResizedCrop impossible(8, {1.5, 2.0}, {3.0 / 4.0, 4.0 / 3.0});
  data::ExampleRng rng(5, 0);
  EXPECT_EQ(impossible.sample(10, 100, rng), (data::image::Box{0, 43, 10, 13}));
  EXPECT_EQ(impossible.sample(100, 10, rng), (data::image::Box{43, 0, 13, 10}));
  EXPECT_EQ(impossible.sample(30, 30, rng), (data::image::Box{0, 0, 30, 30}));
}

TEST(RandomResizedCrop, ApplyIsTheSampledResizedCropAndDeterministic) {
  const Tensor x = golden("rgb.x");
  const data::RandomResizedCrop crop(16, 20, {0.08, 1.0}, {3.0 / 4.0, 4.0 / 3.0});
  EXPECT_EQ(crop.output_shape(x.shape()), Shape({3, 16, 20}));
  std::set<std::vector<float>> distinct;
  for (uint64_t i = 0; i < 6; ++i) {
    data::ExampleRng draw(9, i);
    const data::image::Box box = crop.sample(37, 53, draw);
    const Tensor expected = run(x, {3, 16, 20}, [&](const float* in, const Shape& s, float* out) {
      data::image::resized_crop(in, s, box, 16, 20, out);
    });
    const Tensor y = apply(crop, x, 9, i);
    EXPECT_EQ(max_abs_diff(y, expected), 0.0);
    EXPECT_EQ(max_abs_diff(apply(crop, x, 9, i), y), 0.0);  // the same (key, index): the same output
    distinct.insert(y.to_vector<float>());
  }
  EXPECT_EQ(distinct.size(), 6u);
}

TEST(ColorJitter, OrderAndFactorsFollowTorchvision) {
  const data::ColorJitter jitter(0.4f, 0.3f, 0.2f, 0.1f);
  std::map<std::array<int, 4>, int> orders;
  const int n = 4800;
  double brightness_sum = 0, hue_sum = 0;
  for (int i = 0; i < n; ++i) {
    data::ExampleRng rng(7, static_cast<uint64_t>(i));
    const data::ColorJitter::Draw d = jitter.sample(rng);
    std::array<int, 4> sorted = d.order;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted, (std::array<int, 4>{0, 1, 2, 3}));
    ++orders[d.order];
    ASSERT_TRUE(d.brightness >= 0.6f && d.brightness <= 1.4f) << d.brightness;
    ASSERT_TRUE(d.contrast >= 0.7f && d.contrast <= 1.3f) << d.contrast;
    ASSERT_TRUE(d.saturation >= 0.8f && d.saturation <= 1.2f) << d.saturation;
    ASSERT_TRUE(d.hue >= -0.1f && d.hue <= 0.1f) << d.hue;
    brightness_sum += d.brightness, hue_sum += d.hue;
  }
  EXPECT_EQ(orders.size(), 24u);  // every order, about equally often (200 each)
  for (const auto& [order, count] : orders) EXPECT_NEAR(count, n / 24, 60);
  EXPECT_NEAR(brightness_sum / n, 1.0, 0.01);
  EXPECT_NEAR(hue_sum / n, 0.0, 0.003);
  // Brightness 1.5 allows factors down to 0 (not below), as torchvision's max(0, 1 - b).
  data::ExampleRng rng(1, 0);
  for (int i = 0; i < 200; ++i) ASSERT_GE(data::ColorJitter(1.5f).sample(rng).brightness, 0.0f);
}

TEST(ColorJitter, ApplyRunsTheDrawnAdjustmentsInTheDrawnOrder) {
  const Tensor x = golden("patch.x");
  const data::ColorJitter jitter(0.5f, 0.5f, 0.5f, 0.2f);
  for (uint64_t i = 0; i < 8; ++i) {
    data::ExampleRng draw(2, i);
    const data::ColorJitter::Draw d = jitter.sample(draw);
    Tensor expected = x.clone();
    for (int which : d.order) {
      float* p = expected.data<float>();
      if (which == 0) data::image::adjust_brightness(p, x.shape(), d.brightness);
      if (which == 1) data::image::adjust_contrast(p, x.shape(), d.contrast);
      if (which == 2) data::image::adjust_saturation(p, x.shape(), d.saturation);
      if (which == 3) data::image::adjust_hue(p, x.shape(), d.hue);
    }
    EXPECT_EQ(max_abs_diff(apply(jitter, x, 2, i), expected), 0.0);
  }
  EXPECT_EQ(max_abs_diff(apply(data::ColorJitter(), x), x), 0.0);  // all left out: the identity
}

TEST(RandomRotation, AngleUniformInTheRangeAndApplied) {
  const data::RandomRotation rotation(10.0, {0.25f});
  double sum = 0, lo = 1e9, hi = -1e9;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    data::ExampleRng rng(8, static_cast<uint64_t>(i));
    const double a = rotation.sample(rng);
    ASSERT_TRUE(a >= -10.0 && a <= 10.0) << a;
    sum += a, lo = std::min(lo, a), hi = std::max(hi, a);
  }
  EXPECT_NEAR(sum / n, 0.0, 0.3);
  EXPECT_LT(lo, -9.9);
  EXPECT_GT(hi, 9.9);
  const Tensor x = golden("rgb.x");
  data::ExampleRng draw(8, 1);
  const double angle = rotation.sample(draw);
  const std::vector<float> fill = {0.25f};
  const Tensor expected = run(x, x.shape(), [&](const float* in, const Shape& s, float* out) {
    data::image::rotate(in, s, angle, fill, out);
  });
  EXPECT_EQ(max_abs_diff(apply(rotation, x, 8, 1), expected), 0.0);
  EXPECT_EQ(max_abs_diff(apply(data::RandomRotation(0.0), x), x), 0.0);  // 0 degrees: the identity
}

// Variable-size images through the transforms: each output shape follows the input's.
TEST(ImageTransforms, OutputShapesPerInput) {
  EXPECT_EQ(data::CenterCrop(24).output_shape({3, 100, 30}), Shape({3, 24, 24}));
  EXPECT_EQ(data::RandomResizedCrop(224).output_shape({3, 375, 500}), Shape({3, 224, 224}));
  EXPECT_EQ(data::Resize(10, 12).output_shape({1, 5, 5}), Shape({1, 10, 12}));
  EXPECT_EQ(data::Grayscale(3).output_shape({1, 7, 9}), Shape({3, 7, 9}));
  EXPECT_EQ(data::ColorJitter(0.1f).output_shape({3, 7, 9}), Shape({3, 7, 9}));
  // Big images of different sizes, one after another on the same thread (the scratch grows and is reused).
  for (const Shape& s : {Shape{3, 375, 500}, Shape{3, 40, 30}, Shape{3, 500, 333}}) {
    const Tensor x = rand(s, {});
    const Tensor y = apply(data::RandomResizedCrop(64), x, 1, 2);
    EXPECT_EQ(y.shape(), Shape({3, 64, 64}));
    const std::vector<float> v = y.to_vector<float>();
    EXPECT_GE(*std::min_element(v.begin(), v.end()), 0.0f);  // bilinear weights are >= 0: no overshoot
    EXPECT_LE(*std::max_element(v.begin(), v.end()), 1.0f + 1e-6f);
  }
}

TEST(ImageTransforms, ErrorsNameTheTransform) {
  const auto throws_with = [](const std::function<void()>& fn, const std::string& text) {
    EXPECT_TRUE(test::throws_error(fn, {text}));
  };
  throws_with([] { data::Resize(0); }, "Resize");
  throws_with([] { data::CenterCrop(5, -1); }, "CenterCrop");
  throws_with([] { data::RandomResizedCrop(8, {0.5, 0.2}); }, "scale");
  throws_with([] { data::RandomResizedCrop(8, {0.08, 1.0}, {0.0, 1.0}); }, "ratio");
  throws_with([] { data::ColorJitter(-0.1f); }, "ColorJitter");
  throws_with([] { data::ColorJitter(0, 0, 0, 0.6f); }, "hue");
  throws_with([] { data::RandomRotation({10.0, 5.0}); }, "RandomRotation");
  throws_with([] { data::RandomRotation(-1.0); }, "RandomRotation");
  throws_with([] { data::Grayscale(2); }, "num_output_channels");
  throws_with([] { (void)data::ColorJitter(0.1f).output_shape({4, 8, 8}); }, "ColorJitter");
  throws_with([] { (void)data::Grayscale().output_shape({8, 8}); }, "Grayscale");
  throws_with([] { (void)data::RandomRotation(5.0, {0.1f, 0.2f}).output_shape({3, 8, 8}); }, "fill");
  throws_with([] { (void)data::Resize(4).output_shape({8}); }, "Resize");
}

// The loader's promise holds for the image transforms: the same batches for any number of workers.
TEST(ImageTransforms, LoaderBatchesAreTheSameForAnyWorkerCount) {
  const Tensor x = golden("rgb.x");
  const std::vector<float> pixels = x.to_vector<float>();
  auto ds = indexed_dataset(12, x.shape(), [&](int64_t i, int64_t k) {
    return std::fmod(pixels[static_cast<size_t>(k)] + 0.05f * static_cast<float>(i), 1.0f);
  });
  const auto epoch = [&](int workers) {
    data::DataLoader loader(ds, {.batch_size = 5, .shuffle = true, .num_workers = workers, .seed = 17,
                                 .transforms = {data::RandomResizedCrop(24), data::ColorJitter(0.4f, 0.4f, 0.4f, 0.1f),
                                                data::RandomRotation(15.0), data::Grayscale(3)}});
    EXPECT_EQ(loader.input_shape(), Shape({3, 24, 24}));
    std::vector<std::vector<float>> out;
    for (auto& batch : loader) out.push_back(batch.input.to_vector<float>());
    return out;
  };
  const auto reference = epoch(0);
  ASSERT_EQ(reference.size(), 3u);
  EXPECT_EQ(epoch(2), reference);
  EXPECT_EQ(epoch(3), reference);
}
