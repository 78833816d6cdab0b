// masked_fill, tril/triu, one_hot, scatter, index_add, repeat, flip, chunk/split/unbind, multinomial,
// scatter_add/scatter_reduce, take_along_dim, masked_select, nonzero/where(cond), the embedding lookup and
// renorm, and their gradients. masked_fill and tril/triu are `where` with a mask, repeat is expand +
// reshape, chunk/split/unbind are narrow/select views, take_along_dim is expand + gather, masked_select is
// expand + index_select: their gradients are those ops' own.
#include <algorithm>
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

// A gradient for a scatter source of `shape` from its index-shaped corner `picked` (zeros elsewhere: those
// elements of src were not read).
Tensor source_grad(const Tensor& picked, const Shape& shape) {
  if (shape == picked.shape()) return picked;
  Tensor grad = zeros(shape, {.dtype = picked.dtype(), .device = picked.device()});
  raw::copy_(raw::as_strided(grad, picked.shape(), grad.strides(), grad.offset()), picked);
  return grad;
}

// g with the positions the index names along dim set to 0.
Tensor zero_at(const Tensor& g, int dim, const Tensor& idx) {
  return raw::scatter(g, dim, idx, raw::expand(zero_scalar(g), idx.shape()));
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
    if (needs_grad(0)) grad_inputs[0] = zero_at(g, dim, idx);
    if (next.size() > 1 && needs_grad(1)) grad_inputs[1] = source_grad(raw::gather(g, dim, idx), next[1].shape);
  }
};

// scatter_add: x's gradient is g; src's is g read back at the index.
struct ScatterAddBackward : autograd::Node {
  int dim = 0;
  SavedTensor index;
  std::string_view name() const override { return "scatter_add"; }
  void release() override { index.release(); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    if (needs_grad(0)) grad_inputs[0] = g;
    if (needs_grad(1)) grad_inputs[1] = source_grad(raw::gather(g, dim, index.unpack(*this)), next[1].shape);
  }
};

// scatter_reduce: PyTorch's scatter_reduce_backward (torch/csrc/autograd/FunctionsManual.cpp), with the
// excluded self left out of amax/amin's tie count (see autograd/ops.h).
struct ScatterReduceBackward : autograd::Node {
  int dim = 0;
  std::string reduce;
  bool include_self = true;
  SavedTensor self, src, index, result;  // self, src and result: prod, amax and amin only
  std::string_view name() const override { return "scatter_reduce"; }
  void release() override { release_all(self, src, index, result); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Tensor idx = index.unpack(*this);
    const auto read_src = [&] {  // the index-shaped corner of src: what the forward read
      const Tensor full = src.unpack(*this);
      return raw::as_strided(full, idx.shape(), full.strides(), full.offset());
    };
    const Tensor one = scalar_for(g, 1.0, false);
    Tensor grad_self, grad_src;
    if (reduce == "sum") {
      grad_self = g;
      grad_src = raw::gather(g, dim, idx);
    } else if (reduce == "mean") {
      Tensor n = include_self ? ones_like(g) : zeros_like(g);
      n = raw::scatter_add(n, dim, idx, raw::expand(one, idx.shape()));
      n = where(n == 0.0, one, n);
      grad_self = g / n;
      grad_src = raw::gather(g, dim, idx) / raw::gather(n, dim, idx);
    } else if (reduce == "prod") {
      // Each factor's gradient is the product of the others: result / factor, computed without dividing by
      // zero (a zero self is replaced by 1 in a second product; a single zero in src likewise).
      const Tensor x = self.unpack(*this), out = result.unpack(*this), s = read_src();
      const Tensor masked_self = where(x == 0.0, one, x);
      const Tensor masked_self_result = raw::scatter_reduce(masked_self, dim, idx, s, "prod", include_self);
      grad_self = g * masked_self_result / masked_self;
      const Tensor src_zero = s == 0.0;
      const Tensor zeros_at = raw::gather(raw::scatter_add(zeros_like(x), dim, idx, src_zero.to(x.dtype())), dim, idx);
      const Tensor single_zero = logical_and(src_zero, zeros_at == 1.0);
      const Tensor masked_src_result = raw::scatter_reduce(x, dim, idx, where(single_zero, one, s), "prod", include_self);
      grad_src = where(single_zero, raw::gather(g * masked_src_result, dim, idx),
                       raw::gather(g * out, dim, idx) / where(src_zero, one, s));
    } else {  // amax, amin: split evenly among the values equal to the result
      const Tensor x = self.unpack(*this), out = result.unpack(*this), s = read_src();
      const Tensor value = raw::gather(out, dim, idx);
      Tensor self_is_result = (x == out).to(g.dtype());
      if (!include_self) self_is_result = zero_at(self_is_result, dim, idx);
      const Tensor src_is_result = (s == value).to(g.dtype());
      const Tensor count = raw::scatter_add(self_is_result, dim, idx, src_is_result);
      const Tensor share = g / count;
      grad_self = self_is_result * share;
      grad_src = src_is_result * raw::gather(share, dim, idx);
    }
    if (needs_grad(0)) grad_inputs[0] = include_self ? grad_self : zero_at(grad_self, dim, idx);
    if (needs_grad(1)) grad_inputs[1] = source_grad(grad_src, next[1].shape);
  }
};

