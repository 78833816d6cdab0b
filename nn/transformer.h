#pragma once
// Transformer layers (torch.nn.MultiheadAttention, torch.nn.TransformerEncoderLayer), position embeddings
// and nn::GPT, a decoder-only language model (a CausalLM). All are compositions of differentiable ops (the
// attention itself is nn::functional::scaled_dot_product_attention, one fused op on both backends), with
// PyTorch's parameter names, so state_dict files load into the PyTorch layers and back.
//
// Shapes: B batch, T / L target (query) length, S source (key) length, E = D embedding dim, H heads,
// Dh = E / H head dim, V vocabulary.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/causal_lm.h"
#include "nn/layers.h"

namespace ember::nn {

// --- multi-head attention ------------------------------------------------------------------------------

struct MultiheadAttentionOptions {
  int64_t embed_dim = 0;
  int64_t num_heads = 1;    // must divide embed_dim
  double dropout = 0.0;     // on the attention weights, in training only
  bool bias = true;         // in_proj_bias and out_proj.bias
  bool batch_first = false;  // [B, L, E] instead of PyTorch's default [L, B, E]
  // Key/value heads: grouped-query attention (multi-query with 1) when fewer than num_heads, which they
  // divide; 0: num_heads (PyTorch's MultiheadAttention, which has no GQA).
  int64_t num_kv_heads = 0;
  // Rotary position embeddings on q and k (nn::functional::apply_rotary over the whole head dim, Llama's
  // rotate_half; Dh even): query i at position i, key j at j (forward_cached: from `past`).
  bool rotary = false;
  double rotary_theta = 10000.0;
};

// What one call takes besides query, key, value (torch.nn.MultiheadAttention.forward's keywords).
// Masks get no gradient. A bool mask is true where attention is NOT allowed (PyTorch's MHA convention,
// the opposite of scaled_dot_product_attention's); a floating mask (q's dtype) is added to the scores.
struct MultiheadAttentionForward {
  Tensor key_padding_mask{};  // [B, S] ([S] unbatched): keys to ignore
  bool need_weights = true;   // also return the attention weights (materialises softmax as PyTorch)
  Tensor attn_mask{};         // [L, S] or [B·H, L, S]
  bool is_causal = false;     // mask key j > query i (top-left aligned); combined with attn_mask if both
  bool average_attn_weights = true;  // weights averaged over heads [B, L, S], else [B, H, L, S]
};

struct AttentionOutput {
  Tensor output;   // as the query: [B, L, E] (batch_first), [L, B, E], or [L, E] unbatched
  Tensor weights;  // undefined unless need_weights; after the dropout, as PyTorch returns them
};

// torch.nn.MultiheadAttention (kdim = vdim = embed_dim). Parameters: in_proj_weight [3E, E]
// (xavier_uniform), in_proj_bias [3E] (zeros), out_proj.weight [E, E] (Linear's default init) and
// out_proj.bias [E] (zeros), as PyTorch's _reset_parameters. With num_kv_heads = Hkv < H (grouped-query
// attention) the fused projection keeps its names with E + 2·Hkv·Dh rows (q, then k, then v) and query head
// h attends with kv head h / (H / Hkv) (scaled_dot_product_attention's enable_gqa: no copies of k and v).
// Without need_weights the attention runs as the fused scaled_dot_product_attention (memory linear in L and
// S); with it, softmax(q·kᵀ/√Dh + mask) is materialised as PyTorch does, and a fully masked row gives NaN
// there as PyTorch 1.13's (0 on the fused path, as PyTorch >= 2.5's).
class MultiheadAttention : public Module {
 public:
  explicit MultiheadAttention(const MultiheadAttentionOptions& options, Generator* gen = nullptr);
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, Generator* gen = nullptr)
      : MultiheadAttention(MultiheadAttentionOptions{.embed_dim = embed_dim, .num_heads = num_heads}, gen) {}
  AttentionOutput forward(const Tensor& query, const Tensor& key, const Tensor& value,
                          const MultiheadAttentionForward& options = {});
  // Self-attention without weights: forward(x, x, x, {.need_weights = false}).output.
  Tensor forward(const Tensor& x) override;
  // Self-attention of x [B, T_new, E] (batch first) over a key/value cache k_cache, v_cache
  // [B, Hkv, capacity, Dh] that holds `past` positions: writes this call's keys and values at past..past+T_new
  // and attends to positions 0..past+T_new, query i seeing key j <= past + i (a bottom-right aligned causal
  // mask). No new allocation for the cache. For incremental decoding (nn::GPT::decode).
  Tensor forward_cached(const Tensor& x, Tensor& k_cache, Tensor& v_cache, int64_t past);
  std::string type_name() const override { return "MultiheadAttention"; }
  std::string describe() const override;
  int64_t kv_heads() const { return options.num_kv_heads > 0 ? options.num_kv_heads : options.num_heads; }

