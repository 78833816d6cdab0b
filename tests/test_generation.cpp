// nn::generate and nn::sample_next: greedy, top-k and temperature sampling over a CausalLM, the context
// roll-over, and the errors. The model here is a bigram table (logits of the next token = a row of a
// [V, V] table) whose decode counts what it is given, so every expectation is exact.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include <ember/ember.h>

#include "test_helpers.h"

using namespace ember;

namespace {

// logits[b, t] = table[tokens[b, t]]: the next token depends on the current one only.
class BigramLM : public nn::CausalLM {
 public:
  BigramLM(Tensor table, int64_t context) : context_(context) { this->table = register_parameter("table", std::move(table)); }
  Tensor forward(const Tensor& tokens) override { return nn::functional::embedding(tokens, table); }
  int64_t vocab_size() const override { return table.size(0); }
  int64_t max_context() const override { return context_; }
  std::unique_ptr<nn::DecodeState> start_decoding(int64_t) const override {
    ++starts;
    return std::make_unique<nn::DecodeState>();
  }
  Tensor decode(const Tensor& tokens, nn::DecodeState& state) override {
    EMBER_CHECK(context_ == 0 || state.length + tokens.size(1) <= context_, "decode past the context");
    state.length += tokens.size(1);
    decoded.push_back(tokens.size(1));
    EXPECT_FALSE(GradMode::is_enabled());
    EXPECT_FALSE(is_training());
    return forward(tokens);
  }
  Tensor table;
  mutable int starts = 0;
  std::vector<int64_t> decoded;  // tokens per decode call

 private:
  int64_t context_;
};

// Row t puts its largest logit on (t + 1) mod V, then decreasing.
Tensor successor_table(int64_t v) {
  std::vector<float> t(static_cast<size_t>(v * v), 0.f);
  for (int64_t i = 0; i < v; ++i) {
    t[static_cast<size_t>(i * v + (i + 1) % v)] = 3.f;
    t[static_cast<size_t>(i * v + (i + 2) % v)] = 2.f;
  }
  return from_vector(t, {v, v});
}

}  // namespace

TEST(Generate, GreedyFollowsTheMostLikelyTokenAndRestoresTrainMode) {
  BigramLM lm(successor_table(5), 0);
  lm.train();
  const std::vector<int64_t> prompt{3, 4};
  const auto out = nn::generate(lm, prompt, {.max_new_tokens = 7, .temperature = 0});
  EXPECT_EQ(out, (std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1}));
  EXPECT_TRUE(lm.is_training());
  // One decode of the prompt, then one token per step (the last sampled token needs no decode).
  EXPECT_EQ(lm.decoded, (std::vector<int64_t>{2, 1, 1, 1, 1, 1, 1}));
  // top_k = 1 is greedy at any temperature.
  Generator gen(7);
  EXPECT_EQ(nn::generate(lm, prompt, {.max_new_tokens = 7, .temperature = 2.0, .top_k = 1, .gen = &gen}), out);
}

TEST(Generate, ContextRollOverReReadsTheLastHalfContext) {
  BigramLM lm(successor_table(5), 4);
  const auto out = nn::generate(lm, std::vector<int64_t>{0, 1, 2, 3, 4, 0}, {.max_new_tokens = 6, .temperature = 0});
  EXPECT_EQ(out, (std::vector<int64_t>{1, 2, 3, 4, 0, 1}));
  // The prompt is cropped to the context (4), full at once: re-read 2; then 1, 1 (full), re-read 2; 1.
  EXPECT_EQ(lm.decoded, (std::vector<int64_t>{4, 2, 1, 1, 2, 1}));
  EXPECT_EQ(lm.starts, 3);
}

