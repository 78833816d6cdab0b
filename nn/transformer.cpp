#include "nn/transformer.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "autograd/grad_mode.h"
#include "nn/init.h"

namespace ember::nn {
namespace F = functional;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// bool [rows, cols] on `device`: true where key j is after query i + shift (what a causal mask hides).
Tensor after(int64_t rows, int64_t cols, int64_t shift, Device device) {
  const TensorOptions o{.dtype = DType::i64, .device = device};
  return gt(arange(cols, o).view({1, cols}), arange(rows, o).view({rows, 1}) + shift);
}

}  // namespace

// --- MultiheadAttention ---------------------------------------------------------------------------------

MultiheadAttention::MultiheadAttention(const MultiheadAttentionOptions& o, Generator* gen) : options(o), gen_(gen) {
  EMBER_CHECK(o.embed_dim > 0 && o.num_heads > 0, "MultiheadAttention: embed_dim (", o.embed_dim, ") and num_heads (",
              o.num_heads, ") must be positive");
  EMBER_CHECK(o.embed_dim % o.num_heads == 0, "MultiheadAttention: embed_dim ", o.embed_dim,
              " is not divisible by num_heads ", o.num_heads, "; pick a head count that divides it");
  EMBER_CHECK(o.dropout >= 0 && o.dropout < 1, "MultiheadAttention: dropout must be in [0, 1), got ", o.dropout);
  EMBER_CHECK(o.num_kv_heads >= 0 && o.num_heads % kv_heads() == 0, "MultiheadAttention: num_kv_heads ",
              o.num_kv_heads, " must divide num_heads ", o.num_heads,
              " (grouped-query attention), or be 0 for num_heads");
  EMBER_CHECK(!o.rotary || (o.embed_dim / o.num_heads) % 2 == 0,
              "MultiheadAttention: rotary needs an even head dim, got ", o.embed_dim / o.num_heads,
              " (embed_dim / num_heads)");
  const int64_t e = o.embed_dim, rows = e + 2 * kv_heads() * (e / o.num_heads);  // q, k, v
  in_proj_weight = register_parameter("in_proj_weight", empty({rows, e}));
  init::xavier_uniform_(in_proj_weight, 1.0, gen);
  if (o.bias) in_proj_bias = register_parameter("in_proj_bias", zeros({rows}));
  out_proj = register_module("out_proj", std::make_shared<Linear>(e, e, o.bias, gen));
  if (o.bias) init::zeros_(out_proj->bias);
}

std::string MultiheadAttention::describe() const {
  std::ostringstream s;
  s << "MultiheadAttention(embed_dim=" << options.embed_dim << ", num_heads=" << options.num_heads
    << (kv_heads() != options.num_heads ? ", num_kv_heads=" + std::to_string(kv_heads()) : std::string())
    << ", dropout=" << options.dropout << (options.bias ? "" : ", bias=False")
    << (options.rotary ? ", rotary=True" : "")
    << (options.batch_first ? ", batch_first=True" : "") << ")";
  return s.str();
}

Tensor MultiheadAttention::forward(const Tensor& x) { return forward(x, x, x, {.need_weights = false}).output; }

