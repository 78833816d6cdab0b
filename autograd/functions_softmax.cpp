// softmax and log_softmax along one dim, numerically stable (the max is subtracted first). Both save
// their output: softmax' = y·(g − Σ g·y), log_softmax' = g − exp(y)·Σ g.
#include "autograd/node.h"
#include "autograd/ops.h"
#include "core/raw.h"

namespace ember {
namespace {

struct SoftmaxBackward : autograd::Node {
  int dim = 0;
  bool log = false;
  autograd::SavedTensor y;
  std::string_view name() const override { return log ? "log_softmax" : "softmax"; }
  void release() override { y.release(); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Tensor out = y.unpack(*this);
    if (dim == out.dim() - 1 && out.is_contiguous()) {  // fused, as the forward
      const Tensor gc = raw::contiguous(g);
      Tensor gx = raw::empty(out.shape(), out.dtype(), out.device());
      backend(out.device()).softmax_backward(gc.arg(), out.arg(), gx.arg(), log);
      grad_inputs[0] = gx;
      return;
    }
    grad_inputs[0] = log ? g - exp(out) * sum(g, {dim}, /*keepdim=*/true)
                         : out * (g - sum(g * out, {dim}, /*keepdim=*/true));
  }
};

Tensor softmax_impl(const Tensor& x, int64_t dim, bool log) {
  const char* name = log ? "log_softmax" : "softmax";
  EMBER_CHECK(is_floating(x.dtype()), name, ": needs a floating tensor (f32 or f64), got ", dtype_name(x.dtype()),
              "; convert with .to(DType::f32)");
  const int d = wrap_dim(dim, x.dim(), name);
  Tensor y;
  if (x.dim() > 0 && d == x.dim() - 1 && x.is_contiguous() && x.numel() > 0) {
    // Rows of the last dim: one fused pass in the backend.
    y = raw::empty(x.shape(), x.dtype(), x.device());
    backend(x.device()).softmax_forward(x.arg(), y.arg(), log);
  } else {
    const Tensor shifted = raw::binary(BinaryOp::sub, x, raw::reduce(ReduceOp::max, x, {d}, true));  // ≤ 0
    const Tensor e = raw::unary(UnaryOp::exp, shifted);
    const Tensor total = raw::reduce(ReduceOp::sum, e, {d}, true);
    y = log ? raw::binary(BinaryOp::sub, shifted, raw::unary(UnaryOp::log, total)) : raw::binary(BinaryOp::div, e, total);
  }
  if (auto node = autograd::make_node<SoftmaxBackward>(x)) {
    node->dim = d;
    node->log = log;
    node->y.save(y, /*is_output=*/true);
    autograd::set_history(y, std::move(node));
  }
  return y;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, false); }
Tensor log_softmax(const Tensor& x, int64_t dim) { return softmax_impl(x, dim, true); }

}  // namespace ember
