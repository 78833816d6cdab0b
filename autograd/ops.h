#pragma once
// The user-facing tensor operations (LibTorch's torch:: functions). Element-wise ops broadcast (NumPy
// rules) and promote dtypes (backends/dtype.h); the computation itself is ember::raw:: (core/raw.h).
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