// embedding_lookup: rows of g added into the weight's rows at the indices, none from padding positions,
// each divided by its index's count with scale_grad_by_freq.
struct EmbeddingBackward : autograd::Node {
  int64_t padding_idx = -1;
  bool scale_grad_by_freq = false;
  SavedTensor indices;  // flattened [L]
  std::string_view name() const override { return "embedding"; }
  void release() override { indices.release(); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Tensor flat = indices.unpack(*this);
    const Shape& shape = next[0].shape;  // [V, D]
    Tensor rows = g.reshape({flat.numel(), shape[1]});
    if (padding_idx >= 0) rows = where((flat == padding_idx).unsqueeze(1), zero_scalar(rows), rows);
    if (scale_grad_by_freq) {
      const TensorOptions options{.dtype = g.dtype(), .device = g.device()};
      const Tensor counts = raw::index_add(zeros({shape[0]}, options), 0, flat, ones({flat.numel()}, options), 1);
      rows = rows / raw::index_select(counts, 0, flat).unsqueeze(1);
    }
    grad_inputs[0] = raw::index_add(zeros(shape, {.dtype = g.dtype(), .device = g.device()}), 0, flat, rows, 1);
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


// `out` with the history of an op along `dim` that read `index` (scatter, scatter_add): a Node whose dim
// (wrapped for x's rank) and saved index are all its backward needs besides the inputs' grad flags.
template <typename Node, typename... Inputs>
Tensor with_index_history(Tensor out, const char* op, int64_t dim, const Tensor& index, const Tensor& x,
                          const Inputs&... inputs) {
  if (auto node = make_node<Node>(x, inputs...)) {
    node->dim = wrap_dim(dim, x.dim(), op);
    node->index.save(index);
    set_history(out, std::move(node));
  }
  return out;
}

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
  return with_index_history<ScatterBackward>(raw::scatter(x, dim, index, src), "scatter", dim, index, x, src);
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, double value) {
  const Tensor src = raw::expand(value_like(x, value, "scatter"), index.shape());
  return with_index_history<ScatterBackward>(raw::scatter(x, dim, index, src), "scatter", dim, index, x);
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

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  return with_index_history<ScatterAddBackward>(raw::scatter_add(x, dim, index, src), "scatter_add", dim, index, x,
                                                src);
}

Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                      bool include_self) {
  Tensor out = raw::scatter_reduce(x, dim, index, src, reduce, include_self);
  if (auto node = make_node<ScatterReduceBackward>(x, src)) {
    node->dim = wrap_dim(dim, x.dim(), "scatter_reduce");
    node->reduce = std::string(reduce);
    node->include_self = include_self;
    node->index.save(index);
    if (reduce == "prod" || reduce == "amax" || reduce == "amin") {  // sum and mean need the index alone
      node->src.save(src);
      node->self.save(x);
      node->result.save(out, true);
    }
    set_history(out, std::move(node));
  }
  return out;
}

Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim) {
  raw::check_same_device(x, indices, "take_along_dim");
  EMBER_CHECK(indices.dtype() == DType::i64, "take_along_dim: the indices must be i64, got ", dtype_name(indices.dtype()));
  if (!dim.has_value()) return gather(x.reshape({-1}), 0, indices.reshape({-1}));
  EMBER_CHECK(x.dim() == indices.dim(), "take_along_dim: the input (shape ", x.shape(), ") and the indices (shape ",
              indices.shape(), ") must have the same number of dims");
  if (x.dim() == 0) return gather(x, 0, indices);
  const int d = wrap_dim(*dim, x.dim(), "take_along_dim");
  // Each broadcast to the other's shape in every dim but d (PyTorch's rule).
  Shape x_shape = x.shape(), index_shape = indices.shape();
  x_shape[d] = indices.size(d);
  index_shape[d] = x.size(d);
  const Shape index_to = raw::broadcast_shapes(x_shape, indices.shape(), "take_along_dim");
  const Shape x_to = raw::broadcast_shapes(index_shape, x.shape(), "take_along_dim");
  return gather(x_to == x.shape() ? x : x.expand(x_to), d, index_to == indices.shape() ? indices : indices.expand(index_to));
}

