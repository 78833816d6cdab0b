#pragma once
// Image transforms as torchvision 0.14 defines them, on images the loader has already scaled to [0, 1]
// (ToTensor): f32 [C, H, W], any H and W per example (output_shape() answers for each input shape).
//
//   data::DataLoader loader(train, {.batch_size = 64, .shuffle = true, .num_workers = 2, .seed = 0,
//                                   .transforms = {data::RandomResizedCrop(224), data::RandomHorizontalFlip(),
//                                                  data::ColorJitter(0.4f, 0.4f, 0.4f, 0.1f),
//                                                  data::Normalize({0.485f, 0.456f, 0.406f},
//                                                                  {0.229f, 0.224f, 0.225f})}});
//
// Geometry follows torchvision on PIL images (its default path): Resize is PIL's bilinear resize, which is
// antialiased when shrinking (the triangle filter's support grows with the downscale factor); crops then
// resize, as F.resized_crop; rotation is PIL's nearest-neighbour rotation about the image centre. The
// colour adjustments follow torchvision's tensor formulas on floats (PIL's 8-bit versions truncate each
// result to an integer; ours keep the exact value). Grayscale uses ITU-R 601-2 luma, 0.299 R + 0.587 G
// + 0.114 B, as PIL's convert('L').
//
// Randomness comes only from the example's ExampleRng (data/random.h), so results are the same for a seed
// with any number of workers. The transforms keep no mutable state; scratch memory is thread_local and
// reused, so the hot path allocates nothing once a worker has seen its largest image.
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "data/transforms.h"

namespace ember::data {

// --- The functional forms (torchvision.transforms.functional), used by the transforms below ------------
namespace image {

// A crop window in pixels: rows [top, top + height), columns [left, left + width).
struct Box {
  int64_t top = 0, left = 0, height = 0, width = 0;
  friend bool operator==(const Box&, const Box&) = default;
};

// torchvision's output size for Resize(size) of an h × w image: the shorter side becomes `size` and the
// longer int(size * long / short) (truncated, as torchvision does). Returns {height, width}.
std::array<int64_t, 2> shorter_side_size(int64_t h, int64_t w, int64_t size);

// out [C, out_h, out_w] ← the `box` of in [C, H, W] resized with PIL's bilinear filter (antialiased when
// shrinking), as F.resized_crop(img, top, left, height, width, [out_h, out_w]). `shape` is [C, H, W] or
// [H, W]; the box must lie inside the image. A box that is the whole image is F.resize.
void resized_crop(const float* in, const Shape& shape, Box box, int64_t out_h, int64_t out_w, float* out);

// out ← in rotated by `degrees` counter-clockwise about the image centre, nearest neighbour, same size
// (torchvision's rotate with expand=false); pixels from outside the image are fill[c] (one value: all).
void rotate(const float* in, const Shape& shape, double degrees, std::span<const float> fill, float* out);

// The colour adjustments of torchvision.transforms.functional, in place on one [C, H, W] image with C = 1
// or 3 (saturation and hue leave a 1-channel image as it is, as torchvision does). Results are clamped to
// [0, 1]. factor 1 (hue 0) is the identity.
void adjust_brightness(float* img, const Shape& shape, float factor);  // img * factor
void adjust_contrast(float* img, const Shape& shape, float factor);    // blended with its grayscale mean
void adjust_saturation(float* img, const Shape& shape, float factor);  // blended with its grayscale
void adjust_hue(float* img, const Shape& shape, float hue_shift);      // HSV hue + shift, shift in [-0.5, 0.5]

// out [out_channels, H, W] ← the luma of in [3, H, W] (0.299 R + 0.587 G + 0.114 B), or a copy of a
// 1-channel image, repeated out_channels (1 or 3) times.
void to_grayscale(const float* in, const Shape& shape, int64_t out_channels, float* out);

}  // namespace image

// Resizes to height × width, or with one size (width 0) so that the shorter side is `size` (aspect kept, as
// torchvision's Resize(int)). Bilinear, antialiased when shrinking. Throws at construction unless the sizes
// are positive; at loader build for inputs with fewer than 2 dims.
class Resize : public Transform {
 public:
  explicit Resize(int64_t size) : Resize(size, 0) {}
  Resize(int64_t height, int64_t width);
  Shape output_shape(const Shape& shape) const override;
  void apply(const float* in, const Shape& in_shape, float* out, ExampleRng& rng) const override;
  std::string name() const override { return "Resize"; }

