#pragma once
// The user-facing tensor operations (LibTorch's torch:: functions). Element-wise ops broadcast (NumPy
// rules) and promote dtypes (base/dtype.h); the computation itself is ember::raw:: (core/raw.h).
//
// Autograd: when grad mode is on (autograd/grad_mode.h) and an input requires grad, each op records a
// Node whose backward gives the input gradients (autograd/functions_*.cpp); the output then requires
// grad. Gradients of broadcast inputs are summed back to the input's shape. Comparisons, sign's mask-like
// uses, argmax/argmin and the indices of max/min(x, dim) carry no gradient (comparisons and arg* record
// nothing; sign's gradient is zero). Ties: max/min/amax/amin split the gradient evenly among equal
// extremes, maximum/minimum between equal inputs; max/min(x, dim) send it to the returned index.
#include <concepts>
#include <string_view>
#include <tuple>
#include <vector>

#include "autograd/grad_mode.h"
#include "core/tensor.h"

namespace ember {

// --- element-wise: the ops of the tables in backends/elementwise_ops.h ---------------------------------
// Two inputs: add, sub, mul, div (true division: integer inputs give f32), pow, maximum, minimum, and the
// comparisons eq, ne, lt, le, gt, ge, logical_and, logical_or, which give bool masks. Each also takes a
// C++ number on either side (`eq(t, 0)`, `sub(1.0, t)`), which acts as a Python scalar (see scalar_for).
#define EMBER_X(name, ...) Tensor name(const Tensor& a, const Tensor& b);
EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X
// One input, no parameters: neg, abs, sign, square, relu, exp, expm1, log, log1p, sqrt, rsqrt, reciprocal,
// sin, cos, tanh, sigmoid, silu.
#define EMBER_X(name, ...) Tensor name(const Tensor& x);
EMBER_UNARY_OPS_PUBLIC(EMBER_X)
#undef EMBER_X
// cond ? a : b, broadcasting all three; cond is a bool tensor.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

// One input with parameters (torch.nn.functional's defaults).
Tensor pow(const Tensor& x, double exponent);
Tensor clamp(const Tensor& x, double min, double max);  // pass ±INFINITY for a missing bound
Tensor gelu(const Tensor& x, std::string_view approximate = "none");  // "none": exact (erf); "tanh"
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor elu(const Tensor& x, double alpha = 1.0);
// log(1 + exp(beta·x)) / beta, and x itself where beta·x > threshold.
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);

// --- reductions -------------------------------------------------------------------------------------
Tensor sum(const Tensor& x);  // 0-d; bool/i64 sum in i64
Tensor sum(const Tensor& x, const Shape& dims, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, const Shape& dims, bool keepdim = false);
Tensor max(const Tensor& x);  // 0-d; NaN if any element is NaN
Tensor min(const Tensor& x);
// Values and indices along one dim (the first index of equal maxima), as torch.max(x, dim).
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor amax(const Tensor& x, const Shape& dims, bool keepdim = false);
Tensor amin(const Tensor& x, const Shape& dims, bool keepdim = false);
Tensor argmax(const Tensor& x);  // index into the flattened tensor
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
Tensor argmin(const Tensor& x);
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false);

