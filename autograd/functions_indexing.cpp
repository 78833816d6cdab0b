// masked_fill, tril/triu, one_hot, scatter, index_add, repeat, flip, chunk/split/unbind, multinomial, and
// their gradients. masked_fill and tril/triu are `where` with a mask, repeat is expand + reshape, and
// chunk/split/unbind are narrow/select views: their gradients are those ops' own.
#include <cmath>

#include "autograd/node.h"
#include "autograd/ops.h"
#include "core/raw.h"

namespace ember {
namespace {

using autograd::make_node;
using autograd::SavedTensor;
using autograd::set_history;

Tensor zero_scalar(const Tensor& like) { return full({}, 0.0, {.dtype = like.dtype(), .device = like.device()}); }

// A 0-d tensor of like's dtype and device holding value; an i64 tensor refuses a value it cannot hold (as
// PyTorch: "value cannot be converted to type int64_t without overflow").
Tensor value_like(const Tensor& like, double value, const char* op) {
  EMBER_CHECK(like.dtype() != DType::i64 || (std::isfinite(value) && std::abs(value) < 9.2233720368547758e18), op,
              ": the value ", value, " cannot be converted to i64 without overflow");
  return full({}, value, {.dtype = like.dtype(), .device = like.device()});
}

Tensor triangle(const Tensor& x, int64_t diagonal, bool lower) {
  const char* op = lower ? "tril" : "triu";
  EMBER_CHECK(x.dim() >= 2, op, ": needs a matrix or a batch of matrices (at least 2 dims), got shape ", x.shape());
  const Tensor mask = raw::triangle_mask(x.size(-2), x.size(-1), diagonal, lower, x.device());
  return where(mask, x, zero_scalar(x));
}

// scatter: x's gradient is g with the written positions zeroed (they were overwritten); src's is g read back
// at the index (zeros where src was not read, outside the index's shape).
struct ScatterBackward : autograd::Node {
  int dim = 0;
  SavedTensor index;
  std::string_view name() const override { return "scatter"; }
  void release() override { index.release(); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Tensor idx = index.unpack(*this);
    if (needs_grad(0)) grad_inputs[0] = raw::scatter(g, dim, idx, raw::expand(zero_scalar(g), idx.shape()));
    if (next.size() > 1 && needs_grad(1)) {
      const Tensor picked = raw::gather(g, dim, idx);
      const Shape& shape = next[1].shape;
      if (shape == idx.shape()) {
        grad_inputs[1] = picked;
      } else {
        Tensor grad = zeros(shape, {.dtype = g.dtype(), .device = g.device()});
        raw::copy_(raw::as_strided(grad, idx.shape(), grad.strides(), grad.offset()), picked);
        grad_inputs[1] = grad;
      }
    }
  }
};

// index_add: x's gradient is g; source's is alpha · g at the index along dim.
struct IndexAddBackward : autograd::Node {
  int dim = 0;
  double alpha = 1;
  SavedTensor index;
  std::string_view name() const override { return "index_add"; }
  void release() override { index.release(); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    if (needs_grad(0)) grad_inputs[0] = g;
    if (needs_grad(1)) {
      const Tensor G = g.dim() == 0 ? g.reshape({1}) : g;
      Tensor picked = raw::index_select(G, dim, index.unpack(*this));
      if (alpha != 1) picked = picked * alpha;
      grad_inputs[1] = picked.reshape(next[1].shape);
    }
  }
};

// flip is its own inverse.
struct FlipBackward : autograd::Node {
  Shape dims;
  std::string_view name() const override { return "flip"; }
  void backward(const Tensor& g, Tensor* grad_inputs) override { grad_inputs[0] = raw::flip(g, dims); }
};

}  // namespace

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  return masked_fill(x, mask, value_like(x, value, "masked_fill"));
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value) {
  raw::check_same_device(x, mask, "masked_fill");
  EMBER_CHECK(mask.dtype() == DType::b8, "masked_fill: the mask must be a bool tensor (e.g. from x > 0), got ",
              dtype_name(mask.dtype()));
  EMBER_CHECK(value.dim() == 0, "masked_fill: the value must be a 0-d tensor (or a number), got shape ",
              value.shape());
  raw::broadcast_shapes(x.shape(), mask.shape(), "masked_fill");
  // The value joins x's device and dtype first (a 0-d CPU value may fill a GPU tensor, as in PyTorch).
  return where(mask, value.to(x.device()).to(x.dtype()), x);
}

Tensor tril(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, true); }
Tensor triu(const Tensor& x, int64_t diagonal) { return triangle(x, diagonal, false); }

