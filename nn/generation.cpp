#include "nn/generation.h"

#include <cmath>
#include <limits>

#include "autograd/grad_mode.h"

namespace ember::nn {

namespace {
struct WindowState : DecodeState {
  Tensor tokens;  // the last `context` tokens seen, i64 [B, <= context]
};
}  // namespace

WindowedLM::WindowedLM(std::shared_ptr<Module> model, int64_t vocab_size, int64_t context)
    : model_(register_module("model", std::move(model))), vocab_size_(vocab_size), context_(context) {
  EMBER_CHECK(vocab_size > 0 && context > 0, "WindowedLM: vocab_size and context must be positive, got ", vocab_size,
              " and ", context);
}

std::unique_ptr<DecodeState> WindowedLM::start_decoding(int64_t) const { return std::make_unique<WindowState>(); }

Tensor WindowedLM::decode(const Tensor& tokens, DecodeState& state) {
  auto& s = dynamic_cast<WindowState&>(state);
  const int64_t fresh = tokens.size(1);
  Tensor all = s.tokens.defined() ? cat({s.tokens, tokens}, 1) : tokens;
  if (all.size(1) > context_) all = all.narrow(1, all.size(1) - context_, context_).contiguous();
  s.tokens = all;
  s.length += fresh;
  const Tensor logits = model_->forward(all);
  const int64_t keep = std::min(fresh, all.size(1));  // a prompt longer than the window: its last part only
  return logits.narrow(1, all.size(1) - keep, keep);
}

Tensor sample_next(const Tensor& logits, double temperature, int64_t top_k, Generator* gen) {
  EMBER_CHECK(logits.dim() == 2, "sample_next: logits must be [batch, vocab], got ", logits.shape().str());
  EMBER_CHECK(temperature >= 0 && std::isfinite(temperature), "sample_next: temperature must be >= 0, got ",
              temperature);
  EMBER_CHECK(top_k >= 0, "sample_next: top_k must be >= 0 (0: the whole vocabulary), got ", top_k);
  if (temperature == 0) return argmax(logits, 1);
  Tensor scaled = logits.to(DType::f32) / temperature;
  if (top_k > 0 && top_k < logits.size(1)) {
    const Tensor kth = std::get<0>(topk(scaled, top_k, 1)).narrow(1, top_k - 1, 1);  // [B, 1]
    scaled = masked_fill(scaled, scaled < kth, -std::numeric_limits<double>::infinity());
  }
  return multinomial(softmax(scaled, 1), 1, false, gen).flatten();
}

std::vector<int64_t> generate(CausalLM& model, std::span<const int64_t> prompt, const GenerateOptions& o,
                              const std::function<bool(int64_t)>& on_token) {
  EMBER_CHECK(!prompt.empty(), "generate: the prompt is empty; give at least one token (e.g. a newline)");
  EMBER_CHECK(o.max_new_tokens >= 0, "generate: max_new_tokens must be >= 0, got ", o.max_new_tokens);
  NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  struct ModeAfter {
    CausalLM& m;
    bool training;
    ~ModeAfter() { m.train(training); }
  } mode_after{model, was_training};

  const Device device = model.parameters().empty() ? kCPU : model.parameters().front().device();
  const int64_t limit = model.max_context();
  std::vector<int64_t> all(prompt.begin(), prompt.end()), out;
  // The last `n` tokens of `all` as a [1, n] batch on the model's device.
  const auto tail = [&](int64_t n) {
    const std::vector<int64_t> ids(all.end() - n, all.end());
    return from_vector(ids, {1, n}).to(device);
  };
  std::unique_ptr<DecodeState> state = model.start_decoding(1);
  const int64_t first = limit > 0 ? std::min<int64_t>(static_cast<int64_t>(all.size()), limit) : static_cast<int64_t>(all.size());
  Tensor logits = model.decode(tail(first), *state);
  out.reserve(static_cast<size_t>(o.max_new_tokens));
  for (int64_t i = 0; i < o.max_new_tokens; ++i) {
    const Tensor last = logits.select(1, logits.size(1) - 1);  // [1, V]
    const int64_t next = sample_next(last, o.temperature, o.top_k, o.gen).to(kCPU).item<int64_t>();
    all.push_back(next);
    out.push_back(next);
    if (on_token && !on_token(next)) break;
    if (i + 1 == o.max_new_tokens) break;
    if (limit > 0 && state->length >= limit) {  // full: re-read the last half-context into a fresh state
      state = model.start_decoding(1);
      logits = model.decode(tail(std::max<int64_t>(1, limit / 2)), *state);
    } else {
      logits = model.decode(tail(1), *state);
    }
  }
  return out;
}

}  // namespace ember::nn
