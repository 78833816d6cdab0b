// The converters of the sequence layers: embeddings, position embeddings, multi-head attention, transformer
// blocks, LSTM/GRU, and the whole language models (GPT, RNNLanguageModel). Shapes: B batch, T sequence (both
// symbolic where the input's are), E = D model dim, H heads, Dh = E / H, V vocabulary.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "nn/rnn.h"
#include "nn/transformer.h"
#include "nn/vit.h"
#include "onnx/graph.h"

namespace ember::onnx::detail {
namespace {

std::string transpose(Graph& g, const std::string& x, const std::vector<int64_t>& perm, const std::string& scope) {
  ::onnx::NodeProto& n = g.node("Transpose", {x}, scope);
  attr_ints(n, "perm", perm);
  return n.output(0);
}

// x [B, T, D] + rows [0, T) of table [max_len, D] (learned or sinusoidal positions).
std::string add_positions(Graph& g, const std::string& x, int64_t rank, const std::string& table, const std::string& scope) {
  return g.op("Add", {x, g.first_rows(table, g.dim(x, rank - 2, scope), scope)}, scope);
}

// Self-attention of x [B, T, E] (batch first): softmax(q·kᵀ/√Dh [+ causal mask])·v, heads joined, out_proj.
std::string self_attention(Graph& g, const nn::MultiheadAttention& a, const std::string& x, bool causal,
                           const std::string& scope) {
  const int64_t e = a.options.embed_dim, h = a.options.num_heads, dh = e / h;
  if (a.kv_heads() != h)
    unsupported(scope, a, "grouped-query attention (num_kv_heads = " + std::to_string(a.kv_heads()) + " of " +
                              std::to_string(h) + " heads) has no exporter yet");
  if (a.options.rotary) unsupported(scope, a, "rotary position embeddings have no exporter yet");
  const std::string qkv = g.linear(x, 3, a.in_proj_weight, a.in_proj_bias, scope);  // [B, T, 3E]
  ::onnx::NodeProto& split = g.node("Split", {qkv, g.ints({e, e, e}, scope, "split")}, scope, 3);
  attr_int(split, "axis", -1);
  const std::string heads_shape = g.ints({0, 0, h, dh}, scope, "heads_shape");
  const auto heads = [&](int i, const std::vector<int64_t>& perm) {  // [B, T, E] → [B, H, T, Dh] (or kᵀ)
    return transpose(g, g.op("Reshape", {split.output(i), heads_shape}, scope), perm, scope);
  };
  const std::string q = heads(0, {0, 2, 1, 3}), k_t = heads(1, {0, 2, 3, 1}), v = heads(2, {0, 2, 1, 3});
  std::string scores = g.op("Mul", {g.op("MatMul", {q, k_t}, scope), g.scalar(1.0 / std::sqrt(static_cast<double>(dh)), scope, "scale")},
                            scope);  // [B, H, T, T]
  if (causal) {
    // Key j after query i is hidden: a [T, T] mask from Range(T), for any T the input has.
    const std::string t = g.op("Squeeze", {g.dim(x, 1, scope), g.ints({0}, scope, "axes")}, scope);
    const std::string pos = g.op("Range", {g.constant(scalar_tensor(0, {.dtype = DType::i64}), scope, "zero"), t,
                                           g.constant(scalar_tensor(1, {.dtype = DType::i64}), scope, "one")},
                                 scope);
    const std::string keys = g.op("Unsqueeze", {pos, g.ints({0}, scope, "row_axis")}, scope);
    const std::string queries = g.op("Unsqueeze", {pos, g.ints({1}, scope, "column_axis")}, scope);
    const std::string hidden = g.op("Greater", {keys, queries}, scope);
    scores = g.op("Where", {hidden, g.scalar(-std::numeric_limits<double>::infinity(), scope, "minus_inf"), scores}, scope);
  }
  ::onnx::NodeProto& softmax = g.node("Softmax", {scores}, scope);
  attr_int(softmax, "axis", -1);
  const std::string o = transpose(g, g.op("MatMul", {softmax.output(0), v}, scope), {0, 2, 1, 3}, scope);  // [B, T, H, Dh]
  const std::string joined = g.op("Reshape", {o, g.ints({0, 0, e}, scope, "joined_shape")}, scope);
  return g.linear(joined, 3, a.out_proj->weight, a.out_proj->bias, join_path(scope, "out_proj"));
}

std::string layer_norm(Graph& g, const nn::LayerNorm& n, const std::string& x, const std::string& scope) {
  return g.layer_norm(x, n.normalized_shape.size(), n.weight, n.bias, n.eps, scope);
}

// TransformerEncoderLayer on x ([B, T, E] batch first, else [T, B, E]); dropouts are identities.
std::string encoder_layer(Graph& g, nn::TransformerEncoderLayer& l, const std::string& path, std::string x, bool causal) {
  const auto& o = l.options;
  if (!o.batch_first) x = transpose(g, x, {1, 0, 2}, path);
  const auto sa = [&](const std::string& in) { return self_attention(g, *l.self_attn, in, causal, join_path(path, "self_attn")); };
  const auto ff = [&](const std::string& in) {
    std::string h = g.linear(in, 3, l.linear1->weight, l.linear1->bias, join_path(path, "linear1"));
    h = o.activation == "gelu" ? g.gelu(h, false, path) : g.op("Relu", {h}, path);
    return g.linear(h, 3, l.linear2->weight, l.linear2->bias, join_path(path, "linear2"));
  };
  const std::string n1 = join_path(path, "norm1"), n2 = join_path(path, "norm2");
  if (o.norm_first) {
    x = g.op("Add", {x, sa(layer_norm(g, *l.norm1, x, n1))}, path);
    x = g.op("Add", {x, ff(layer_norm(g, *l.norm2, x, n2))}, path);
  } else {
    x = layer_norm(g, *l.norm1, g.op("Add", {x, sa(x)}, path), n1);
    x = layer_norm(g, *l.norm2, g.op("Add", {x, ff(x)}, path), n2);
  }
  return o.batch_first ? x : transpose(g, x, {1, 0, 2}, path);
}

// A PyTorch-layout gate stack [G·H, ...] in ONNX's gate order: LSTM i f g o → i o f c(=g), GRU r z n → z r h.
std::string onnx_gates(Graph& g, const nn::RNNBase& r, const std::string& w, const std::string& scope) {
  const bool lstm = r.cell() == nn::RNNCell::lstm;
  const int64_t hidden = r.options.hidden_size();
  const std::vector<int> order = lstm ? std::vector<int>{0, 3, 1, 2} : std::vector<int>{1, 0, 2};
  ::onnx::NodeProto& split = g.node("Split", {w, g.ints(std::vector<int64_t>(order.size(), hidden), scope, "gate_sizes")},
                                    scope, static_cast<int>(order.size()));
  attr_int(split, "axis", 0);
  std::vector<std::string> gates;
  for (int i : order) gates.push_back(split.output(i));
  ::onnx::NodeProto& concat = g.node("Concat", gates, scope);
  attr_int(concat, "axis", 0);
  return concat.output(0);
}

// Stacks one tensor per direction, each [rows...] → [D, rows...] (ONNX's W, R, B).
std::string per_direction(Graph& g, const std::vector<std::string>& parts, const std::string& scope) {
  std::vector<std::string> stacked;
  for (const std::string& p : parts) stacked.push_back(g.op("Unsqueeze", {p, g.ints({0}, scope, "direction_axis")}, scope));
  if (stacked.size() == 1) return stacked[0];
  ::onnx::NodeProto& concat = g.node("Concat", stacked, scope);
  attr_int(concat, "axis", 0);
  return concat.output(0);
}

// LSTM/GRU (nn::RNNBase) on x: one ONNX LSTM/GRU node per layer (bidirectional where the layer is), states
// from zeros. Initializers keep PyTorch's names and layout; the gate reorder is Split/Concat in the graph.
std::string recurrent(Graph& g, nn::RNNBase& r, const std::string& path, const std::string& x) {
  const auto& o = r.options;
  const bool lstm = r.cell() == nn::RNNCell::lstm;
  const int64_t dirs = o.bidirectional() ? 2 : 1;
  // To ONNX's layout [T, B, I] (onnxruntime does not run layout = 1).
  std::string seq = o.batch_first() ? transpose(g, x, {1, 0, 2}, path) : x;
  for (int64_t layer = 0; layer < o.num_layers(); ++layer) {
    // NOTE: appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on "l" + std::to_string(...).
    std::string scope = path;
    scope.append(path.empty() ? "l" : "/l").append(std::to_string(layer));
    std::vector<std::string> w, rr, b;
    for (int64_t d = 0; d < dirs; ++d) {
      const size_t i = static_cast<size_t>(layer * dirs + d);
      w.push_back(onnx_gates(g, r, g.weight(r.weight_ih[i], scope + ".weight_ih"), scope));
      rr.push_back(onnx_gates(g, r, g.weight(r.weight_hh[i], scope + ".weight_hh"), scope));
      if (o.bias()) {
        ::onnx::NodeProto& wb_rb = g.node("Concat", {onnx_gates(g, r, g.weight(r.bias_ih[i], scope + ".bias_ih"), scope),
                                                     onnx_gates(g, r, g.weight(r.bias_hh[i], scope + ".bias_hh"), scope)},
                                          scope);
        attr_int(wb_rb, "axis", 0);
        b.push_back(wb_rb.output(0));
      }
    }
    std::vector<std::string> inputs{seq, per_direction(g, w, scope), per_direction(g, rr, scope)};
    if (o.bias()) inputs.push_back(per_direction(g, b, scope));
    ::onnx::NodeProto& n = g.node(lstm ? "LSTM" : "GRU", inputs, scope);
    attr_int(n, "hidden_size", o.hidden_size());
    attr_str(n, "direction", o.bidirectional() ? "bidirectional" : "forward");
    if (!lstm) attr_int(n, "linear_before_reset", 1);  // PyTorch's n = tanh(W_in·x + b_in + r ⊙ (W_hn·h + b_hn))
    // Y [T, D, B, H] → [T, B, D·H], the next layer's input (forward and reverse halves side by side, as PyTorch).
    seq = g.op("Reshape", {transpose(g, n.output(0), {0, 2, 1, 3}, scope), g.ints({0, 0, -1}, scope, "joined_shape")}, scope);
  }
  return o.batch_first() ? transpose(g, seq, {1, 0, 2}, path) : seq;
}

std::string gather(Graph& g, const Tensor& table, const std::string& ids, const std::string& scope) {
  return g.op("Gather", {g.weight(table, scope + ".weight"), ids}, scope);
}

void need_tokens(const std::string& path, const nn::Module& m, const Value& in) {
  if (in.example.dtype() != DType::i64 || in.example.dim() != 2)
    unsupported(path, m, "export needs token ids i64 [B, T], got " + std::string(dtype_name(in.example.dtype())) + " " +
                             in.example.shape().str());
}

}  // namespace

void add_sequence_layers(LayerTable& t) {
  add_layer<nn::Embedding>(t, "Embedding", [](Graph& g, nn::Embedding& m, const std::string& path, const Value& in) {
    return gather(g, m.weight, in.name, path);
  });
  // EmbeddingBag on [B, L] (one bag per row, no offsets): Gather, then the bag's sum, mean or max over L.
  add_layer<nn::EmbeddingBag>(t, "EmbeddingBag", [](Graph& g, nn::EmbeddingBag& m, const std::string& path, const Value& in) {
    if (in.example.dim() != 2)
      unsupported(path, m, "export needs token ids [B, L] (one bag per row), got " + in.example.shape().str());
    if (m.options.max_norm.has_value())
      unsupported(path, m, "max_norm renormalises the looked-up rows of the weight in place, which ONNX cannot express; "
                           "export a model built without max_norm");
    if (m.options.padding_idx.has_value())
      unsupported(path, m, "padding_idx takes entries out of their bags, which this exporter does not write; export a "
                           "model built without padding_idx");
    const std::string rows = g.op("Gather", {g.weight(m.weight, path + ".weight"), in.name}, path);  // [B, L, D]
    const std::string& mode = m.options.mode;
    ::onnx::NodeProto& n = mode == "sum" ? g.node("ReduceSum", {rows, g.ints({1}, path, "axes")}, path)  // axes: an input
                                         : g.node(mode == "max" ? "ReduceMax" : "ReduceMean", {rows}, path);
    if (mode != "sum") attr_ints(n, "axes", {1});  // an attribute up to opset 17
    attr_int(n, "keepdims", 0);
    return n.output(0);
  });
  add_layer<nn::LearnedPositionalEmbedding>(
      t, "LearnedPositionalEmbedding", [](Graph& g, nn::LearnedPositionalEmbedding& m, const std::string& path, const Value& in) {
        return add_positions(g, in.name, in.example.dim(), g.weight(m.weight, path + ".weight"), path);
      });
  add_layer<nn::SinusoidalPositionalEncoding>(
      t, "SinusoidalPositionalEncoding",
      [](Graph& g, nn::SinusoidalPositionalEncoding& m, const std::string& path, const Value& in) {
        // pe is not in state_dict (recomputed): its initializer is named "<path>.pe".
        return add_positions(g, in.name, in.example.dim(), g.weight(m.pe, path + ".pe"), path);
      });
  add_layer<nn::MultiheadAttention>(t, "MultiheadAttention",
                                    [](Graph& g, nn::MultiheadAttention& m, const std::string& path, const Value& in) {
                                      if (in.example.dim() != 3)
                                        unsupported(path, m, "export needs a batched input, got " + in.example.shape().str());
                                      if (m.options.batch_first) return self_attention(g, m, in.name, false, path);
                                      const std::string x = transpose(g, in.name, {1, 0, 2}, path);
                                      return transpose(g, self_attention(g, m, x, false, path), {1, 0, 2}, path);
                                    });
  const auto encoder = [](bool block) {
    return [block](Graph& g, nn::TransformerEncoderLayer& m, const std::string& path, const Value& in) {
      if (in.example.dim() != 3) unsupported(path, m, "export needs a batched input, got " + in.example.shape().str());
      return encoder_layer(g, m, path, in.name, block && static_cast<nn::TransformerBlock&>(m).causal);
    };
  };
  add_layer<nn::TransformerEncoderLayer>(t, "TransformerEncoderLayer", encoder(false));
  add_layer<nn::TransformerBlock>(t, "TransformerBlock", encoder(true));
  // SwiGLU: the three linears (Gemm or MatMul + Add, as Linear's), silu as Mul(x, Sigmoid(x)).
  add_layer<nn::SwiGLU>(t, "SwiGLU", [](Graph& g, nn::SwiGLU& m, const std::string& path, const Value& in) {
    const auto proj = [&](const nn::Linear& l, const std::string& x, const char* name) {
      return g.linear(x, in.example.dim(), l.weight, l.bias, join_path(path, name));
    };
    const std::string gate = proj(*m.gate_proj, in.name, "gate_proj");
    const std::string act = g.op("Mul", {gate, g.op("Sigmoid", {gate}, path)}, path);
    return proj(*m.down_proj, g.op("Mul", {act, proj(*m.up_proj, in.name, "up_proj")}, path), "down_proj");
  });
  const auto rnn = [](Graph& g, nn::RNNBase& m, const std::string& path, const Value& in) {
    if (in.example.dim() != 3)
      unsupported(path, m, std::string("export needs a batched input ") + (m.options.batch_first() ? "[B, T, I]" : "[T, B, I]") +
                               ", got " + in.example.shape().str());
    return recurrent(g, m, path, in.name);
  };
  add_layer<nn::LSTM>(t, "LSTM", rnn);
  add_layer<nn::GRU>(t, "GRU", rnn);
  add_layer<nn::GPT>(t, "GPT", [](Graph& g, nn::GPT& m, const std::string& path, const Value& in) {
    need_tokens(path, m, in);
    std::string x = gather(g, m.tok_emb->weight, in.name, join_path(path, "tok_emb"));  // [B, T, D]
    const std::string pos = join_path(path, "pos_emb");
    if (!m.pos_emb) unsupported(path, m, "position = rotary has no exporter yet");
    if (auto* learned = dynamic_cast<nn::LearnedPositionalEmbedding*>(m.pos_emb.get()))
      x = add_positions(g, x, 3, g.weight(learned->weight, pos + ".weight"), pos);
    else
      x = add_positions(g, x, 3, g.weight(static_cast<nn::SinusoidalPositionalEncoding&>(*m.pos_emb).pe, pos + ".pe"), pos);
    for (size_t i = 0; i < m.blocks->size(); ++i)
      x = encoder_layer(g, static_cast<nn::TransformerEncoderLayer&>(*(*m.blocks)[i]),
                        join_path(path, "blocks." + std::to_string(i)), x, /*causal=*/true);
    x = layer_norm(g, *m.ln_f, x, join_path(path, "ln_f"));
    // The head, or the tied embedding: logits = x · tok_emb.weightᵀ (one initializer for both uses).
    return m.head ? g.linear(x, 3, m.head->weight, m.head->bias, join_path(path, "head"))
                  : g.linear(x, 3, m.tok_emb->weight, Tensor(), join_path(path, "head"));
  });
  add_layer<nn::RNNLanguageModel>(t, "RNNLanguageModel", [](Graph& g, nn::RNNLanguageModel& m, const std::string& path, const Value& in) {
    need_tokens(path, m, in);
    const std::string x = gather(g, m.embedding->weight, in.name, join_path(path, "embedding"));
    const std::string h = recurrent(g, *m.rnn, join_path(path, "rnn"), x);
    return g.linear(h, 3, m.head_weight(), m.head_bias, join_path(path, "head"));
  });
  // The Vision Transformer on [B, C, S, S]: conv_proj's patches as tokens [B, N, D] after the class token,
  // plus the positions, the pre-norm encoder blocks (dropouts are identities), ln, then the heads on the class
  // token's output.
  add_layer<nn::VisionTransformer>(t, "VisionTransformer", [](Graph& g, nn::VisionTransformer& m, const std::string& path,
                                                              const Value& in) {
    if (in.example.dim() != 4) unsupported(path, m, "export needs a batched input [B, C, H, W], got " + in.example.shape().str());
    const int64_t d = m.options.hidden_dim, patches = m.seq_length() - 1;
    const Value grid = g.convert(*m.conv_proj, join_path(path, "conv_proj"), in);  // [B, D, S/P, S/P]
    const std::string tokens =
        transpose(g, g.op("Reshape", {grid.name, g.ints({0, d, patches}, path, "tokens_shape")}, path), {0, 2, 1}, path);
    ::onnx::NodeProto& batch_shape = g.node("Concat", {g.dim(in.name, 0, path), g.ints({1, d}, path, "class_token_dims")}, path);
    attr_int(batch_shape, "axis", 0);
    ::onnx::NodeProto& joined =
        g.node("Concat", {g.op("Expand", {g.weight(m.class_token, "class_token"), batch_shape.output(0)}, path), tokens}, path);
    attr_int(joined, "axis", 1);
    const std::string enc = join_path(path, "encoder");
    std::string x = g.op("Add", {joined.output(0), g.weight(m.encoder->pos_embedding, "encoder.pos_embedding")}, enc);
    for (const auto& [name, layer] : *m.encoder->layers) {
      const auto& b = static_cast<const nn::ViTEncoderBlock&>(*layer);
      const std::string p = join_path(enc, "layers." + name);
      x = g.op("Add", {x, self_attention(g, *b.self_attention, layer_norm(g, *b.ln_1, x, join_path(p, "ln_1")), false,
                                         join_path(p, "self_attention"))},
               p);
      const auto& fc1 = static_cast<const nn::Linear&>(*(*b.mlp)[0]);
      const auto& fc2 = static_cast<const nn::Linear&>(*(*b.mlp)[3]);
      std::string h = g.linear(layer_norm(g, *b.ln_2, x, join_path(p, "ln_2")), 3, fc1.weight, fc1.bias, join_path(p, "mlp.0"));
      h = g.linear(g.gelu(h, false, join_path(p, "mlp.1")), 3, fc2.weight, fc2.bias, join_path(p, "mlp.3"));
      x = g.op("Add", {x, h}, p);
    }
    x = layer_norm(g, *m.encoder->ln, x, join_path(enc, "ln"));
    ::onnx::NodeProto& first = g.node("Gather", {x, g.constant(scalar_tensor(0, {.dtype = DType::i64}), path, "class_index")}, path);
    attr_int(first, "axis", 1);  // [B, D]
    x = first.output(0);
    for (const auto& [name, head] : *m.heads) {
      const std::string p = join_path(path, "heads." + name);
      if (const auto* l = dynamic_cast<const nn::Linear*>(head.get())) x = g.linear(x, 2, l->weight, l->bias, p);
      else x = g.op("Tanh", {x}, p);  // act, after pre_logits
    }
    return x;
  });
}

}  // namespace ember::onnx::detail
