// Reductions and their gradients: sum/mean spread the gradient back (an expand view, no copy);
// max/min over dims share it evenly among ties (PyTorch's amax); max/min(x, dim) send it to the index
// they return; argmax/argmin carry none.
#include <cmath>

#include "autograd/node.h"
#include "autograd/ops.h"
#include "core/raw.h"

namespace ember {
namespace {

using autograd::make_node, autograd::SavedTensor, autograd::set_history;

// The output shape with keepdim = true: `shape` with the reduced dims (all when `dims` is empty) set to 1.
Shape kept_shape(const Shape& shape, const Shape& dims, const char* op) {
  Shape kept = shape;
  if (dims.empty()) {
    for (int64_t& s : kept) s = 1;
  } else if (!shape.empty()) {
    for (int64_t dim : dims) kept[wrap_dim(dim, shape.size(), op)] = 1;
  }
  return kept;
}

// The dims that `kept` reduces out of `shape` (size 1 in kept, larger in shape).
Shape reduced_dims(const Shape& shape, const Shape& kept) {
  Shape dims;
  for (int d = 0; d < shape.size(); ++d)
    if (kept[d] == 1 && shape[d] != 1) dims.push_back(d);
  return dims;
}

// sum and mean: every input element gets the output gradient (times 1/count for mean).
struct SumBackward : autograd::Node {
  Shape kept;
  double scale = 1;
  bool mean = false;
  std::string_view name() const override { return mean ? "mean" : "sum"; }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Tensor gk = mean ? g.reshape(kept) * scale : g.reshape(kept);
    grad_inputs[0] = gk.expand(next[0].shape);
  }
};

// max/min/amax/amin: the gradient goes to the elements equal to the result, split evenly among ties.
struct ExtremumBackward : autograd::Node {
  Shape kept;
  bool is_max = true;
  SavedTensor x, y;
  std::string_view name() const override { return is_max ? "max" : "min"; }
  void release() override { release_all(x, y); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Tensor input = x.unpack(*this);
    const Tensor mask = eq(input, y.unpack(*this).reshape(kept)).to(g.dtype());
    const Shape dims = reduced_dims(input.shape(), kept);
    const Tensor gk = g.reshape(kept);
    grad_inputs[0] = dims.empty() ? mask * gk : mask * (gk / sum(mask, dims, /*keepdim=*/true));
  }
};

// max/min(x, dim): the gradient goes to the returned index.
struct IndexReduceBackward : autograd::Node {
  Shape kept;
  int dim = 0;
  SavedTensor index;  // keepdim form
  std::string_view name() const override { return "max/min(dim)"; }
  void release() override { index.release(); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    grad_inputs[0] = raw::scatter_add(next[0].shape, dim, index.unpack(*this), g.reshape(kept));
  }
};

Tensor sum_or_mean(const Tensor& x, const Shape& dims, bool keepdim, bool mean) {
  Tensor out = raw::reduce(mean ? ReduceOp::mean : ReduceOp::sum, x, dims, keepdim);
  if (auto node = make_node<SumBackward>(x)) {
    node->kept = kept_shape(x.shape(), dims, mean ? "mean" : "sum");
    node->mean = mean;
    if (mean) node->scale = static_cast<double>(node->kept.numel()) / static_cast<double>(std::max<int64_t>(x.numel(), 1));
    set_history(out, std::move(node));
  }
  return out;
}

Tensor extremum(const Tensor& x, const Shape& dims, bool keepdim, bool is_max) {
  Tensor out = raw::reduce(is_max ? ReduceOp::max : ReduceOp::min, x, dims, keepdim);
  if (auto node = make_node<ExtremumBackward>(x)) {
    node->kept = kept_shape(x.shape(), dims, is_max ? "max" : "min");
    node->is_max = is_max;
    node->x.save(x);
    node->y.save(out, /*is_output=*/true);
    set_history(out, std::move(node));
  }
  return out;
}

std::tuple<Tensor, Tensor> index_reduce(const Tensor& x, int64_t dim, bool keepdim, bool is_max) {
  const char* name = is_max ? "max" : "min";
  Tensor idx = raw::arg_reduce(is_max ? ArgReduceOp::argmax : ArgReduceOp::argmin, x, dim, true);
  if (x.dim() == 0) return {x.clone(), idx};  // a 0-d tensor is its own max
  const int d = wrap_dim(dim, x.dim(), name);
  Tensor values = raw::gather(x, d, idx);
  if (auto node = make_node<IndexReduceBackward>(x)) {
    node->kept = values.shape();
    node->dim = d;
    node->index.save(idx);
    set_history(values, std::move(node));
  }
  if (!keepdim) return {values.squeeze(d), raw::squeeze(idx, d)};
  return {values, idx};
}

}  // namespace

