// matmul, cat/stack, index_select/gather and their gradients.
#include "autograd/node.h"
#include "autograd/ops.h"
#include "core/raw.h"

namespace ember {
namespace {

using autograd::make_node, autograd::SavedTensor, autograd::set_history, autograd::sum_to;

// out = a @ b (torch.matmul). With A, B, G the operands and the gradient seen as matrices (a 1-D a is a
// row [1, K], a 1-D b a column [K, 1]): dA = G @ Bᵀ, dB = Aᵀ @ G, each summed over broadcast batch dims.
struct MatmulBackward : autograd::Node {
  SavedTensor a, b;  // b when a needs a gradient, a when b does
  bool b_transposed = false;  // b is a column-major matrix
  std::string_view name() const override { return "matmul"; }
  void release() override { release_all(a, b); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const bool a_vec = needs_grad(0) ? next[0].shape.size() == 1 : a.unpack(*this).dim() == 1;
    const bool b_vec = needs_grad(1) ? next[1].shape.size() == 1 : b.unpack(*this).dim() == 1;
    Tensor G = g;  // [..., M, N]
    if (b_vec) G = G.unsqueeze(-1);
    if (a_vec) G = G.unsqueeze(-2);
    if (needs_grad(0)) {
      Tensor B = b.unpack(*this);
      if (b_vec) B = B.unsqueeze(1);
      const Shape& shape = next[0].shape;
      const Tensor ga = matmul(G, B.transpose(-1, -2));  // [..., M, K]
      grad_inputs[0] = a_vec ? sum_to(ga, {1, shape[0]}).reshape(shape) : sum_to(ga, shape);
    }
    if (needs_grad(1)) {
      Tensor A = a.unpack(*this);
      if (a_vec) A = A.unsqueeze(0);
      const Shape& shape = next[1].shape;
      const int64_t K = A.size(-1), N = G.size(-1);
      Tensor gb;  // [..., K, N]
      if (shape.size() == 2) {  // b one matrix: a's batch dims fold into rows, one GEMM
        const Tensor A2 = A.dim() > 2 ? A.reshape({-1, K}) : A, G2 = G.dim() > 2 ? G.reshape({-1, N}) : G;
        // b a transposed matrix (x @ W.t(), as Linear does): compute dB transposed, (G2ᵀ @ A2)ᵀ, so that
        // the gradient reaching W through t() is contiguous and lands in W.grad without a copy.
        gb = b_transposed ? matmul(G2.t(), A2).t() : matmul(A2.t(), G2);
      } else {
        gb = matmul(A.transpose(-1, -2), G);
      }
      grad_inputs[1] = b_vec ? sum_to(gb, {shape[0], 1}).reshape(shape) : sum_to(gb, shape);
    }
  }
};

// cat and stack: each input gets its slice of the gradient (stack: its index along the new dim).
struct CatBackward : autograd::Node {
  int dim = 0;
  bool stacked = false;        // stack: input i is index i along dim, with dim removed
  std::vector<int64_t> sizes;  // cat: each input's size along dim
  std::string_view name() const override { return stacked ? "stack" : "cat"; }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    int64_t offset = 0;
    for (size_t i = 0; i < next.size(); ++i) {
      const int64_t size = stacked ? 1 : sizes[i];
      if (needs_grad(i)) grad_inputs[i] = stacked ? g.select(dim, offset) : g.narrow(dim, offset, size);
      offset += size;
    }
  }
};

// out (raw::cat or raw::stack of tensors) with its history.
Tensor with_cat_history(Tensor out, const std::vector<Tensor>& tensors, int64_t dim, bool stacked) {
  if (auto node = make_node<CatBackward>(tensors)) {
    node->dim = wrap_dim(dim, out.dim(), stacked ? "stack" : "cat");
    node->stacked = stacked;
    if (!stacked)
      for (const Tensor& t : tensors) node->sizes.push_back(t.size(node->dim));
    set_history(out, std::move(node));
  }
  return out;
}

// index_select and gather: the gradient is scattered back (added: an index may repeat).
struct IndexBackward : autograd::Node {
  int dim = 0;
  bool select = false;  // index_select (1-D index along dim) rather than gather
  SavedTensor index;
  std::string_view name() const override { return select ? "index_select" : "gather"; }
  void release() override { index.release(); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Shape& shape = next[0].shape;
    if (shape.empty()) {  // a 0-d input: the only valid index is 0
      grad_inputs[0] = g.reshape(shape);
      return;
    }
    Tensor idx = index.unpack(*this);
    if (select) {  // the 1-D index seen with the gradient's shape: stride 0 but along dim
      Shape strides = Shape::filled(g.dim(), 0);
      strides[dim] = idx.dim() == 1 ? idx.stride(0) : 0;
      idx = raw::as_strided(idx, g.shape(), strides, idx.offset());
    }
    grad_inputs[0] = raw::scatter_add(shape, dim, idx, g);
  }
};

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  Tensor out = raw::matmul(a, b);
  if (auto node = make_node<MatmulBackward>(a, b)) {
    if (node->needs_grad(0)) node->b.save(b);
    if (node->needs_grad(1)) node->a.save(a);
    node->b_transposed = b.dim() == 2 && b.stride(0) == 1 && b.size(1) > 1 && b.stride(1) != 1;
    set_history(out, std::move(node));
  }
  return out;
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  return with_cat_history(raw::cat(tensors, dim), tensors, dim, false);
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  return with_cat_history(raw::stack(tensors, dim), tensors, dim, true);
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  Tensor out = raw::index_select(x, dim, index);
  if (auto node = make_node<IndexBackward>(x)) {
    node->dim = wrap_dim(dim, x.dim(), "index_select");
    node->select = true;
    node->index.save(index);
    set_history(out, std::move(node));
  }
  return out;
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  Tensor out = raw::gather(x, dim, index);
  if (auto node = make_node<IndexBackward>(x)) {
    node->dim = wrap_dim(dim, x.dim(), "gather");
    node->index.save(index);
    set_history(out, std::move(node));
  }
  return out;
}

}  // namespace ember
