#pragma once
// Sampling text from a CausalLM (nn/causal_lm.h), as Hugging Face's generate() with do_sample: temperature,
// top-k, or greedy. Uses the model's incremental decode (a key/value cache or a recurrent state), so each
// new token costs one decode of one token.
//
//   Generator gen(seed);
//   auto ids = nn::generate(*model, tokenizer.encode("The "), {.max_new_tokens = 200, .top_k = 40, .gen = &gen});
//   std::cout << tokenizer.decode(ids);
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "nn/causal_lm.h"

namespace ember::nn {

// Any module mapping token ids [B, T] to logits [B, T, V] (a block-by-block model, say) as a CausalLM
// without a cache: decode() keeps the tokens and runs forward over the last `context` of them, so each new
// token costs a forward over the window (O(T²) attention for a transformer), not O(T). nn::GPT and
// nn::RNNLanguageModel decode incrementally and do not need it.
class WindowedLM : public CausalLM {
 public:
  WindowedLM(std::shared_ptr<Module> model, int64_t vocab_size, int64_t context);
  Tensor forward(const Tensor& tokens) override { return model_->forward(tokens); }
  int64_t vocab_size() const override { return vocab_size_; }
  int64_t max_context() const override { return 0; }  // the window slides: no limit
  std::unique_ptr<DecodeState> start_decoding(int64_t batch) const override;
  Tensor decode(const Tensor& tokens, DecodeState& state) override;
  std::string type_name() const override { return "WindowedLM"; }

 private:
  std::shared_ptr<Module> model_;
  int64_t vocab_size_, context_;
};

struct GenerateOptions {
  int64_t max_new_tokens = 200;
  double temperature = 1.0;  // logits are divided by it; 0: greedy (the most likely token each step)
  int64_t top_k = 0;         // sample among the k most likely tokens only; 0: the whole vocabulary
  Generator* gen = nullptr;  // the sampling's generator; nullptr: the default generator
};

// The next token of each row of `logits` [B, V] (the last position's): i64 [B] on the logits' device.
// Ties under top-k are kept (every token whose logit equals the k-th largest stays in).
Tensor sample_next(const Tensor& logits, double temperature, int64_t top_k, Generator* gen = nullptr);

// Continues `prompt` (token ids, at least one) by up to max_new_tokens tokens and returns the new ones.
// `on_token` sees each new token as it is made (to stream text) and stops the generation by returning false.
// When the model's context is full (max_context() > 0), generation continues from a fresh state over the
// last half-context of tokens (re-read in one decode), so it runs for any length at an amortised O(T) per
// token. Runs in eval mode without a graph and leaves the model's mode as it was.
std::vector<int64_t> generate(CausalLM& model, std::span<const int64_t> prompt, const GenerateOptions& options = {},
                              const std::function<bool(int64_t)>& on_token = {});

}  // namespace ember::nn
