// scaled_dot_product_attention: one fused Backend op (attention_forward/backward) on [B, H, L, E] views;
// apply_rotary: one (Backend::rotary) each way.
#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

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
  void release() override { release_all(q, k, v, mask, out, lse); }
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

// t [..., Hkv, S, E] with each head repeated `group` times along dim -3 (torch.repeat_interleave): the
// grouped-query heads as copies, for the empty operands' composed math only.
Tensor repeat_heads(const Tensor& t, int64_t group) {
  if (group == 1) return t;
  Shape expanded = t.unsqueeze(-3).shape(), merged = t.shape();
  expanded[expanded.size() - 3] = group;
  merged[merged.size() - 3] *= group;
  return t.unsqueeze(-3).expand(expanded).reshape(merged);
}

// The explicit math, for empty operands (where the blocked kernel has nothing to do and PyTorch's
// matmul-based result is zeros or empty).
Tensor composed(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& additive_mask, double scale,
                int64_t group) {
  Tensor s = matmul(q, repeat_heads(k, group).transpose(-2, -1)) * scale;
  if (additive_mask.defined()) s = s + additive_mask;
  return matmul(softmax(s, -1), repeat_heads(v, group));
}

constexpr const char* kRotaryOp = "apply_rotary";

// x [..., L, E] as a [B, H, L, E] view: fewer dims get leading 1s, more are merged into B (a copy only where
// they cannot be).
Tensor as_4d(const Tensor& x) {
  Tensor t = x;
  while (t.dim() < 4) t = raw::unsqueeze(t, 0);
  if (t.dim() > 4) t = raw::reshape(t, {-1, x.size(-3), x.size(-2), x.size(-1)});
  return t;
}

// The [L, R/2] tables cos/sin((offset + l)·inv_freq[i]) in T, as Hugging Face computes them in f32:
// inv_freq = 1 / theta^(float(2i) / R), the angle one rounded product of the position and inv_freq.
template <typename T>
std::pair<Tensor, Tensor> rotary_tables(int64_t L, int64_t R, const RotaryOptions& o, Device device) {
  const int64_t pairs = R / 2;
  std::vector<T> inv_freq(static_cast<size_t>(pairs)), c(static_cast<size_t>(L * pairs)), s(c.size());
  for (int64_t i = 0; i < pairs; ++i)
    inv_freq[i] = T(1) / std::pow(static_cast<T>(o.theta), static_cast<T>(2 * i) / static_cast<T>(R));
  for (int64_t l = 0; l < L; ++l) {
    const T position = static_cast<T>(o.position_offset + l);
    for (int64_t i = 0; i < pairs; ++i) {
      const T angle = position * inv_freq[i];
      c[l * pairs + i] = std::cos(angle);
      s[l * pairs + i] = std::sin(angle);
    }
  }
  const TensorOptions options{.dtype = dtype_v<T>, .device = device};
  return {from_vector<T>(c, {L, pairs}, options), from_vector<T>(s, {L, pairs}, options)};
}

// x [B, H, L, E] rotated by the tables into a new contiguous tensor (inverse: by -angle).
Tensor rotate(const Tensor& x4, const Tensor& cos, const Tensor& sin, RotaryParams p) {
  Tensor out = raw::empty(x4.shape(), x4.dtype(), x4.device());
  backend(x4.device()).rotary(x4.arg(), cos.arg(), sin.arg(), out.arg(), p);
  return out;
}

struct RotaryBackward : autograd::Node {
  RotaryParams params;
  Tensor cos, sin;  // constants of the call, not of the graph
  std::string_view name() const override { return kRotaryOp; }
  void release() override {
    cos = Tensor();
    sin = Tensor();
  }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    RotaryParams inverse = params;
    inverse.inverse = true;
    grad_inputs[0] = raw::view(rotate(as_4d(g), cos, sin, inverse), next[0].shape);
  }
};

}  // namespace

Tensor apply_rotary(const Tensor& x, const RotaryOptions& options) {
  EMBER_CHECK(x.dim() >= 2 && is_floating(x.dtype()), kRotaryOp, ": expected x [..., L, E] of a floating dtype, got ",
              x.shape(), " ", dtype_name(x.dtype()));
  const int64_t L = x.size(-2), E = x.size(-1), R = options.rotary_dim.value_or(E);
  EMBER_CHECK(R > 0 && R <= E && R % 2 == 0, kRotaryOp, ": rotary_dim must be even and in [2, E = ", E, "], got ", R,
              E % 2 != 0 && !options.rotary_dim ? " (E is odd: set rotary_dim)" : "");
  EMBER_CHECK(options.theta > 0, kRotaryOp, ": theta must be positive, got ", options.theta);
  EMBER_CHECK(options.position_offset >= 0, kRotaryOp, ": position_offset must be >= 0, got ", options.position_offset);
  auto [cos, sin] = dispatch_floating(x.dtype(), kRotaryOp, [&](auto tag) {
    return rotary_tables<decltype(tag)>(L, R, options, x.device());
  });
  const RotaryParams p{.interleaved = options.interleaved};
  Tensor y = raw::view(rotate(as_4d(x), cos, sin, p), x.shape());
  if (auto node = autograd::make_node<RotaryBackward>(x)) {
    node->params = p;
    node->cos = std::move(cos);
    node->sin = std::move(sin);
    autograd::set_history(y, std::move(node));
  }
  return y;
}

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
  for (int d = 0; d < n - 1; ++d)
    EMBER_CHECK(key.size(d) == query.size(d) && value.size(d) == query.size(d), kOp,
                ": query, key and value must have the same leading dims, got shapes ", query.shape(), ", ",
                key.shape(), ", ", value.shape(), "; expand them first");
  // The heads (dim -3): key's and value's are query's, or under enable_gqa a divisor of them.
  const int64_t Hq = n == 0 ? 1 : query.size(n - 1), Hkv = n == 0 ? 1 : key.size(n - 1);
  EMBER_CHECK(n == 0 || value.size(n - 1) == Hkv, kOp, ": key and value must have the same number of heads (dim -3), ",
              "got shapes ", key.shape(), ", ", value.shape());
  EMBER_CHECK(options.enable_gqa || Hkv == Hq, kOp, ": query has ", Hq, " heads (dim -3) but key and value have ", Hkv,
              "; set enable_gqa = true for grouped-query attention (or expand them to the same leading dims)");
  EMBER_CHECK(Hkv > 0 ? Hq % Hkv == 0 : Hq == 0, kOp, ": enable_gqa: query's ", Hq,
              " heads (dim -3) must be a multiple of key and value's ", Hkv);
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
    return composed(query, key, value, additive, scale, Hkv > 0 ? Hq / Hkv : 1);
  }

  const Tensor q = raw::reshape(raw::contiguous(query), {B, H, L, E});
  const Tensor k = raw::reshape(raw::contiguous(key), {B, Hkv, S, E});
  const Tensor v = raw::reshape(raw::contiguous(value), {B, Hkv, S, Ev});
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