// --- reductions, round 2: single dims, var/std, logsumexp, cumsum, sort/argsort/topk ---------------------
// A single integer dim works wherever a list of dims does: sum(x, 1) is sum(x, {1}). A bool there does not
// compile (core/shape.h, DimIndex): sum(x, true) is a misplaced keepdim, not dim 1.
template <DimIndex I> Tensor sum(const Tensor& x, I dim, bool keepdim = false) {
  return sum(x, Shape{static_cast<int64_t>(dim)}, keepdim);
}
template <DimIndex I> Tensor mean(const Tensor& x, I dim, bool keepdim = false) {
  return mean(x, Shape{static_cast<int64_t>(dim)}, keepdim);
}
template <DimIndex I> Tensor amax(const Tensor& x, I dim, bool keepdim = false) {
  return amax(x, Shape{static_cast<int64_t>(dim)}, keepdim);
}
template <DimIndex I> Tensor amin(const Tensor& x, I dim, bool keepdim = false) {
  return amin(x, Shape{static_cast<int64_t>(dim)}, keepdim);
}
// Variance Σ(x - mean)² / max(0, N - correction) over `dims` (all dims when empty), N the number of elements
// each output reduces, and std = √var. correction 1 (the default) is Bessel's unbiased estimate, 0 the
// population variance: var(x, false) is torch.var(x, unbiased=False), and a bool passed as correction means
// the same (true → 1, false → 0). N ≤ correction gives inf or NaN, as PyTorch. Floating inputs only (f32,
// f64; others throw). The gradient of std is 0 where std is 0, as PyTorch's.
Tensor var(const Tensor& x);
template <std::same_as<bool> B> Tensor var(const Tensor& x, B unbiased) { return var(x, Shape{}, unbiased ? 1 : 0); }
Tensor var(const Tensor& x, const Shape& dims, int64_t correction = 1, bool keepdim = false);
template <DimIndex I> Tensor var(const Tensor& x, I dim, int64_t correction = 1, bool keepdim = false) {
  return var(x, Shape{static_cast<int64_t>(dim)}, correction, keepdim);
}
Tensor std(const Tensor& x);
template <std::same_as<bool> B> Tensor std(const Tensor& x, B unbiased) { return std(x, Shape{}, unbiased ? 1 : 0); }
Tensor std(const Tensor& x, const Shape& dims, int64_t correction = 1, bool keepdim = false);
template <DimIndex I> Tensor std(const Tensor& x, I dim, int64_t correction = 1, bool keepdim = false) {
  return std(x, Shape{static_cast<int64_t>(dim)}, correction, keepdim);
}
// log Σ exp(x) over `dims` (all when empty), stable: the max is subtracted first (an all -inf row gives
// -inf, a +inf gives +inf, NaN propagates; an empty reduction gives -inf). Integer and bool inputs give
// f32. The gradient is softmax(x) along the reduced dims.
Tensor logsumexp(const Tensor& x, const Shape& dims, bool keepdim = false);
template <DimIndex I> Tensor logsumexp(const Tensor& x, I dim, bool keepdim = false) {
  return logsumexp(x, Shape{static_cast<int64_t>(dim)}, keepdim);
}
// Running sum along dim; bool and i64 inputs accumulate in i64 (the result is i64), floats keep their dtype
// (f32 accumulates in double). The gradient is the reversed running sum of the output gradient.
Tensor cumsum(const Tensor& x, int64_t dim);
// (values, indices) with each row along dim sorted, as torch.sort: NaN counts as the largest value, ties
// keep their input order. Ember's sort is always stable, so `stable` changes nothing (kept for PyTorch's
// signature: an unstable sort may order ties either way, the stable order is one of them). Indices are
// i64; the gradient of values goes back to the positions the indices name. Any dtype.
std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false, bool stable = false);
// The k largest (or smallest) elements along dim and their indices, as torch.topk: NaN is the largest; among
// equal values the earlier index comes first; sorted = false returns them sorted too (PyTorch leaves that
// order unspecified). 0 ≤ k ≤ size of dim, else throws.
std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true);

// --- softmax ------------------------------------------------------------------------------------------
// exp(x) / Σ exp(x) along `dim`, and its log, computed stably (the max along dim is subtracted first).
// Floating inputs only; throws otherwise or when dim is out of range.
Tensor softmax(const Tensor& x, int64_t dim);
Tensor log_softmax(const Tensor& x, int64_t dim);

// --- linear algebra, joining, indexing ---------------------------------------------------------------
// torch.matmul: [M, K] @ [K, N]; batched [..., M, K] @ [..., K, N] with broadcast batch dims; 1-D
// operands act as a row (left) or column (right) vector.
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
// out[.., i, ..] = x[.., index[i], ..] along `dim`; index is 1-D i64.
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
// out[i][j] = x[i][index[i][j]] (dim = 1); index is i64 with x's number of dims.
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);

