// scaled_dot_product_attention: against PyTorch (tests/data/attention_golden.safetensors, written by
// tools/make_attention_golden.py from PyTorch's math definition) in f32 and f64, the dropout's statistics
// and its mask being the same in forward and backward, memory linear in the sequence length, and errors.
// Gradcheck of the plain/causal/masked variants: tests/op_table.h.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include "test_helpers.h"

#include <cmath>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "autograd/gradcheck.h"
#include "backends/attention_math.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace {

Tensor get(const std::string& name) { return test::golden("attention_golden.safetensors", name); }

Tensor identity(int64_t n, DType dtype = DType::f32) {
  std::vector<double> values(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i * n + i)] = 1.0;
  return from_vector<double>(values, {n, n}).to(dtype);
}

// |a - e| <= tol·(1 + |e|), NaN only where PyTorch has NaN.
void expect_close(const Tensor& actual, const Tensor& expected, const std::string& what, double tol) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  const auto a = actual.to_vector<double>(), e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(e[i])) {
      ASSERT_TRUE(std::isnan(a[i])) << what << " element " << i << ": expected NaN, got " << a[i];
      continue;
    }
    ASSERT_NEAR(a[i], e[i], tol * (1 + std::abs(e[i]))) << what << " element " << i;
  }
}

struct GoldenCase {
  std::string name;
  bool mask = false;
  bool causal = false;
  std::optional<double> scale{};
  bool enable_gqa = false;
};

void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }

class AttentionGolden : public ::testing::TestWithParam<std::tuple<GoldenCase, std::string>> {};

TEST_P(AttentionGolden, MatchesPyTorch) {
  const auto& [c, dtype] = GetParam();
  const std::string p = c.name + "." + dtype + ".";
  Tensor q = get(p + "q").clone().requires_grad_(), k = get(p + "k").clone().requires_grad_(),
         v = get(p + "v").clone().requires_grad_();
  F::AttentionOptions options;
  if (c.mask) options.attn_mask = get(p + "mask");
  options.is_causal = c.causal;
  options.scale = c.scale;
  options.enable_gqa = c.enable_gqa;
  const Tensor y = F::scaled_dot_product_attention(q, k, v, options);
  // f32: both sides round differently (blocked online softmax here, full rows in PyTorch's math).
  const double tol = dtype == "f64" ? 1e-11 : 2e-5;
  expect_close(y, get(p + "y"), p + "y", tol);
  sum(y * get(p + "r")).backward();
  expect_close(q.grad(), get(p + "gq"), p + "gq", tol);
  expect_close(k.grad(), get(p + "gk"), p + "gk", tol);
  expect_close(v.grad(), get(p + "gv"), p + "gv", tol);
}

const GoldenCase kCases[] = {
    {"plain"},
    {"causal", false, true},
    {"causal_rect", false, true},
    {"causal_tall", false, true},
    {"bool_mask", true},
    {"float_mask", true},
    {"scale", false, false, 0.3},
    {"rect"},
    {"lead3", true},
    {"ev"},
    {"unbatched"},
    {"blocks_causal", false, true},
    {"blocks_mask", true},
    {"blocks_bool", true},
    {"fully_masked", true},
    {"gqa", false, false, {}, true},
    {"gqa_causal", false, true, {}, true},
    {"mqa_mask", true, false, {}, true},
    {"gqa_lead3", true, false, {}, true},
    {"mqa_unbatched", false, false, {}, true},
    {"gqa_blocks_causal", false, true, {}, true},
};

INSTANTIATE_TEST_SUITE_P(Cases, AttentionGolden,
                         ::testing::Combine(::testing::ValuesIn(kCases), ::testing::Values("f32", "f64")),
                         [](const auto& info) {
                           return std::get<0>(info.param).name + "_" + std::get<1>(info.param);
                         });

