// Broadcasting, type promotion and the element-wise ops.
#include "core/raw.h"

namespace ember::raw {
namespace {

int category(DType t) { return t == DType::b8 ? 0 : is_floating(t) ? 2 : 1; }

// t in `dtype`, broadcast to `shape` — without a new view when the shape already matches (the common
// case: each view is a heap allocation, and small ops are dominated by such overhead).
Tensor operand(const Tensor& t, DType dtype, const Shape& shape) {
  Tensor c = to(t, dtype);
  return c.shape() == shape ? c : expand(c, shape);
}

}  // namespace

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const int n = std::max(a.size(), b.size());
  Shape out = Shape::filled(n, 1);
  for (int i = 0; i < n; ++i) {
    const int ia = a.size() - n + i, ib = b.size() - n + i;
    const int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
    EMBER_CHECK(sa == sb || sa == 1 || sb == 1, op, ": shapes ", a, " and ", b, " cannot be broadcast together (dim ",
                i, ": ", sa, " vs ", sb, "); sizes must match or be 1");
    out[i] = sa == 1 ? sb : sa;
  }
  return out;
}

DType result_type(const Tensor& a, const Tensor& b) {
  const DType ta = a.dtype(), tb = b.dtype();
  if (ta == tb) return ta;
  const int ca = category(ta), cb = category(tb);
  if (ca != cb) return ca > cb ? ta : tb;
  const bool za = a.dim() == 0, zb = b.dim() == 0;
  if (za != zb) return za ? tb : ta;  // same category: the dimensioned tensor decides
  return promote_types(ta, tb);
}

void check_same_device(const Tensor& a, const Tensor& b, const char* op) {
  EMBER_CHECK(a.device() == b.device(), "tensors on different devices: ", a.device(), " and ", b.device(), " in ", op,
              "; move one with .to(...)");
}

namespace {

// Where an element-wise op of a and b runs: their device, or, as in PyTorch, the other operand's when one
// is a 0-d CPU tensor (a scalar, moved along).
Device common_device(const Tensor& a, const Tensor& b, const char* op) {
  if (a.device() == b.device()) return a.device();
  if (a.dim() == 0 && a.device().is_cpu()) return b.device();
  if (b.dim() == 0 && b.device().is_cpu()) return a.device();
  check_same_device(a, b, op);
  return a.device();
}

}  // namespace

Tensor scalar_like(const Tensor& like, double value, bool value_is_integral) {
  DType dtype = like.dtype();
  if (!is_floating(dtype)) dtype = value_is_integral ? DType::i64 : DType::f32;
  if (like.dtype() == DType::b8 && value_is_integral) dtype = DType::i64;
  Tensor s = empty({}, dtype, like.device());
  backend(like.device()).fill(s.arg(), value);
  return s;
}

Tensor unary(UnaryOp op, const Tensor& t, double alpha, double beta) {
  DType dtype = t.dtype();
  if (unary_needs_float(op)) dtype = to_floating(dtype);
  else if (dtype == DType::b8) dtype = DType::i64;
  const Tensor in = to(t, dtype);
  Tensor out = empty(t.shape(), dtype, t.device());
  backend(t.device()).unary(op, in.arg(), out.arg(), alpha, beta);
  return out;
}

Tensor unary_backward(UnaryOp op, const Tensor& grad, const Tensor& saved, double alpha, double beta) {
  const Tensor s = saved.defined() ? to(saved, grad.dtype()) : grad;
  check_same_device(grad, s, op_name(op).data());
  EMBER_CHECK(s.shape() == grad.shape(), op_name(op), " backward: the gradient's shape ", grad.shape(),
              " differs from the saved tensor's ", s.shape());
  Tensor out = empty(grad.shape(), grad.dtype(), grad.device());
  backend(grad.device()).unary_backward(op, grad.arg(), s.arg(), out.arg(), alpha, beta);
  return out;
}

Tensor binary(BinaryOp op, const Tensor& a_in, const Tensor& b_in) {
  const Device device = common_device(a_in, b_in, op_name(op).data());
  const Tensor a = to(a_in, device), b = to(b_in, device);
  DType dtype = result_type(a, b);
  if (binary_needs_float(op)) dtype = to_floating(dtype);  // div: true division
  else if (dtype == DType::b8 && !is_comparison(op)) dtype = DType::i64;                   // bool arithmetic
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), op_name(op).data());
  const Tensor x = operand(a, dtype, shape), y = operand(b, dtype, shape);
  Tensor out = empty(shape, is_comparison(op) ? DType::b8 : dtype, a.device());
  backend(a.device()).binary(op, x.arg(), y.arg(), out.arg());
  return out;
}

void binary_(BinaryOp op, const Tensor& a, const Tensor& b_in) {
  const Tensor b = b_in.dim() == 0 && b_in.device().is_cpu() ? to(b_in, a.device()) : b_in;  // a scalar
  check_same_device(a, b, op_name(op).data());
  EMBER_CHECK(!is_comparison(op), op_name(op), "_: comparisons have no in-place form");
  const Shape shape = broadcast_shapes(a.shape(), b.shape(), op_name(op).data());
  EMBER_CHECK(shape == a.shape(), op_name(op), "_: the result shape ", shape, " differs from the in-place target's ",
              a.shape(), "; in-place ops cannot grow their target");
  const DType rt = result_type(a, b);
  EMBER_CHECK(category(rt) <= category(a.dtype()), op_name(op), "_: the result type ", dtype_name(rt),
              " cannot be stored in the ", dtype_name(a.dtype()), " target; convert the target first");
  Tensor y = expand(to(b, a.dtype()), shape);
  // Reading and writing overlapping but different views would read already-written values: copy first.
  if (y.shares_storage(a) && (y.offset() != a.offset() || !(y.strides() == a.strides()))) y = clone(y);
  backend(a.device()).binary(op, a.arg(), y.arg(), a.arg());
  a.impl().storage->bump_version();
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  check_same_device(cond, a, "where");
  check_same_device(a, b, "where");
  EMBER_CHECK(cond.dtype() == DType::b8, "where: the condition must be a bool tensor (e.g. from x > 0), got ",
              dtype_name(cond.dtype()));
  const DType dtype = result_type(a, b);
  const Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  const Tensor c = operand(cond, DType::b8, shape), x = operand(a, dtype, shape), y = operand(b, dtype, shape);
  Tensor out = empty(shape, dtype, a.device());
  backend(a.device()).where(c.arg(), x.arg(), y.arg(), out.arg());
  return out;
}

}  // namespace ember::raw