Tensor sum(const Tensor& x) { return sum_or_mean(x, {}, false, false); }
Tensor sum(const Tensor& x, const Shape& dims, bool keepdim) { return sum_or_mean(x, dims, keepdim, false); }
Tensor mean(const Tensor& x) { return sum_or_mean(x, {}, false, true); }
Tensor mean(const Tensor& x, const Shape& dims, bool keepdim) { return sum_or_mean(x, dims, keepdim, true); }
Tensor max(const Tensor& x) { return extremum(x, {}, false, true); }
Tensor min(const Tensor& x) { return extremum(x, {}, false, false); }
Tensor amax(const Tensor& x, const Shape& dims, bool keepdim) { return extremum(x, dims, keepdim, true); }
Tensor amin(const Tensor& x, const Shape& dims, bool keepdim) { return extremum(x, dims, keepdim, false); }
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) { return index_reduce(x, dim, keepdim, true); }
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) { return index_reduce(x, dim, keepdim, false); }

Tensor argmax(const Tensor& x) { return raw::arg_reduce(ArgReduceOp::argmax, raw::reshape(x, {-1}), 0, false); }
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) { return raw::arg_reduce(ArgReduceOp::argmax, x, dim, keepdim); }
Tensor argmin(const Tensor& x) { return raw::arg_reduce(ArgReduceOp::argmin, raw::reshape(x, {-1}), 0, false); }
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim) { return raw::arg_reduce(ArgReduceOp::argmin, x, dim, keepdim); }

}  // namespace ember