// PyTorch >= 2.5 (at::_safe_softmax in the math kernel): 0 for a row that sees no key, and no gradient.
TEST(Attention, FullyMaskedRowIsZeroWithoutGradient) {
  const Tensor q = randn({2, 3}, {.dtype = DType::f64}).requires_grad_(),
               k = randn({4, 3}, {.dtype = DType::f64}).requires_grad_(),
               v = randn({4, 2}, {.dtype = DType::f64}).requires_grad_();
  const Tensor mask = from_vector<bool>({true, true, false, true, false, false, false, false}, {2, 4});
  const Tensor y = F::scaled_dot_product_attention(q, k, v, {.attn_mask = mask});
  const auto yv = y.to_vector<double>();
  EXPECT_NE(yv[0], 0.0);
  EXPECT_EQ(yv[2], 0.0);
  EXPECT_EQ(yv[3], 0.0);
  sum(y).backward();
  const auto gq = q.grad().to_vector<double>();
  for (int e = 3; e < 6; ++e) EXPECT_EQ(gq[e], 0.0) << "q row 1, element " << e - 3;
  for (double g : k.grad().to_vector<double>()) EXPECT_FALSE(std::isnan(g));
}

// Uniform attention (q = 0) over v = the identity: y[i][j] = z_ij / (S·(1-p)) for the dropout mask z.
TEST(Attention, DropoutDropsAFractionPAndRescales) {
  const int64_t L = 64, S = 256;
  const double p = 0.3;
  Generator gen(7);
  const Tensor q = zeros({L, 8}), k = randn({S, 8}), v = identity(S);
  const auto y = F::scaled_dot_product_attention(q, k, v, {.dropout_p = p, .gen = &gen}).to_vector<float>();
  int64_t dropped = 0;
  const float kept = static_cast<float>(1.0 / (S * (1 - p)));
  for (float x : y) {
    if (x == 0) ++dropped;
    else ASSERT_NEAR(x, kept, 1e-6 * kept);
  }
  const double fraction = static_cast<double>(dropped) / static_cast<double>(y.size());
  EXPECT_NEAR(fraction, p, 0.02);  // 16384 draws: the standard deviation is 0.0036
  // The generator advanced: the next call draws another mask; the same state draws the same one.
  const auto y2 = F::scaled_dot_product_attention(q, k, v, {.dropout_p = p, .gen = &gen}).to_vector<float>();
  EXPECT_NE(y, y2);
  Generator again(7);
  EXPECT_EQ(F::scaled_dot_product_attention(q, k, v, {.dropout_p = p, .gen = &again}).to_vector<float>(), y);
}

// gradcheck passes only if the backward regenerates the forward's mask: each call re-seeds its generator.
// 2 batches: the CPU's split backward on 2 threads; 16 (batch, head) pairs: its one pass per pair.
TEST(Attention, DropoutGradcheckWithTheSameMask) {
  for (const Shape& lead : {Shape{2}, Shape{4, 4}}) {
    Generator init(3);
    const auto input = [&](int64_t rows, int64_t cols) {
      Shape shape = lead;
      shape.push_back(rows);
      shape.push_back(cols);
      return randn(shape, {.dtype = DType::f64}, &init).requires_grad_();
    };
    const std::vector<Tensor> inputs = {input(6, 4), input(7, 4), input(7, 3)};
    for (bool causal : {false, true}) {
      const auto result = autograd::gradcheck(
          [&](const std::vector<Tensor>& x) {
            Generator gen(11);
            return F::scaled_dot_product_attention(x[0], x[1], x[2],
                                                   {.is_causal = causal, .dropout_p = 0.4, .gen = &gen});
          },
          inputs);
      EXPECT_TRUE(result.ok) << lead.size() << " leading dims" << (causal ? ", causal: " : ": ") << result.message;
    }
  }
}

