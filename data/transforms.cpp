#include "data/transforms.h"

#include <algorithm>
#include <cstring>

#include "core/raw.h"

namespace ember::data {

// --- Normalize -----------------------------------------------------------------------------------------

Normalize::Normalize(std::vector<float> mean, std::vector<float> std) : mean_(std::move(mean)) {
  EMBER_CHECK(!mean_.empty() && mean_.size() == std.size(), "Normalize: mean has ", mean_.size(),
              " values and std has ", std.size(), "; give one per channel (or one for all), the same number each");
  for (float s : std) {
    EMBER_CHECK(s > 0.0f, "Normalize: std ", s, " is not positive; a std must be > 0");
    inv_std_.push_back(1.0f / s);
  }
}

Shape Normalize::output_shape(const Shape& shape) const {
  const int64_t channels = shape.empty() ? 1 : shape[0];
  EMBER_CHECK(mean_.size() == 1 || static_cast<int64_t>(mean_.size()) == channels, "Normalize: ", mean_.size(),
              " means/stds for inputs ", shape, " with ", channels,
              " channels (dim 0); give one value per channel, or one for all");
  return shape;
}

void Normalize::apply(const float* in, const Shape& in_shape, float* out, ExampleRng&) const {
  const int64_t channels = mean_.size() == 1 ? 1 : in_shape[0];
  const int64_t plane = in_shape.numel() / std::max<int64_t>(channels, 1);
  for (int64_t c = 0; c < channels; ++c) {
    const float m = mean_[c], s = inv_std_[c];
    const float* src = in + c * plane;
    float* dst = out + c * plane;
    for (int64_t k = 0; k < plane; ++k) dst[k] = (src[k] - m) * s;
  }
}

// --- RandomCrop ----------------------------------------------------------------------------------------

RandomCrop::RandomCrop(int64_t height, int64_t width, int64_t padding, float fill)
    : height_(height), width_(width), padding_(padding), fill_(fill) {
  EMBER_CHECK(height > 0 && width > 0 && padding >= 0, "RandomCrop: size ", height, "x", width, " and padding ",
              padding, " must be positive and non-negative");
}

Shape RandomCrop::output_shape(const Shape& shape) const {
  EMBER_CHECK(shape.size() >= 2, "RandomCrop: inputs ", shape, " have fewer than 2 dims; it crops [..., H, W]");
  const int64_t h = shape[shape.size() - 2], w = shape.back();
  EMBER_CHECK(height_ <= h + 2 * padding_ && width_ <= w + 2 * padding_, "RandomCrop: a ", height_, "x", width_,
              " window does not fit inputs ", shape, " padded by ", padding_, "; lower the size or raise the padding");
  Shape out = shape;
  out[out.size() - 2] = height_;
  out[out.size() - 1] = width_;
  return out;
}

void RandomCrop::apply(const float* in, const Shape& in_shape, float* out, ExampleRng& rng) const {
  const int64_t h = in_shape[in_shape.size() - 2], w = in_shape.back();
  const int64_t planes = h * w == 0 ? 0 : in_shape.numel() / (h * w);
  // Window origin in padded coordinates, then in input coordinates (may be negative: padding).
  const int64_t top = rng.uniform_int(h + 2 * padding_ - height_ + 1) - padding_;
  const int64_t left = rng.uniform_int(w + 2 * padding_ - width_ + 1) - padding_;
  crop_padded(in, planes, h, w, top, left, height_, width_, fill_, out);
}

void crop_padded(const float* in, int64_t planes, int64_t h, int64_t w, int64_t top, int64_t left, int64_t height,
                 int64_t width, float fill, float* out) {
  // Columns [x0, x1) of each output row come from the input; the rest is fill.
  const int64_t x0 = std::clamp<int64_t>(-left, 0, width), x1 = std::clamp<int64_t>(w - left, x0, width);
  for (int64_t p = 0; p < planes; ++p) {
    const float* src = in + p * h * w;
    float* dst = out + p * height * width;
    for (int64_t y = 0; y < height; ++y, dst += width) {
      const int64_t sy = top + y;
      if (sy < 0 || sy >= h) {
        std::fill(dst, dst + width, fill);
        continue;
      }
      std::fill(dst, dst + x0, fill);
      if (x1 > x0) std::memcpy(dst + x0, src + sy * w + left + x0, static_cast<size_t>(x1 - x0) * sizeof(float));
      std::fill(dst + x1, dst + width, fill);
    }
  }
}

// --- RandomHorizontalFlip ------------------------------------------------------------------------------

RandomHorizontalFlip::RandomHorizontalFlip(float p) : p_(p) {
  EMBER_CHECK(p >= 0.0f && p <= 1.0f, "RandomHorizontalFlip: probability ", p, " is not in [0, 1]");
}

Shape RandomHorizontalFlip::output_shape(const Shape& shape) const {
  EMBER_CHECK(!shape.empty(), "RandomHorizontalFlip: 0-d inputs have no W dim to flip");
  return shape;
}

void RandomHorizontalFlip::apply(const float* in, const Shape& in_shape, float* out, ExampleRng& rng) const {
  const int64_t n = in_shape.numel();
  if (!(rng.uniform01() < p_)) {
    std::memcpy(out, in, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  const int64_t w = in_shape.back();
  for (int64_t row = 0; w > 0 && row < n / w; ++row)
    std::reverse_copy(in + row * w, in + (row + 1) * w, out + row * w);
}

// --- Lambda --------------------------------------------------------------------------------------------

Lambda::Lambda(Fn fn, std::string name) : fn_(std::move(fn)), name_(std::move(name)) {
  EMBER_CHECK(fn_ != nullptr, "Lambda '", name_, "': the function is empty");
}

void Lambda::apply(const float* in, const Shape& in_shape, float* out, ExampleRng& rng) const {
  Generator gen(rng.next_u64());
  const Tensor result = fn_(from_data(in, in_shape), gen);
  EMBER_CHECK(result.defined() && result.shape() == in_shape && result.dtype() == DType::f32, "Lambda '", name_,
              "': returned ", result.defined() ? result.shape().str() + " " + std::string(dtype_name(result.dtype())) : "an undefined tensor",
              " for an input of ", in_shape, " f32; it must return the same shape and dtype");
  const Tensor c = raw::contiguous(raw::to(result, kCPU));
  std::memcpy(out, c.data_ptr(), static_cast<size_t>(in_shape.numel()) * sizeof(float));
}

}  // namespace ember::data
