// Allocation, copies, conversion between dtypes and devices.
#include "core/raw.h"

namespace ember::raw {

namespace {

// NOTE: the byte count must not wrap around: a wrapped product would allocate a tiny buffer for a huge
// tensor, and the first write would run off its end.
size_t checked_bytes(const Shape& shape, DType dtype) {
  int64_t bytes = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t s : shape) {
    EMBER_CHECK(s >= 0, "empty: negative size in shape ", shape);
    EMBER_CHECK(!__builtin_mul_overflow(bytes, s, &bytes), "empty: a tensor of shape ", shape, " and dtype ",
                dtype_name(dtype), " needs more than 2^63 bytes; check the shape");
  }
  return static_cast<size_t>(bytes);
}

Tensor on_storage(std::shared_ptr<Storage> storage, const Shape& shape, DType dtype) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

}  // namespace

Tensor empty(const Shape& shape, DType dtype, Device device) {
  return on_storage(std::make_shared<Storage>(checked_bytes(shape, dtype), device), shape, dtype);
}

Tensor empty_pinned(const Shape& shape, DType dtype) {
  Backend& gpu = backend(Device(DeviceType::CUDA, 0));  // throws, with the reason, where CUDA is unusable
  return on_storage(std::make_shared<Storage>(checked_bytes(shape, dtype), kCPU, gpu, kPinnedHostIndex), shape, dtype);
}

Tensor clone(const Tensor& t) {
  Tensor out = empty(t.shape(), t.dtype(), t.device());
  backend(t.device()).copy(t.arg(), out.arg());
  return out;
}

Tensor contiguous(const Tensor& t) { return t.is_contiguous() ? t : clone(t); }

Tensor to(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out = empty(t.shape(), dtype, t.device());
  backend(t.device()).copy(t.arg(), out.arg());
  return out;
}

Tensor to(const Tensor& t, Device device) {
  if (t.device() == device) return t;
  const Tensor src = contiguous(t);
  Tensor out = empty(t.shape(), t.dtype(), device);
  const size_t bytes = static_cast<size_t>(t.numel()) * t.element_size();
  if (src.device().is_cpu()) {
    backend(device).copy_bytes_host(out.data_ptr(), src.data_ptr(), bytes, /*to_host=*/false, device.index);
  } else if (device.is_cpu()) {
    backend(src.device()).copy_bytes_host(src.data_ptr(), out.data_ptr(), bytes, /*to_host=*/true, src.device().index);
  } else {  // GPU to another GPU: through the host (peer copies are the CUDA backend's business)
    return to(to(src, kCPU), device);
  }
  return out;
}

void copy_(const Tensor& dst, const Tensor& src) {
  Tensor from = expand(src, dst.shape());
  if (from.shares_storage(dst)) from = clone(from);  // overlapping views: read everything before writing
  if (from.device() != dst.device()) from = to(to(from, dst.dtype()), dst.device());
  backend(dst.device()).copy(from.arg(), dst.arg());
  dst.impl().storage->bump_version();
}

void set_data(const Tensor& dst, const Tensor& src) {
  TensorImpl& d = dst.impl();
  const TensorImpl& s = src.impl();
  d.storage = s.storage;
  d.shape = s.shape;
  d.strides = s.strides;
  d.offset = s.offset;
  d.dtype = s.dtype;
}

void fill_(const Tensor& t, double value) {
  backend(t.device()).fill(t.arg(), value);
  t.impl().storage->bump_version();
}

void random_(const Tensor& t, RandomOp op, double a, double b, Generator* gen) {
  EMBER_CHECK(is_floating(t.dtype()), "random: needs a floating tensor (f32 or f64), got ", dtype_name(t.dtype()));
  Generator& g = gen != nullptr ? *gen : default_generator();
  const uint64_t offset = g.advance(static_cast<uint64_t>(t.numel()));
  if (t.is_contiguous()) {
    backend(t.device()).random(op, t.arg(), g.seed(), offset, a, b);
  } else {  // draw in row-major order, then scatter into the view
    Tensor tmp = empty(t.shape(), t.dtype(), t.device());
    backend(t.device()).random(op, tmp.arg(), g.seed(), offset, a, b);
    backend(t.device()).copy(tmp.arg(), t.arg());
  }
  t.impl().storage->bump_version();
}

}  // namespace ember::raw