// The dropout mask does not depend on the dtype or on the thread/block split: an f32 run and an f64 run with
// one seed drop the same weights, across several of the CPU kernel's blocks.
TEST(Attention, DropoutMaskIsTheSameInF32AndF64) {
  const int64_t L = 100, S = 150;
  const Tensor q = zeros({L, 4}, {.dtype = DType::f64}), k = zeros({S, 4}, {.dtype = DType::f64}),
               v = identity(S, DType::f64);
  Generator g64(5), g32(5);
  const auto y64 = F::scaled_dot_product_attention(q, k, v, {.dropout_p = 0.5, .gen = &g64}).to_vector<double>();
  const auto y32 = F::scaled_dot_product_attention(q.to(DType::f32), k.to(DType::f32), v.to(DType::f32),
                                                   {.dropout_p = 0.5, .gen = &g32})
                       .to_vector<float>();
  for (size_t i = 0; i < y64.size(); ++i) ASSERT_EQ(y64[i] == 0, y32[i] == 0) << "element " << i;
}

// The CPU fills a row's dropout factors one Philox block per four weights (dropout_factors); the CUDA kernels
// draw each weight alone (dropout_factor): both must give the same mask, for any start and length.
TEST(Attention, DropoutFactorsOfARowMatchTheElementwiseDraw) {
  AttentionParams p;
  p.dropout_p = 0.3;
  p.seed = 1234;
  p.offset = 77;
  int64_t dropped = 0, total = 0;
  for (uint64_t index0 : {0, 1, 2, 3, 5, 130}) {
    for (int64_t n : {1, 2, 3, 4, 5, 7, 13, 64}) {
      std::vector<double> z(static_cast<size_t>(n), -1.0);
      attention_math::dropout_factors(p, index0, n, z.data());
      for (int64_t j = 0; j < n; ++j) {
        ASSERT_EQ(z[static_cast<size_t>(j)], attention_math::dropout_factor<double>(p, index0 + static_cast<uint64_t>(j)))
            << "weight " << index0 + static_cast<uint64_t>(j);
        dropped += z[static_cast<size_t>(j)] == 0 ? 1 : 0;
        ++total;
      }
    }
  }
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, total);
}

// The CPU backward takes one pass per (batch, head) when there are at least 2 per thread, else a dK/dV pass and
// a dQ pass over blocks: one head (the split scheme) and 64 copies of it (one pass) give the same gradients,
// over several query and key blocks (L = 150, S = 200), plain, causal and with a float mask.
TEST(Attention, OnePassAndSplitBackwardAgree) {
  Generator gen(9);
  const Tensor q1 = randn({1, 1, 150, 16}, {.dtype = DType::f64}, &gen),
               k1 = randn({1, 1, 200, 16}, {.dtype = DType::f64}, &gen),
               v1 = randn({1, 1, 200, 8}, {.dtype = DType::f64}, &gen),
               g1 = randn({1, 1, 150, 8}, {.dtype = DType::f64}, &gen),
               mask1 = randn({150, 200}, {.dtype = DType::f64}, &gen);
  for (int variant = 0; variant < 3; ++variant) {
    F::AttentionOptions options;
    options.is_causal = variant == 1;
    if (variant == 2) options.attn_mask = mask1;
    // copies == 1: the [1, 1] head itself; else [copies, 4] copies of it.
    const auto run = [&](int64_t copies) {
      const auto many = [&](const Tensor& t) {
        return copies == 1 ? t : t.expand({copies, 4, t.size(2), t.size(3)}).contiguous();
      };
      Tensor q = many(q1).clone().requires_grad_(), k = many(k1).clone().requires_grad_(),
             v = many(v1).clone().requires_grad_();
      const Tensor y = F::scaled_dot_product_attention(q, k, v, options);
      y.backward(many(g1));
      return std::vector<Tensor>{y, q.grad(), k.grad(), v.grad()};
    };
    const auto one = run(1), all = run(16);  // 16·4 = 64 (batch, head) pairs
    const char* names[] = {"y", "dq", "dk", "dv"};
    for (int t = 0; t < 4; ++t) {
      for (int64_t c = 0; c < 64; ++c) {
        const Tensor slice = all[static_cast<size_t>(t)].flatten(0, 1).select(0, c).unsqueeze(0).unsqueeze(0);
        expect_close(slice, one[static_cast<size_t>(t)], std::string(names[t]) + " variant " + std::to_string(variant) +
                                                             " copy " + std::to_string(c), 1e-12);
      }
    }
  }
}

