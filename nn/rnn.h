#pragma once
// Recurrent layers (torch.nn.LSTM, GRU, LSTMCell, GRUCell) and a recurrent language model. PyTorch's
// parameter names, shapes, gate order (LSTM i, f, g, o; GRU r, z, n) and initialisation U(-1/√H, 1/√H),
// so a state_dict loads into PyTorch and back. Each layer runs one GEMM for the input projection of all T
// steps, then per step one h·W_hhᵀ GEMM and the fused cell (the lstm_cell / gru_cell Backend ops); each
// layer direction is one autograd node (nn::functional::lstm_sequence / gru_sequence) whose backward is
// backpropagation through time with the fused cell backward.
//
//   nn::LSTM lstm(nn::LSTMOptions(64, 256).num_layers(2).batch_first(true));
//   auto [output, h_n, c_n] = lstm.forward_with_state(x);      // x [B, T, 64] → output [B, T, 256]
//   nn::GRU gru({.input_size = 8, .hidden_size = 16, .bidirectional = true});
#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/causal_lm.h"
#include "nn/layers.h"
#include "nn/options.h"

namespace ember::nn {

struct RNNFields {
  int64_t input_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 1;
  bool bias = true;          // bias_ih_l{k} and bias_hh_l{k}
  bool batch_first = false;  // input/output [B, T, *] instead of [T, B, *] (never the states: [L·D, B, H])
  double dropout = 0.0;      // on the outputs of every layer but the last, when training
  bool bidirectional = false;
};

// RNNOptions(input_size, hidden_size).num_layers(2).dropout(0.1) ... (LibTorch's LSTMOptions/GRUOptions).
class RNNOptions : public RNNFields {
 public:
  using Fields = RNNFields;
  template <std::same_as<Fields> F>
  RNNOptions(const F& fields) : Fields(fields) {}  // NOLINT: implicit, as the other options
  RNNOptions(int64_t input_size, int64_t hidden_size) : Fields{input_size, hidden_size} {}
  EMBER_OPTION(int64_t, input_size)
  EMBER_OPTION(int64_t, hidden_size)
  EMBER_OPTION(int64_t, num_layers)
  EMBER_OPTION(bool, bias)
  EMBER_OPTION(bool, batch_first)
  EMBER_OPTION(double, dropout)
  EMBER_OPTION(bool, bidirectional)
};
using LSTMOptions = RNNOptions;
using GRUOptions = RNNOptions;

// What a recurrent layer returns: output [T, B, D·H] ([B, T, D·H] with batch_first, [T, D·H] unbatched),
// h_n (and c_n for an LSTM; undefined for a GRU) [L·D, B, H] ([L·D, H] unbatched). D = 2 if bidirectional.
struct RNNOutput {
  Tensor output, h_n, c_n;
};

enum class RNNCell { lstm, gru };

// The multi-layer LSTM / GRU. Parameters per layer k (suffix _reverse for the backward direction):
// weight_ih_l{k} [G·H, in], weight_hh_l{k} [G·H, H], bias_ih_l{k}, bias_hh_l{k} [G·H]; G = 4 (LSTM) or 3
// (GRU); in = input_size for k = 0, D·H above.
class RNNBase : public Module {
 public:
  RNNBase(RNNCell cell, const RNNOptions& options, Generator* gen);
  // input [T, B, I] ([B, T, I] with batch_first) or [T, I] (unbatched); h0 (and c0 for an LSTM) as h_n, or
  // undefined for zeros.
  RNNOutput forward_with_state(const Tensor& input, const Tensor& h0 = {}, const Tensor& c0 = {});
  // One tensor in, the output sequence out (what Sequential chains; the states start at zero).
  Tensor forward(const Tensor& input) override { return forward_with_state(input).output; }
  std::string describe() const override;
  RNNCell cell() const { return cell_; }
  RNNOptions options;
  // Indexed layer·D + direction.
  std::vector<Tensor> weight_ih, weight_hh, bias_ih, bias_hh;

