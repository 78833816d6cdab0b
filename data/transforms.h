#pragma once
// Per-example transforms, applied by the DataLoader to each example's input after it is read and before
// it is collated into the batch:
//
//   data::DataLoader loader(train, {.batch_size = 128, .shuffle = true, .seed = 0,
//                                   .transforms = {data::RandomCrop(28, 4), data::RandomHorizontalFlip(),
//                                                  data::Normalize({0.2860f}, {0.3530f})}});
//
// Inputs are f32 (the loader checks). Randomness is per example: the loader gives each example a Philox
// stream keyed by (seed, epoch) and countered by the example's dataset index, so the same example in the
// same epoch is transformed the same way whichever worker thread handles it, and on resume.
// Shapes: an example's input is [C, H, W] (or [H, W]); "channel" means dim 0, H and W the last two dims.
#include <concepts>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "data/random.h"

namespace ember::data {

class Transform {
 public:
  virtual ~Transform() = default;
  // The output shape for inputs of `shape`. Throws ember::Error naming the transform when it cannot take
  // such inputs. The loader calls it once, when it is built, so shape errors surface early.
  virtual Shape output_shape(const Shape& shape) const { return shape; }
  // out ← transform(in). `in` holds in_shape.numel() values, `out` output_shape(in_shape).numel(); they
  // never alias. Called concurrently from worker threads: must not modify the transform.
  virtual void apply(const float* in, const Shape& in_shape, float* out, ExampleRng& rng) const = 0;
  virtual std::string name() const = 0;
  // Pointwise: output shape = input shape, and out[k] depends only on in[k] and k's channel (dim 0), never
  // on the randomness. The loader folds leading pointwise transforms into a byte dataset's conversion table
  // (data/collate.h). Default: false.
  virtual bool pointwise() const { return false; }
};

// A shared handle to a transform, built implicitly from any Transform value, so option lists read
// {data::RandomCrop(28, 4), data::Normalize(...)}.
class AnyTransform {
 public:
  template <typename T>
    requires std::derived_from<T, Transform>
  AnyTransform(T transform) : impl_(std::make_shared<T>(std::move(transform))) {}  // NOLINT: implicit on purpose
  AnyTransform(std::shared_ptr<const Transform> transform) : impl_(std::move(transform)) {}  // NOLINT

  const Transform& operator*() const { return *impl_; }
  const Transform* operator->() const { return impl_.get(); }

 private:
  std::shared_ptr<const Transform> impl_;
};

// (x - mean[c]) / std[c] per channel c (dim 0 of the example; for a 1-D feature vector, per feature).
// One value each broadcasts over all channels. Throws at construction when mean and std differ in length
// or a std is not positive; at loader build when their length is neither 1 nor the channel count.
class Normalize : public Transform {
 public:
  Normalize(std::vector<float> mean, std::vector<float> std);
  Shape output_shape(const Shape& shape) const override;
  void apply(const float* in, const Shape& in_shape, float* out, ExampleRng& rng) const override;
  std::string name() const override { return "Normalize"; }
  bool pointwise() const override { return true; }

 private:
  std::vector<float> mean_, inv_std_;
};

// Pads H and W by `padding` on each side with `fill`, then takes a random height × width window
// (each offset uniform). [..., H, W] -> [..., height, width]. RandomCrop(28, 4): 28×28, padding 4. Throws at loader build when the input has
// fewer than 2 dims or the window is larger than the padded image.
class RandomCrop : public Transform {
 public:
  explicit RandomCrop(int64_t size, int64_t padding = 0) : RandomCrop(size, size, padding) {}
  RandomCrop(int64_t height, int64_t width, int64_t padding, float fill = 0.0f);
  Shape output_shape(const Shape& shape) const override;
  void apply(const float* in, const Shape& in_shape, float* out, ExampleRng& rng) const override;
  std::string name() const override { return "RandomCrop"; }

 private:
  int64_t height_, width_, padding_;
  float fill_;
};

// Mirrors W (the last dim) with probability p. Throws at construction unless 0 <= p <= 1.
class RandomHorizontalFlip : public Transform {
 public:
  explicit RandomHorizontalFlip(float p = 0.5f);
  Shape output_shape(const Shape& shape) const override;
  void apply(const float* in, const Shape& in_shape, float* out, ExampleRng& rng) const override;
  std::string name() const override { return "RandomHorizontalFlip"; }

 private:
  float p_;
};

// A user function of the example input (a contiguous f32 CPU tensor, a copy) and a Generator seeded for
// this example (use it for any randomness, so results stay reproducible with any number of workers).
// It must return an f32 tensor of the same shape; otherwise the batch fails with an error naming `name`.
// NOTE: it runs on worker threads, concurrently: it must not touch unsynchronised shared state.
class Lambda : public Transform {
 public:
  using Fn = std::function<Tensor(const Tensor& input, Generator& gen)>;
  explicit Lambda(Fn fn, std::string name = "Lambda");
  void apply(const float* in, const Shape& in_shape, float* out, ExampleRng& rng) const override;
  std::string name() const override { return name_; }

 private:
  Fn fn_;
  std::string name_;
};

// out [planes, height, width] ← the height × width window whose top-left corner is at (top, left) of each
// h × w plane of `in`; rows and columns of the window outside the plane (negative offsets: padding) are
// `fill`. The crop of RandomCrop and CenterCrop.
void crop_padded(const float* in, int64_t planes, int64_t h, int64_t w, int64_t top, int64_t left, int64_t height,
                 int64_t width, float fill, float* out);

}  // namespace ember::data
