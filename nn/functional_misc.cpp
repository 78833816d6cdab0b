// linear, dropout, embedding: compositions of differentiable tensor ops.
#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

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

namespace {

// The first index outside [0, V), as the error PyTorch's embedding gives, naming the position (the
// multi-index into `indices`). One min/max pass over the indices on their device; the search only on error.
void check_embedding_indices(const Tensor& indices, int64_t V) {
  if (indices.numel() == 0) return;
  const Tensor flat = raw::contiguous(indices);
  const int64_t lo = raw::reduce(ReduceOp::min, flat, {}, false).item<int64_t>();
  const int64_t hi = raw::reduce(ReduceOp::max, flat, {}, false).item<int64_t>();
  if (lo >= 0 && hi < V) return;
  const std::vector<int64_t> v = flat.to_vector<int64_t>();
  const auto bad = std::find_if(v.begin(), v.end(), [V](int64_t i) { return i < 0 || i >= V; });
  int64_t rest = bad - v.begin();
  std::ostringstream pos;
  pos << "[";
  for (int64_t d = 0; d < indices.dim(); ++d) {
    int64_t stride = 1;
    for (int64_t e = d + 1; e < indices.dim(); ++e) stride *= indices.size(e);
    pos << (d > 0 ? ", " : "") << rest / stride;
    rest %= stride;
  }
  pos << "]";
  throw Error("embedding: index " + std::to_string(*bad) + " at position " + pos.str() + " of the indices " +
              indices.shape().str() + " is out of range for a vocabulary of " + std::to_string(V) +
              " embeddings (valid: 0 to " + std::to_string(V - 1) + "); check the tokenizer / num_embeddings");
}

}  // namespace

Tensor embedding(const Tensor& indices, const Tensor& weight, const EmbeddingFuncOptions& o) {
  EMBER_CHECK(weight.dim() == 2, "embedding: weight must be [num_embeddings, dim], got shape ", weight.shape());
  EMBER_CHECK(indices.dtype() == DType::i64, "embedding: indices must be i64, got ", dtype_name(indices.dtype()));
  raw::check_same_device(weight, indices, "embedding");
  const int64_t V = weight.size(0);
  check_embedding_indices(indices, V);
  Shape out_shape = indices.shape();
  out_shape.push_back(weight.size(1));
  const Tensor flat = indices.reshape({-1});
  Tensor y = index_select(weight, 0, flat);
  if (o.padding_idx.has_value()) {
    int64_t pad = *o.padding_idx;
    EMBER_CHECK(pad >= -V && pad < V, "embedding: padding_idx ", pad, " must be within the ", V,
                " embeddings (in [-", V, ", ", V, "))");
    if (pad < 0) pad += V;
    // The rows looked up at padding positions get no gradient: their output is taken from a detached copy.
    const Tensor at_pad = eq(flat, pad).unsqueeze(1);
    y = where(at_pad, y.detach(), y);
  }
  return y.reshape(out_shape);
}

}  // namespace ember::nn::functional