  Tensor in_proj_weight, in_proj_bias;
  std::shared_ptr<Linear> out_proj;
  MultiheadAttentionOptions options;

 private:
  Generator* gen_;
};

// --- transformer encoder layer --------------------------------------------------------------------------

struct TransformerEncoderLayerOptions {
  int64_t d_model = 0;
  int64_t nhead = 1;
  int64_t dim_feedforward = 2048;
  double dropout = 0.1;
  std::string activation = "relu";  // relu | gelu (exact, erf)
  double layer_norm_eps = 1e-5;
  bool batch_first = false;
  bool norm_first = false;  // pre-norm (GPT-2) instead of the original post-norm
  bool bias = true;         // of the linears, the attention and the layer norms (PyTorch 2.1's bias)
  int64_t num_kv_heads = 0;  // the attention's key/value heads (MultiheadAttentionOptions::num_kv_heads)
  bool rotary = false;       // rotary position embeddings in the attention (MultiheadAttentionOptions::rotary)
};

struct TransformerEncoderLayerForward {
  Tensor src_mask{};              // the attention's attn_mask: [T, T] or [B·H, T, T]
  Tensor src_key_padding_mask{};  // [B, T]
  bool is_causal = false;         // a causal mask (with src_mask too: both apply)
};

// torch.nn.TransformerEncoderLayer, with its names and its dropouts in its places:
//   post-norm: x = norm1(x + dropout1(self_attn(x))); x = norm2(x + dropout2(linear2(dropout(act(linear1(x))))))
//   pre-norm:  x = x + dropout1(self_attn(norm1(x))); x = x + dropout2(linear2(dropout(act(linear1(norm2(x))))))
// Children: self_attn, linear1, dropout, linear2, norm1, norm2, dropout1, dropout2. The decoder-only (GPT)
// block is this layer with norm_first, gelu and a causal mask.
class TransformerEncoderLayer : public Module {
 public:
  explicit TransformerEncoderLayer(const TransformerEncoderLayerOptions& options, Generator* gen = nullptr);
  Tensor forward(const Tensor& src, const TransformerEncoderLayerForward& options);
  Tensor forward(const Tensor& src) override { return forward(src, TransformerEncoderLayerForward{}); }
  // The layer on x [B, T_new, E] (batch first) with a key/value cache (MultiheadAttention::forward_cached).
  Tensor forward_cached(const Tensor& x, Tensor& k_cache, Tensor& v_cache, int64_t past);
  std::string type_name() const override { return "TransformerEncoderLayer"; }
  std::string describe() const override;

  std::shared_ptr<MultiheadAttention> self_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<Dropout> dropout, dropout1, dropout2;
  std::shared_ptr<LayerNorm> norm1, norm2;
  TransformerEncoderLayerOptions options;

 private:
  Tensor sa_block(const Tensor& x, const TransformerEncoderLayerForward& options);
  Tensor ff_block(const Tensor& x);
};

// The layer registry's transformer_block: a batch-first TransformerEncoderLayer whose single-tensor
// forward applies a causal mask when `causal` (the same parameters and names).
class TransformerBlock : public TransformerEncoderLayer {
 public:
  TransformerBlock(const TransformerEncoderLayerOptions& options, bool causal, Generator* gen = nullptr)
      : TransformerEncoderLayer(options, gen), causal(causal) {}
  Tensor forward(const Tensor& src) override {
    return TransformerEncoderLayer::forward(src, TransformerEncoderLayerForward{.is_causal = causal});
  }
  std::string type_name() const override { return "TransformerBlock"; }
  bool causal;
};

// --- SwiGLU feed-forward (Llama's MLP) ------------------------------------------------------------------

struct SwiGLUOptions {
  int64_t dim = 0;     // the input's and the output's features
  int64_t hidden = 0;  // the inner features
  bool bias = false;   // of the three linears (Llama's have none)
};

// down_proj(silu(gate_proj(x)) · up_proj(x)) on x [*, dim]: gate_proj and up_proj Linear(dim, hidden),
// down_proj Linear(hidden, dim), with Linear's init; Hugging Face's LlamaMLP names.
class SwiGLU : public Module {
 public:
  explicit SwiGLU(const SwiGLUOptions& options, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "SwiGLU"; }
  std::string describe() const override;
  std::shared_ptr<Linear> gate_proj, up_proj, down_proj;
  SwiGLUOptions options;
};

// --- position embeddings --------------------------------------------------------------------------------