 private:
  int64_t height_, width_;  // width_ == 0: height_ is the shorter side
};

// The central height × width window (torchvision's rounding of the offset); an image smaller than the window
// is padded with zeros first, as torchvision does. [..., H, W] -> [..., height, width].
class CenterCrop : public Transform {
 public:
  explicit CenterCrop(int64_t size) : CenterCrop(size, size) {}
  CenterCrop(int64_t height, int64_t width);
  Shape output_shape(const Shape& shape) const override;
  void apply(const float* in, const Shape& in_shape, float* out, ExampleRng& rng) const override;
  std::string name() const override { return "CenterCrop"; }

 private:
  int64_t height_, width_;
};

// A random window of the image — area a uniform fraction in `scale` of the image's, aspect ratio
// log-uniform in `ratio`, up to 10 tries, then the central crop clamped to the ratio range (torchvision's
// get_params) — resized to height × width as Resize does. Throws at construction unless the sizes are
// positive and 0 < scale[0] <= scale[1], 0 < ratio[0] <= ratio[1].
class RandomResizedCrop : public Transform {
 public:
  explicit RandomResizedCrop(int64_t size, std::array<double, 2> scale = {0.08, 1.0},
                             std::array<double, 2> ratio = {3.0 / 4.0, 4.0 / 3.0})
      : RandomResizedCrop(size, size, scale, ratio) {}
  RandomResizedCrop(int64_t height, int64_t width, std::array<double, 2> scale, std::array<double, 2> ratio);
  Shape output_shape(const Shape& shape) const override;
  void apply(const float* in, const Shape& in_shape, float* out, ExampleRng& rng) const override;
  std::string name() const override { return "RandomResizedCrop"; }
  // The window for an h × w image, drawn from `rng` as apply() draws it.
  image::Box sample(int64_t h, int64_t w, ExampleRng& rng) const;

 private:
  int64_t height_, width_;
  std::array<double, 2> scale_, log_ratio_, ratio_;
};

// Random brightness, contrast, saturation and hue, applied in a random order (torchvision's ColorJitter):
// the factors are uniform in [max(0, 1 - b), 1 + b] (likewise contrast and saturation) and the hue shift in
// [-hue, hue]; a 0 leaves that adjustment out. [C, H, W] with C = 1 or 3. Throws at construction unless
// brightness, contrast, saturation >= 0 and 0 <= hue <= 0.5; at loader build for other inputs.
class ColorJitter : public Transform {
 public:
  explicit ColorJitter(float brightness = 0, float contrast = 0, float saturation = 0, float hue = 0);
  Shape output_shape(const Shape& shape) const override;
  void apply(const float* in, const Shape& in_shape, float* out, ExampleRng& rng) const override;
  std::string name() const override { return "ColorJitter"; }

  // One draw: the order of the four adjustments (0 brightness, 1 contrast, 2 saturation, 3 hue) and
  // their factors (1, or hue 0, for those left out).
  struct Draw {
    std::array<int, 4> order{};
    float brightness = 1, contrast = 1, saturation = 1, hue = 0;
  };
  Draw sample(ExampleRng& rng) const;

 private:
  std::array<float, 2> brightness_, contrast_, saturation_, hue_;
};

// Rotates by an angle uniform in [-degrees, degrees] (or in the range {min, max}) about the centre,
// nearest neighbour, same size; the corners take `fill` (per channel, or one value for all; in the units of
// the input, e.g. 0.5 for mid grey on [0, 1] images). Throws at construction when min > max; at loader build
// when fill has neither 1 nor C values.
class RandomRotation : public Transform {
 public:
  explicit RandomRotation(double degrees, std::vector<float> fill = {0.0f})
      : RandomRotation(std::array<double, 2>{-degrees, degrees}, std::move(fill)) {}
  explicit RandomRotation(std::array<double, 2> degrees, std::vector<float> fill = {0.0f});
  Shape output_shape(const Shape& shape) const override;
  void apply(const float* in, const Shape& in_shape, float* out, ExampleRng& rng) const override;
  std::string name() const override { return "RandomRotation"; }
  double sample(ExampleRng& rng) const;  // the angle in degrees, as apply() draws it

 private:
  double min_, max_;
  std::vector<float> fill_;
};

// [3, H, W] RGB (or [1, H, W]) -> [num_output_channels, H, W] luma, num_output_channels 1 or 3.
class Grayscale : public Transform {
 public:
  explicit Grayscale(int64_t num_output_channels = 1);
  Shape output_shape(const Shape& shape) const override;
  void apply(const float* in, const Shape& in_shape, float* out, ExampleRng& rng) const override;
  std::string name() const override { return "Grayscale"; }

 private:
  int64_t channels_;
};

}  // namespace ember::data
