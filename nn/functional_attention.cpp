// scaled_dot_product_attention: one fused Backend op (attention_forward/backward) on [B, H, L, E] views.
#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/grad_mode.h"
#include "autograd/node.h"
#include "core/raw.h"
#include "nn/functional.h"

namespace ember::nn::functional {
namespace {

using autograd::SavedTensor;

constexpr const char* kOp = "scaled_dot_product_attention";

struct AttentionBackward : autograd::Node {
  AttentionParams params;
  bool has_mask = false;
  SavedTensor q, k, v, mask, out, lse;
  std::string_view name() const override { return kOp; }
  void release() override {
    for (SavedTensor* t : {&q, &k, &v, &mask, &out, &lse}) t->release();
  }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Tensor qv = q.unpack(*this), kv = k.unpack(*this), vv = v.unpack(*this), o = out.unpack(*this);
    const Tensor m = has_mask ? mask.unpack(*this) : Tensor();
    const Tensor go = raw::contiguous(raw::reshape(g, o.shape()));
    Tensor grads[3];
    TensorArg args[3], ma;
    const Tensor* like[3] = {&qv, &kv, &vv};
    for (int i = 0; i < 3; ++i) {
      if (!needs_grad(i)) continue;
      grads[i] = raw::empty(like[i]->shape(), qv.dtype(), qv.device());
      args[i] = grads[i].arg();
    }
    if (has_mask) ma = m.arg();
    backend(qv.device())
        .attention_backward(qv.arg(), kv.arg(), vv.arg(), has_mask ? &ma : nullptr, o.arg(), lse.unpack(*this).arg(),
                            go.arg(), needs_grad(0) ? &args[0] : nullptr, needs_grad(1) ? &args[1] : nullptr,
                            needs_grad(2) ? &args[2] : nullptr, params);
    for (int i = 0; i < 3; ++i)
      if (needs_grad(i)) grad_inputs[i] = raw::view(grads[i], next[i].shape);
  }
};

// The explicit math, for empty operands (where the blocked kernel has nothing to do and PyTorch's
// matmul-based result is zeros or empty).
Tensor composed(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& additive_mask, double scale) {
  Tensor s = matmul(q, k.transpose(-2, -1)) * scale;
  if (additive_mask.defined()) s = s + additive_mask;
  return matmul(softmax(s, -1), v);
}

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                   const AttentionOptions& options) {
  EMBER_CHECK(query.dim() >= 2 && key.dim() >= 2 && value.dim() >= 2, kOp,
              ": expected query [..., L, E], key [..., S, E], value [..., S, Ev], got shapes ", query.shape(), ", ",
              key.shape(), ", ", value.shape());
  EMBER_CHECK(is_floating(query.dtype()) && key.dtype() == query.dtype() && value.dtype() == query.dtype(), kOp,
              ": query, key and value must share one floating dtype, got ", dtype_name(query.dtype()), ", ",
              dtype_name(key.dtype()), ", ", dtype_name(value.dtype()));
  raw::check_same_device(query, key, kOp);
  raw::check_same_device(query, value, kOp);
  const int n = query.dim() - 2;
  EMBER_CHECK(key.dim() == query.dim() && value.dim() == query.dim(), kOp,
              ": query, key and value must have the same leading dims, got shapes ", query.shape(), ", ", key.shape(),
              ", ", value.shape(), "; expand them first");
  for (int d = 0; d < n; ++d)
    EMBER_CHECK(key.size(d) == query.size(d) && value.size(d) == query.size(d), kOp,
                ": query, key and value must have the same leading dims, got shapes ", query.shape(), ", ",
                key.shape(), ", ", value.shape(), "; expand them first");
  const int64_t L = query.size(-2), E = query.size(-1), S = key.size(-2), Ev = value.size(-1);
  EMBER_CHECK(key.size(-1) == E, kOp, ": key's last dim must equal query's E = ", E, ", got key ", key.shape());
  EMBER_CHECK(value.size(-2) == S, kOp, ": value [..., S, Ev] must have S = ", S, " rows like key, got value ",
              value.shape());
  EMBER_CHECK(options.dropout_p >= 0 && options.dropout_p <= 1, kOp, ": dropout_p must be in [0, 1], got ",
              options.dropout_p);
  const Tensor& mask_in = options.attn_mask;
  EMBER_CHECK(!(mask_in.defined() && options.is_causal), kOp,
              ": attn_mask and is_causal are both set (PyTorch refuses this too); fold the causal mask into attn_mask");
  const double scale = options.scale.value_or(1.0 / std::sqrt(static_cast<double>(E)));

  // Leading dims → [B, H]: the last one is H, the others are flattened into B.
  Shape lead;
  for (int d = 0; d < n; ++d) lead.push_back(query.size(d));
  const int64_t H = n == 0 ? 1 : lead[n - 1], B = n == 0 ? 1 : lead.numel() / std::max<int64_t>(1, H);

  // The mask as an additive mask of q's dtype, broadcast (stride 0) to [B, H, L, S].
  Tensor additive;
  if (mask_in.defined()) {
    raw::check_same_device(query, mask_in, kOp);
    EMBER_CHECK(!(mask_in.requires_grad() && GradMode::is_enabled()), kOp,
                ": attn_mask requires grad, but the fused op gives the mask no gradient; pass attn_mask.detach()");
    if (mask_in.dtype() == DType::b8) {
      additive = raw::where(mask_in, raw::scalar_like(query, 0.0, false),
                            raw::scalar_like(query, -std::numeric_limits<double>::infinity(), false));
    } else {
      EMBER_CHECK(mask_in.dtype() == query.dtype(), kOp, ": attn_mask must be bool or query's dtype ",
                  dtype_name(query.dtype()), ", got ", dtype_name(mask_in.dtype()));
      additive = mask_in;
    }
    Shape full = lead;
    full.push_back(L);
    full.push_back(S);
    EMBER_CHECK(additive.dim() <= full.size(), kOp, ": attn_mask of shape ", mask_in.shape(),
                " is not broadcastable to [..., L, S] = ", full);
    for (int d = 0; d < additive.dim(); ++d) {
      const int64_t m = additive.size(d), f = full[full.size() - additive.dim() + d];
      EMBER_CHECK(m == f || m == 1, kOp, ": attn_mask of shape ", mask_in.shape(),
                  " is not broadcastable to [..., L, S] = ", full);
    }
    additive = raw::expand(additive, full);
  }

  if (query.numel() == 0 || key.numel() == 0 || value.numel() == 0 || L == 0 || S == 0) {
    EMBER_CHECK(options.dropout_p == 0, kOp, ": dropout on empty operands is not supported");
    return composed(query, key, value, additive, scale);
  }

  const Tensor q = raw::reshape(raw::contiguous(query), {B, H, L, E});
  const Tensor k = raw::reshape(raw::contiguous(key), {B, H, S, E});
  const Tensor v = raw::reshape(raw::contiguous(value), {B, H, S, Ev});
  const Tensor mask = additive.defined() ? raw::reshape(additive, {B, H, L, S}) : Tensor();  // a view when it can be
  AttentionParams p;
  p.scale = scale;
  p.causal = options.is_causal;
  p.dropout_p = options.dropout_p;
  if (p.dropout_p > 0) {
    Generator& gen = options.gen != nullptr ? *options.gen : default_generator();
    p.seed = gen.seed();
    p.offset = gen.advance(static_cast<uint64_t>(B * H * L * S));
  }
  Tensor out = raw::empty({B, H, L, Ev}, q.dtype(), q.device());
  const Tensor lse = raw::empty({B, H, L}, q.dtype(), q.device());
  TensorArg ma;
  if (mask.defined()) ma = mask.arg();
  backend(q.device()).attention_forward(q.arg(), k.arg(), v.arg(), mask.defined() ? &ma : nullptr, out.arg(),
                                        lse.arg(), p);
  Shape out_shape = lead;
  out_shape.push_back(L);
  out_shape.push_back(Ev);
  Tensor y = raw::view(out, out_shape);
  if (auto node = autograd::make_node<AttentionBackward>(query, key, value)) {
    node->params = p;
    node->has_mask = mask.defined();
    node->q.save(q);
    node->k.save(k);
    node->v.save(v);
    if (mask.defined()) node->mask.save(mask);
    node->out.save(out, /*is_output=*/true);
    node->lse.save(lse);
    autograd::set_history(y, std::move(node));
  }
  return y;
}

}  // namespace ember::nn::functional
