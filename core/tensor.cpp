// Tensor metadata and data access.
#include "core/tensor.h"

#include <cmath>
#include <cstring>

#include "core/raw.h"

namespace ember {

TensorImpl& Tensor::impl() const {
  EMBER_CHECK(impl_ != nullptr, "use of an undefined Tensor (default-constructed, or a grad that was never "
                                "computed); create it with a factory such as ember::zeros");
  return *impl_;
}

// NOTE: wrap_dim accepts dim 0 and -1 for a 0-d tensor (for reductions); a 0-d tensor has no size to read.
int64_t Tensor::size(int64_t dim) const {
  EMBER_CHECK(this->dim() > 0, "size(", dim, "): a 0-d tensor has no dims; its shape is []");
  return shape()[wrap_dim(dim, this->dim(), "size")];
}
int64_t Tensor::stride(int64_t dim) const {
  EMBER_CHECK(this->dim() > 0, "stride(", dim, "): a 0-d tensor has no dims; its shape is []");
  return strides()[wrap_dim(dim, this->dim(), "stride")];
}

bool Tensor::is_contiguous() const { return arg().is_contiguous(); }

void* Tensor::data_ptr() const {
  const TensorImpl& i = impl();
  return static_cast<char*>(i.storage->data()) + i.offset * static_cast<int64_t>(dtype_size(i.dtype));
}

Tensor Tensor::pin_memory() const {
  EMBER_CHECK(device().is_cpu(), "pin_memory: the tensor is on ", device(), "; only CPU tensors can be pinned");
  if (is_pinned()) return *this;
  Tensor out = raw::empty_pinned(shape(), dtype());
  raw::copy_(out, *this);
  return out;
}

bool Tensor::is_pinned() const { return impl().storage->pinned(); }

TensorArg Tensor::arg() const {
  const TensorImpl& i = impl();
  TensorArg a;
  a.data = data_ptr();
  a.dtype = i.dtype;
  a.device_index = i.storage->device().index;
  a.ndim = i.shape.size();
  for (int d = 0; d < a.ndim; ++d) {
    a.shape[d] = i.shape[d];
    a.strides[d] = i.strides[d];
  }
  return a;
}

template <typename T>
T* Tensor::data() const {
  EMBER_CHECK(dtype() == dtype_v<T>, "data<", dtype_name(dtype_v<T>), ">(): the tensor is ", dtype_name(dtype()),
              "; use data<> with its own type or convert with .to(DType)");
  EMBER_CHECK(device().is_cpu(), "data<T>(): the tensor is on ", device().str(),
              "; host pointers need a CPU tensor: call .to(kCPU) first");
  return static_cast<T*>(data_ptr());
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  const Tensor host = raw::contiguous(raw::to(raw::to(*this, kCPU), dtype_v<T>));
  const T* p = static_cast<const T*>(host.data_ptr());
  return std::vector<T>(p, p + host.numel());
}

template <typename T>
T Tensor::item() const {
  EMBER_CHECK(numel() == 1, "item(): the tensor has ", numel(), " elements (shape ", shape(),
              "); item() needs exactly one — reduce it first (e.g. .sum()) or index it");
  return to_vector<T>()[0];
}

#define EMBER_INSTANTIATE(T)                         \
  template T* Tensor::data<T>() const;               \
  template T Tensor::item<T>() const;                \
  template std::vector<T> Tensor::to_vector<T>() const;
EMBER_INSTANTIATE(bool)
EMBER_INSTANTIATE(int64_t)
EMBER_INSTANTIATE(float)
EMBER_INSTANTIATE(double)
#undef EMBER_INSTANTIATE

// In-place ops write through raw:: (autograd's version counter guards their use).
Tensor& Tensor::fill_(double value) {
  raw::fill_(*this, value);
  return *this;
}

Tensor& Tensor::copy_(const Tensor& src) {
  raw::copy_(*this, src);
  return *this;
}

Tensor& Tensor::add_(const Tensor& other) {
  raw::binary_(BinaryOp::add, *this, other);
  return *this;
}

Tensor& Tensor::mul_(double value) {
  // A whole-number factor acts as an integer scalar (like mul_(2) in PyTorch), so integer tensors accept it.
  raw::binary_(BinaryOp::mul, *this, raw::scalar_like(*this, value, std::isfinite(value) && std::nearbyint(value) == value));
  return *this;
}

Tensor& Tensor::requires_grad_(bool on) {
  EMBER_CHECK(!on || is_floating(dtype()), "requires_grad_: only floating tensors (f32, f64) can require "
                                                 "gradients; this one is ", dtype_name(dtype()));
  impl().requires_grad = on;
  return *this;
}

}  // namespace ember
