// linear, dropout, embedding: compositions of differentiable tensor ops.
#include "core/raw.h"
#include "nn/functional.h"

namespace ember::nn::functional {

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  EMBER_CHECK(weight.dim() == 2, "linear: weight must be [out, in], got shape ", weight.shape());
  EMBER_CHECK(x.dim() >= 1 && x.size(-1) == weight.size(1), "linear: the input's last dim (shape ", x.shape(),
              ") must equal in_features ", weight.size(1), " of the weight ", weight.shape());
  Tensor y = matmul(x, weight.t());
  if (bias.defined()) {
    EMBER_CHECK(bias.shape() == Shape({weight.size(0)}), "linear: bias must be [", weight.size(0), "], got ",
                bias.shape());
    y = y + bias;
  }
  return y;
}

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  EMBER_CHECK(p >= 0 && p <= 1, "dropout: p must be in [0, 1], got ", p);
  if (!training || p == 0) return x;
  if (p == 1) return x * 0.0;
  EMBER_CHECK(is_floating(x.dtype()), "dropout: needs a floating input, got ", dtype_name(x.dtype()));
  Tensor keep = raw::empty(x.shape(), x.dtype(), x.device());
  raw::random_(keep, RandomOp::bernoulli, 1.0 - p, 0.0, gen);  // 1 with probability 1 - p
  raw::binary_(BinaryOp::mul, keep, raw::scalar_like(keep, 1.0 / (1.0 - p), false));
  return x * keep;
}

Tensor embedding(const Tensor& indices, const Tensor& weight) {
  EMBER_CHECK(weight.dim() == 2, "embedding: weight must be [num_embeddings, dim], got shape ", weight.shape());
  EMBER_CHECK(indices.dtype() == DType::i64, "embedding: indices must be i64, got ", dtype_name(indices.dtype()));
  Shape out_shape = indices.shape();
  out_shape.push_back(weight.size(1));
  return index_select(weight, 0, indices.reshape({-1})).reshape(out_shape);
}

}  // namespace ember::nn::functional
