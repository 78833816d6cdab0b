// Reductions: keepdim-form outputs from the backend, reduced dims dropped afterwards unless kept.
#include "core/raw.h"

namespace ember::raw {

Tensor reduce(ReduceOp op, const Tensor& t, const Shape& dims, bool keepdim) {
  static constexpr const char* kNames[] = {"sum", "mean", "max", "min"};
  const char* name = kNames[static_cast<int>(op)];
  bool reduced[kMaxDims] = {};
  if (dims.empty()) {
    for (int d = 0; d < t.dim(); ++d) reduced[d] = true;
  } else {
    for (int64_t dim : dims) {
      const int d = wrap_dim(dim, t.dim(), name);
      EMBER_CHECK(!reduced[d] || t.dim() == 0, name, ": dim ", d, " appears twice in ", dims);
      reduced[d] = true;
    }
  }
  DType dtype = t.dtype();
  if (op == ReduceOp::mean) {
    dtype = to_floating(dtype);
  } else if (dtype == DType::b8) {
    dtype = DType::i64;  // sum of a mask counts; max/min of a mask is 0/1
  }
  Shape kept_shape = t.shape();
  for (int d = 0; d < t.dim(); ++d)
    if (reduced[d]) kept_shape[d] = 1;
  if ((op == ReduceOp::max || op == ReduceOp::min) && t.numel() == 0)
    detail::throw_error(name, ": the input (shape ", t.shape(), ") is empty and ", name, " has no identity");
  const Tensor in = to(t, dtype);
  Tensor out = empty(kept_shape, dtype, t.device());
  backend(t.device()).reduce(op, in.arg(), out.arg());
  if (keepdim) return out;
  Shape shape;
  for (int d = 0; d < t.dim(); ++d)
    if (!reduced[d]) shape.push_back(t.shape()[d]);
  return view(out, shape);
}

Tensor arg_reduce(ArgReduceOp op, const Tensor& t, int64_t dim, bool keepdim) {
  const char* name = op == ArgReduceOp::argmax ? "argmax" : "argmin";
  if (t.dim() == 0) return zeros({}, {.dtype = DType::i64, .device = t.device()});
  const int d = wrap_dim(dim, t.dim(), name);
  EMBER_CHECK(t.shape()[d] > 0, name, ": dim ", d, " of shape ", t.shape(), " is empty");
  Shape kept_shape = t.shape();
  kept_shape[d] = 1;
  Tensor out = empty(kept_shape, DType::i64, t.device());
  const Tensor in = t.dtype() == DType::b8 ? to(t, DType::i64) : t;
  backend(t.device()).arg_reduce(op, in.arg(), out.arg(), d);
  return keepdim ? out : squeeze(out, d);
}

}  // namespace ember::raw