AttentionOutput MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                            const MultiheadAttentionForward& o) {
  const int64_t e = options.embed_dim, h = options.num_heads, dh = e / h, hkv = kv_heads(), kvd = hkv * dh;
  for (const Tensor* t : {&query, &key, &value}) check_input_dtype(*t, in_proj_weight);
  EMBER_CHECK(query.dim() == 3 || query.dim() == 2, "MultiheadAttention: query must be ",
              options.batch_first ? "[B, L, E]" : "[L, B, E]", " or unbatched [L, E], got ", query.shape());
  EMBER_CHECK(key.dim() == query.dim() && value.dim() == query.dim(), "MultiheadAttention: query ", query.shape(),
              ", key ", key.shape(), " and value ", value.shape(), " must have the same number of dims");
  const bool batched = query.dim() == 3;
  // To [B, L, E].
  const auto to_bfirst = [&](const Tensor& t) {
    return !batched ? t.unsqueeze(0) : options.batch_first ? t : t.transpose(0, 1);
  };
  const Tensor q_in = to_bfirst(query), k_in = to_bfirst(key), v_in = to_bfirst(value);
  const int64_t b = q_in.size(0), l = q_in.size(1), s = k_in.size(1);
  EMBER_CHECK(q_in.size(2) == e && k_in.size(2) == e && v_in.size(2) == e, "MultiheadAttention: query ",
              query.shape(), ", key ", key.shape(), " and value ", value.shape(), " must end in embed_dim ", e);
  EMBER_CHECK(k_in.size(0) == b && v_in.size(0) == b && v_in.size(1) == s, "MultiheadAttention: key ", key.shape(),
              " and value ", value.shape(), " must have the query's batch ", b, " and the same length");

  Tensor q, k, v;
  if (query.impl_ptr() == key.impl_ptr() && key.impl_ptr() == value.impl_ptr()) {
    const Tensor qkv = F::linear(q_in, in_proj_weight, in_proj_bias);  // self-attention: one GEMM
    q = qkv.narrow(-1, 0, e), k = qkv.narrow(-1, e, kvd), v = qkv.narrow(-1, e + kvd, kvd);
  } else {
    const auto part = [&](const Tensor& x, int64_t start, int64_t rows) {
      return F::linear(x, in_proj_weight.narrow(0, start, rows),
                       in_proj_bias.defined() ? in_proj_bias.narrow(0, start, rows) : Tensor());
    };
    q = part(q_in, 0, e), k = part(k_in, e, kvd), v = part(v_in, e + kvd, kvd);
  }
  const auto heads = [&](const Tensor& t, int64_t len, int64_t n) {
    return t.reshape({b, len, n, dh}).transpose(1, 2);
  };
  q = heads(q, l, h), k = heads(k, s, hkv), v = heads(v, s, hkv);  // [B, H or Hkv, len, Dh]
  if (options.rotary) {
    q = F::apply_rotary(q, {.theta = options.rotary_theta});
    k = F::apply_rotary(k, {.theta = options.rotary_theta});
  }

  // The masks, broadcastable to [B, H, L, S]: bool ones (true = masked) or'ed, floating ones added.
  Tensor blocked, additive;
  const auto add_mask = [&](const Tensor& m, const char* what) {
    if (m.dtype() == DType::b8) {
      blocked = blocked.defined() ? logical_or(blocked, m) : m;
    } else {
      EMBER_CHECK(is_floating(m.dtype()), "MultiheadAttention: ", what, " must be bool or floating, got ",
                  dtype_name(m.dtype()));
      const Tensor f = m.to(q.dtype());
      additive = additive.defined() ? additive + f : f;
    }
  };
  if (o.attn_mask.defined()) {
    const Tensor& m = o.attn_mask;
    if (m.dim() == 2) {
      EMBER_CHECK(m.size(0) == l && m.size(1) == s, "MultiheadAttention: attn_mask ", m.shape(), " must be [L, S] = [",
                  l, ", ", s, "] or [B·H, L, S]");
      add_mask(m.reshape({1, 1, l, s}), "attn_mask");
    } else {
      EMBER_CHECK(m.dim() == 3 && m.size(0) == b * h && m.size(1) == l && m.size(2) == s, "MultiheadAttention: attn_mask ",
                  m.shape(), " must be [L, S] = [", l, ", ", s, "] or [B·H, L, S] = [", b * h, ", ", l, ", ", s, "]");
      add_mask(m.reshape({b, h, l, s}), "attn_mask");
    }
  }
  if (o.key_padding_mask.defined()) {
    const Tensor& m = o.key_padding_mask;
    const bool fits = batched ? m.dim() == 2 && m.size(0) == b && m.size(1) == s : m.dim() == 1 && m.size(0) == s;
    EMBER_CHECK(fits, "MultiheadAttention: key_padding_mask ", m.shape(), " must be ",
                batched ? "[B, S] = [" + std::to_string(b) + ", " : std::string("[S] = ["), s, "]");
    add_mask(m.reshape({b, 1, 1, s}), "key_padding_mask");
  }
  const bool other_masks = blocked.defined() || additive.defined();
  if (o.is_causal && (other_masks || o.need_weights)) add_mask(after(l, s, 0, q.device()), "causal");
  const double p = is_training() ? options.dropout : 0.0;

  Tensor out, weights;
  if (!o.need_weights) {
    Tensor mask = additive;
    if (blocked.defined()) {
      mask = additive.defined() ? additive + where(blocked, full({}, -kInf, {.dtype = q.dtype(), .device = q.device()}),
                                                   zeros({}, {.dtype = q.dtype(), .device = q.device()}))
                                : eq(blocked, 0);  // scaled_dot_product_attention's bool: true = attend
    }
    out = F::scaled_dot_product_attention(q, k, v,
                                          {.attn_mask = mask,
                                           .is_causal = o.is_causal && !other_masks,
                                           .dropout_p = p,
                                           .gen = gen_,
                                           .enable_gqa = hkv != h});
  } else {
    // PyTorch's materialised path: the query scaled first, softmax, dropout on the weights, then · v (the kv
    // heads repeated to the query heads first under grouped-query attention: the weights are materialised anyway).
    const auto repeat = [&](const Tensor& t) {
      return hkv == h ? t : t.unsqueeze(2).expand({b, hkv, h / hkv, s, dh}).reshape({b, h, s, dh});
    };
    k = repeat(k), v = repeat(v);
    Tensor scores = matmul(q * (1.0 / std::sqrt(static_cast<double>(dh))), k.transpose(-2, -1));
    if (additive.defined()) scores = scores + additive;
    if (blocked.defined()) scores = masked_fill(scores, blocked, -kInf);
    Tensor w = softmax(scores, -1);
    if (p > 0) w = F::dropout(w, p, true, gen_);
    out = matmul(w, v);
    weights = o.average_attn_weights ? mean(w, {1}) : w;
    if (!batched) weights = weights.squeeze(0);
  }
  out = out_proj->forward(out.transpose(1, 2).reshape({b, l, e}));
  out = !batched ? out.squeeze(0) : options.batch_first ? out : out.transpose(0, 1);
  return {out, weights};
}