TEST(Generate, StreamsTokensAndStopsWhenAsked) {
  BigramLM lm(successor_table(5), 0);
  std::vector<int64_t> seen;
  const auto out = nn::generate(lm, std::vector<int64_t>{0}, {.max_new_tokens = 10, .temperature = 0}, [&](int64_t t) {
    seen.push_back(t);
    return t != 3;
  });
  EXPECT_EQ(out, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(seen, out);
}

TEST(SampleNext, TopKKeepsOnlyTheKLargestAndFrequenciesFollowTheSoftmax) {
  // One row: logits log(0.5), log(0.3), log(0.15), log(0.05).
  const std::vector<double> p{0.5, 0.3, 0.15, 0.05};
  std::vector<float> l;
  for (double q : p) l.push_back(static_cast<float>(std::log(q)));
  const Tensor logits = from_vector(l, {1, 4}).expand({4000, 4}).contiguous();
  Generator gen(3);
  const std::vector<int64_t> all = nn::sample_next(logits, 1.0, 0, &gen).to_vector<int64_t>();
  const std::vector<int64_t> top2 = nn::sample_next(logits, 1.0, 2, &gen).to_vector<int64_t>();
  std::map<int64_t, double> freq_all, freq_top2;
  for (int64_t t : all) freq_all[t] += 1.0 / 4000;
  for (int64_t t : top2) freq_top2[t] += 1.0 / 4000;
  // Binomial standard error with n = 4000 is at most 0.008: 4 sigma.
  for (int64_t t = 0; t < 4; ++t) EXPECT_NEAR(freq_all[t], p[static_cast<size_t>(t)], 0.032) << "token " << t;
  EXPECT_EQ(freq_top2.count(2) + freq_top2.count(3), 0u);
  EXPECT_NEAR(freq_top2[0], 0.5 / 0.8, 0.032);
  // Temperature 0.5 squares the odds: p ∝ p², so 0.25 : 0.09 within the top 2.
  const std::vector<int64_t> cold = nn::sample_next(logits, 0.5, 2, &gen).to_vector<int64_t>();
  double zero = 0;
  for (int64_t t : cold) zero += t == 0 ? 1.0 / 4000 : 0.0;
  EXPECT_NEAR(zero, 0.25 / 0.34, 0.032);
  // The same generator state gives the same draws.
  Generator a(11), b(11);
  EXPECT_EQ(nn::sample_next(logits, 1.0, 3, &a).to_vector<int64_t>(), nn::sample_next(logits, 1.0, 3, &b).to_vector<int64_t>());
}

TEST(SampleNext, Errors) {
  BigramLM lm(successor_table(5), 0);
  EXPECT_TRUE(test::throws_error([&] { nn::generate(lm, std::vector<int64_t>{}, {}); }, {"generate", "prompt is empty"}));
  EXPECT_TRUE(test::throws_error([&] { nn::sample_next(zeros({5}), 1.0, 0); }, {"sample_next", "[batch, vocab]"}));
  EXPECT_TRUE(test::throws_error([&] { nn::sample_next(zeros({1, 5}), -1.0, 0); }, {"temperature must be >= 0"}));
  EXPECT_TRUE(test::throws_error([&] { nn::sample_next(zeros({1, 5}), 1.0, -2); }, {"top_k must be >= 0"}));
}

TEST(Generate, WindowedLMServesAModelWithoutACache) {
  auto table = std::make_shared<nn::Embedding>(5, 5);
  table->weight.copy_(successor_table(5));
  nn::WindowedLM lm(table, 5, 3);
  EXPECT_EQ(nn::generate(lm, std::vector<int64_t>{0, 1, 2, 3}, {.max_new_tokens = 6, .temperature = 0}),
            (std::vector<int64_t>{4, 0, 1, 2, 3, 4}));
  // The window keeps the last 3 tokens; decode returns the logits of the new tokens only.
  auto state = lm.start_decoding(1);
  NoGradGuard no_grad;
  const Tensor logits = lm.decode(from_vector<int64_t>({0, 1, 2, 3}, {1, 4}), *state);
  EXPECT_EQ(logits.shape(), Shape({1, 3, 5}));  // the prompt is longer than the window: its last 3
  EXPECT_EQ(lm.decode(from_vector<int64_t>({4}, {1, 1}), *state).shape(), Shape({1, 1, 5}));
  EXPECT_EQ(state->length, 5);
}
