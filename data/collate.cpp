#include "data/collate.h"

#include <cstring>
#include <map>
#include <string>

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
  variable_ = dataset_->variable_input_shape();
  if (variable_) check_variable_shapes();
  else if (dataset_->has_byte_inputs() && spec_.input_dtype == DType::f32) build_byte_table();
}

std::string Collator::transform_names() const {
  std::string names;
  for (const AnyTransform& t : transforms_) names += (names.empty() ? "" : ", ") + t->name();
  return names.empty() ? "no transforms" : names;
}

// Every distinct input shape through the transforms: each must come out as example 0 does (shapes_.back()).
void Collator::check_variable_shapes() const {
  std::map<std::string, int64_t> seen;  // shape → its first example
  const int64_t n = dataset_->size();
  for (int64_t i = 0; i < n; ++i) {
    const Shape in = dataset_->input_shape(i);
    if (!seen.emplace(in.str(), i).second) continue;
    Shape s = in;
    for (const AnyTransform& t : transforms_) {
      try {
        s = t->output_shape(s);
      } catch (const Error& e) {
        detail::throw_error("DataLoader: ", dataset_->describe(i), " (input ", in, "): ", e.what());
      }
    }
    EMBER_CHECK(s == shapes_.back(), "DataLoader: the examples differ in size and the transforms (", transform_names(),
                ") do not bring them to one: ", dataset_->describe(0), " (input ", shapes_.front(), ") comes out ",
                shapes_.back(), ", but ", dataset_->describe(i), " (input ", in, ") comes out ", s,
                "; a batch stacks examples of one size (PyTorch: \"stack expects each tensor to be equal size\"): add a "
                "transform that outputs a fixed size (a resize or a crop) or make the images one size");
  }
}

void Collator::make_variable(std::span<const int64_t> indices, uint64_t transform_key, const Batch& out,
                             Workspace& ws) const {
  const int64_t out_numel = input_shape().numel();
  const int64_t target_numel = spec_.target_shape.numel();
  const size_t target_bytes = static_cast<size_t>(target_numel) * dtype_size(spec_.target_dtype);
  auto* targets = static_cast<uint8_t*>(out.target.data_ptr());
  for (size_t b = 0; b < indices.size(); ++b) {
    const int64_t index = indices[b];
    const Example ex = dataset_->get(index);
    const Tensor in = ex.input.is_contiguous() ? ex.input : ex.input.contiguous();
    const Tensor tg = ex.target.is_contiguous() ? ex.target : ex.target.contiguous();
    EMBER_CHECK(in.dtype() == spec_.input_dtype && tg.dtype() == spec_.target_dtype && tg.shape() == spec_.target_shape,
                "DataLoader: ", dataset_->describe(index), " has input ", dtype_name(in.dtype()), " and target ",
                tg.shape(), " ", dtype_name(tg.dtype()), "; the dataset's examples are ", dtype_name(spec_.input_dtype),
                " with targets ", spec_.target_shape, " ", dtype_name(spec_.target_dtype));
    std::memcpy(targets + b * target_bytes, tg.data_ptr(), target_bytes);
    Shape shape = in.shape();
    if (transforms_.empty()) {
      EMBER_CHECK(shape == input_shape(), "DataLoader: ", dataset_->describe(index), " is ", shape,
                  ", but the batch's examples are ", input_shape(), " (no transforms bring them to one size)");
      const size_t bytes = static_cast<size_t>(out_numel) * in.element_size();
      std::memcpy(static_cast<uint8_t*>(out.input.data_ptr()) + b * bytes, in.data_ptr(), bytes);
      continue;
    }
    float* dst = out.input.data<float>() + static_cast<int64_t>(b) * out_numel;
    // Ping-pong through the transforms at this example's shapes.
    ExampleRng rng(transform_key, static_cast<uint64_t>(index));
    const float* src = in.data<float>();
    for (size_t k = 0; k < transforms_.size(); ++k) {
      const Shape next = transforms_[k]->output_shape(shape);
      const bool last = k + 1 == transforms_.size();
      std::vector<float>& buf = k % 2 == 0 ? ws.ping : ws.pong;
      if (last) {
        EMBER_CHECK(next == input_shape(), "DataLoader: ", dataset_->describe(index), " (input ", in.shape(),
                    ") comes out of the transforms (", transform_names(), ") as ", next, ", but the batch's examples are ",
                    input_shape(), "; add a transform that outputs a fixed size (a resize or a crop)");
      } else if (static_cast<int64_t>(buf.size()) < next.numel()) {
        buf.resize(static_cast<size_t>(next.numel()));
      }
      float* to = last ? dst : buf.data();
      transforms_[k]->apply(src, shape, to, rng);
      src = to;
      shape = next;
    }
  }
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
  if (variable_) {
    make_variable(indices, transform_key, out, ws);
    return out;
  }
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