Tensor MultiheadAttention::forward_cached(const Tensor& x, Tensor& k_cache, Tensor& v_cache, int64_t past) {
  const int64_t e = options.embed_dim, h = options.num_heads, dh = e / h, hkv = kv_heads(), kvd = hkv * dh;
  EMBER_CHECK(x.dim() == 3 && x.size(2) == e, "MultiheadAttention::forward_cached: x must be [B, T_new, ", e,
              "] (batch first), got ", x.shape());
  const int64_t b = x.size(0), t = x.size(1);
  EMBER_CHECK(k_cache.dim() == 4 && k_cache.size(0) == b && k_cache.size(1) == hkv && k_cache.size(3) == dh &&
                  v_cache.shape() == k_cache.shape(),
              "MultiheadAttention::forward_cached: the caches must be [B, Hkv, capacity, Dh] = [", b, ", ", hkv,
              ", capacity, ", dh, "], got ", k_cache.shape(), " and ", v_cache.shape());
  EMBER_CHECK(past >= 0 && past + t <= k_cache.size(2), "MultiheadAttention::forward_cached: ", past, " cached + ", t,
              " new positions exceed the cache's capacity ", k_cache.size(2));
  const Tensor qkv = F::linear(x, in_proj_weight, in_proj_bias);
  const auto heads = [&](int64_t start, int64_t n) {
    return qkv.narrow(-1, start, n * dh).reshape({b, t, n, dh}).transpose(1, 2);
  };
  // Positions past .. past + t - 1: the cache holds the keys rotated.
  const auto rotated = [&](const Tensor& z) {
    return options.rotary ? F::apply_rotary(z, {.theta = options.rotary_theta, .position_offset = past}) : z;
  };
  k_cache.narrow(2, past, t).copy_(rotated(heads(e, hkv)));
  v_cache.narrow(2, past, t).copy_(heads(e + kvd, hkv));
  const int64_t s = past + t;
  // Query i is position past + i: it sees keys 0..past+i (bottom-right aligned). One new token sees all.
  const Tensor mask = t == 1 ? Tensor() : eq(after(t, s, past, x.device()), 0);
  const Tensor out = F::scaled_dot_product_attention(
      rotated(heads(0, h)), k_cache.narrow(2, 0, s), v_cache.narrow(2, 0, s),
      {.attn_mask = mask, .dropout_p = is_training() ? options.dropout : 0.0, .gen = gen_, .enable_gqa = hkv != h});
  return out_proj->forward(out.transpose(1, 2).reshape({b, t, e}));
}

