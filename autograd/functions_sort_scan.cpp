// cumsum, sort, argsort and topk, and their gradients: cumsum's is the reversed running sum of the output
// gradient (the backend's reverse scan, no flip copies); sort's and topk's values send each gradient back
// to the position their indices name (a scatter); the indices carry none.
#include <algorithm>

#include "autograd/node.h"
#include "autograd/ops.h"
#include "core/raw.h"

namespace ember {
namespace {

struct CumsumBackward : autograd::Node {
  int dim = 0;
  std::string_view name() const override { return "cumsum"; }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    grad_inputs[0] = raw::cumsum(g, dim, /*reverse=*/true);
  }
};

// sort and topk: grad_x = zeros with g added at the indices (distinct within a row: a scatter).
struct SortBackward : autograd::Node {
  int dim = 0;
  bool topk = false;
  autograd::SavedTensor indices;
  std::string_view name() const override { return topk ? "topk" : "sort"; }
  void release() override { indices.release(); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Shape& shape = next[0].shape;
    if (shape.empty()) {  // a 0-d input is its own sort
      grad_inputs[0] = g.reshape({});
      return;
    }
    grad_inputs[0] = raw::scatter_add(shape, dim, indices.unpack(*this), g);
  }
};

std::tuple<Tensor, Tensor> sort_impl(const Tensor& x, int64_t dim, bool descending, int64_t k, bool is_topk) {
  const char* name = is_topk ? "topk" : "sort";
  const int d = wrap_dim(dim, x.dim(), name);
  const int64_t n = x.dim() == 0 ? 1 : x.shape()[d];
  EMBER_CHECK(!is_topk || (k >= 0 && k <= n), "topk: k = ", k, " is out of range for dim ", d, " of size ", n,
              " (shape ", x.shape(), "); k must be in [0, ", n, "]");
  auto [values, indices] = raw::sort(x, d, descending);
  if (is_topk) {
    // A 0-d input is returned whole for k = 0 as for k = 1 (as PyTorch 1.13).
    if (x.dim() > 0 && k < n) {
      values = raw::contiguous(raw::narrow(values, d, 0, k));
      indices = raw::contiguous(raw::narrow(indices, d, 0, k));
    }
  }
  if (auto node = autograd::make_node<SortBackward>(x)) {
    node->dim = d;
    node->topk = is_topk;
    node->indices.save(indices);
    autograd::set_history(values, std::move(node));
  }
  return {values, indices};
}

}  // namespace

Tensor cumsum(const Tensor& x, int64_t dim) {
  Tensor out = raw::cumsum(x, dim);
  if (auto node = autograd::make_node<CumsumBackward>(x)) {
    node->dim = wrap_dim(dim, x.dim(), "cumsum");
    autograd::set_history(out, std::move(node));
  }
  return out;
}

std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool /*stable: always*/) {
  return sort_impl(x, dim, descending, 0, false);
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending, bool /*stable: always*/) {
  return std::get<1>(raw::sort(x, dim, descending));
}

std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest, bool /*sorted: always*/) {
  return sort_impl(x, dim, largest, k, true);
}

}  // namespace ember
