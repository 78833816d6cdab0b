#include "data/collate.h"

#include "core/raw.h"

namespace ember::data {

Collator::Collator(DatasetPtr dataset, std::vector<AnyTransform> transforms, BatchAllocator allocator)
    : dataset_(std::move(dataset)), transforms_(std::move(transforms)), allocator_(std::move(allocator)) {
  EMBER_CHECK(dataset_ != nullptr, "DataLoader: the dataset is null");
  EMBER_CHECK(dataset_->size() > 0, "DataLoader: the dataset is empty; there is nothing to load");
  spec_ = dataset_->spec();
  EMBER_CHECK(spec_.input_shape.size() < kMaxDims && spec_.target_shape.size() < kMaxDims,
              "DataLoader: examples of ", spec_.input_shape, " / ", spec_.target_shape, " leave no room for the batch "
              "dim (Ember tensors have at most ", kMaxDims, " dims)");
  if (!transforms_.empty())
    EMBER_CHECK(spec_.input_dtype == DType::f32, "DataLoader: transforms need f32 inputs, but the dataset's are ",
                dtype_name(spec_.input_dtype), "; convert them in the dataset or drop the transforms");
  shapes_.push_back(spec_.input_shape);
  for (const AnyTransform& t : transforms_) {
    shapes_.push_back(t->output_shape(shapes_.back()));
    EMBER_CHECK(shapes_.back().size() < kMaxDims, "DataLoader: ", t->name(), " outputs ", shapes_.back(),
                ", which leaves no room for the batch dim");
  }
  if (!allocator_) allocator_ = [](const Shape& shape, DType dtype) { return raw::empty(shape, dtype, kCPU); };
  if (dataset_->has_byte_inputs() && spec_.input_dtype == DType::f32) build_byte_table();
}

void Collator::build_byte_table() {
  while (fused_ < transforms_.size() && transforms_[fused_]->pointwise()) ++fused_;
  if (fused_ == 0) return;
  // A probe "example" of 256 values per channel, [C, 256]: every byte's converted value in every channel,
  // run through the fused transforms (ping-pong) exactly as transform_batch would run a real example.
  const int64_t channels = example_channels(spec_.input_shape);
  const Shape probe{channels, 256};
  std::vector<float> a(static_cast<size_t>(channels) * 256), b(a.size());
  for (int64_t c = 0; c < channels; ++c)
    for (int v = 0; v < 256; ++v) a[c * 256 + v] = dataset_->byte_value(static_cast<uint8_t>(v));
  ExampleRng unused(0, 0);  // pointwise transforms draw nothing
  for (size_t k = 0; k < fused_; ++k) {
    transforms_[k]->apply(a.data(), probe, b.data(), unused);
    std::swap(a, b);
  }
  byte_table_ = std::move(a);
}

Tensor Collator::allocate(const Shape& example, int64_t batch, DType dtype) const {
  Shape shape = example;
  shape.insert(0, batch);
  Tensor t = allocator_(shape, dtype);
  EMBER_CHECK(t.defined() && t.shape() == shape && t.dtype() == dtype && t.is_contiguous() && t.device().is_cpu(),
              "DataLoader: the batch allocator returned ",
              t.defined() ? t.shape().str() + " " + std::string(dtype_name(t.dtype())) + " on " + t.device().str()
                          : std::string("an undefined tensor"),
              " for a request of ", shape, " ", dtype_name(dtype),
              "; it must return a contiguous host tensor of exactly that shape and dtype");
  return t;
}

Batch Collator::make(std::span<const int64_t> indices, uint64_t transform_key, Workspace& ws) const {
  const auto batch = static_cast<int64_t>(indices.size());
  Batch out{allocate(input_shape(), batch, spec_.input_dtype), allocate(spec_.target_shape, batch, spec_.target_dtype)};
  // The dataset's values (after the fused transforms, if any) into `dst`.
  const auto read = [&](const Tensor& dst) {
    if (fused_ > 0) dataset_->get_batch_bytes(indices, byte_table_, dst, out.target);
    else dataset_->get_batch(indices, dst, out.target);
  };
  if (fused_ == transforms_.size()) {  // fast path: the dataset writes straight into the batch
    read(out.input);
    return out;
  }
  if (!ws.staging.defined() || ws.staging.size(0) < batch) {
    Shape shape = spec_.input_shape;
    shape.insert(0, batch);
    ws.staging = raw::empty(shape, DType::f32, kCPU);
  }
  const Tensor staged = ws.staging.size(0) == batch ? ws.staging : raw::narrow(ws.staging, 0, 0, batch);
  read(staged);
  transform_batch(staged.data<float>(), batch, indices, transform_key, out.input.data<float>(), ws);
  return out;
}

void Collator::transform_batch(const float* staged, int64_t batch, std::span<const int64_t> indices,
                               uint64_t transform_key, float* out, Workspace& ws) const {
  int64_t largest = 0;
  for (const Shape& s : shapes_) largest = std::max(largest, s.numel());
  if (static_cast<int64_t>(ws.ping.size()) < largest) ws.ping.resize(largest), ws.pong.resize(largest);
  // The fused transforms are pointwise: they keep the shape, so the staged examples are shapes_[fused_].
  const int64_t in_numel = shapes_[fused_].numel(), out_numel = shapes_.back().numel();
  const size_t last = transforms_.size() - 1;
  for (int64_t b = 0; b < batch; ++b) {
    ExampleRng rng(transform_key, static_cast<uint64_t>(indices[b]));
    const float* src = staged + b * in_numel;
    for (size_t k = fused_; k <= last; ++k) {
      float* dst = k == last ? out + b * out_numel : (k % 2 == 0 ? ws.ping.data() : ws.pong.data());
      transforms_[k]->apply(src, shapes_[k], dst, rng);
      src = dst;
    }
  }
}

}  // namespace ember::data
