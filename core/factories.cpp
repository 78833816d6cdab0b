// Factories: new tensors from sizes, values or random draws.
#include <cmath>

#include "core/raw.h"

namespace ember {
namespace {

Tensor finish(Tensor t, const TensorOptions& options) {
  if (options.requires_grad) t.requires_grad_(true);
  return t;
}

}  // namespace

Tensor empty(const Shape& shape, TensorOptions options) {
  return finish(raw::empty(shape, options.dtype, options.device), options);
}

Tensor full(const Shape& shape, double value, TensorOptions options) {
  Tensor t = raw::empty(shape, options.dtype, options.device);
  backend(options.device).fill(t.arg(), value);
  return finish(t, options);
}

Tensor zeros(const Shape& shape, TensorOptions options) { return full(shape, 0.0, options); }
Tensor ones(const Shape& shape, TensorOptions options) { return full(shape, 1.0, options); }
Tensor scalar_tensor(double value, TensorOptions options) { return full({}, value, options); }

Tensor arange(double end, TensorOptions options) { return arange(0, end, 1, options); }

Tensor arange(double start, double end, TensorOptions options) { return arange(start, end, 1, options); }

Tensor arange(double start, double end, double step, TensorOptions options) {
  EMBER_CHECK(options.dtype != DType::b8, "arange: not defined for bool; use i64, f32 or f64");
  EMBER_CHECK(std::isfinite(start) && std::isfinite(end), "arange: start and end must be finite");
  if (options.dtype == DType::i64) {  // PyTorch converts the arguments to the integer type first
    start = std::trunc(start), end = std::trunc(end), step = std::trunc(step);
  }
  EMBER_CHECK(step != 0, "arange: step must be nonzero");
  EMBER_CHECK((end - start) / step >= 0, "arange: the range [", start, ", ", end, ") is empty or reversed for step ",
              step);
  const auto n = static_cast<int64_t>(std::ceil((end - start) / step));
  // Computed on the host in f64 (exact for integers up to 2^53), then converted and moved.
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[i] = start + static_cast<double>(i) * step;
  return finish(raw::to(raw::to(from_vector(values, {n}), options.dtype), options.device), options);
}

Tensor rand(const Shape& shape, TensorOptions options, Generator* gen) {
  Tensor t = raw::empty(shape, options.dtype, options.device);
  raw::random_(t, RandomOp::uniform, 0.0, 1.0, gen);
  return finish(t, options);
}

Tensor randn(const Shape& shape, TensorOptions options, Generator* gen) {
  Tensor t = raw::empty(shape, options.dtype, options.device);
  raw::random_(t, RandomOp::normal, 0.0, 1.0, gen);
  return finish(t, options);
}

template <typename T>
Tensor from_data(const T* data, const Shape& shape, TensorOptions options) {
  Tensor host = raw::empty(shape, dtype_v<T>, kCPU);
  if (shape.numel() > 0) std::copy(data, data + shape.numel(), static_cast<T*>(host.data_ptr()));
  return finish(raw::to(raw::to(host, options.dtype), options.device), options);
}

template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, TensorOptions options) {
  EMBER_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), "from_vector: ", values.size(),
              " values do not fill shape ", shape, " (", shape.numel(), " elements)");
  if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> is packed: unpack first
    std::vector<uint8_t> bytes(values.begin(), values.end());
    Tensor host = raw::empty(shape, DType::b8, kCPU);
    std::copy(bytes.begin(), bytes.end(), static_cast<uint8_t*>(host.data_ptr()));
    return finish(raw::to(raw::to(host, options.dtype), options.device), options);
  } else {
    return from_data(values.data(), shape, options);
  }
}

#define EMBER_INSTANTIATE(T)                                                              \
  template Tensor from_vector<T>(const std::vector<T>&, const Shape&, TensorOptions); \
  template Tensor from_data<T>(const T*, const Shape&, TensorOptions);
EMBER_INSTANTIATE(int64_t)
EMBER_INSTANTIATE(float)
EMBER_INSTANTIATE(double)
#undef EMBER_INSTANTIATE
template Tensor from_vector<bool>(const std::vector<bool>&, const Shape&, TensorOptions);

Tensor empty_like(const Tensor& t) { return empty(t.shape(), {.dtype = t.dtype(), .device = t.device()}); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), {.dtype = t.dtype(), .device = t.device()}); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), {.dtype = t.dtype(), .device = t.device()}); }
Tensor full_like(const Tensor& t, double value) {
  return full(t.shape(), value, {.dtype = t.dtype(), .device = t.device()});
}
Tensor rand_like(const Tensor& t, Generator* gen) {
  return rand(t.shape(), {.dtype = t.dtype(), .device = t.device()}, gen);
}
Tensor randn_like(const Tensor& t, Generator* gen) {
  return randn(t.shape(), {.dtype = t.dtype(), .device = t.device()}, gen);
}

}  // namespace ember
