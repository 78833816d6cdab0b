// The Tensor math methods (each forwards to the free function of the same name) and scalar_for.
// The ops themselves, with their gradients, live in autograd/functions_*.cpp by family.
#include "autograd/ops.h"

#include "core/raw.h"

namespace ember {

Tensor scalar_for(const Tensor& like, double value, bool integral) { return raw::scalar_like(like, value, integral); }

#define EMBER_X(name, ...) \
  Tensor Tensor::name() const { return ember::name(*this); }
EMBER_UNARY_OPS_PUBLIC(EMBER_X)
#undef EMBER_X
#define EMBER_X(name, ...) \
  Tensor Tensor::name(const Tensor& other) const { return ember::name(*this, other); }
EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X
Tensor Tensor::gelu(std::string_view approximate) const { return ember::gelu(*this, approximate); }
Tensor Tensor::pow(double exponent) const { return ember::pow(*this, exponent); }
Tensor Tensor::clamp(double min, double max) const { return ember::clamp(*this, min, max); }
Tensor Tensor::sum() const { return ember::sum(*this); }
Tensor Tensor::sum(const Shape& dims, bool keepdim) const { return ember::sum(*this, dims, keepdim); }
Tensor Tensor::mean() const { return ember::mean(*this); }
Tensor Tensor::mean(const Shape& dims, bool keepdim) const { return ember::mean(*this, dims, keepdim); }
Tensor Tensor::max() const { return ember::max(*this); }
Tensor Tensor::min() const { return ember::min(*this); }
Tensor Tensor::argmax(int64_t dim, bool keepdim) const { return ember::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin(int64_t dim, bool keepdim) const { return ember::argmin(*this, dim, keepdim); }
Tensor Tensor::matmul(const Tensor& other) const { return ember::matmul(*this, other); }

// --- masking, indexing, repeating (autograd/functions_indexing.cpp) ---------------------------------------
Tensor Tensor::masked_fill(const Tensor& mask, double value) const { return ember::masked_fill(*this, mask, value); }
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& value) const {
  return ember::masked_fill(*this, mask, value);
}
Tensor Tensor::tril(int64_t diagonal) const { return ember::tril(*this, diagonal); }
Tensor Tensor::triu(int64_t diagonal) const { return ember::triu(*this, diagonal); }
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  return ember::scatter(*this, dim, index, src);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, double value) const {
  return ember::scatter(*this, dim, index, value);
}
Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& source, double alpha) const {
  return ember::index_add(*this, dim, index, source, alpha);
}
Tensor Tensor::repeat(const Shape& sizes) const { return ember::repeat(*this, sizes); }
Tensor Tensor::flip(const Shape& dims) const { return ember::flip(*this, dims); }
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const { return ember::chunk(*this, chunks, dim); }
std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const {
  return ember::split(*this, split_size, dim);
}
std::vector<Tensor> Tensor::split(const std::vector<int64_t>& split_sizes, int64_t dim) const {
  return ember::split(*this, split_sizes, dim);
}
std::vector<Tensor> Tensor::unbind(int64_t dim) const { return ember::unbind(*this, dim); }

}  // namespace ember

// --- reductions, round 2 ------------------------------------------------------------------------------
namespace ember {

std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const { return ember::max(*this, dim, keepdim); }
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const { return ember::min(*this, dim, keepdim); }
Tensor Tensor::amax(const Shape& dims, bool keepdim) const { return ember::amax(*this, dims, keepdim); }
Tensor Tensor::amin(const Shape& dims, bool keepdim) const { return ember::amin(*this, dims, keepdim); }
Tensor Tensor::argmax() const { return ember::argmax(*this); }
Tensor Tensor::argmin() const { return ember::argmin(*this); }
Tensor Tensor::var() const { return ember::var(*this); }
Tensor Tensor::var(const Shape& dims, int64_t correction, bool keepdim) const {
  return ember::var(*this, dims, correction, keepdim);
}
Tensor Tensor::std() const { return ember::std(*this); }
Tensor Tensor::std(const Shape& dims, int64_t correction, bool keepdim) const {
  return ember::std(*this, dims, correction, keepdim);
}
Tensor Tensor::logsumexp(const Shape& dims, bool keepdim) const { return ember::logsumexp(*this, dims, keepdim); }
Tensor Tensor::cumsum(int64_t dim) const { return ember::cumsum(*this, dim); }
std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending, bool stable) const {
  return ember::sort(*this, dim, descending, stable);
}
Tensor Tensor::argsort(int64_t dim, bool descending, bool stable) const {
  return ember::argsort(*this, dim, descending, stable);
}
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return ember::topk(*this, k, dim, largest, sorted);
}
Tensor Tensor::softmax(int64_t dim) const { return ember::softmax(*this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return ember::log_softmax(*this, dim); }

}  // namespace ember