// --- TransformerEncoderLayer ----------------------------------------------------------------------------

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerEncoderLayerOptions& o, Generator* gen) : options(o) {
  EMBER_CHECK(o.activation == "relu" || o.activation == "gelu", "TransformerEncoderLayer: activation must be relu or gelu, got '",
              o.activation, "'");
  EMBER_CHECK(o.dim_feedforward > 0, "TransformerEncoderLayer: dim_feedforward must be positive, got ", o.dim_feedforward);
  EMBER_CHECK(o.dropout >= 0 && o.dropout < 1, "TransformerEncoderLayer: dropout must be in [0, 1), got ", o.dropout);
  self_attn = register_module("self_attn", std::make_shared<MultiheadAttention>(
                                               MultiheadAttentionOptions{.embed_dim = o.d_model,
                                                                         .num_heads = o.nhead,
                                                                         .dropout = o.dropout,
                                                                         .bias = o.bias,
                                                                         .batch_first = o.batch_first,
                                                                         .num_kv_heads = o.num_kv_heads,
                                                                         .rotary = o.rotary},
                                               gen));
  linear1 = register_module("linear1", std::make_shared<Linear>(o.d_model, o.dim_feedforward, o.bias, gen));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout, gen));
  linear2 = register_module("linear2", std::make_shared<Linear>(o.dim_feedforward, o.d_model, o.bias, gen));
  norm1 = register_module("norm1", std::make_shared<LayerNorm>(Shape{o.d_model}, o.layer_norm_eps, true, o.bias));
  norm2 = register_module("norm2", std::make_shared<LayerNorm>(Shape{o.d_model}, o.layer_norm_eps, true, o.bias));
  dropout1 = register_module("dropout1", std::make_shared<Dropout>(o.dropout, gen));
  dropout2 = register_module("dropout2", std::make_shared<Dropout>(o.dropout, gen));
}

std::string TransformerEncoderLayer::describe() const {
  std::ostringstream s;
  s << type_name() << "(d_model=" << options.d_model << ", nhead=" << options.nhead
    << (options.num_kv_heads > 0 ? ", num_kv_heads=" + std::to_string(options.num_kv_heads) : std::string())
    << ", dim_feedforward=" << options.dim_feedforward << ", dropout=" << options.dropout
    << ", activation=" << options.activation << (options.norm_first ? ", norm_first=True" : "")
    << (options.bias ? "" : ", bias=False") << ")";
  return s.str();
}

Tensor TransformerEncoderLayer::sa_block(const Tensor& x, const TransformerEncoderLayerForward& o) {
  return dropout1->forward(self_attn
                               ->forward(x, x, x,
                                         {.key_padding_mask = o.src_key_padding_mask,
                                          .need_weights = false,
                                          .attn_mask = o.src_mask,
                                          .is_causal = o.is_causal})
                               .output);
}

Tensor TransformerEncoderLayer::ff_block(const Tensor& x) {
  const Tensor a = linear1->forward(x);
  return dropout2->forward(linear2->forward(dropout->forward(options.activation == "gelu" ? gelu(a) : relu(a))));
}

Tensor TransformerEncoderLayer::forward(const Tensor& src, const TransformerEncoderLayerForward& o) {
  Tensor x = src;
  if (options.norm_first) {
    x = x + sa_block(norm1->forward(x), o);
    return x + ff_block(norm2->forward(x));
  }
  x = norm1->forward(x + sa_block(x, o));
  return norm2->forward(x + ff_block(x));
}

Tensor TransformerEncoderLayer::forward_cached(const Tensor& x, Tensor& k_cache, Tensor& v_cache, int64_t past) {
  EMBER_CHECK(options.batch_first, type_name(), "::forward_cached needs a batch_first layer");
  if (options.norm_first) {
    const Tensor y = x + dropout1->forward(self_attn->forward_cached(norm1->forward(x), k_cache, v_cache, past));
    return y + ff_block(norm2->forward(y));
  }
  const Tensor y = norm1->forward(x + dropout1->forward(self_attn->forward_cached(x, k_cache, v_cache, past)));
  return norm2->forward(y + ff_block(y));
}

