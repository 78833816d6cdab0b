#pragma once
// CausalLM: a model that predicts the next token — what ember-train's language_model task trains and
// ember-generate samples from. nn::GPT (nn/transformer.h) and nn::RNNLanguageModel (nn/rnn.h) are ones.
//
//   forward(tokens i64 [B, T]) → logits [B, T, V]: position t sees tokens 0..t only.
//
// Incremental decoding, for generation: start_decoding() makes an empty state (a transformer's key/value
// cache, a recurrent net's hidden state); decode(tokens [B, T_new], state) returns the logits
// [B, T_new, V] of tokens that follow everything the state has seen, and appends them to it, so that each
// new token costs O(T) (a transformer) or O(1) (a recurrent net), not a forward over the whole prefix.
// decode over a prompt and then one token at a time gives the logits forward() gives for the whole
// sequence (up to float rounding).
#include <cstdint>
#include <memory>

#include "nn/module.h"

namespace ember::nn {

// What a CausalLM keeps between decode calls; each model defines its own.
struct DecodeState {
  virtual ~DecodeState() = default;
  int64_t length = 0;  // tokens seen so far
};

class CausalLM : public Module {
 public:
  virtual int64_t vocab_size() const = 0;
  // The most tokens a state may hold (a transformer's positions); 0: no limit (recurrent nets). A caller
  // that needs more starts a new state from the last tokens.
  virtual int64_t max_context() const = 0;
  virtual std::unique_ptr<DecodeState> start_decoding(int64_t batch) const = 0;
  virtual Tensor decode(const Tensor& tokens, DecodeState& state) = 0;
};

}  // namespace ember::nn