// apply_rotary against Hugging Face's formula written in PyTorch (both pair layouts, offsets, partial rotary).
struct RotaryCase {
  std::string name;
  F::RotaryOptions options;
};
void PrintTo(const RotaryCase& c, std::ostream* os) { *os << c.name; }

class RotaryGolden : public ::testing::TestWithParam<std::tuple<RotaryCase, std::string>> {};

TEST_P(RotaryGolden, MatchesHuggingFace) {
  const auto& [c, dtype] = GetParam();
  const std::string p = c.name + "." + dtype + ".";
  Tensor x = get(p + "x").clone().requires_grad_();
  const Tensor y = F::apply_rotary(x, c.options);
  // f32: the same f32 tables as HF up to the last ulp of libm's and PyTorch's pow/cos/sin.
  const double tol = dtype == "f64" ? 1e-12 : 2e-5;
  expect_close(y, get(p + "y"), p + "y", tol);
  sum(y * get(p + "r")).backward();
  expect_close(x.grad(), get(p + "gx"), p + "gx", tol);
}

const RotaryCase kRotaryCases[] = {
    {"rope", {}},
    {"rope_offset", {.position_offset = 37}},
    {"rope_interleaved", {.interleaved = true, .position_offset = 5}},
    {"rope_partial", {.position_offset = 3, .rotary_dim = 4}},
    {"rope_partial_interleaved_theta", {.theta = 500000.0, .interleaved = true, .rotary_dim = 6}},
    {"rope_long", {}},
};

INSTANTIATE_TEST_SUITE_P(Cases, RotaryGolden,
                         ::testing::Combine(::testing::ValuesIn(kRotaryCases), ::testing::Values("f32", "f64")),
                         [](const auto& info) {
                           return std::get<0>(info.param).name + "_" + std::get<1>(info.param);
                         });

// Decoding with a cache: rotating token t alone at position_offset t gives row t of the whole sequence's
// rotation; a strided (transposed) x gives what its contiguous copy gives.
TEST(Rotary, OffsetMatchesTheFullSequenceAndStridedInput) {
  Generator gen(2);
  const Tensor x = randn({2, 3, 6, 8}, {}, &gen);
  for (bool interleaved : {false, true}) {
    const Tensor full = F::apply_rotary(x, {.interleaved = interleaved});
    for (int64_t t = 0; t < 6; ++t) {
      const Tensor one = F::apply_rotary(x.narrow(2, t, 1), {.interleaved = interleaved, .position_offset = t});
      EXPECT_EQ(one.to_vector<float>(), full.narrow(2, t, 1).contiguous().to_vector<float>()) << "token " << t;
    }
    const Tensor blh = x.transpose(1, 2).contiguous();  // [B, L, H, E]
    EXPECT_EQ(F::apply_rotary(blh.transpose(1, 2), {.interleaved = interleaved}).to_vector<float>(),
              full.to_vector<float>());
  }
}

TEST(Rotary, Errors) {
  const auto throws = [](const std::function<void()>& f, const std::string& part) {
    EXPECT_TRUE(test::throws_error(f, {part}));
  };
  throws([&] { F::apply_rotary(randn({2, 3, 5})); }, "apply_rotary: rotary_dim must be even and in [2, E = 5], got 5 (E is odd: set rotary_dim)");
  throws([&] { F::apply_rotary(randn({2, 3, 6}), {.rotary_dim = 8}); }, "rotary_dim must be even and in [2, E = 6], got 8");
  throws([&] { F::apply_rotary(randn({2, 3, 6}), {.rotary_dim = 3}); }, "got 3");
  throws([&] { F::apply_rotary(randn({6})); }, "apply_rotary: expected x [..., L, E] of a floating dtype");
  throws([&] { F::apply_rotary(randint(5, {2, 4})); }, "of a floating dtype, got [2, 4] i64");
  throws([&] { F::apply_rotary(randn({2, 4}), {.position_offset = -1}); }, "position_offset must be >= 0, got -1");
  throws([&] { F::apply_rotary(randn({2, 4}), {.theta = 0}); }, "theta must be positive");
}