// --- position embeddings --------------------------------------------------------------------------------

namespace {

Tensor add_positions(const Module& m, const Tensor& x, const Tensor& table, int64_t offset) {
  const int64_t max_len = table.size(0), dim = table.size(1);
  EMBER_CHECK(x.dim() >= 2 && x.size(-1) == dim, m.type_name(), ": input must be [B, T, ", dim, "] or [T, ", dim,
              "], got ", x.shape());
  m.check_input_dtype(x, table);
  const int64_t t = x.size(-2);
  EMBER_CHECK(offset >= 0, m.type_name(), ": offset must be >= 0, got ", offset);
  EMBER_CHECK(offset + t <= max_len, m.type_name(), ": a sequence of ", offset + t, " tokens",
              offset > 0 ? " (" + std::to_string(offset) + " earlier and " + std::to_string(t) + " new)" : std::string(),
              " is longer than the context ", max_len,
              " of the position table; feed at most that many tokens, or build the model with a longer context");
  return x + table.narrow(0, offset, t);
}

}  // namespace

SwiGLU::SwiGLU(const SwiGLUOptions& o, Generator* gen) : options(o) {
  EMBER_CHECK(o.dim > 0 && o.hidden > 0, "SwiGLU: dim (", o.dim, ") and hidden (", o.hidden, ") must be positive");
  gate_proj = register_module("gate_proj", std::make_shared<Linear>(o.dim, o.hidden, o.bias, gen));
  up_proj = register_module("up_proj", std::make_shared<Linear>(o.dim, o.hidden, o.bias, gen));
  down_proj = register_module("down_proj", std::make_shared<Linear>(o.hidden, o.dim, o.bias, gen));
}

Tensor SwiGLU::forward(const Tensor& x) {
  EMBER_CHECK(x.dim() >= 1 && x.size(-1) == options.dim, "SwiGLU: expected input [*, ", options.dim,
              "] (the layer's dim), got shape ", x.shape());
  check_input_dtype(x, gate_proj->weight);
  return down_proj->forward(silu(gate_proj->forward(x)) * up_proj->forward(x));
}

std::string SwiGLU::describe() const {
  std::ostringstream s;
  s << "SwiGLU(dim=" << options.dim << ", hidden=" << options.hidden << (options.bias ? ", bias=True" : "") << ")";
  return s.str();
}

LearnedPositionalEmbedding::LearnedPositionalEmbedding(int64_t max_len, int64_t dim, Generator* gen)
    : max_len(max_len), dim(dim) {
  EMBER_CHECK(max_len > 0 && dim > 0, "LearnedPositionalEmbedding: max_len (", max_len, ") and dim (", dim,
              ") must be positive");
  weight = register_parameter("weight", empty({max_len, dim}));
  init::normal_(weight, 0.0, 0.02, gen);
}

Tensor LearnedPositionalEmbedding::forward(const Tensor& x, int64_t offset) { return add_positions(*this, x, weight, offset); }

std::string LearnedPositionalEmbedding::describe() const {
  return "LearnedPositionalEmbedding(max_len=" + std::to_string(max_len) + ", dim=" + std::to_string(dim) + ")";
}

SinusoidalPositionalEncoding::SinusoidalPositionalEncoding(int64_t max_len, int64_t dim) : max_len(max_len), dim(dim) {
  EMBER_CHECK(max_len > 0 && dim > 0, "SinusoidalPositionalEncoding: max_len (", max_len, ") and dim (", dim,
              ") must be positive");
  std::vector<double> table(static_cast<size_t>(max_len * dim));
  for (int64_t p = 0; p < max_len; ++p)
    for (int64_t i = 0; i < dim; ++i) {
      const double angle =
          static_cast<double>(p) * std::exp(-std::log(10000.0) * static_cast<double>(i - i % 2) / static_cast<double>(dim));
      table[static_cast<size_t>(p * dim + i)] = i % 2 == 0 ? std::sin(angle) : std::cos(angle);
    }
  pe = register_buffer("pe", from_vector<double>(table, {max_len, dim}).to(DType::f32), /*persistent=*/false);
}

Tensor SinusoidalPositionalEncoding::forward(const Tensor& x, int64_t offset) { return add_positions(*this, x, pe, offset); }