Tensor masked_select(const Tensor& x, const Tensor& mask) {
  raw::check_same_device(x, mask, "masked_select");
  EMBER_CHECK(mask.dtype() == DType::b8, "masked_select: the mask must be a bool tensor (e.g. from x > 0), got ",
              dtype_name(mask.dtype()));
  const Shape shape = raw::broadcast_shapes(x.shape(), mask.shape(), "masked_select");
  const Tensor positions = raw::nonzero(raw::reshape(raw::expand(mask, shape), {shape.numel()}));
  const Tensor xs = shape == x.shape() ? x : x.expand(shape);
  return index_select(xs.reshape({shape.numel()}), 0, raw::reshape(positions, {positions.shape()[0]}));
}

Tensor nonzero(const Tensor& x) { return raw::nonzero(x); }

std::vector<Tensor> nonzero_numpy(const Tensor& x) {
  const Tensor nz = raw::nonzero(x.dim() == 0 ? raw::reshape(x, {1}) : x);  // a 0-d input counts as 1-D
  std::vector<Tensor> columns;
  for (int d = 0; d < nz.shape()[1]; ++d) columns.push_back(raw::select(nz, 1, d));
  return columns;
}

std::vector<Tensor> where(const Tensor& cond) { return nonzero_numpy(cond); }

Tensor embedding_lookup(const Tensor& weight, const Tensor& indices, int64_t padding_idx, bool scale_grad_by_freq) {
  EMBER_CHECK(weight.dim() == 2, "embedding: weight must be [num_embeddings, dim], got shape ", weight.shape());
  EMBER_CHECK(indices.dtype() == DType::i64, "embedding: indices must be i64, got ", dtype_name(indices.dtype()));
  raw::check_same_device(weight, indices, "embedding");
  Shape out_shape = indices.shape();
  out_shape.push_back(weight.size(1));
  const Tensor flat = raw::reshape(indices, {indices.numel()});
  Tensor out = raw::reshape(raw::index_select(weight, 0, flat), out_shape);
  if (auto node = make_node<EmbeddingBackward>(weight)) {
    node->padding_idx = padding_idx;
    node->scale_grad_by_freq = scale_grad_by_freq;
    node->indices.save(flat);
    set_history(out, std::move(node));
  }
  return out;
}

Tensor& embedding_renorm_(Tensor& weight, const Tensor& indices, double max_norm, double norm_type) {
  EMBER_CHECK(weight.dim() == 2, "embedding_renorm_: weight must be [num_embeddings, dim], got shape ", weight.shape());
  EMBER_CHECK(indices.dtype() == DType::i64, "embedding_renorm_: indices must be i64, got ", dtype_name(indices.dtype()));
  EMBER_CHECK(is_floating(weight.dtype()), "embedding_renorm_: weight must be floating, got ", dtype_name(weight.dtype()));
  NoGradGuard no_grad;
  // The distinct rows named (sorted, as PyTorch's CPU kernel visits them; each is renormalised once).
  std::vector<int64_t> rows = indices.to_vector<int64_t>();
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  if (rows.empty()) return weight;
  const int64_t V = weight.size(0);
  EMBER_CHECK(rows.front() >= 0 && rows.back() < V, "embedding_renorm_: index ", rows.front() < 0 ? rows.front() : rows.back(),
              " is out of range for ", V, " embeddings");
  const Tensor picked = from_vector(rows).to(weight.device());
  const Tensor r = raw::index_select(weight, 0, picked);  // [U, D]
  // Each row's norm in the weight's dtype (torch.norm's p: inf is the largest |x|, 0 the count of nonzeros).
  Tensor norm;
  if (std::isinf(norm_type)) norm = norm_type > 0 ? amax(abs(r), 1) : amin(abs(r), 1);
  else if (norm_type == 0) norm = sum((r != 0.0).to(r.dtype()), 1);
  else if (norm_type == 1) norm = sum(abs(r), 1);
  else if (norm_type == 2) norm = sqrt(sum(square(r), 1));
  else norm = pow(sum(pow(abs(r), norm_type), 1), 1.0 / norm_type);
  // PyTorch: scale = max_norm / (norm + 1e-7) in double, then the row times the scale in the weight's dtype.
  const Tensor n = norm.to(DType::f64);
  const Tensor scale = where(n > max_norm, max_norm / (n + 1e-7), scalar_for(n, 1.0, false)).to(weight.dtype());
  weight.index_put_({picked}, r * scale.unsqueeze(1));
  return weight;
}

}  // namespace ember
