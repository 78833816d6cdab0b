// Views and conversions (the Tensor methods) and their gradients. A view's gradient is the inverse
// movement: reshape back, permute back, sum over expanded dims, or write into zeros at the viewed part.
#include <numeric>

#include "autograd/node.h"
#include "autograd/ops.h"
#include "core/raw.h"

namespace ember {
namespace {

using autograd::make_node;
using autograd::set_history;

// reshape, view, flatten, squeeze, unsqueeze: same elements in the same order.
struct ReshapeBackward : autograd::Node {
  std::string_view name() const override { return "reshape"; }
  void backward(const Tensor& g, Tensor* grad_inputs) override { grad_inputs[0] = g.reshape(next[0].shape); }
};

// permute and transpose: permute back with the inverse permutation.
struct PermuteBackward : autograd::Node {
  Shape inverse;
  std::string_view name() const override { return "permute"; }
  void backward(const Tensor& g, Tensor* grad_inputs) override { grad_inputs[0] = g.permute(inverse); }
};

// expand: every broadcast copy contributes, so sum them.
struct ExpandBackward : autograd::Node {
  std::string_view name() const override { return "expand"; }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    grad_inputs[0] = autograd::sum_to(g, next[0].shape);
  }
};

// narrow, slice, select: zeros of the input's shape with the gradient written into the same view.
struct SubviewBackward : autograd::Node {
  enum class Kind : uint8_t { slice, select } kind = Kind::slice;
  int dim = 0;
  int64_t start = 0, end = 0, step = 1;  // slice; select uses start as the index
  std::string_view name() const override { return kind == Kind::slice ? "slice" : "select"; }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    Tensor grad = zeros(next[0].shape, {.dtype = g.dtype(), .device = g.device()});
    const Tensor part = kind == Kind::slice ? raw::slice(grad, dim, start, end, step) : raw::select(grad, dim, start);
    raw::copy_(part, g);
    grad_inputs[0] = grad;
  }
};

// contiguous, clone, to(dtype), to(device): the gradient goes back unchanged, in the input's dtype and
// on the input's device.
struct ConvertBackward : autograd::Node {
  Device device;
  std::string_view name() const override { return "copy"; }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    grad_inputs[0] = g.to(device).to(next[0].dtype);
  }
};

// Records `node` for `out` = view/copy of `x`, when a graph is needed.
template <typename F>
Tensor record(const Tensor& x, Tensor out) {
  if (auto node = make_node<F>(x)) set_history(out, std::move(node));
  return out;
}

Tensor subview(const Tensor& x, Tensor out, SubviewBackward::Kind kind, int64_t dim, int64_t start, int64_t end,
               int64_t step) {
  if (auto node = make_node<SubviewBackward>(x)) {
    node->kind = kind;
    node->dim = wrap_dim(dim, x.dim(), node->name().data());
    node->start = start, node->end = end, node->step = step;
    set_history(out, std::move(node));
  }
  return out;
}

Tensor convert(const Tensor& x, Tensor out) {
  // No node when nothing was converted (out is x itself) or the result cannot carry a gradient.
  if (out.impl_ptr() == x.impl_ptr() || !is_floating(out.dtype())) return out;
  if (auto node = make_node<ConvertBackward>(x)) {
    node->device = x.device();
    set_history(out, std::move(node));
  }
  return out;
}

}  // namespace

Tensor Tensor::contiguous() const { return convert(*this, raw::contiguous(*this)); }
Tensor Tensor::clone() const { return convert(*this, raw::clone(*this)); }
Tensor Tensor::to(Device device) const { return convert(*this, raw::to(*this, device)); }
Tensor Tensor::to(DType dtype) const { return convert(*this, raw::to(*this, dtype)); }

Tensor Tensor::reshape(const Shape& shape) const { return record<ReshapeBackward>(*this, raw::reshape(*this, shape)); }
Tensor Tensor::view(const Shape& shape) const { return record<ReshapeBackward>(*this, raw::view(*this, shape)); }
Tensor Tensor::squeeze() const { return record<ReshapeBackward>(*this, raw::squeeze(*this)); }
Tensor Tensor::squeeze(int64_t dim) const { return record<ReshapeBackward>(*this, raw::squeeze(*this, dim)); }
Tensor Tensor::unsqueeze(int64_t dim) const { return record<ReshapeBackward>(*this, raw::unsqueeze(*this, dim)); }
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  return record<ReshapeBackward>(*this, raw::flatten(*this, start_dim, end_dim));
}
Tensor Tensor::expand(const Shape& shape) const { return record<ExpandBackward>(*this, raw::expand(*this, shape)); }

Tensor Tensor::permute(const Shape& dims) const {
  Tensor out = raw::permute(*this, dims);
  if (auto node = make_node<PermuteBackward>(*this)) {
    node->inverse = Shape::filled(dim(), 0);
    for (int i = 0; i < dim(); ++i) node->inverse[wrap_dim(dims[i], dim(), "permute")] = i;
    set_history(out, std::move(node));
  }
  return out;
}

Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const {
  Tensor out = raw::transpose(*this, dim0, dim1);
  if (auto node = make_node<PermuteBackward>(*this)) {
    node->inverse = Shape::filled(dim(), 0);
    std::iota(node->inverse.begin(), node->inverse.end(), 0);
    if (dim() > 0) std::swap(node->inverse[wrap_dim(dim0, dim(), "transpose")], node->inverse[wrap_dim(dim1, dim(), "transpose")]);
    set_history(out, std::move(node));  // a swap is its own inverse
  }
  return out;
}

Tensor Tensor::t() const {
  EMBER_CHECK(dim() <= 2, "t(): expects a tensor with at most 2 dims, got shape ", shape(), "; use transpose()");
  return dim() < 2 ? *this : transpose(0, 1);
}

Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  Tensor out = raw::narrow(*this, dim, start, length);
  if (start < 0) start += size(dim);
  return subview(*this, out, SubviewBackward::Kind::slice, dim, start, start + length, 1);
}
Tensor Tensor::slice(int64_t dim, int64_t start, int64_t end, int64_t step) const {
  return subview(*this, raw::slice(*this, dim, start, end, step), SubviewBackward::Kind::slice, dim, start, end, step);
}
Tensor Tensor::select(int64_t dim, int64_t index) const {
  return subview(*this, raw::select(*this, dim, index), SubviewBackward::Kind::select, dim, index, 0, 1);
}

}  // namespace ember