std::string SinusoidalPositionalEncoding::describe() const {
  return "SinusoidalPositionalEncoding(max_len=" + std::to_string(max_len) + ", dim=" + std::to_string(dim) + ")";
}

// --- GPT ------------------------------------------------------------------------------------------------

GPT::GPT(const GPTOptions& o, Generator* gen) : options(o) {
  EMBER_CHECK(o.vocab_size > 0, "GPT: vocab_size must be positive, got ", o.vocab_size);
  EMBER_CHECK(o.context > 0 && o.dim > 0 && o.layers > 0 && o.heads > 0 && o.mlp_ratio > 0,
              "GPT: context (", o.context, "), dim (", o.dim, "), layers (", o.layers, "), heads (", o.heads,
              ") and mlp_ratio (", o.mlp_ratio, ") must be positive");
  EMBER_CHECK(o.dim % o.heads == 0, "GPT: dim ", o.dim, " is not divisible by heads ", o.heads,
              "; pick a head count that divides it");
  EMBER_CHECK(o.kv_heads >= 0 && o.heads % (o.kv_heads > 0 ? o.kv_heads : o.heads) == 0, "GPT: kv_heads ", o.kv_heads,
              " must divide heads ", o.heads, " (grouped-query attention), or be 0 for heads");
  EMBER_CHECK(o.position == "learned" || o.position == "sinusoidal" || o.position == "rotary",
              "GPT: position must be learned, sinusoidal or rotary, got '", o.position, "'");
  EMBER_CHECK(o.dropout >= 0 && o.dropout < 1, "GPT: dropout must be in [0, 1), got ", o.dropout);
  const double std = 0.02, residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(o.layers));
  tok_emb = register_module("tok_emb", std::make_shared<Embedding>(o.vocab_size, o.dim, gen));
  init::normal_(tok_emb->weight, 0.0, std, gen);
  if (o.position == "learned")
    pos_emb = register_module("pos_emb", std::make_shared<LearnedPositionalEmbedding>(o.context, o.dim, gen));
  else if (o.position == "sinusoidal")
    pos_emb = register_module("pos_emb", std::make_shared<SinusoidalPositionalEncoding>(o.context, o.dim));
  drop = register_module("drop", std::make_shared<Dropout>(o.dropout, gen));
  blocks = register_module("blocks", std::make_shared<ModuleList>());
  for (int64_t i = 0; i < o.layers; ++i) {
    auto b = std::make_shared<TransformerEncoderLayer>(TransformerEncoderLayerOptions{.d_model = o.dim,
                                                                                      .nhead = o.heads,
                                                                                      .dim_feedforward = o.mlp_ratio * o.dim,
                                                                                      .dropout = o.dropout,
                                                                                      .activation = "gelu",
                                                                                      .layer_norm_eps = 1e-5,
                                                                                      .batch_first = true,
                                                                                      .norm_first = true,
                                                                                      .bias = o.bias,
                                                                                      .num_kv_heads = o.kv_heads,
                                                                                      .rotary = o.position == "rotary"},
                                                       gen);
    init::normal_(b->self_attn->in_proj_weight, 0.0, std, gen);
    init::normal_(b->self_attn->out_proj->weight, 0.0, residual_std, gen);
    init::normal_(b->linear1->weight, 0.0, std, gen);
    init::normal_(b->linear2->weight, 0.0, residual_std, gen);
    for (Tensor* bias : {&b->self_attn->out_proj->bias, &b->linear1->bias, &b->linear2->bias})
      if (bias->defined()) init::zeros_(*bias);
    blocks->push_back(b);
  }
  ln_f = register_module("ln_f", std::make_shared<LayerNorm>(Shape{o.dim}, 1e-5, true, o.bias));
  if (!o.tie_weights) {
    head = register_module("head", std::make_shared<Linear>(o.dim, o.vocab_size, false, gen));
    init::normal_(head->weight, 0.0, std, gen);
  }
}