// k [.., Hkv, S, E] with each head repeated `group` times along dim -3 (torch.repeat_interleave).
Tensor repeat_heads(const Tensor& t, int64_t group) {
  Shape expanded = t.unsqueeze(-3).shape(), merged = t.shape();
  expanded[expanded.size() - 3] = group;
  merged[merged.size() - 3] *= group;
  return t.unsqueeze(-3).expand(expanded).reshape(merged);
}

// Grouped-query attention equals attention on k and v repeated to q's heads, the gradients of k and v being the
// sums over the copies: in both CPU backward schemes (16 batches × 2 kv heads: one pass per kv head; 1 × 2:
// the split dK/dV and dQ passes), over several query and key blocks, plain, causal, masked and with dropout
// (whose mask is keyed by the query head, so the repeated run drops the same weights).
TEST(Attention, GroupedQueryEqualsRepeatedKeysAndValues) {
  Generator gen(21);
  for (const int64_t batches : {1, 16}) {
    for (const int64_t kv_heads : {2, 1}) {
      const int64_t heads = 4, group = heads / kv_heads;
      const Tensor q0 = randn({batches, heads, 150, 8}, {.dtype = DType::f64}, &gen),
                   k0 = randn({batches, kv_heads, 200, 8}, {.dtype = DType::f64}, &gen),
                   v0 = randn({batches, kv_heads, 200, 5}, {.dtype = DType::f64}, &gen),
                   g = randn({batches, heads, 150, 5}, {.dtype = DType::f64}, &gen),
                   mask = randn({heads, 150, 200}, {.dtype = DType::f64}, &gen);
      for (int variant = 0; variant < 4; ++variant) {
        const auto run = [&](bool gqa) {
          F::AttentionOptions options;
          options.is_causal = variant == 1;
          if (variant == 2) options.attn_mask = mask;
          Generator dropout_gen(5);
          if (variant == 3) {
            options.dropout_p = 0.3;
            options.gen = &dropout_gen;
          }
          options.enable_gqa = gqa;
          Tensor q = q0.clone().requires_grad_(), k = k0.clone().requires_grad_(), v = v0.clone().requires_grad_();
          const Tensor y = gqa ? F::scaled_dot_product_attention(q, k, v, options)
                               : F::scaled_dot_product_attention(q, repeat_heads(k, group), repeat_heads(v, group), options);
          y.backward(g);
          return std::vector<Tensor>{y, q.grad(), k.grad(), v.grad()};
        };
        const auto grouped = run(true), repeated = run(false);
        const char* names[] = {"y", "dq", "dk", "dv"};
        for (size_t t = 0; t < 4; ++t)
          expect_close(grouped[t], repeated[t],
                       std::string(names[t]) + " batches " + std::to_string(batches) + " kv heads " +
                           std::to_string(kv_heads) + " variant " + std::to_string(variant),
                       1e-12);
      }
    }
  }
}

// Each kv head's dK and dV are summed by one task in a fixed order: the same call gives the same bits.
TEST(Attention, GroupedQueryBackwardIsDeterministic) {
  Generator gen(4);
  const Tensor q0 = randn({8, 8, 70, 16}, {}, &gen), k0 = randn({8, 2, 140, 16}, {}, &gen),
               v0 = randn({8, 2, 140, 16}, {}, &gen);
  const auto grads = [&] {
    Tensor q = q0.clone().requires_grad_(), k = k0.clone().requires_grad_(), v = v0.clone().requires_grad_();
    sum(F::scaled_dot_product_attention(q, k, v, {.is_causal = true, .enable_gqa = true})).backward();
    return std::vector<std::vector<float>>{q.grad().to_vector<float>(), k.grad().to_vector<float>(),
                                           v.grad().to_vector<float>()};
  };
  const auto first = grads();
  for (int run = 0; run < 3; ++run) EXPECT_EQ(grads(), first) << "run " << run;
}