Tensor one_hot(const Tensor& indices, int64_t num_classes) {
  EMBER_CHECK(indices.dtype() == DType::i64, "one_hot: the indices must be i64 class indices, got ",
              dtype_name(indices.dtype()));
  EMBER_CHECK(num_classes >= -1, "one_hot: num_classes must be -1 (infer) or non-negative, got ", num_classes);
  if (indices.numel() == 0) {
    EMBER_CHECK(num_classes != -1, "one_hot: cannot infer the number of classes from an empty tensor; pass "
                "num_classes");
  } else {
    const int64_t lo = raw::reduce(ReduceOp::min, indices, {}, false).item<int64_t>();
    const int64_t hi = raw::reduce(ReduceOp::max, indices, {}, false).item<int64_t>();
    EMBER_CHECK(lo >= 0, "one_hot: class values must be non-negative, got ", lo);
    if (num_classes == -1) num_classes = hi + 1;
    EMBER_CHECK(hi < num_classes, "one_hot: class value ", hi, " is not smaller than num_classes = ", num_classes);
  }
  const Tensor classes = arange(int64_t{0}, num_classes, int64_t{1}, {.dtype = DType::i64, .device = indices.device()});
  return raw::to(raw::binary(BinaryOp::eq, raw::unsqueeze(indices, -1), classes), DType::i64);
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = raw::scatter(x, dim, index, src);
  if (auto node = make_node<ScatterBackward>(x, src)) {
    node->dim = wrap_dim(dim, x.dim(), "scatter");
    node->index.save(index);
    set_history(out, std::move(node));
  }
  return out;
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, double value) {
  const Tensor src = raw::expand(value_like(x, value, "scatter"), index.shape());
  Tensor out = raw::scatter(x, dim, index, src);
  if (auto node = make_node<ScatterBackward>(x)) {
    node->dim = wrap_dim(dim, x.dim(), "scatter");
    node->index.save(index);
    set_history(out, std::move(node));
  }
  return out;
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, double alpha) {
  Tensor out = raw::index_add(x, dim, index, source, alpha);
  if (auto node = make_node<IndexAddBackward>(x, source)) {
    node->dim = wrap_dim(dim, x.dim(), "index_add");
    node->alpha = alpha;
    node->index.save(index);
    set_history(out, std::move(node));
  }
  return out;
}

Tensor repeat(const Tensor& x, const Shape& sizes) {
  EMBER_CHECK(sizes.size() >= x.dim(), "repeat: ", sizes.size(), " repeat sizes ", sizes,
              " for a tensor with ", x.dim(), " dims (shape ", x.shape(), "); give at least one per dim");
  for (const int64_t r : sizes)
    EMBER_CHECK(r >= 0, "repeat: the repeat sizes must be non-negative, got ", sizes);
  // x as [1, s0, 1, s1, ...] (leading dims of size 1 added), expanded to [r0, s0, r1, s1, ...], then merged.
  const int n = sizes.size(), lead = n - x.dim();
  Shape paired, expanded, merged;
  for (int d = 0; d < n; ++d) {
    const int64_t s = d < lead ? 1 : x.size(d - lead);
    paired.push_back(1), paired.push_back(s);
    expanded.push_back(sizes[d]), expanded.push_back(s);
    merged.push_back(sizes[d] * s);
  }
  Tensor out = x.reshape(paired).expand(expanded).reshape(merged);
  return out.shares_storage(x) ? out.clone() : out;  // always a copy, as PyTorch
}

Tensor flip(const Tensor& x, const Shape& dims) {
  Tensor out = raw::flip(x, dims);
  if (auto node = make_node<FlipBackward>(x)) {
    node->dims = dims;
    set_history(out, std::move(node));
  }
  return out;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& split_sizes, int64_t dim) {
  EMBER_CHECK(x.dim() > 0, "split: needs a tensor with at least 1 dim, got a 0-d tensor");
  const int d = wrap_dim(dim, x.dim(), "split");
  int64_t total = 0;
  for (const int64_t s : split_sizes) {
    EMBER_CHECK(s >= 0, "split: the split sizes must be non-negative, got ", Shape(split_sizes));
    total += s;
  }
  EMBER_CHECK(total == x.size(d), "split: the split sizes ", Shape(split_sizes), " sum to ", total, ", not to ",
              x.size(d), " (the size of dim ", d, " of shape ", x.shape(), ")");
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (const int64_t s : split_sizes) {
    parts.push_back(x.narrow(d, start, s));
    start += s;
  }
  return parts;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  EMBER_CHECK(x.dim() > 0, "split: needs a tensor with at least 1 dim, got a 0-d tensor");
  const int d = wrap_dim(dim, x.dim(), "split");
  const int64_t size = x.size(d);
  EMBER_CHECK(split_size >= 0, "split: split_size must be non-negative, got ", split_size);
  EMBER_CHECK(split_size > 0 || size == 0, "split: split_size can be 0 only when dim ", d, " has size 0, got shape ",
              x.shape());
  const int64_t count = split_size == 0 ? 1 : std::max<int64_t>((size + split_size - 1) / split_size, 1);
  std::vector<int64_t> sizes(static_cast<size_t>(count), split_size);
  sizes.back() = size - split_size * (count - 1);
  return split(x, sizes, d);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  EMBER_CHECK(x.dim() > 0, "chunk: needs a tensor with at least 1 dim, got a 0-d tensor");
  EMBER_CHECK(chunks > 0, "chunk: chunks must be positive, got ", chunks);
  const int d = wrap_dim(dim, x.dim(), "chunk");
  const int64_t size = x.size(d);
  const int64_t split_size = (size + chunks - 1) / chunks;
  if (split_size == 0 && size == 0) return split(x, std::vector<int64_t>(static_cast<size_t>(chunks), 0), d);
  return split(x, split_size, d);
}

std::vector<Tensor> unbind(const Tensor& x, int64_t dim) {
  EMBER_CHECK(x.dim() > 0, "unbind: needs a tensor with at least 1 dim, got a 0-d tensor");
  const int d = wrap_dim(dim, x.dim(), "unbind");
  std::vector<Tensor> parts;
  for (int64_t i = 0; i < x.size(d); ++i) parts.push_back(x.select(d, i));
  return parts;
}

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator* gen) {
  return raw::multinomial(probs, num_samples, replacement, gen);
}

}  // namespace ember