 private:
  RNNCell cell_;
  Generator* gen_;  // the dropout masks' (nullptr: the default generator)
};

class LSTM : public RNNBase {
 public:
  explicit LSTM(const LSTMOptions& options, Generator* gen = nullptr) : RNNBase(RNNCell::lstm, options, gen) {}
  explicit LSTM(const LSTMOptions::Fields& options, Generator* gen = nullptr)
      : LSTM(LSTMOptions(options), gen) {}
  std::string type_name() const override { return "LSTM"; }
};

class GRU : public RNNBase {
 public:
  explicit GRU(const GRUOptions& options, Generator* gen = nullptr) : RNNBase(RNNCell::gru, options, gen) {}
  explicit GRU(const GRUOptions::Fields& options, Generator* gen = nullptr) : GRU(GRUOptions(options), gen) {}
  std::string type_name() const override { return "GRU"; }
};

// One step: weight_ih [G·H, I], weight_hh [G·H, H], bias_ih, bias_hh [G·H] (PyTorch's LSTMCell/GRUCell).
// input [B, I] or [I]; states [B, H] or [H] (undefined: zeros).
class LSTMCell : public Module {
 public:
  LSTMCell(int64_t input_size, int64_t hidden_size, bool bias = true, Generator* gen = nullptr);
  std::pair<Tensor, Tensor> forward_with_state(const Tensor& input, const Tensor& h = {}, const Tensor& c = {});
  Tensor forward(const Tensor& input) override { return forward_with_state(input).first; }  // h from zeros
  std::string type_name() const override { return "LSTMCell"; }
  std::string describe() const override;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;
  int64_t input_size, hidden_size;
};

class GRUCell : public Module {
 public:
  GRUCell(int64_t input_size, int64_t hidden_size, bool bias = true, Generator* gen = nullptr);
  Tensor forward_with_state(const Tensor& input, const Tensor& h = {});
  Tensor forward(const Tensor& input) override { return forward_with_state(input); }  // from zeros
  std::string type_name() const override { return "GRUCell"; }
  std::string describe() const override;
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;
  int64_t input_size, hidden_size;
};

// --- a recurrent language model ---------------------------------------------------------------------------
struct RNNLMOptions {
  int64_t vocab_size = 0;
  std::string cell = "lstm";  // "lstm" or "gru"
  int64_t embedding_dim = 64;
  int64_t hidden_size = 256;
  int64_t num_layers = 2;
  double dropout = 0.1;       // on the embeddings, between the layers and on the last layer's output (training)
  bool tie_weights = false;   // the head reuses embedding.weight (needs embedding_dim == hidden_size)
};

// tokens i64 [B, T] → embedding → LSTM/GRU (batch_first) → linear head → logits [B, T, V] (PyTorch's
// word_language_model). Keys: embedding.weight, rnn.* (the LSTM/GRU names), head.weight, head.bias; tied:
// no head.weight (logits = h·embedding.weightᵀ + head.bias) and the embedding starts U(-0.1, 0.1) instead of
// N(0, 1), as PyTorch's example, so the first logits are small.
class RNNLanguageModel : public CausalLM {
 public:
  explicit RNNLanguageModel(const RNNLMOptions& options, Generator* gen = nullptr);
  Tensor forward(const Tensor& tokens) override;
  int64_t vocab_size() const override { return options.vocab_size; }
  int64_t max_context() const override { return 0; }
  std::unique_ptr<DecodeState> start_decoding(int64_t batch) const override;
  // Continues from the state's hidden state (h, and c for an LSTM), which it then replaces.
  Tensor decode(const Tensor& tokens, DecodeState& state) override;
  std::string type_name() const override { return "RNNLanguageModel"; }
  std::string describe() const override;

  RNNLMOptions options;
  std::shared_ptr<Embedding> embedding;
  std::shared_ptr<RNNBase> rnn;
  std::shared_ptr<Module> head;  // a Linear, or (tied) a module holding only `bias`
  Tensor head_weight() const;    // head.weight, or embedding.weight when tied
  Tensor head_bias;

 private:
  Tensor logits(const Tensor& hidden);
  Generator* gen_;
};

// What RNNLanguageModel::decode keeps: the hidden state after every token seen ([L, B, H]; undefined until
// the first decode: zeros).
struct RNNDecodeState : DecodeState {
  int64_t batch = 0;
  Tensor h, c;
};

}  // namespace ember::nn