// --- masking, indexing, repeating, sampling (PyTorch 1.13 semantics; autograd/functions_indexing.cpp) ------
// x with `value` where mask (bool) is true. mask and x broadcast (the result has their broadcast shape) and the
// result keeps x's dtype (value converted, truncated for integers). A tensor value must be 0-d; it may
// require grad (its gradient is the sum of the output gradient where mask is true).
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Tensor& value);
// The lower (tril) / upper (triu) triangle of the last two dims, batched: elements with col - row <= diagonal
// (tril) or >= diagonal (triu) kept, the others 0. Needs at least 2 dims.
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
// i64 [..., num_classes]: 1 at each index's class (indices: i64, any shape). num_classes = -1 uses max + 1.
// Throws for negative classes, classes >= num_classes, and an empty input without num_classes.
Tensor one_hot(const Tensor& indices, int64_t num_classes = -1);
// A copy of x with out[.., index[i][j], ..] = src[i][j] along dim (dim = 0 shown): index (i64) has x's number
// of dims and is no larger than src in every dim and than x in every dim but dim; src has x's dtype. With a
// repeated index one write wins (the last in row-major order on the CPU, any on CUDA, as PyTorch). Gradients:
// x gets g with the written positions zeroed, src gets g gathered at index (0 outside the index's shape).
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, double value);
// A copy of x with x[.., index[i], ..] += alpha · source[.., i, ..] along dim; index 1-D i64 (repeats add up),
// source of x's dtype and shape except source.size(dim) == index.numel(). Integer tensors truncate alpha.
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source, double alpha = 1);
// x tiled sizes[i] times along dim i (a copy); sizes may have more entries than x has dims (new leading dims).
Tensor repeat(const Tensor& x, const Shape& sizes);
// A copy of x reversed along each of dims (each at most once).
Tensor flip(const Tensor& x, const Shape& dims);
// Views of x along dim (their gradients flow back through the view autograd), as PyTorch:
// chunk: `chunks` pieces of ceil(size / chunks) elements (the last smaller; fewer pieces when they run out).
// split: pieces of split_size (the last smaller), or of the given sizes (which must sum to the size).
// unbind: every index of dim, with dim removed.
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& split_sizes, int64_t dim = 0);
std::vector<Tensor> unbind(const Tensor& x, int64_t dim = 0);
// num_samples category indices (i64) per row of probs ([C] → [num_samples]; [N, C] → [N, num_samples]), drawn
// with probabilities proportional to the row (it need not sum to 1) from `gen` (default_generator()).
// Without replacement the samples of a row are distinct, and zero-probability categories come only after
// every positive one is drawn (PyTorch 1.13 does not refuse them). Throws for negative, inf or NaN entries,
// a row summing to 0, num_samples <= 0, and num_samples > C without replacement. Runs on the host (from a
// GPU the probabilities are copied over and the samples back); the numbers are Ember's Philox stream.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false, Generator* gen = nullptr);

// --- scatter reductions, gathers, selections by mask, advanced indexing (PyTorch 1.13) ------------------------
// A copy of x with src added at the index along dim: out[.., index[i][j], ..] += src[i][j] (dim = 0 shown);
// index, src and x as scatter's (repeats add up). Gradients: x gets g; src gets g gathered at index.
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src);
// torch.scatter_reduce: src reduced into a copy of x at the index along dim with reduce = "sum", "prod",
// "mean", "amax" or "amin"; include_self = false leaves x's values out of the positions the index names
// (positions it does not name keep x's value). Integer "mean" rounds down. f32, f64 and i64; not bool.
// Gradients as PyTorch's scatter_reduce backward: prod divides out each factor (zeros handled exactly:
// a single zero gets the product of the others), mean divides by the count, amax/amin split the gradient
// evenly among the values equal to the result (NOTE: with include_self = false an excluded value of x that
// equals the result is not counted, where PyTorch 1.13 counts it and so gives the winners too little).
Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src, std::string_view reduce,
                      bool include_self = true);
// torch.take_along_dim: gather along dim after broadcasting x and indices (i64) in every other dim (they
// must have the same number of dims); without dim, x and indices are flattened first.
Tensor take_along_dim(const Tensor& x, const Tensor& indices, std::optional<int64_t> dim = std::nullopt);
// The elements of x where mask (bool) is true, after broadcasting them together: 1-D, row-major.
// The gradient goes back to the selected positions.
Tensor masked_select(const Tensor& x, const Tensor& mask);
// [count, x.dim()] i64 multi-indices of the nonzero elements, row-major (torch.nonzero); nonzero_numpy is
// nonzero(as_tuple=True): one 1-D i64 tensor per dim. where(cond) (one argument) is nonzero_numpy(cond).
// They read the count on the host (a GPU waits), as PyTorch. Not differentiable.
Tensor nonzero(const Tensor& x);
std::vector<Tensor> nonzero_numpy(const Tensor& x);
std::vector<Tensor> where(const Tensor& cond);
// x with values written at x.index(indices) (out of place; torch.index_put): values (x's dtype) broadcast to
// the shape x.index(indices) has; accumulate adds them (repeats add up), else writes them (a repeated
// position keeps one of the writes, unspecified, as PyTorch). Gradients: values get g.index(indices)
// (summed over broadcast dims); x gets g, with the written positions zeroed unless accumulate.
// index_put_ does it in place (Tensor::index_put_); with a graph the tensor takes the op's history (a leaf
// that requires grad throws, as PyTorch; a view's base does not see the new history).
Tensor index_put(const Tensor& x, const std::vector<indexing::TensorIndex>& indices, const Tensor& values,
                 bool accumulate = false);
