// linear, dropout, embedding, embedding_bag: compositions of differentiable tensor ops.
#include <algorithm>
#include <cmath>
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

namespace {

// padding_idx in [-V, V) normalised to [0, V); -1 for none (torch.embedding's convention).
int64_t padding_row(const std::optional<int64_t>& padding_idx, int64_t V, const char* op) {
  if (!padding_idx.has_value()) return -1;
  const int64_t pad = *padding_idx;
  EMBER_CHECK(pad >= -V && pad < V, op, ": padding_idx ", pad, " must be within the ", V, " embeddings (in [-", V, ", ",
              V, "))");
  return pad < 0 ? pad + V : pad;
}

}  // namespace

Tensor embedding(const Tensor& indices, const Tensor& weight, const EmbeddingFuncOptions& o) {
  EMBER_CHECK(weight.dim() == 2, "embedding: weight must be [num_embeddings, dim], got shape ", weight.shape());
  EMBER_CHECK(indices.dtype() == DType::i64, "embedding: indices must be i64, got ", dtype_name(indices.dtype()));
  raw::check_same_device(weight, indices, "embedding");
  const int64_t V = weight.size(0);
  check_embedding_indices(indices, V);
  const int64_t pad = padding_row(o.padding_idx, V, "embedding");
  if (o.max_norm.has_value()) {
    Tensor w = weight;  // renormalised in place, as torch.nn.functional.embedding does
    embedding_renorm_(w, indices, *o.max_norm, o.norm_type);
  }
  return embedding_lookup(weight, indices, pad, o.scale_grad_by_freq);
}

namespace {

// The bag of each position of the flattened input ([L] i64), the number of bags, and where the bags end
// (positions from there on belong to none: include_last_offset's trailing entries).
struct Bags {
  Tensor bag_of;
  int64_t count = 0, end = 0;
};

Bags bags_from_offsets(const Tensor& offsets, int64_t L, bool include_last_offset) {
  EMBER_CHECK(offsets.dtype() == DType::i64, "embedding_bag: offsets must be i64, got ", dtype_name(offsets.dtype()));
  EMBER_CHECK(offsets.dim() == 1, "embedding_bag: offsets must be 1-D, got shape ", offsets.shape());
  const std::vector<int64_t> o = offsets.to_vector<int64_t>();
  EMBER_CHECK(!include_last_offset || !o.empty(), "embedding_bag: include_last_offset needs at least one offset");
  Bags b;
  b.count = include_last_offset ? static_cast<int64_t>(o.size()) - 1 : static_cast<int64_t>(o.size());
  b.end = include_last_offset && !o.empty() ? o.back() : L;
  if (!o.empty()) {
    EMBER_CHECK(o[0] == 0, "embedding_bag: offsets[0] must be 0 (the first bag starts at the first index), got ", o[0]);
    for (size_t i = 1; i < o.size(); ++i)
      EMBER_CHECK(o[i] >= o[i - 1], "embedding_bag: offsets must not decrease, got offsets[", i - 1, "] = ", o[i - 1],
                  " and offsets[", i, "] = ", o[i]);
    EMBER_CHECK(o.back() <= L, "embedding_bag: offsets[-1] = ", o.back(), " is past the input's length ", L);
  }
  std::vector<int64_t> bag_of(static_cast<size_t>(std::max<int64_t>(b.end, 0)));
  for (int64_t bag = 0; bag < b.count; ++bag) {
    const int64_t stop = bag + 1 < static_cast<int64_t>(o.size()) ? o[bag + 1] : b.end;
    for (int64_t i = o[bag]; i < stop && i < b.end; ++i) bag_of[i] = bag;
  }
  b.bag_of = from_vector(bag_of).to(offsets.device());
  return b;
}

}  // namespace

