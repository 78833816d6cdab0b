// User-facing ops. Forward only for now: each computes through ember::raw. The autograd engine
// (issue "Autograd") records a Function here for inputs that require grad.
#include "autograd/ops.h"

#include "core/raw.h"

namespace ember {

Tensor scalar_for(const Tensor& like, double value, bool integral) { return raw::scalar_like(like, value, integral); }

Tensor add(const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::add, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::sub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::mul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::div, a, b); }
Tensor pow(const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::pow, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::minimum, a, b); }
Tensor eq(const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::eq, a, b); }
Tensor ne(const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::ne, a, b); }
Tensor lt(const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::lt, a, b); }
Tensor le(const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::le, a, b); }
Tensor gt(const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::gt, a, b); }
Tensor ge(const Tensor& a, const Tensor& b) { return raw::binary(BinaryOp::ge, a, b); }
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) { return raw::where(cond, a, b); }

Tensor neg(const Tensor& x) { return raw::unary(UnaryOp::neg, x); }
Tensor abs(const Tensor& x) { return raw::unary(UnaryOp::abs, x); }
Tensor sign(const Tensor& x) { return raw::unary(UnaryOp::sign, x); }
Tensor exp(const Tensor& x) { return raw::unary(UnaryOp::exp, x); }
Tensor log(const Tensor& x) { return raw::unary(UnaryOp::log, x); }
Tensor sqrt(const Tensor& x) { return raw::unary(UnaryOp::sqrt, x); }
Tensor rsqrt(const Tensor& x) { return raw::unary(UnaryOp::rsqrt, x); }
Tensor square(const Tensor& x) { return raw::unary(UnaryOp::square, x); }
Tensor tanh(const Tensor& x) { return raw::unary(UnaryOp::tanh, x); }
Tensor sigmoid(const Tensor& x) { return raw::unary(UnaryOp::sigmoid, x); }
Tensor relu(const Tensor& x) { return raw::unary(UnaryOp::relu, x); }
Tensor gelu(const Tensor& x) { return raw::unary(UnaryOp::gelu, x); }
Tensor pow(const Tensor& x, double exponent) { return raw::unary(UnaryOp::pow_scalar, x, exponent); }
Tensor clamp(const Tensor& x, double min, double max) {
  EMBER_CHECK(!(min > max), "clamp: min ", min, " is greater than max ", max);
  return raw::unary(UnaryOp::clamp, x, min, max);
}

Tensor sum(const Tensor& x) { return raw::reduce(ReduceOp::sum, x, {}, false); }
Tensor sum(const Tensor& x, const Shape& dims, bool keepdim) { return raw::reduce(ReduceOp::sum, x, dims, keepdim); }
Tensor mean(const Tensor& x) { return raw::reduce(ReduceOp::mean, x, {}, false); }
Tensor mean(const Tensor& x, const Shape& dims, bool keepdim) { return raw::reduce(ReduceOp::mean, x, dims, keepdim); }
Tensor max(const Tensor& x) { return raw::reduce(ReduceOp::max, x, {}, false); }
Tensor min(const Tensor& x) { return raw::reduce(ReduceOp::min, x, {}, false); }
Tensor amax(const Tensor& x, const Shape& dims, bool keepdim) { return raw::reduce(ReduceOp::max, x, dims, keepdim); }
Tensor amin(const Tensor& x, const Shape& dims, bool keepdim) { return raw::reduce(ReduceOp::min, x, dims, keepdim); }

std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  Tensor idx = raw::arg_reduce(ArgReduceOp::argmax, x, dim, true);
  const int d = x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), "max");
  Tensor values = x.dim() == 0 ? x : raw::gather(x, d, idx);
  if (!keepdim && x.dim() > 0) return {raw::squeeze(values, d), raw::squeeze(idx, d)};
  return {values, idx};
}

std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  Tensor idx = raw::arg_reduce(ArgReduceOp::argmin, x, dim, true);
  const int d = x.dim() == 0 ? 0 : wrap_dim(dim, x.dim(), "min");
  Tensor values = x.dim() == 0 ? x : raw::gather(x, d, idx);
  if (!keepdim && x.dim() > 0) return {raw::squeeze(values, d), raw::squeeze(idx, d)};
  return {values, idx};
}

Tensor argmax(const Tensor& x) { return raw::arg_reduce(ArgReduceOp::argmax, raw::reshape(x, {-1}), 0, false); }
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) { return raw::arg_reduce(ArgReduceOp::argmax, x, dim, keepdim); }
Tensor argmin(const Tensor& x) { return raw::arg_reduce(ArgReduceOp::argmin, raw::reshape(x, {-1}), 0, false); }
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) { return raw::arg_reduce(ArgReduceOp::argmin, x, dim, keepdim); }

Tensor matmul(const Tensor& a, const Tensor& b) { return raw::matmul(a, b); }
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) { return raw::cat(tensors, dim); }
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) { return raw::stack(tensors, dim); }
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) { return raw::index_select(x, dim, index); }
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) { return raw::gather(x, dim, index); }

// --- Tensor methods -----------------------------------------------------------------------------------
Tensor Tensor::contiguous() const { return raw::contiguous(*this); }
Tensor Tensor::clone() const { return raw::clone(*this); }
Tensor Tensor::to(Device device) const { return raw::to(*this, device); }
Tensor Tensor::to(DType dtype) const { return raw::to(*this, dtype); }

Tensor Tensor::reshape(const Shape& shape) const { return raw::reshape(*this, shape); }
Tensor Tensor::view(const Shape& shape) const { return raw::view(*this, shape); }
Tensor Tensor::permute(const Shape& dims) const { return raw::permute(*this, dims); }
Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const { return raw::transpose(*this, dim0, dim1); }
Tensor Tensor::t() const {
  EMBER_CHECK(dim() <= 2, "t(): expects a tensor with at most 2 dims, got shape ", shape(), "; use transpose()");
  return dim() < 2 ? *this : raw::transpose(*this, 0, 1);
}
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const { return raw::narrow(*this, dim, start, length); }
Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  return raw::slice(*this, dim, start, end, step);
}
Tensor Tensor::select(int64_t dim, int64_t index) const { return raw::select(*this, dim, index); }
Tensor Tensor::expand(const Shape& shape) const { return raw::expand(*this, shape); }
Tensor Tensor::squeeze() const { return raw::squeeze(*this); }
Tensor Tensor::squeeze(int64_t dim) const { return raw::squeeze(*this, dim); }
Tensor Tensor::unsqueeze(int64_t dim) const { return raw::unsqueeze(*this, dim); }
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const { return raw::flatten(*this, start_dim, end_dim); }

Tensor Tensor::neg() const { return ember::neg(*this); }
Tensor Tensor::abs() const { return ember::abs(*this); }
Tensor Tensor::exp() const { return ember::exp(*this); }
Tensor Tensor::log() const { return ember::log(*this); }
Tensor Tensor::sqrt() const { return ember::sqrt(*this); }
Tensor Tensor::tanh() const { return ember::tanh(*this); }
Tensor Tensor::sigmoid() const { return ember::sigmoid(*this); }
Tensor Tensor::relu() const { return ember::relu(*this); }
Tensor Tensor::gelu() const { return ember::gelu(*this); }
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

}  // namespace ember
