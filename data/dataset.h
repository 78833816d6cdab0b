#pragma once
// Datasets: indexable collections of examples. An example is a pair of tensors (input, target) on the
// CPU; every example of a dataset has the same shapes and dtypes (its ExampleSpec), so a DataLoader can
// collate B of them into contiguous [B, ...] batch tensors.
//
// Thread safety: get() and get_batch() are const and are called concurrently from DataLoader worker
// threads; implementations must not mutate shared state without synchronisation.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace ember::data {

// One example: e.g. input [1, 28, 28] f32 and target [] i64 (a class index).
struct Example {
  Tensor input;
  Tensor target;
};

// Shapes and dtypes of one example (without the batch dim).
struct ExampleSpec {
  Shape input_shape{};
  DType input_dtype = DType::f32;
  Shape target_shape{};
  DType target_dtype = DType::i64;
};

class Dataset {
 public:
  virtual ~Dataset() = default;

  virtual int64_t size() const = 0;
  // Example `index` in [0, size()). Throws ember::Error when the index is out of range.
  virtual Example get(int64_t index) const = 0;

  // Shapes and dtypes of every example. Default: those of get(0); throws when the dataset is empty.
  virtual ExampleSpec spec() const;

  // Collation fast path: writes example indices[b] into row b of `input` [B, spec.input_shape...] and
  // `target` [B, spec.target_shape...] (contiguous CPU tensors of the spec's dtypes, B = indices.size()).
  // The default calls get() per example and copies; datasets override it to copy straight from their
  // storage without allocating per example. Throws when an index is out of range or an example's shape
  // or dtype differs from the buffers' (less the batch dim).
  virtual void get_batch(std::span<const int64_t> indices, const Tensor& input, const Tensor& target) const;

  // Byte inputs: a dataset whose f32 inputs are each a function of one stored byte (u8 images) says so,
  // so that the loader converts and applies the pointwise transforms (Normalize) in one pass through a
  // table instead of get_batch and then one pass per transform (data/collate.h). Default: false.
  virtual bool has_byte_inputs() const { return false; }
  // What get() makes of stored byte b (only when has_byte_inputs()).
  virtual float byte_value(uint8_t b) const;
  // As get_batch, but input[b, k] = table[c * 256 + byte k of example indices[b]] where c = k / plane is
  // k's channel (dim 0 of the example; plane = its values per channel) and `table` holds 256 values per
  // channel. Only when has_byte_inputs(); throws otherwise, and when the table's size is not channels × 256.
  virtual void get_batch_bytes(std::span<const int64_t> indices, std::span<const float> table, const Tensor& input,
                               const Tensor& target) const;

  // Inputs of different shapes (a folder of images of different sizes): a dataset whose examples' inputs
  // differ in shape — the same rank and dtype, and the same channel count (dim 0) — says so. spec() then
  // describes example 0, input_shape(i) gives example i's, and get_batch is not called: the loader reads
  // each example with get(), runs the transforms at that example's shape, and requires them to bring every
  // example to one shape (as PyTorch's collate: "stack expects each tensor to be equal size"); an example
  // that comes out another shape is an error naming it (describe) and the transforms. Default: false.
  virtual bool variable_input_shape() const { return false; }
  // Example `index`'s input shape (default: spec().input_shape). Throws when the index is out of range.
  virtual Shape input_shape(int64_t index) const;
  // Example `index` for messages: an image dataset names its file. Default: "example <index>".
  virtual std::string describe(int64_t index) const;
};

// An example's channels for per-channel transforms and byte tables: dim 0 (1 for a 0-d example).
inline int64_t example_channels(const Shape& shape) { return shape.empty() ? 1 : shape[0]; }

using DatasetPtr = std::shared_ptr<const Dataset>;

// Throws "<op>: index 12 is out of range for a dataset of 10 examples" unless 0 <= index < size.
void check_index(int64_t index, int64_t size, const char* op);

// Wraps a pair of tensors whose dim 0 indexes examples: inputs [N, ...], targets [N, ...]. Both are
// copied to contiguous CPU memory once at construction. Throws when either is undefined or 0-d, or when
// their dim 0 sizes differ.
class TensorDataset : public Dataset {
 public:
  TensorDataset(const Tensor& inputs, const Tensor& targets);

  int64_t size() const override { return size_; }
  Example get(int64_t index) const override;  // views into the stored tensors (no copy)
  ExampleSpec spec() const override { return spec_; }
  void get_batch(std::span<const int64_t> indices, const Tensor& input, const Tensor& target) const override;

  const Tensor& inputs() const { return inputs_; }
  const Tensor& targets() const { return targets_; }

 protected:
  TensorDataset() = default;
  void init(const Tensor& inputs, const Tensor& targets, const char* op);

 private:
  Tensor inputs_, targets_;
  int64_t size_ = 0;
  ExampleSpec spec_;
};

// The examples of `base` at `indices` (in that order). Throws when an index is out of range of `base`.
class Subset : public Dataset {
 public:
  Subset(DatasetPtr base, std::vector<int64_t> indices);

  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  Example get(int64_t index) const override;
  ExampleSpec spec() const override;  // the base's, with example 0's input shape (variable_input_shape)
  void get_batch(std::span<const int64_t> indices, const Tensor& input, const Tensor& target) const override;
  bool has_byte_inputs() const override { return base_->has_byte_inputs(); }
  float byte_value(uint8_t b) const override { return base_->byte_value(b); }
  void get_batch_bytes(std::span<const int64_t> indices, std::span<const float> table, const Tensor& input,
                       const Tensor& target) const override;
  bool variable_input_shape() const override { return base_->variable_input_shape(); }
  Shape input_shape(int64_t index) const override;
  std::string describe(int64_t index) const override;

  const std::vector<int64_t>& indices() const { return indices_; }

 private:
  DatasetPtr base_;
  std::vector<int64_t> indices_;
};

// Splits `dataset` into disjoint random subsets of the given sizes, which must add up to its size
// (e.g. {50000, 10000}). The same seed gives the same split. Throws when the lengths do not add up or
// one is negative.
std::vector<std::shared_ptr<Subset>> random_split(DatasetPtr dataset, const std::vector<int64_t>& lengths,
                                                  uint64_t seed);

// A random permutation of [0, n) drawn from `gen` (Fisher–Yates on Philox; advances gen by n).
// The same generator state gives the same permutation on every machine.
std::vector<int64_t> random_permutation(int64_t n, Generator& gen);

}  // namespace ember::data