Tensor embedding_bag(const Tensor& input, const Tensor& weight, const EmbeddingBagFuncOptions& o) {
  EMBER_CHECK(weight.dim() == 2, "embedding_bag: weight must be [num_embeddings, dim], got shape ", weight.shape());
  EMBER_CHECK(input.dtype() == DType::i64, "embedding_bag: input must be i64, got ", dtype_name(input.dtype()));
  EMBER_CHECK(o.mode == "sum" || o.mode == "mean" || o.mode == "max", "embedding_bag: mode must be \"sum\", \"mean\" "
              "or \"max\", got \"", o.mode, "\"");
  raw::check_same_device(weight, input, "embedding_bag");
  const int64_t V = weight.size(0), D = weight.size(1);
  const Tensor& psw = o.per_sample_weights;
  if (psw.defined()) {
    EMBER_CHECK(o.mode == "sum", "embedding_bag: per_sample_weights is only supported for mode \"sum\" (got \"", o.mode,
                "\"), as in PyTorch");
    EMBER_CHECK(psw.shape() == input.shape(), "embedding_bag: per_sample_weights (shape ", psw.shape(),
                ") must have the input's shape ", input.shape());
    EMBER_CHECK(psw.dtype() == weight.dtype(), "embedding_bag: per_sample_weights is ", dtype_name(psw.dtype()),
                " but the weight is ", dtype_name(weight.dtype()));
  }
  EMBER_CHECK(!(o.scale_grad_by_freq && o.mode == "max"), "embedding_bag: scale_grad_by_freq is not supported for "
              "mode \"max\" (as in PyTorch)");
  Bags bags;
  Tensor flat;
  if (input.dim() == 2) {
    EMBER_CHECK(!o.offsets.defined(), "embedding_bag: offsets must be undefined for a 2-D input (its rows are the "
                "bags), got shape ", o.offsets.shape());
    const int64_t B = input.size(0), N = input.size(1);
    flat = input.reshape({B * N});
    bags = bags_from_offsets(arange(B) * N, B * N, o.include_last_offset);  // row b starts at b·N
    bags.bag_of = bags.bag_of.to(input.device());
  } else {
    EMBER_CHECK(input.dim() == 1, "embedding_bag: input must be 1-D (with offsets) or 2-D [B, N], got shape ",
                input.shape());
    EMBER_CHECK(o.offsets.defined(), "embedding_bag: a 1-D input needs offsets (where each bag starts)");
    raw::check_same_device(input, o.offsets, "embedding_bag");
    flat = input;
    bags = bags_from_offsets(o.offsets, input.numel(), o.include_last_offset);
  }
  const int64_t B = bags.count;
  flat = flat.narrow(0, 0, bags.end);  // include_last_offset: entries after the last offset belong to no bag
  check_embedding_indices(flat, V);
  const int64_t pad = padding_row(o.padding_idx, V, "embedding_bag");
  if (o.max_norm.has_value()) {
    Tensor w = weight;
    embedding_renorm_(w, flat, *o.max_norm, o.norm_type);
  }
  const TensorOptions options{.dtype = weight.dtype(), .device = weight.device()};
  Tensor rows = embedding_lookup(weight, flat, pad, o.scale_grad_by_freq);  // [L, D]
  const Tensor keep = pad >= 0 ? ne(flat, pad) : Tensor();             // [L]: false at padding entries
  if (keep.defined()) rows = where(keep.unsqueeze(1), rows, zeros({}, options));
  if (bags.end == 0) return rows.sum() * 0.0 + zeros({B, D}, options);  // every bag empty (the graph kept)
  if (o.mode == "max") {
    // Each dim's first maximum over the bag's (non-padding) entries; its gradient goes to that entry alone.
    const Tensor r = rows.detach();
    const Tensor idx = bags.bag_of.unsqueeze(1).expand({bags.end, D});
    const Tensor candidates = keep.defined() ? where(keep.unsqueeze(1), r, full({}, -INFINITY, options)) : r;
    const Tensor best = scatter_reduce(full({B, D}, -INFINITY, options), 0, idx, candidates, "amax", false);
    const TensorOptions i64{.dtype = DType::i64, .device = weight.device()};
    const Tensor position = arange(int64_t{0}, bags.end, int64_t{1}, i64).unsqueeze(1).expand({bags.end, D});
    Tensor is_best = eq(candidates, gather(best, 0, idx));
    if (keep.defined()) is_best = logical_and(is_best, keep.unsqueeze(1));
    const Tensor first = scatter_reduce(full({B, D}, static_cast<double>(bags.end), i64), 0, idx,
                                        where(is_best, position, full({}, static_cast<double>(bags.end), i64)), "amin",
                                        false);
    const Tensor empty_bag = eq(first, bags.end);  // no entry (or only padding): 0, as PyTorch
    const Tensor picked = gather(rows, 0, where(empty_bag, zeros({}, i64), first));
    return where(empty_bag, zeros({}, options), picked);
  }
  if (psw.defined()) rows = rows * psw.reshape({-1}).narrow(0, 0, bags.end).unsqueeze(1);
  Tensor out = index_add(zeros({B, D}, options), 0, bags.bag_of, rows);
  if (o.mode == "sum") return out;
  // mean: over the bag's non-padding entries (an empty bag stays 0)
  const Tensor counted = keep.defined() ? keep.to(weight.dtype()) : ones({bags.end}, options);
  const Tensor size = raw::index_add(zeros({B}, options), 0, bags.bag_of, counted, 1);
  return out / maximum(size, ones({}, options)).unsqueeze(1);
}

}  // namespace ember::nn::functional
