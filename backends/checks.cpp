// The operand checks of every backend entry (backends/checks.h), shared by the CPU and CUDA backends.
#include "backends/checks.h"

#include <initializer_list>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>

#include "backends/index_math.h"
#include "base/dtype.h"
#include "base/error.h"

namespace ember::checks {
namespace {

// "[2, 3, 4]" — a TensorArg's shape in messages.
struct ShapeOf {
  const TensorArg& t;
};
std::ostream& operator<<(std::ostream& out, ShapeOf s) {
  out << '[';
  for (int d = 0; d < s.t.ndim; ++d) out << (d > 0 ? ", " : "") << s.t.shape[d];
  return out << ']';
}

// Whether the kernels may walk t as one dense run. NOTE: an empty tensor counts (there is nothing to walk),
// though TensorArg::is_contiguous says no to some (core gives a size-0 dim the strides of a size-1 one).
bool dense(const TensorArg& t) { return t.numel() == 0 || t.is_contiguous(); }

bool same_shape(const TensorArg& a, const TensorArg& b) {
  if (a.ndim != b.ndim) return false;
  for (int d = 0; d < a.ndim; ++d)
    if (a.shape[d] != b.shape[d]) return false;
  return true;
}

// Every operand of an element-wise entry has the output's shape (core expands inputs before the call).
void check_shapes(std::string_view op, const TensorArg& out, std::initializer_list<const TensorArg*> inputs) {
  for (const TensorArg* t : inputs)
    EMBER_CHECK(same_shape(*t, out), op, ": operand shapes differ (", ShapeOf{*t}, " and ", ShapeOf{out},
                "); the backend takes inputs already expanded to the output's shape");
}

// `t` (an optional operand: may be null) is a contiguous tensor of `numel` elements of `dtype`.
void check_operand(std::string_view op, const char* name, const TensorArg* t, DType dtype, int64_t numel) {
  if (t == nullptr) return;
  EMBER_CHECK(t->dtype == dtype && dense(*t) && t->numel() == numel, op, ": ", name,
              " must be a contiguous ", dtype_name(dtype), " tensor of ", numel, " elements, got ",
              dtype_name(t->dtype), " × ", t->numel(), dense(*t) ? "" : " (not contiguous)");
}

void check_dim(std::string_view op, int dim, const TensorArg& in) {
  EMBER_CHECK(dim >= 0 && dim < in.ndim, op, ": dim ", dim, " is out of range for ", in.ndim, " dims");
}

// `other` has in's shape, except in dim `dim` where it has `size` (-1: in's size too).
void check_like(std::string_view op, const char* name, const TensorArg& other, const TensorArg& in, int dim,
                int64_t size) {
  bool ok = other.ndim == in.ndim;
  for (int d = 0; ok && d < in.ndim; ++d) ok = other.shape[d] == (d == dim && size >= 0 ? size : in.shape[d]);
  EMBER_CHECK(ok, op, ": ", name, " is ", ShapeOf{other}, ", expected the input's shape ", ShapeOf{in},
              size >= 0 ? " with dim " : "", size >= 0 ? std::to_string(dim) : "", size >= 0 ? " of size " : "",
              size >= 0 ? std::to_string(size) : "");
}

}  // namespace

// --- element-wise ---------------------------------------------------------------------------------------------

void check_copy(const TensorArg& src, const TensorArg& dst) { check_shapes("copy", dst, {&src}); }

void check_unary(UnaryOp op, const TensorArg& in, const TensorArg& out) {
  EMBER_CHECK(in.dtype == out.dtype, "unary: input ", dtype_name(in.dtype), " and output ", dtype_name(out.dtype),
              " differ");
  check_shapes(op_name(op), out, {&in});
}

void check_unary_backward(UnaryOp op, const TensorArg& grad_out, const TensorArg& saved, const TensorArg& grad_in) {
  EMBER_CHECK(grad_out.dtype == saved.dtype && grad_out.dtype == grad_in.dtype, op_name(op),
              " backward: dtypes differ");
  check_shapes(op_name(op), grad_in, {&grad_out, &saved});
}

void check_binary(BinaryOp op, const TensorArg& a, const TensorArg& b, const TensorArg& out) {
  EMBER_CHECK(a.dtype == b.dtype, "binary: inputs ", dtype_name(a.dtype), " and ", dtype_name(b.dtype), " differ");
  const DType expected = is_comparison(op) ? DType::b8 : a.dtype;
  EMBER_CHECK(out.dtype == expected, "binary: output dtype ", dtype_name(out.dtype), ", expected ",
              dtype_name(expected));
  check_shapes(op_name(op), out, {&a, &b});
}

void check_where(const TensorArg& cond, const TensorArg& a, const TensorArg& b, const TensorArg& out) {
  EMBER_CHECK(cond.dtype == DType::b8, "where: condition must be bool, got ", dtype_name(cond.dtype));
  EMBER_CHECK(a.dtype == out.dtype && b.dtype == out.dtype, "where: the values (", dtype_name(a.dtype), ", ",
              dtype_name(b.dtype), ") and the output (", dtype_name(out.dtype), ") must share a dtype");
  check_shapes("where", out, {&cond, &a, &b});
}

// --- reductions, scans, sorts --------------------------------------------------------------------------------

int64_t check_reduce(ReduceOp op, const TensorArg& in, const TensorArg& out) {
  EMBER_CHECK(in.dtype == out.dtype, "reduce: input and output dtypes differ");
  EMBER_CHECK(in.dtype != DType::b8, "reduce: not defined for bool tensors; convert with .to(DType::i64)");
  EMBER_CHECK(in.ndim == out.ndim, "reduce: output must have the input's rank (keepdim form)");
  int64_t count = 1;
  for (int d = 0; d < in.ndim; ++d) {
    if (out.shape[d] == in.shape[d]) continue;
    EMBER_CHECK(out.shape[d] == 1, "reduce: output dim ", d, " is ", out.shape[d], ", expected 1 or ", in.shape[d]);
    count *= in.shape[d];
  }
  EMBER_CHECK(count > 0 || (op != ReduceOp::max && op != ReduceOp::min),
              "max/min: cannot reduce over an empty dim (no identity); the input has 0 elements there");
  return count;
}

void check_arg_reduce(ArgReduceOp op, const TensorArg& in, const TensorArg& out, int dim) {
  const char* name = op == ArgReduceOp::argmax ? "argmax" : "argmin";
  EMBER_CHECK(out.dtype == DType::i64, "arg_reduce: output must be i64");
  check_dim(name, dim, in);
  EMBER_CHECK(in.shape[dim] > 0, "argmax/argmin: dim ", dim, " has size 0");
  check_like(name, "the output", out, in, dim, 1);
}

void check_cumsum(const TensorArg& in, const TensorArg& out, int dim) {
  EMBER_CHECK(in.dtype == out.dtype, "cumsum: input and output dtypes differ");
  EMBER_CHECK(in.dtype != DType::b8, "cumsum: not defined for bool tensors in the backend; convert with .to(DType::i64)");
  check_dim("cumsum", dim, in);
  check_like("cumsum", "the output", out, in, dim, -1);
}

void check_sort(const TensorArg& in, const TensorArg& values, const TensorArg& indices, int dim) {
  EMBER_CHECK(values.dtype == in.dtype, "sort: values must have the input's dtype");
  EMBER_CHECK(indices.dtype == DType::i64, "sort: indices must be i64");
  check_dim("sort", dim, in);
  check_like("sort", "values", values, in, dim, -1);
  check_like("sort", "indices", indices, in, dim, -1);
}

// --- indexing, random, matmul, optimizer ----------------------------------------------------------------------

// Bool is refused here too (core refuses it first, naming the op the user called).
void check_scatter_reduce(ScatterReduceOp op, const TensorArg& src, const TensorArg& index, const TensorArg& out,
                          int dim) {
  EMBER_CHECK(index.dtype == DType::i64, "scatter_reduce: the index must be i64, got ", dtype_name(index.dtype));
  EMBER_CHECK(src.dtype == out.dtype, "scatter_reduce: the source is ", dtype_name(src.dtype), " but the output is ",
              dtype_name(out.dtype));
  EMBER_CHECK(src.dtype != DType::b8, "scatter_reduce (", index_math::scatter_reduce_name(op),
              "): not defined for bool tensors");
  EMBER_CHECK(src.ndim == index.ndim && src.ndim == out.ndim && dim >= 0 && dim < out.ndim,
              "scatter_reduce: the source, index and output need one number of dims and dim in range, got ",
              src.ndim, ", ", index.ndim, ", ", out.ndim, " dims and dim ", dim);
  for (int d = 0; d < src.ndim; ++d)
    EMBER_CHECK(src.shape[d] == index.shape[d] && (d == dim || src.shape[d] <= out.shape[d]),
                "scatter_reduce: the index must have the source's shape and fit the output in every dim but ", dim);
}

void check_index(IndexOp op, const TensorArg& in, const TensorArg& index, const TensorArg& out, int dim) {
  EMBER_CHECK(index.dtype == DType::i64, "gather/scatter: index must be i64, got ", dtype_name(index.dtype));
  EMBER_CHECK(in.dtype == out.dtype, "gather/scatter: input and output dtypes differ");
  const char* name = op == IndexOp::gather ? "gather" : op == IndexOp::scatter ? "scatter" : "scatter_add";
  // The iterated tensor (out for gather, in for the scatters) walks the index's shape; the addressed one is
  // read or written at the index along `dim` and at the iterated position elsewhere.
  const TensorArg& iterated = op == IndexOp::gather ? out : in;
  const TensorArg& addressed = op == IndexOp::gather ? in : out;
  check_dim(name, dim, addressed);
  EMBER_CHECK(same_shape(iterated, index), name, ": the index is ", ShapeOf{index}, " but the ",
              op == IndexOp::gather ? "output" : "source", " is ", ShapeOf{iterated}, "; they must be one shape");
  // A dim of stride 0 in the addressed tensor is in bounds at any position (nonzero writes a column that way).
  bool fits = addressed.ndim == iterated.ndim;
  for (int d = 0; fits && d < iterated.ndim; ++d)
    fits = d == dim || iterated.shape[d] <= addressed.shape[d] || addressed.strides[d] == 0;
  EMBER_CHECK(fits, name, ": the index ", ShapeOf{index}, " exceeds the ", op == IndexOp::gather ? "input" : "output",
              " ", ShapeOf{addressed}, " in a dim other than ", dim);
}

void check_random(const TensorArg& out) {
  EMBER_CHECK(dense(out), "random: output must be contiguous");
  EMBER_CHECK(is_floating(out.dtype), "random: expected a floating dtype (f32 or f64), got ", dtype_name(out.dtype),
              "; convert with .to(DType::f32)");
}

MatmulDims check_matmul(const TensorArg& a, const TensorArg& b, const TensorArg& out) {
  EMBER_CHECK(a.ndim == 3 && b.ndim == 3 && out.ndim == 3, "matmul (backend): expected 3-D operands");
  EMBER_CHECK(a.dtype == b.dtype && a.dtype == out.dtype, "matmul: operand dtypes differ");
  EMBER_CHECK(a.dtype != DType::b8, "matmul: not defined for bool tensors");
  const MatmulDims d{out.shape[0], out.shape[1], out.shape[2], a.shape[2]};
  EMBER_CHECK(a.shape[0] == d.B && a.shape[1] == d.M && b.shape[0] == d.B && b.shape[1] == d.K && b.shape[2] == d.N,
              "matmul (backend): a ", ShapeOf{a}, ", b ", ShapeOf{b}, " and out ", ShapeOf{out},
              " are not [B, M, K], [B, K, N] and [B, M, N]");
  EMBER_CHECK(dense(out), "matmul (backend): out must be contiguous");
  return d;
}

void check_optimizer_step(OptimizerOp op, const OptimizerParams& p, const TensorArg& param, const TensorArg& grad,
                          const TensorArg* s0, const TensorArg* s1, const TensorArg* s2) {
  EMBER_CHECK(dense(param) && dense(grad), "optimizer step: parameter and gradient must be contiguous");
  EMBER_CHECK(is_floating(param.dtype), "optimizer step: expected a floating parameter (f32 or f64), got ",
              dtype_name(param.dtype));
  const int64_t n = param.numel();
  check_operand("optimizer step", "the gradient", &grad, param.dtype, n);
  // The state buffers this configuration updates (see OptimizerParams in backend.h), which must be there.
  const bool needed[3] = {op != OptimizerOp::sgd || p.momentum != 0,
                          op == OptimizerOp::adam || (op == OptimizerOp::rmsprop && p.momentum > 0),
                          (op == OptimizerOp::adam && p.amsgrad) || (op == OptimizerOp::rmsprop && p.centered)};
  const TensorArg* state[3] = {s0, s1, s2};
  static const char* const names[3] = {"state buffer s0", "state buffer s1", "state buffer s2"};
  for (int k = 0; k < 3; ++k) {
    EMBER_CHECK(!needed[k] || state[k] != nullptr, "optimizer step: ", names[k],
                " is missing but this configuration updates it (see OptimizerParams in backends/backend.h)");
    check_operand("optimizer step", names[k], state[k], param.dtype, n);
  }
}

// --- convolution, pooling -------------------------------------------------------------------------------------

int64_t conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  return (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
}

namespace {

void check_conv_operand(const char* what, const TensorArg& t, DType dtype) {
  EMBER_CHECK(t.ndim == 4 && dense(t) && t.dtype == dtype, "conv2d: ", what, " must be a contiguous 4-d ",
              dtype_name(dtype), " tensor, got ", t.ndim, "-d ", dtype_name(t.dtype),
              dense(t) ? "" : " (not contiguous)");
}

// x [N, C, H, W], w [O, C/groups, KH, KW] and y (the output or its gradient) [N, O, OH, OW].
void check_conv(const TensorArg& x, const TensorArg& w, const TensorArg& y, const char* y_name, const Conv2dParams& p) {
  EMBER_CHECK(is_floating(x.dtype), "conv2d: expected a floating dtype (f32 or f64), got ", dtype_name(x.dtype));
  check_conv_operand("input", x, x.dtype);
  check_conv_operand("weight", w, x.dtype);
  check_conv_operand(y_name, y, x.dtype);
  for (int i = 0; i < 2; ++i)
    EMBER_CHECK(p.stride[i] >= 1 && p.dilation[i] >= 1 && p.padding[i] >= 0, "conv2d: stride (", p.stride[0], ", ",
                p.stride[1], ") and dilation (", p.dilation[0], ", ", p.dilation[1], ") must be >= 1 and padding (",
                p.padding[0], ", ", p.padding[1], ") >= 0");
  const int64_t G = p.groups;
  EMBER_CHECK(G >= 1 && w.shape[1] * G == x.shape[1] && w.shape[0] % G == 0, "conv2d: input channels ", x.shape[1],
              ", weight [", w.shape[0], ", ", w.shape[1], ", ...] and groups ", G, " do not match");
  int64_t out[2];
  for (int i = 0; i < 2; ++i)
    out[i] = conv_output_size(x.shape[2 + i], w.shape[2 + i], p.stride[i], p.padding[i], p.dilation[i]);
  EMBER_CHECK(y.shape[0] == x.shape[0] && y.shape[1] == w.shape[0] && y.shape[2] == out[0] && y.shape[3] == out[1],
              "conv2d: ", y_name, " is [", y.shape[0], ", ", y.shape[1], ", ", y.shape[2], ", ", y.shape[3],
              "], expected [", x.shape[0], ", ", w.shape[0], ", ", out[0], ", ", out[1], "]");
}

void check_conv_bias(const TensorArg* b, const TensorArg& w) {
  EMBER_CHECK(b == nullptr || (b->dtype == w.dtype && dense(*b) && b->numel() == w.shape[0]),
              "conv2d: bias must be a contiguous [", w.shape[0], "] tensor of the weight's dtype");
}

}  // namespace

void check_conv2d_forward(const TensorArg& x, const TensorArg& w, const TensorArg* bias, const TensorArg& y,
                          const Conv2dParams& p) {
  check_conv(x, w, y, "output", p);
  check_conv_bias(bias, w);
}

void check_conv2d_backward(const TensorArg& x, const TensorArg& w, const TensorArg& grad_y, const TensorArg* grad_x,
                           const TensorArg* grad_w, const TensorArg* grad_bias, const Conv2dParams& p) {
  check_conv(x, w, grad_y, "grad_y", p);
  if (grad_x != nullptr) check_conv_operand("grad_x", *grad_x, x.dtype);
  if (grad_w != nullptr) check_conv_operand("grad_w", *grad_w, x.dtype);
  check_conv_bias(grad_bias, w);
  EMBER_CHECK(grad_x == nullptr || same_shape(*grad_x, x), "conv2d_backward: grad_x must have x's shape");
  EMBER_CHECK(grad_w == nullptr || same_shape(*grad_w, w), "conv2d_backward: grad_w must have w's shape");
}

namespace {

// x [N, C, H, W] and y [N, C, OH, OW] (the input and the output, or their gradients), the indices of a max
// pool, and windows that all overlap the input (an empty window would read outside it).
PoolDims check_pool(const char* op, const TensorArg& x, const TensorArg& y, const TensorArg* indices,
                    const Pool2dParams& p) {
  EMBER_CHECK(x.ndim == 4 && y.ndim == 4, op, ": expected 4-d [N, C, H, W] operands, got ", x.ndim, "-d and ", y.ndim,
              "-d");
  EMBER_CHECK(dense(x) && dense(y), op, ": operands must be contiguous");
  EMBER_CHECK(x.dtype == y.dtype, op, ": input and output dtypes differ (", dtype_name(x.dtype), ", ",
              dtype_name(y.dtype), ")");
  EMBER_CHECK(x.shape[0] == y.shape[0] && x.shape[1] == y.shape[1], op, ": input [", x.shape[0], ", ", x.shape[1],
              ", ...] and output [", y.shape[0], ", ", y.shape[1], ", ...] differ in N or C");
  if (indices != nullptr)
    EMBER_CHECK(indices->dtype == DType::i64 && dense(*indices) && same_shape(*indices, y), op,
                ": indices must be a contiguous i64 tensor of the output's shape");
  const PoolDims d{x.shape[0] * x.shape[1], x.shape[2], x.shape[3], y.shape[2], y.shape[3]};
  if (y.numel() == 0) return d;
  EMBER_CHECK(d.H >= 1 && d.W >= 1, op, ": the input ", ShapeOf{x}, " has no elements to pool into the output ",
              ShapeOf{y});
  if (p.adaptive) return d;  // adaptive windows are never empty (nn_math::adaptive_start/end)
  for (int i = 0; i < 2; ++i) {
    const int64_t in = i == 0 ? d.H : d.W, out = i == 0 ? d.OH : d.OW;
    EMBER_CHECK(p.kernel[i] >= 1 && p.stride[i] >= 1 && p.padding[i] >= 0 && 2 * p.padding[i] <= p.kernel[i], op,
                ": kernel (", p.kernel[0], ", ", p.kernel[1], ") and stride (", p.stride[0], ", ", p.stride[1],
                ") must be >= 1 and padding (", p.padding[0], ", ", p.padding[1], ") in [0, kernel / 2]");
    EMBER_CHECK((out - 1) * p.stride[i] - p.padding[i] < in, op, ": output size ", out, " along ",
                i == 0 ? "H" : "W", " needs windows that start past the input's ", in, " (kernel ", p.kernel[i],
                ", stride ", p.stride[i], ", padding ", p.padding[i], ")");
  }
  return d;
}

}  // namespace

PoolDims check_pool2d_forward(PoolOp op, const TensorArg& x, const TensorArg& y, const TensorArg* indices,
                              const Pool2dParams& p) {
  (void)op;  // a max pool may or may not want its indices
  return check_pool("pool2d", x, y, indices, p);
}

PoolDims check_pool2d_backward(PoolOp op, const TensorArg& grad_y, const TensorArg* indices, const TensorArg& grad_x,
                               const Pool2dParams& p) {
  EMBER_CHECK(op != PoolOp::max || indices != nullptr, "max_pool2d backward: needs the forward's indices");
  return check_pool("pool2d_backward", grad_x, grad_y, op == PoolOp::max ? indices : nullptr, p);
}

// --- softmax, cross entropy, norms ----------------------------------------------------------------------------

namespace {

void check_same(const char* op, const TensorArg& a, const TensorArg& b) {
  EMBER_CHECK(dense(a) && dense(b), op, ": operands must be contiguous");
  EMBER_CHECK(a.dtype == b.dtype && a.numel() == b.numel(), op, ": operands differ in dtype or size (",
              dtype_name(a.dtype), " × ", a.numel(), ", ", dtype_name(b.dtype), " × ", b.numel(), ")");
}

RowDims rows_of(const TensorArg& x) {  // [M, D] over the last dim (a 0-d tensor is one row of one)
  const int64_t D = x.ndim == 0 ? 1 : x.shape[x.ndim - 1];
  return {D == 0 ? 0 : x.numel() / D, D};
}

XentDims check_xent(const char* op, const TensorArg& logits, const TensorArg& target, const TensorArg& lse,
                    double label_smoothing) {
  EMBER_CHECK(logits.ndim == 2 && dense(logits), op, ": logits must be a contiguous [N, C] tensor");
  const XentDims d{logits.shape[0], logits.shape[1]};
  EMBER_CHECK(is_floating(logits.dtype), op, ": expected floating logits (f32 or f64), got ", dtype_name(logits.dtype));
  EMBER_CHECK(target.dtype == DType::i64 && dense(target) && target.numel() == d.N, op,
              ": target must be a contiguous i64 tensor of ", d.N, " class indices");
  EMBER_CHECK(lse.dtype == logits.dtype && dense(lse) && lse.numel() == d.N, op,
              ": loss and lse must be contiguous [N] tensors of the logits' dtype");
  EMBER_CHECK(label_smoothing >= 0 && label_smoothing <= 1, op, ": label_smoothing must be in [0, 1], got ",
              label_smoothing);
  return d;
}

}  // namespace

RowDims check_softmax_forward(const TensorArg& x, const TensorArg& y) {
  check_same("softmax", x, y);
  return rows_of(x);
}

RowDims check_softmax_backward(const TensorArg& grad_y, const TensorArg& y, const TensorArg& grad_x) {
  check_same("softmax_backward", y, grad_y);
  check_same("softmax_backward", y, grad_x);
  return rows_of(y);
}

XentDims check_cross_entropy_forward(const TensorArg& logits, const TensorArg& target, const TensorArg& loss,
                                     const TensorArg& lse, double label_smoothing) {
  check_xent("cross_entropy", logits, target, loss, label_smoothing);
  return check_xent("cross_entropy", logits, target, lse, label_smoothing);
}

XentDims check_cross_entropy_backward(const TensorArg& logits, const TensorArg& target, const TensorArg& lse,
                                      const TensorArg& grad_loss, const TensorArg& grad_logits,
                                      double label_smoothing) {
  const XentDims d = check_xent("cross_entropy_backward", logits, target, lse, label_smoothing);
  check_same("cross_entropy_backward", logits, grad_logits);
  EMBER_CHECK(grad_loss.dtype == logits.dtype && dense(grad_loss) &&
                  (grad_loss.ndim == 0 || grad_loss.numel() == d.N),
              "cross_entropy_backward: grad_loss must be 0-d or [", d.N, "] of the logits' dtype");
  return d;
}

BatchNormDims check_batch_norm_forward(const TensorArg& x, const TensorArg* weight, const TensorArg* bias,
                                       const TensorArg* running_mean, const TensorArg* running_var, const TensorArg& y,
                                       const TensorArg& save_mean, const TensorArg& save_invstd, bool training) {
  const char* op = "batch_norm";
  EMBER_CHECK(x.ndim >= 2 && dense(x), op, ": input must be a contiguous [N, C, ...] tensor");
  const int64_t N = x.shape[0], C = x.shape[1];
  const BatchNormDims d{N, C, N * C == 0 ? 0 : x.numel() / (N * C)};
  check_operand(op, "output", &y, x.dtype, x.numel());
  for (const auto& [name, t] : {std::pair{"weight", weight}, std::pair{"bias", bias},
                                std::pair{"running_mean", running_mean}, std::pair{"running_var", running_var},
                                std::pair{"save_mean", &save_mean}, std::pair{"save_invstd", &save_invstd}})
    check_operand(op, name, t, x.dtype, C);
  EMBER_CHECK(training || (running_mean != nullptr && running_var != nullptr),
              "batch_norm: eval mode needs running statistics");
  const int64_t count = N * d.S;
  EMBER_CHECK(!training || count > 1, "batch_norm: training needs more than one value per channel, got input shape [",
              N, ", ", C, ", ...] with ", count, " value(s) per channel; use a larger batch or eval()");
  return d;
}

BatchNormDims check_batch_norm_backward(const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight,
                                        const TensorArg& save_mean, const TensorArg& save_invstd,
                                        const TensorArg* grad_x, const TensorArg* grad_weight,
                                        const TensorArg* grad_bias) {
  const char* op = "batch_norm_backward";
  EMBER_CHECK(x.ndim >= 2 && dense(x), op, ": input must be a contiguous [N, C, ...] tensor");
  const int64_t N = x.shape[0], C = x.shape[1];
  check_operand(op, "grad_y", &grad_y, x.dtype, x.numel());
  check_operand(op, "grad_x", grad_x, x.dtype, x.numel());
  for (const auto& [name, t] : {std::pair{"weight", weight}, std::pair{"save_mean", &save_mean},
                                std::pair{"save_invstd", &save_invstd}, std::pair{"grad_weight", grad_weight},
                                std::pair{"grad_bias", grad_bias}})
    check_operand(op, name, t, x.dtype, C);
  return {N, C, N * C == 0 ? 0 : x.numel() / (N * C)};
}

namespace {

RowDims check_layer_norm_input(const char* op, const TensorArg& x) {
  EMBER_CHECK(x.ndim >= 1 && dense(x), op, ": input must be a contiguous tensor of at least 1 dim");
  const int64_t D = x.shape[x.ndim - 1];
  return {D == 0 ? 0 : x.numel() / D, D};
}

}  // namespace

RowDims check_layer_norm_forward(const TensorArg& x, const TensorArg* weight, const TensorArg* bias,
                                 const TensorArg& y, const TensorArg& save_mean, const TensorArg& save_invstd) {
  const char* op = "layer_norm";
  const RowDims d = check_layer_norm_input(op, x);
  check_operand(op, "output", &y, x.dtype, x.numel());
  check_operand(op, "weight", weight, x.dtype, d.D);
  check_operand(op, "bias", bias, x.dtype, d.D);
  check_operand(op, "save_mean", &save_mean, x.dtype, d.M);
  check_operand(op, "save_invstd", &save_invstd, x.dtype, d.M);
  return d;
}

RowDims check_layer_norm_backward(const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight,
                                  const TensorArg& save_mean, const TensorArg& save_invstd, const TensorArg* grad_x,
                                  const TensorArg* grad_weight, const TensorArg* grad_bias) {
  const char* op = "layer_norm_backward";
  const RowDims d = check_layer_norm_input(op, x);
  check_operand(op, "grad_y", &grad_y, x.dtype, x.numel());
  check_operand(op, "grad_x", grad_x, x.dtype, x.numel());
  check_operand(op, "weight", weight, x.dtype, d.D);
  check_operand(op, "grad_weight", grad_weight, x.dtype, d.D);
  check_operand(op, "grad_bias", grad_bias, x.dtype, d.D);
  check_operand(op, "save_mean", &save_mean, x.dtype, d.M);
  check_operand(op, "save_invstd", &save_invstd, x.dtype, d.M);
  return d;
}

RowDims check_rms_norm_forward(const TensorArg& x, const TensorArg* weight, const TensorArg& y,
                               const TensorArg& save_invrms) {
  const char* op = "rms_norm";
  const RowDims d = check_layer_norm_input(op, x);
  check_operand(op, "output", &y, x.dtype, x.numel());
  check_operand(op, "weight", weight, x.dtype, d.D);
  check_operand(op, "save_invrms", &save_invrms, x.dtype, d.M);
  return d;
}

RowDims check_rms_norm_backward(const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight,
                                const TensorArg& save_invrms, const TensorArg* grad_x, const TensorArg* grad_weight) {
  const char* op = "rms_norm_backward";
  const RowDims d = check_layer_norm_input(op, x);
  check_operand(op, "grad_y", &grad_y, x.dtype, x.numel());
  check_operand(op, "grad_x", grad_x, x.dtype, x.numel());
  check_operand(op, "weight", weight, x.dtype, d.D);
  check_operand(op, "grad_weight", grad_weight, x.dtype, d.D);
  check_operand(op, "save_invrms", &save_invrms, x.dtype, d.M);
  return d;
}

// --- recurrent cells ------------------------------------------------------------------------------------------

namespace {

// Every operand of one cell op: `ref` (the state) is [B, H]; each of `operands` (optional ones may be null) is
// a contiguous tensor of B·(gates·H) elements of ref's dtype.
CellDims check_cell(const char* op, const char* ref_name, const TensorArg& ref,
                    std::initializer_list<std::tuple<const char*, const TensorArg*, int64_t>> operands) {
  EMBER_CHECK(ref.ndim == 2, op, ": ", ref_name, " must be [B, H], got ", ref.ndim, " dims");
  EMBER_CHECK(is_floating(ref.dtype), op, ": expected a floating dtype (f32 or f64), got ", dtype_name(ref.dtype));
  const int64_t B = ref.shape[0], H = ref.shape[1];
  EMBER_CHECK(dense(ref), op, ": ", ref_name, " must be contiguous");
  for (const auto& [name, t, gates] : operands) {
    if (t == nullptr) continue;
    EMBER_CHECK(t->dtype == ref.dtype && dense(*t) && t->numel() == B * gates * H, op, ": ", name,
                " must be a contiguous ", dtype_name(ref.dtype), " tensor of [", B, ", ", gates * H,
                "] elements, got ", dtype_name(t->dtype), " × ", t->numel(),
                dense(*t) ? "" : " (not contiguous)");
  }
  return {B, H};
}

}  // namespace

CellDims check_lstm_cell_forward(const TensorArg& gates, const TensorArg& c_prev, const TensorArg& h,
                                 const TensorArg& c, const TensorArg& workspace) {
  return check_cell("lstm_cell", "c_prev", c_prev,
                    {{"gates", &gates, 4}, {"h", &h, 1}, {"c", &c, 1}, {"workspace", &workspace, 4}});
}

CellDims check_lstm_cell_backward(const TensorArg* grad_h, const TensorArg* grad_c, const TensorArg& c_prev,
                                  const TensorArg& c, const TensorArg& workspace, const TensorArg& grad_gates,
                                  const TensorArg* grad_c_prev) {
  return check_cell("lstm_cell_backward", "c_prev", c_prev,
                    {{"grad_h", grad_h, 1}, {"grad_c", grad_c, 1}, {"c", &c, 1}, {"workspace", &workspace, 4},
                     {"grad_gates", &grad_gates, 4}, {"grad_c_prev", grad_c_prev, 1}});
}

CellDims check_gru_cell_forward(const TensorArg& input_gates, const TensorArg& hidden_gates, const TensorArg& h_prev,
                                const TensorArg& h, const TensorArg& workspace) {
  return check_cell("gru_cell", "h_prev", h_prev,
                    {{"input_gates", &input_gates, 3}, {"hidden_gates", &hidden_gates, 3}, {"h", &h, 1},
                     {"workspace", &workspace, 4}});
}

CellDims check_gru_cell_backward(const TensorArg& grad_h, const TensorArg& h_prev, const TensorArg& workspace,
                                 const TensorArg* grad_input_gates, const TensorArg* grad_hidden_gates,
                                 const TensorArg* grad_h_prev) {
  return check_cell("gru_cell_backward", "h_prev", h_prev,
                    {{"grad_h", &grad_h, 1}, {"workspace", &workspace, 4}, {"grad_input_gates", grad_input_gates, 3},
                     {"grad_hidden_gates", grad_hidden_gates, 3}, {"grad_h_prev", grad_h_prev, 1}});
}

// --- attention ------------------------------------------------------------------------------------------------

namespace {

AttentionDims check_attention(const char* op, const TensorArg& q, const TensorArg& k, const TensorArg& v,
                              const TensorArg* mask, const TensorArg& out, const TensorArg& lse,
                              const AttentionParams& p) {
  EMBER_CHECK(q.ndim == 4 && k.ndim == 4 && v.ndim == 4 && out.ndim == 4 && lse.ndim == 3, op,
              ": expected q, k, v, out [B, H, *, *] and lse [B, H, L]");
  const AttentionDims d{q.shape[0], q.shape[1], q.shape[2], k.shape[2], q.shape[3], v.shape[3], k.shape[1]};
  EMBER_CHECK(is_floating(q.dtype), op, ": expected a floating dtype (f32 or f64), got ", dtype_name(q.dtype));
  for (const TensorArg* t : {&q, &k, &v, &out, &lse}) {
    EMBER_CHECK(dense(*t) && t->dtype == q.dtype, op, ": q, k, v, out and lse must be contiguous and of ",
                "one dtype");
    EMBER_CHECK(t->shape[0] == d.B && t->shape[1] == (t == &k || t == &v ? d.Hkv : d.H), op,
                ": q, out and lse must share [B, H], k and v [B, Hkv], got q ", ShapeOf{q}, ", k ", ShapeOf{k},
                ", v ", ShapeOf{v});
  }
  // Grouped-query attention: query head h reads kv head h / (H / Hkv).
  EMBER_CHECK(d.Hkv > 0 ? d.H % d.Hkv == 0 : d.H == 0, op, ": q's ", d.H,
              " heads must be a multiple of k and v's ", d.Hkv, " (grouped-query attention)");
  EMBER_CHECK(k.shape[3] == d.E && v.shape[2] == d.S && out.shape[2] == d.L && out.shape[3] == d.Ev &&
                  lse.shape[2] == d.L,
              op, ": shapes of q [B, H, L, E], k [B, Hkv, S, E], v [B, Hkv, S, Ev], out [B, H, L, Ev] do not agree");
  // NOTE: every dim of the mask, [B, H] included: the kernels index it with its strides up to (B, H, L, S), so
  // a mask of fewer batch rows or heads would be read past its end (a broadcast dim has size B, stride 0).
  if (mask != nullptr)
    EMBER_CHECK(mask->ndim == 4 && mask->dtype == q.dtype && mask->shape[0] == d.B && mask->shape[1] == d.H &&
                    mask->shape[2] == d.L && mask->shape[3] == d.S,
                op, ": the mask must be a [B, H, L, S] view of q's dtype: [", d.B, ", ", d.H, ", ", d.L, ", ", d.S,
                "] ", dtype_name(q.dtype), ", got ", ShapeOf{*mask}, " ", dtype_name(mask->dtype));
  EMBER_CHECK(p.dropout_p >= 0 && p.dropout_p <= 1, op, ": dropout_p must be in [0, 1], got ", p.dropout_p);
  return d;
}

}  // namespace

AttentionDims check_attention_forward(const TensorArg& q, const TensorArg& k, const TensorArg& v,
                                      const TensorArg* mask, const TensorArg& out, const TensorArg& lse,
                                      const AttentionParams& p) {
  return check_attention("scaled_dot_product_attention", q, k, v, mask, out, lse, p);
}

AttentionDims check_attention_backward(const TensorArg& q, const TensorArg& k, const TensorArg& v,
                                       const TensorArg* mask, const TensorArg& out, const TensorArg& lse,
                                       const TensorArg& grad_out, const TensorArg* grad_q, const TensorArg* grad_k,
                                       const TensorArg* grad_v, const AttentionParams& p) {
  const char* op = "scaled_dot_product_attention_backward";
  const AttentionDims d = check_attention(op, q, k, v, mask, out, lse, p);
  for (const auto& [g, like] : {std::pair{&grad_out, &out}, std::pair{grad_q, &q}, std::pair{grad_k, &k},
                                std::pair{grad_v, &v}}) {
    if (g == nullptr) continue;
    EMBER_CHECK(dense(*g) && g->dtype == q.dtype && g->numel() == like->numel(), op,
                ": gradients must be contiguous, of q's dtype and of their operand's size");
  }
  return d;
}

RotaryDims check_rotary(const TensorArg& x, const TensorArg& cos, const TensorArg& sin, const TensorArg& out) {
  const char* op = "apply_rotary";
  EMBER_CHECK(x.ndim == 4 && is_floating(x.dtype), op, ": expected x a [B, H, L, E] view of a floating dtype, got ",
              x.ndim, " dims ", dtype_name(x.dtype));
  const RotaryDims d{x.shape[0], x.shape[1], x.shape[2], x.shape[3], cos.ndim == 2 ? cos.shape[1] : 0};
  EMBER_CHECK(same_shape(out, x) && dense(out) && out.dtype == x.dtype, op, ": out must be a contiguous ",
              dtype_name(x.dtype), " tensor of x's shape ", ShapeOf{x}, ", got ", ShapeOf{out}, " ",
              dtype_name(out.dtype));
  for (const TensorArg* t : {&cos, &sin})
    EMBER_CHECK(t->ndim == 2 && same_shape(*t, cos) && t->shape[0] == d.L && 2 * d.pairs <= d.E && dense(*t) &&
                    t->dtype == x.dtype,
                op, ": cos and sin must be contiguous [L, R/2] tables of x's dtype with L = ", d.L,
                " and R <= E = ", d.E, ", got ", ShapeOf{cos}, " ", dtype_name(cos.dtype), " and ", ShapeOf{sin}, " ",
                dtype_name(sin.dtype));
  return d;
}

// --- errors the loops find in the data ------------------------------------------------------------------------

void throw_index_out_of_range(IndexOp op, int64_t value, int64_t dim, int64_t limit, std::string_view where) {
  detail::throw_error(op == IndexOp::gather ? "gather/index_select" : op == IndexOp::scatter ? "scatter" : "scatter_add",
                      ": index ", value, " is out of range for dim ", dim, " of size ", limit, where);
}

void throw_bad_target(int64_t value, int64_t sample, int64_t C, bool ignore_index_is_class, std::string_view where) {
  detail::throw_error("cross_entropy: target ", value, " (sample ", sample, ") is not a class index in [0, ", C, ")",
                      ignore_index_is_class ? " or the ignore_index" : "",
                      "; check the labels and the number of model outputs", where);
}

}  // namespace ember::checks
