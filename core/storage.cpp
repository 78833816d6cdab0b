#include "core/storage.h"

#include "backends/backend.h"
#include "core/generator.h"
#include "core/shape.h"

namespace ember {

Storage::Storage(size_t bytes, Device device)
    : Storage(bytes, device, backend(device), device.index) {}  // even for 0 bytes: an unusable device fails here

Storage::Storage(size_t bytes, Device device, Backend& allocator, int allocator_index)
    : bytes_(bytes), device_(device), backend_(&allocator), allocator_index_(allocator_index) {
  if (bytes > 0) data_ = backend_->allocate(bytes, allocator_index);
}

Storage::~Storage() {
  if (data_ != nullptr) backend_->deallocate(data_, bytes_, allocator_index_);
}

Generator& default_generator() {
  static Generator gen;
  return gen;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

std::string Shape::str() const {
  std::string s = "[";
  for (int i = 0; i < n_; ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(d_[i]);
  }
  return s + "]";
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides = Shape::filled(shape.size(), 1);
  for (int d = shape.size() - 2; d >= 0; --d) strides[d] = strides[d + 1] * std::max<int64_t>(shape[d + 1], 1);
  return strides;
}

int wrap_dim(int64_t dim, int ndim, const char* op) {
  const int64_t n = std::max(ndim, 1);  // a 0-d tensor accepts dim 0 and -1, as in PyTorch
  EMBER_CHECK(dim >= -n && dim < n, op, ": dim ", dim, " is out of range for a tensor with ", ndim,
              " dims (valid: ", -n, " to ", n - 1, ")");
  return static_cast<int>(dim < 0 ? dim + n : dim);
}

}  // namespace ember