// Peak bytes of the CPU allocator for one forward + backward at sequence length T (E = 64, one head, f32).
size_t peak_bytes(int64_t T) {
  Generator gen(1);
  Tensor q = randn({1, 1, T, 64}, {}, &gen).requires_grad_(), k = randn({1, 1, T, 64}, {}, &gen).requires_grad_(),
         v = randn({1, 1, T, 64}, {}, &gen).requires_grad_();
  backend(kCPU).reset_peak_memory_stats(0);
  const size_t base = memory_stats(kCPU).allocated;
  const Tensor y = F::scaled_dot_product_attention(q, k, v, {.is_causal = true});
  sum(y).backward();
  return memory_stats(kCPU).peak_allocated - base;
}

TEST(Attention, MemoryIsLinearInTheSequenceLength) {
  const size_t small = peak_bytes(1024), large = peak_bytes(4096);
  const double ratio = static_cast<double>(large) / static_cast<double>(small);
  EXPECT_LT(ratio, 8.0) << "peak " << small << " bytes at T = 1024, " << large << " at T = 4096 (quadratic: 16x)";
  EXPECT_GT(ratio, 2.0) << "the measurement does not see the operands";
  // One f32 [4096, 4096] score matrix alone is 64 MiB.
  EXPECT_LT(large, size_t{8} << 20) << "peak " << large << " bytes at T = 4096";
}

TEST(Attention, Errors) {
  const Tensor q = randn({2, 3, 4}), k = randn({2, 5, 4}), v = randn({2, 5, 6});
  const auto throws = [](const std::function<void()>& f, const std::string& part) {
    EXPECT_TRUE(test::throws_error(f, {part}));
  };
  throws([&] { F::scaled_dot_product_attention(q, k, v, {.attn_mask = ones({3, 5}), .is_causal = true}); },
         "attn_mask and is_causal are both set");
  throws([&] { F::scaled_dot_product_attention(q, randn({2, 5, 3}), v); }, "key's last dim must equal");
  throws([&] { F::scaled_dot_product_attention(q, k, randn({2, 4, 6})); }, "must have S = 5 rows");
  throws([&] { F::scaled_dot_product_attention(randn({2, 2, 3, 4}), randn({3, 2, 5, 4}), randn({3, 2, 5, 6})); },
         "same leading dims");
  // Heads (dim -3) that differ: grouped-query attention, only with enable_gqa.
  throws([&] { F::scaled_dot_product_attention(randn({4, 3, 4}), randn({2, 5, 4}), randn({2, 5, 6})); },
         "scaled_dot_product_attention: query has 4 heads (dim -3) but key and value have 2; set enable_gqa = true");
  throws([&] { F::scaled_dot_product_attention(randn({4, 3, 4}), randn({3, 5, 4}), randn({3, 5, 6}), {.enable_gqa = true}); },
         "enable_gqa: query's 4 heads (dim -3) must be a multiple of key and value's 3");
  throws([&] { F::scaled_dot_product_attention(randn({4, 3, 4}), randn({2, 5, 4}), randn({1, 5, 6}), {.enable_gqa = true}); },
         "key and value must have the same number of heads (dim -3)");
  throws([&] { F::scaled_dot_product_attention(q, k, v, {.attn_mask = ones({3, 4})}); }, "not broadcastable");
  throws([&] { F::scaled_dot_product_attention(q, k, v, {.attn_mask = ones({3, 5}, {.dtype = DType::f64})}); },
         "attn_mask must be bool or query's dtype");
  throws([&] { F::scaled_dot_product_attention(q, k, v, {.dropout_p = 1.5}); }, "dropout_p must be in [0, 1]");
  throws([&] { F::scaled_dot_product_attention(q, k.to(DType::f64), v); }, "one floating dtype");
  throws([&] { F::scaled_dot_product_attention(q, k, v, {.attn_mask = zeros({3, 5}).requires_grad_()}); },
         "attn_mask requires grad");
}

}  // namespace