// Learned absolute positions: weight [max_len, dim] ~ N(0, 0.02) (GPT-2's init). forward(x [B, T, dim] or
// [T, dim], offset) = x + weight[offset .. offset+T). T + offset > max_len is an error.
class LearnedPositionalEmbedding : public Module {
 public:
  LearnedPositionalEmbedding(int64_t max_len, int64_t dim, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override { return forward(x, 0); }
  Tensor forward(const Tensor& x, int64_t offset);
  std::string type_name() const override { return "LearnedPositionalEmbedding"; }
  std::string describe() const override;
  Tensor weight;
  int64_t max_len, dim;
};

// "Attention is all you need"'s table, pe[p, 2i] = sin(p / 10000^(2i/dim)), pe[p, 2i+1] = cos(same), as
// a non-persistent buffer `pe` [max_len, dim] (not in state_dict: it is recomputed). Same forward.
class SinusoidalPositionalEncoding : public Module {
 public:
  SinusoidalPositionalEncoding(int64_t max_len, int64_t dim);
  Tensor forward(const Tensor& x) override { return forward(x, 0); }
  Tensor forward(const Tensor& x, int64_t offset);
  std::string type_name() const override { return "SinusoidalPositionalEncoding"; }
  std::string describe() const override;
  Tensor pe;
  int64_t max_len, dim;
};

// --- GPT ------------------------------------------------------------------------------------------------

struct GPTOptions {
  int64_t vocab_size = 0;
  int64_t context = 128;  // the most positions (max_context())
  int64_t dim = 128;
  int64_t layers = 4;
  int64_t heads = 4;
  int64_t mlp_ratio = 4;  // dim_feedforward = mlp_ratio · dim
  double dropout = 0.1;
  std::string position = "learned";  // learned | sinusoidal | rotary (in the attention; no pos_emb)
  bool tie_weights = true;           // logits = x · tok_emb.weightᵀ (no head)
  bool bias = true;                  // biases of the linears, attention and layer norms
  int64_t kv_heads = 0;              // key/value heads (grouped-query attention; they divide heads); 0: heads
};

// A decoder-only transformer language model (GPT-2's layout). state_dict keys:
//   tok_emb.weight [V, D]; pos_emb.weight [context, D] (learned only); blocks.{i}.* (TransformerEncoderLayer
//   names: norm_first, gelu, batch_first, dim_feedforward = mlp_ratio·D); ln_f.weight/bias [D];
//   head.weight [V, D] (no bias) only without tie_weights.
// forward: x = drop(tok_emb(tokens) + pos_emb), the blocks with a causal mask, ln_f, then the head (or the
// tied embedding); position = rotary: no pos_emb, each block's attention rotates q and k (Llama's RoPE).
// Init as GPT-2: N(0, 0.02) for the embeddings and every Linear and in_proj weight, N(0, 0.02/√(2·layers))
// for the residual projections (self_attn.out_proj.weight and linear2.weight), zero biases, LayerNorm weight
// 1 and bias 0.
// decode keeps a key/value cache per layer ([B, Hkv, context, Dh] each, Hkv = kv_heads or heads, allocated
// once per state) and records no autograd graph. With kv_heads < heads each block's in_proj has
// (D + 2·kv_heads·Dh) rows; the names are the same.
class GPT : public CausalLM {
 public:
  explicit GPT(const GPTOptions& options, Generator* gen = nullptr);
  Tensor forward(const Tensor& tokens) override;  // i64 [B, T], T <= context → logits [B, T, V]
  int64_t vocab_size() const override { return options.vocab_size; }
  int64_t max_context() const override { return options.context; }
  std::unique_ptr<DecodeState> start_decoding(int64_t batch) const override;
  Tensor decode(const Tensor& tokens, DecodeState& state) override;
  std::string type_name() const override { return "GPT"; }
  std::string describe() const override;

  std::shared_ptr<Embedding> tok_emb;
  std::shared_ptr<Module> pos_emb;  // LearnedPositionalEmbedding or SinusoidalPositionalEncoding; null: rotary
  std::shared_ptr<Dropout> drop;
  std::shared_ptr<ModuleList> blocks;
  std::shared_ptr<LayerNorm> ln_f;
  std::shared_ptr<Linear> head;  // null when tied
  GPTOptions options;

 private:
  Tensor embed(const Tensor& tokens, int64_t offset, const char* what);
  Tensor logits(const Tensor& x);
  TransformerEncoderLayer& block(size_t i) const;
};

// GPT's decode state: the tokens seen and the per-layer key/value caches.
struct GPTDecodeState : DecodeState {
  int64_t batch = 0;
  std::vector<Tensor> keys, values;  // per layer, [B, Hkv, context, Dh]
};

}  // namespace ember::nn
