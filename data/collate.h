#pragma once
// Collation: B examples → one Batch of contiguous tensors, input [B, ...] and target [B, ...].
// The DataLoader owns one Collator and calls make() from its worker threads; each thread passes its own
// Workspace, so the hot path allocates only the two batch tensors (from the caching allocator, or from
// the user's BatchAllocator).
//
// Byte datasets (Dataset::has_byte_inputs(): u8 images, kept as bytes in memory) with leading pointwise
// transforms (Normalize): the conversion and those transforms become one table of 256 values per channel,
// built once by running the transforms themselves on the 256 converted byte values, so a batch is one
// gather pass from the bytes, and its values equal, bit for bit, converting first and transforming after.
//
// Datasets of variable input shapes (Dataset::variable_input_shape(): images of different sizes): each
// example is read with get() and transformed at its own shape; the transforms must bring every example to
// one shape. The Collator checks that at construction for every distinct input shape of the dataset, so a
// mismatch fails before training starts, naming an example (its file) of that shape and the transforms.
#include <functional>
#include <span>
#include <vector>

#include "data/dataset.h"
#include "data/transforms.h"

namespace ember::data {

// One batch: input [B, ...] and target [B, ...] (e.g. [64, 1, 28, 28] f32 and [64] i64).
struct Batch {
  Tensor input;
  Tensor target;
};

// Allocates a batch tensor that collation then fills: it must return a contiguous tensor of exactly
// `shape` and `dtype` whose memory the CPU writes (checked: the batch fails with a clear error
// otherwise). Called concurrently from worker threads, so it must be thread-safe.
//
// The default allocates from Ember's CPU caching allocator. For a CUDA run, DataLoaderOptions::pin_memory
// makes it page-locked host memory (the CUDA backend's pinned pool), so that `batch.input.to(cuda)` is a
// cudaMemcpyAsync on the device's stream that overlaps the previous step's compute.
using BatchAllocator = std::function<Tensor(const Shape& shape, DType dtype)>;

// Per-thread scratch memory, reused from batch to batch.
struct Workspace {
  Tensor staging;             // [max B, example input] f32: dataset output before transforms
  std::vector<float> ping, pong;  // between two transforms of one example
};

class Collator {
 public:
  // Reads dataset->spec() once and checks the transforms against it: inputs must be f32 when there are
  // transforms, and each transform must accept the previous one's output shape. Throws ember::Error
  // naming the transform otherwise.
  Collator(DatasetPtr dataset, std::vector<AnyTransform> transforms, BatchAllocator allocator);

  // The batch of examples `indices` (dataset indices); transform randomness for example i comes from
  // ExampleRng(transform_key, i). Throws what the dataset, a transform or the allocator throws.
  Batch make(std::span<const int64_t> indices, uint64_t transform_key, Workspace& ws) const;

  const ExampleSpec& spec() const { return spec_; }
  const Shape& input_shape() const { return shapes_.back(); }  // one example's input after transforms

 private:
  Tensor allocate(const Shape& example, int64_t batch, DType dtype) const;
  void transform_batch(const float* staged, int64_t batch, std::span<const int64_t> indices,
                       uint64_t transform_key, float* out, Workspace& ws) const;
  void build_byte_table();
  void check_variable_shapes() const;
  void make_variable(std::span<const int64_t> indices, uint64_t transform_key, const Batch& out, Workspace& ws) const;
  std::string transform_names() const;  // "RandomCrop, Normalize" ("no transforms")

  DatasetPtr dataset_;
  std::vector<AnyTransform> transforms_;
  BatchAllocator allocator_;
  ExampleSpec spec_;
  std::vector<Shape> shapes_;  // shapes_[k]: input of transform k; shapes_.back(): final
  size_t fused_ = 0;           // leading transforms folded into byte_table_ (0: none, the plain get_batch)
  std::vector<float> byte_table_;  // [channels, 256]: byte → value after the fused transforms
  bool variable_ = false;          // dataset_->variable_input_shape(): examples read one by one
};

}  // namespace ember::data