// --- embedding lookups (what nn::functional::embedding / embedding_bag are built on) ----------------------
// torch.embedding: weight [V, D], indices i64 (any shape, values in [0, V)) → [*indices.shape, D]. The gradient
// scatters back into weight's rows, except from the positions holding padding_idx (-1: none); with
// scale_grad_by_freq each position's gradient is divided by how often its index occurs in `indices`.
Tensor embedding_lookup(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1,
                        bool scale_grad_by_freq = false);
// torch.embedding_renorm_: in place and without a graph, each row of weight that `indices` names and whose
// norm_type-norm exceeds max_norm is scaled by max_norm / (norm + 1e-7). Returns weight.
Tensor& embedding_renorm_(Tensor& weight, const Tensor& indices, double max_norm, double norm_type = 2.0);

// --- operators and scalars ------------------------------------------------------------------------
// A C++ number next to a tensor acts like a Python scalar: 2.0 * f32 stays f32, 2 * i64 stays i64,
// 0.5 * i64 gives f32.
template <typename S>
concept Scalar = std::is_arithmetic_v<S> && !std::is_same_v<S, bool>;

template <Scalar S>
Tensor scalar_for(const Tensor& like, S value) {
  return scalar_for(like, static_cast<double>(value), std::is_integral_v<S>);
}
Tensor scalar_for(const Tensor& like, double value, bool integral);

// op(a, scalar) for a binary op of the tables; pow with a scalar exponent is pow_scalar (as torch.pow).
Tensor binary_with_scalar(BinaryOp op, const Tensor& a, double value, bool integral);

#define EMBER_X(name, ...)                                                                                   \
  template <Scalar S> Tensor name(const Tensor& a, S s) {                                                    \
    return binary_with_scalar(BinaryOp::name, a, static_cast<double>(s), std::is_integral_v<S>);             \
  }                                                                                                          \
  template <Scalar S> Tensor name(S s, const Tensor& b) { return name(scalar_for(b, s), b); }
EMBER_BINARY_OPS(EMBER_X)
#undef EMBER_X

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& a) { return neg(a); }
template <Scalar S> Tensor operator+(const Tensor& a, S s) { return add(a, scalar_for(a, s)); }
template <Scalar S> Tensor operator+(S s, const Tensor& a) { return add(scalar_for(a, s), a); }
template <Scalar S> Tensor operator-(const Tensor& a, S s) { return sub(a, scalar_for(a, s)); }
template <Scalar S> Tensor operator-(S s, const Tensor& a) { return sub(scalar_for(a, s), a); }
template <Scalar S> Tensor operator*(const Tensor& a, S s) { return mul(a, scalar_for(a, s)); }
template <Scalar S> Tensor operator*(S s, const Tensor& a) { return mul(scalar_for(a, s), a); }
template <Scalar S> Tensor operator/(const Tensor& a, S s) { return div(a, scalar_for(a, s)); }
template <Scalar S> Tensor operator/(S s, const Tensor& a) { return div(scalar_for(a, s), a); }
inline Tensor operator==(const Tensor& a, const Tensor& b) { return eq(a, b); }
inline Tensor operator!=(const Tensor& a, const Tensor& b) { return ne(a, b); }
inline Tensor operator<(const Tensor& a, const Tensor& b) { return lt(a, b); }
inline Tensor operator<=(const Tensor& a, const Tensor& b) { return le(a, b); }
inline Tensor operator>(const Tensor& a, const Tensor& b) { return gt(a, b); }
inline Tensor operator>=(const Tensor& a, const Tensor& b) { return ge(a, b); }
template <Scalar S> Tensor operator==(const Tensor& a, S s) { return eq(a, scalar_for(a, s)); }
template <Scalar S> Tensor operator!=(const Tensor& a, S s) { return ne(a, scalar_for(a, s)); }
template <Scalar S> Tensor operator<(const Tensor& a, S s) { return lt(a, scalar_for(a, s)); }
template <Scalar S> Tensor operator<=(const Tensor& a, S s) { return le(a, scalar_for(a, s)); }
template <Scalar S> Tensor operator>(const Tensor& a, S s) { return gt(a, scalar_for(a, s)); }
template <Scalar S> Tensor operator>=(const Tensor& a, S s) { return ge(a, scalar_for(a, s)); }

}  // namespace ember