std::string GPT::describe() const {
  std::ostringstream s;
  s << "GPT(vocab_size=" << options.vocab_size << ", context=" << options.context << ", dim=" << options.dim
    << ", layers=" << options.layers << ", heads=" << options.heads
    << (options.kv_heads > 0 ? ", kv_heads=" + std::to_string(options.kv_heads) : std::string())
    << ", mlp_ratio=" << options.mlp_ratio
    << ", dropout=" << options.dropout << ", position=" << options.position
    << ", tie_weights=" << (options.tie_weights ? "true" : "false") << ", bias=" << (options.bias ? "true" : "false")
    << ")";
  return s.str();
}

TransformerEncoderLayer& GPT::block(size_t i) const { return *blocks->at<TransformerEncoderLayer>(i); }

Tensor GPT::embed(const Tensor& tokens, int64_t offset, const char* what) {
  EMBER_CHECK(tokens.dim() == 2 && tokens.dtype() == DType::i64, "GPT::", what, ": tokens must be i64 [B, T], got ",
              dtype_name(tokens.dtype()), " ", tokens.shape());
  Tensor x = tok_emb->forward(tokens);
  if (auto* learned = dynamic_cast<LearnedPositionalEmbedding*>(pos_emb.get())) x = learned->forward(x, offset);
  else if (pos_emb) x = static_cast<SinusoidalPositionalEncoding&>(*pos_emb).forward(x, offset);
  // rotary: the blocks' attention rotates q and k by the positions (the cache's length when decoding)
  return drop->forward(x);
}

Tensor GPT::logits(const Tensor& x) {
  const Tensor y = ln_f->forward(x);
  return head ? head->forward(y) : F::linear(y, tok_emb->weight);
}

Tensor GPT::forward(const Tensor& tokens) {
  EMBER_CHECK(tokens.dim() != 2 || tokens.size(1) <= options.context, "GPT::forward: a sequence of ", tokens.size(1),
              " tokens is longer than the model's context ", options.context,
              " (GPTOptions::context); feed at most that many (generation rolls the window over)");
  Tensor x = embed(tokens, 0, "forward");
  for (size_t i = 0; i < blocks->size(); ++i) x = block(i).forward(x, TransformerEncoderLayerForward{.is_causal = true});
  return logits(x);
}

std::unique_ptr<DecodeState> GPT::start_decoding(int64_t batch) const {
  EMBER_CHECK(batch > 0, "GPT::start_decoding: batch must be positive, got ", batch);
  auto state = std::make_unique<GPTDecodeState>();
  state->batch = batch;
  const Tensor& w = tok_emb->weight;
  const Shape shape{batch, block(0).self_attn->kv_heads(), options.context, options.dim / options.heads};
  for (int64_t i = 0; i < options.layers; ++i) {
    state->keys.push_back(zeros(shape, {.dtype = w.dtype(), .device = w.device()}));
    state->values.push_back(zeros(shape, {.dtype = w.dtype(), .device = w.device()}));
  }
  return state;
}

Tensor GPT::decode(const Tensor& tokens, DecodeState& state) {
  auto* s = dynamic_cast<GPTDecodeState*>(&state);
  EMBER_CHECK(s != nullptr, "GPT::decode: the state was not made by GPT::start_decoding()");
  EMBER_CHECK(tokens.dim() == 2 && tokens.size(0) == s->batch && tokens.size(1) >= 1, "GPT::decode: tokens must be i64 [",
              s->batch, ", T_new] (the state's batch, T_new >= 1), got ", tokens.shape());
  const int64_t t = tokens.size(1);
  EMBER_CHECK(s->length + t <= options.context, "GPT::decode: the state holds ", s->length, " tokens and ", t,
              " more would exceed the model's context ", options.context,
              " (max_context()); start a new state from the last tokens");
  const Tensor& w = tok_emb->weight;
  EMBER_CHECK(static_cast<int64_t>(s->keys.size()) == options.layers && s->keys[0].dtype() == w.dtype() &&
                  s->keys[0].device() == w.device(),
              "GPT::decode: the state was made for another model, dtype or device (the model is now ",
              dtype_name(w.dtype()), " on ", w.device(), "); call start_decoding() again");
  NoGradGuard no_grad;
  Tensor x = embed(tokens, s->length, "decode");
  for (size_t i = 0; i < blocks->size(); ++i) x = block(i).forward_cached(x, s->keys[i], s->values[i], s->length);
  s->length += t;
  return logits(x);
}

}  // namespace ember::nn