// --- var, std, logsumexp -----------------------------------------------------------------------------------
// var/std: two passes (the mean, then the sum of squared deviations; f32 sums accumulate in double).
// d var/dx = 2 (x - mean) / divisor; std's gradient is var's times 1 / (2 std), 0 where std is 0 (as
// PyTorch's std_backward). logsumexp subtracts each output's max (0 where that max is ±inf, so a row of
// -inf gives -inf and a +inf gives +inf, as PyTorch); its gradient is g · exp(x - y), the softmax.
namespace ember {
namespace {

// Checks `dims` against x with errors that name the op (range, repeats) and returns the keepdim shape.
Shape checked_kept_shape(const Tensor& x, const Shape& dims, const char* op) {
  bool seen[kMaxDims] = {};
  for (int64_t dim : dims) {
    const int d = wrap_dim(dim, x.dim(), op);
    EMBER_CHECK(!seen[d] || x.dim() == 0, op, ": dim ", d, " appears twice in ", dims);
    seen[d] = true;
  }
  return kept_shape(x.shape(), dims, op);
}

struct VarBackward : autograd::Node {
  Shape kept;
  Shape dims;  // the input dims of size > 1 that are reduced (none: every output is one element)
  double divisor = 1;
  bool is_std = false;
  SavedTensor x, y;
  std::string_view name() const override { return is_std ? "std" : "var"; }
  void release() override { release_all(x, y); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Tensor input = x.unpack(*this);
    Tensor gk = g.reshape(kept);
    if (is_std) {
      const Tensor out = y.unpack(*this).reshape(kept);
      gk = where(out == 0.0, scalar_for(gk, 0.0), gk / (out * 2.0));
    }
    const Tensor centered = dims.empty() ? input - input : input - mean(input, dims, /*keepdim=*/true);
    grad_inputs[0] = gk * centered * (2.0 / divisor);
  }
};

struct LogsumexpBackward : autograd::Node {
  Shape kept;
  SavedTensor x, y;
  std::string_view name() const override { return "logsumexp"; }
  void release() override { release_all(x, y); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    grad_inputs[0] = g.reshape(kept) * exp(x.unpack(*this) - y.unpack(*this).reshape(kept));
  }
};

Tensor var_std(const Tensor& x, const Shape& dims, int64_t correction, bool keepdim, bool is_std) {
  const char* name = is_std ? "std" : "var";
  EMBER_CHECK(is_floating(x.dtype()), name, ": needs a floating tensor (f32 or f64), got ", dtype_name(x.dtype()),
              "; convert with .to(DType::f32)");
  const Shape kept = checked_kept_shape(x, dims, name);
  int64_t n = 1;  // elements per output
  for (int d = 0; d < x.dim(); ++d)
    if (kept[d] == 1) n *= x.shape()[d];
  const double divisor = std::max<double>(0.0, static_cast<double>(n) - static_cast<double>(correction));
  const Tensor centered = raw::binary(BinaryOp::sub, x, raw::reduce(ReduceOp::mean, x, dims, /*keepdim=*/true));
  const Tensor squares = raw::reduce(ReduceOp::sum, raw::binary(BinaryOp::mul, centered, centered), dims, keepdim);
  Tensor out = raw::binary(BinaryOp::div, squares, raw::scalar_like(squares, divisor, false));
  if (is_std) out = raw::unary(UnaryOp::sqrt, out);
  if (auto node = make_node<VarBackward>(x)) {
    node->kept = kept;
    node->dims = reduced_dims(x.shape(), kept);
    node->divisor = divisor;
    node->is_std = is_std;
    node->x.save(x);
    if (is_std) node->y.save(out, /*is_output=*/true);
    set_history(out, std::move(node));
  }
  return out;
}

}  // namespace

Tensor var(const Tensor& x) { return var_std(x, {}, 1, false, false); }
Tensor var(const Tensor& x, const Shape& dims, int64_t correction, bool keepdim) {
  return var_std(x, dims, correction, keepdim, false);
}
Tensor std(const Tensor& x) { return var_std(x, {}, 1, false, true); }
Tensor std(const Tensor& x, const Shape& dims, int64_t correction, bool keepdim) {
  return var_std(x, dims, correction, keepdim, true);
}

Tensor logsumexp(const Tensor& x, const Shape& dims, bool keepdim) {
  const Shape kept = checked_kept_shape(x, dims, "logsumexp");
  const Tensor xf = raw::to(x, to_floating(x.dtype()));  // integers and bools: f32, as PyTorch
  Tensor out;
  if (xf.numel() == 0) {  // no max to subtract: log(0) = -inf for each empty reduction
    out = raw::unary(UnaryOp::log, raw::reduce(ReduceOp::sum, raw::unary(UnaryOp::exp, xf), dims, keepdim));
  } else {
    Tensor m = raw::reduce(ReduceOp::max, xf, dims, /*keepdim=*/true);
    const Tensor infinite = raw::binary(BinaryOp::eq, raw::unary(UnaryOp::abs, m), raw::scalar_like(m, INFINITY, false));
    m = raw::where(infinite, raw::scalar_like(m, 0.0, false), m);
    const Tensor e = raw::unary(UnaryOp::exp, raw::binary(BinaryOp::sub, xf, m));
    const Tensor s = raw::reduce(ReduceOp::sum, e, dims, keepdim);
    out = raw::binary(BinaryOp::add, raw::unary(UnaryOp::log, s), raw::reshape(m, s.shape()));
  }
  if (auto node = make_node<LogsumexpBackward>(x)) {
    node->kept = kept;
    node->x.save(x);
    node->y.save(out, /*is_output=*/true);
    set_history(out, std::move(node));
  }
  return out;
}

}  // namespace ember
