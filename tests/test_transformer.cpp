// Transformer layers (nn/transformer.h) against PyTorch 1.13's own (tests/data/transformer_golden.safetensors,
// written by tools/make_transformer_golden.py): MultiheadAttention, TransformerEncoderLayer and the GPT twin of
// tools/ember_gpt.py, forward and gradients of every parameter and input, f32 and f64. Also: gradcheck of the
// attention and the encoder layer, position embeddings, weight tying in nn::Module, GPT's incremental decode
// against its forward, loading/saving PyTorch's GPT file, the registry's sequence layers, and CPU-vs-CUDA
// parity of the GPT (skipped without a GPU).
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "autograd/gradcheck.h"
#include "cuda_parity.h"
#include "test_helpers.h"

using namespace ember;
namespace F = ember::nn::functional;

namespace {

constexpr char kFile[] = "transformer_golden.safetensors";

bool has(const std::string& name) { return test::golden_file(kFile).find(name) != nullptr; }
Tensor get(const std::string& name) { return test::golden(kFile, name); }

DType dtype_of(const std::string& tag) { return tag == "f64" ? DType::f64 : DType::f32; }

// f64: PyTorch and Ember differ in summation order only; f32 likewise, over a few layers.
double rtol(DType d) { return d == DType::f64 ? 1e-9 : 2e-4; }
double atol(DType d) { return d == DType::f64 ? 1e-11 : 2e-5; }

void expect_matches(const Tensor& actual, const Tensor& expected, const std::string& what) {
  ASSERT_TRUE(actual.defined()) << what << " is undefined";
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  const double m = test::golden_mismatch(actual, expected, rtol(expected.dtype()), atol(expected.dtype()));
  EXPECT_LE(m, 1.0) << what << ": " << m << "x the allowed difference";
}

// The module's state from the golden prefix's p.* entries, loaded strictly (so the key sets must agree).
void load_golden_state(nn::Module& m, const std::string& prefix) {
  NamedTensors state;
  const std::string p = prefix + ".p.";
  for (const auto& [name, t] : test::golden_file(kFile).tensors)
    if (name.rfind(p, 0) == 0) state.emplace_back(name.substr(p.size()), t);
  ASSERT_FALSE(state.empty()) << "no parameters under " << p;
  m.load_state_dict(state, /*strict=*/true);
}

// Every parameter's gradient against the golden g.* entries.
void expect_param_grads(const nn::Module& m, const std::string& prefix) {
  for (const auto& [name, p] : m.named_parameters()) expect_matches(p.grad(), get(prefix + ".g." + name), prefix + " grad " + name);
}

Tensor input(const std::string& name) { return get(name).clone().requires_grad_(); }

// --- MultiheadAttention ---------------------------------------------------------------------------------

struct MhaCase {
  std::string name;
  bool batch_first, bias, self, average;
};
void PrintTo(const MhaCase& c, std::ostream* os) { *os << c.name; }

class MhaGolden : public ::testing::TestWithParam<std::tuple<MhaCase, std::string>> {};

TEST_P(MhaGolden, MatchesPyTorch) {
  const auto& [c, tag] = GetParam();
  const std::string pre = c.name + "." + tag;
  for (const bool need_weights : {true, false}) {
    SCOPED_TRACE(need_weights ? "need_weights" : "fused");
    nn::MultiheadAttention m({.embed_dim = 8, .num_heads = 2, .bias = c.bias, .batch_first = c.batch_first});
    m.to(dtype_of(tag));
    load_golden_state(m, pre);
    m.eval();
    Tensor q, k, v;
    if (c.self) q = k = v = input(pre + ".x");
    else q = input(pre + ".q"), k = input(pre + ".k"), v = input(pre + ".v");
    const auto r = m.forward(q, k, v,
                             {.key_padding_mask = has(pre + ".kpm") ? get(pre + ".kpm") : Tensor(),
                              .need_weights = need_weights,
                              .attn_mask = has(pre + ".attn_mask") ? get(pre + ".attn_mask") : Tensor(),
                              .average_attn_weights = c.average});
    expect_matches(r.output, get(pre + ".y"), pre + " output");
    if (need_weights) expect_matches(r.weights, get(pre + ".w"), pre + " weights");
    else EXPECT_FALSE(r.weights.defined());
    sum(r.output * get(pre + ".r")).backward();
    expect_param_grads(m, pre);
    if (c.self) {
      expect_matches(q.grad(), get(pre + ".gx"), pre + " grad x");
    } else {
      expect_matches(q.grad(), get(pre + ".gq"), pre + " grad q");
      expect_matches(k.grad(), get(pre + ".gk"), pre + " grad k");
      expect_matches(v.grad(), get(pre + ".gv"), pre + " grad v");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MhaGolden,
    ::testing::Combine(::testing::Values(MhaCase{"mha_self_bf", true, true, true, true},
                                         MhaCase{"mha_cross_seq", false, true, false, false},
                                         MhaCase{"mha_bool_causal", true, true, true, true},
                                         MhaCase{"mha_unbatched", false, true, false, true},
                                         MhaCase{"mha_mask3d", true, true, false, false},
                                         MhaCase{"mha_nobias_float_kpm", true, false, true, true}),
                       ::testing::Values("f64", "f32")),
    [](const auto& info) { return std::get<0>(info.param).name + "_" + std::get<1>(info.param); });

TEST(MultiheadAttention, IsCausalEqualsTheCausalMask) {
  Generator gen(3);
  nn::MultiheadAttention m({.embed_dim = 8, .num_heads = 4, .batch_first = true}, &gen);
  m.to(DType::f64);
  const Tensor x = randn({2, 6, 8}, {.dtype = DType::f64}, &gen);
  const Tensor blocked = gt(arange(6).view({1, 6}), arange(6).view({6, 1}));
  const Tensor want = m.forward(x, x, x, {.need_weights = false, .attn_mask = blocked}).output;
  for (const bool need_weights : {false, true}) {
    const auto got = m.forward(x, x, x, {.need_weights = need_weights, .is_causal = true});
    EXPECT_LE(test::golden_mismatch(got.output, want, 1e-12, 1e-13), 1.0);
  }
  // With a padding mask too (both apply).
  const Tensor kpm = from_vector<double>({0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}, {2, 6}).to(DType::b8);
  const auto both = m.forward(x, x, x, {.key_padding_mask = kpm, .need_weights = false, .is_causal = true});
  const auto expl = m.forward(x, x, x, {.key_padding_mask = kpm, .need_weights = true, .attn_mask = blocked});
  EXPECT_LE(test::golden_mismatch(both.output, expl.output, 1e-12, 1e-13), 1.0);
}

TEST(MultiheadAttention, NamesInitAndErrors) {
  nn::MultiheadAttention m(16, 4);
  std::vector<std::string> names;
  for (const auto& [n, t] : m.state_dict()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
  EXPECT_EQ(m.in_proj_weight.shape(), Shape({48, 16}));
  EXPECT_EQ(sum(abs(m.in_proj_bias)).item<float>(), 0.0f);
  EXPECT_EQ(sum(abs(m.out_proj->bias)).item<float>(), 0.0f);
  // xavier_uniform over [3E, E]: bound sqrt(6 / (E + 3E))
  const double bound = std::sqrt(6.0 / 64.0);
  EXPECT_LE(max(abs(m.in_proj_weight)).item<float>(), bound + 1e-6);
  EXPECT_GT(max(abs(m.in_proj_weight)).item<float>(), 0.8 * bound);
  EXPECT_TRUE(test::throws_error([] { nn::MultiheadAttention(10, 4); }, {"not divisible by num_heads 4"}));
  EXPECT_TRUE(test::throws_error([&] { m.forward(randn({2, 3, 8})); }, {"must end in embed_dim 16"}));
  EXPECT_TRUE(test::throws_error(
      [&] {
        const Tensor x = randn({3, 2, 16});
        m.forward(x, x, x, {.attn_mask = zeros({3, 4})});
      },
      {"attn_mask", "[L, S] = [3, 3]"}));
}

TEST(MultiheadAttention, DropoutOnlyInTraining) {
  Generator gen(5);
  nn::MultiheadAttention m({.embed_dim = 8, .num_heads = 2, .dropout = 0.5, .batch_first = true}, &gen);
  const Tensor x = randn({2, 5, 8}, {}, &gen);
  m.eval();
  const Tensor a = m.forward(x), b = m.forward(x);
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
  m.train();
  const Tensor c = m.forward(x);
  EXPECT_NE(a.to_vector<float>(), c.to_vector<float>());
}

TEST(MultiheadAttention, Gradcheck) {
  Generator gen(7);
  auto m = std::make_shared<nn::MultiheadAttention>(
      nn::MultiheadAttentionOptions{.embed_dim = 4, .num_heads = 2, .batch_first = true}, &gen);
  m->to(DType::f64);
  m->eval();
  const Tensor kpm = from_vector<double>({0, 0, 1, 0, 0, 0}, {2, 3}).to(DType::b8);
  const Tensor mask = randn({2, 3}, {.dtype = DType::f64}, &gen);
  for (const bool need_weights : {false, true}) {
    const auto r = autograd::gradcheck(
        [&](const std::vector<Tensor>& in) {
          const auto o = m->forward(in[0], in[1], in[2], {.key_padding_mask = kpm, .need_weights = need_weights, .attn_mask = mask});
          return need_weights ? o.output + sum(o.weights * 0.7) : o.output;
        },
        {randn({2, 2, 4}, {.dtype = DType::f64}, &gen).requires_grad_(),
         randn({2, 3, 4}, {.dtype = DType::f64}, &gen).requires_grad_(),
         randn({2, 3, 4}, {.dtype = DType::f64}, &gen).requires_grad_()});
    EXPECT_TRUE(r.ok) << r.message;
  }
}

// Grouped-query attention: a module of 4 query heads on 2 kv heads computes what a plain 4-head module computes
// whose k and v projections repeat each kv head's rows for its 2 query heads, on both the fused path and the
// materialised (need_weights) one, self- and cross-attention, with masks; and it gradchecks.
TEST(MultiheadAttention, GroupedQueryEqualsRepeatedKvProjections) {
  Generator gen(11);
  for (const int64_t kv_heads : {2, 1}) {
    nn::MultiheadAttention gqa({.embed_dim = 8, .num_heads = 4, .batch_first = true, .num_kv_heads = kv_heads}, &gen);
    nn::MultiheadAttention full({.embed_dim = 8, .num_heads = 4, .batch_first = true}, &gen);
    gqa.to(DType::f64);
    full.to(DType::f64);
    EXPECT_EQ(gqa.in_proj_weight.shape(), Shape({8 + 2 * kv_heads * 2, 8}));
    EXPECT_EQ(gqa.in_proj_bias.shape(), Shape({8 + 2 * kv_heads * 2}));
    std::vector<std::string> names;
    for (const auto& [n, t] : gqa.state_dict()) names.push_back(n);
    EXPECT_EQ(names, (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
    nn::init::normal_(gqa.in_proj_bias, 0.0, 0.5, &gen);
    // full's rows: q as gqa's; k and v head h = gqa's kv head h / (4 / kv_heads) (Dh = 2 rows each).
    {
      NoGradGuard no_grad;
      full.in_proj_weight.narrow(0, 0, 8).copy_(gqa.in_proj_weight.narrow(0, 0, 8));
      full.in_proj_bias.narrow(0, 0, 8).copy_(gqa.in_proj_bias.narrow(0, 0, 8));
      for (int64_t part = 0; part < 2; ++part)
        for (int64_t h = 0; h < 4; ++h) {
          const int64_t from = 8 + part * kv_heads * 2 + h / (4 / kv_heads) * 2, to = 8 + part * 8 + h * 2;
          full.in_proj_weight.narrow(0, to, 2).copy_(gqa.in_proj_weight.narrow(0, from, 2));
          full.in_proj_bias.narrow(0, to, 2).copy_(gqa.in_proj_bias.narrow(0, from, 2));
        }
      full.out_proj->weight.copy_(gqa.out_proj->weight);
      full.out_proj->bias.copy_(gqa.out_proj->bias);
    }
    const Tensor x = randn({2, 5, 8}, {.dtype = DType::f64}, &gen), mem = randn({2, 7, 8}, {.dtype = DType::f64}, &gen);
    const Tensor kpm = from_vector<double>({0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1}, {2, 7}).to(DType::b8);
    for (const bool need_weights : {false, true}) {
      const auto a = gqa.forward(x, x, x, {.need_weights = need_weights, .is_causal = true});
      const auto b = full.forward(x, x, x, {.need_weights = need_weights, .is_causal = true});
      EXPECT_LE(test::golden_mismatch(a.output, b.output, 1e-12, 1e-13), 1.0) << kv_heads << " kv heads, self";
      const auto c = gqa.forward(x, mem, mem, {.key_padding_mask = kpm, .need_weights = need_weights});
      const auto d = full.forward(x, mem, mem, {.key_padding_mask = kpm, .need_weights = need_weights});
      EXPECT_LE(test::golden_mismatch(c.output, d.output, 1e-12, 1e-13), 1.0) << kv_heads << " kv heads, cross";
      if (need_weights) EXPECT_LE(test::golden_mismatch(c.weights, d.weights, 1e-12, 1e-13), 1.0);
    }
    gqa.eval();
    const auto r = autograd::gradcheck(
        [&](const std::vector<Tensor>& in) {
          return gqa.forward(in[0], in[1], in[1], {.need_weights = false, .is_causal = false}).output;
        },
        {randn({2, 3, 8}, {.dtype = DType::f64}, &gen).requires_grad_(),
         randn({2, 4, 8}, {.dtype = DType::f64}, &gen).requires_grad_()});
    EXPECT_TRUE(r.ok) << r.message;
  }
  EXPECT_TRUE(test::throws_error([] { nn::MultiheadAttention({.embed_dim = 8, .num_heads = 4, .num_kv_heads = 3}); },
                                 {"MultiheadAttention: num_kv_heads 3 must divide num_heads 4"}));
  EXPECT_TRUE(test::throws_error([] { nn::GPT({.vocab_size = 5, .dim = 8, .heads = 4, .kv_heads = 8}); },
                                 {"GPT: kv_heads 8 must divide heads 4"}));
}

// --- TransformerEncoderLayer ----------------------------------------------------------------------------

struct EncCase {
  std::string name;
  bool norm_first;
  std::string activation;
  bool batch_first;
};
void PrintTo(const EncCase& c, std::ostream* os) { *os << c.name; }

class EncoderGolden : public ::testing::TestWithParam<std::tuple<EncCase, std::string>> {};

TEST_P(EncoderGolden, MatchesPyTorch) {
  const auto& [c, tag] = GetParam();
  const std::string pre = c.name + "." + tag;
  nn::TransformerEncoderLayer layer({.d_model = 8,
                                     .nhead = 2,
                                     .dim_feedforward = 16,
                                     .dropout = 0.0,
                                     .activation = c.activation,
                                     .batch_first = c.batch_first,
                                     .norm_first = c.norm_first});
  layer.to(dtype_of(tag));
  load_golden_state(layer, pre);
  layer.eval();
  const Tensor x = input(pre + ".x");
  const Tensor y = layer.forward(x, {.src_mask = has(pre + ".attn_mask") ? get(pre + ".attn_mask") : Tensor(),
                                     .src_key_padding_mask = has(pre + ".kpm") ? get(pre + ".kpm") : Tensor()});
  expect_matches(y, get(pre + ".y"), pre + " output");
  sum(y * get(pre + ".r")).backward();
  expect_param_grads(layer, pre);
  expect_matches(x.grad(), get(pre + ".gx"), pre + " grad x");
  if (has(pre + ".attn_mask") && !has(pre + ".kpm")) {  // the causal mask as is_causal: the same values
    const Tensor z = layer.forward(x, {.is_causal = true});
    expect_matches(z, get(pre + ".y"), pre + " with is_causal");
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, EncoderGolden,
                         ::testing::Combine(::testing::Values(EncCase{"enc_post_relu", false, "relu", false},
                                                              EncCase{"enc_pre_gelu_causal", true, "gelu", true},
                                                              EncCase{"enc_post_gelu_causal", false, "gelu", true},
                                                              EncCase{"enc_pre_relu", true, "relu", false}),
                                            ::testing::Values("f64", "f32")),
                         [](const auto& info) { return std::get<0>(info.param).name + "_" + std::get<1>(info.param); });

TEST(TransformerEncoderLayer, NamesLikePyTorch) {
  nn::TransformerEncoderLayer layer({.d_model = 8, .nhead = 2, .dim_feedforward = 16});
  std::vector<std::string> names;
  for (const auto& [n, t] : layer.state_dict()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
                                             "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight",
                                             "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias"}));
  std::vector<std::string> children;
  for (const auto& [n, m] : layer.named_children()) children.push_back(n);
  EXPECT_EQ(children, (std::vector<std::string>{"self_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "dropout1",
                                                "dropout2"}));
  nn::TransformerEncoderLayer nobias({.d_model = 8, .nhead = 2, .dim_feedforward = 16, .bias = false});
  for (const auto& [n, t] : nobias.state_dict()) EXPECT_EQ(n.find("bias"), std::string::npos) << n;
  EXPECT_TRUE(test::throws_error([] { nn::TransformerEncoderLayer({.d_model = 8, .nhead = 2, .activation = "tanh"}); },
                                 {"activation must be relu or gelu", "tanh"}));
}

TEST(TransformerEncoderLayer, Gradcheck) {
  for (const bool norm_first : {false, true}) {
    Generator gen(11);
    auto layer = std::make_shared<nn::TransformerEncoderLayer>(
        nn::TransformerEncoderLayerOptions{.d_model = 4,
                                           .nhead = 2,
                                           .dim_feedforward = 6,
                                           .dropout = 0.0,
                                           .activation = norm_first ? "gelu" : "relu",
                                           .batch_first = true,
                                           .norm_first = norm_first},
        &gen);
    layer->to(DType::f64);
    const auto r = autograd::gradcheck(
        [&](const std::vector<Tensor>& in) { return layer->forward(in[0], {.is_causal = true}); },
        {randn({2, 3, 4}, {.dtype = DType::f64}, &gen).requires_grad_()});
    EXPECT_TRUE(r.ok) << (norm_first ? "pre-norm: " : "post-norm: ") << r.message;
  }
}

// --- position embeddings --------------------------------------------------------------------------------

TEST(PositionEmbedding, LearnedAddsRowsFromTheOffset) {
  nn::LearnedPositionalEmbedding pos(6, 3);
  EXPECT_EQ(pos.state_dict().size(), 1u);
  EXPECT_EQ(pos.weight.shape(), Shape({6, 3}));
  const Tensor x = randn({2, 4, 3});
  const Tensor y = pos.forward(x, 2);
  EXPECT_EQ(y.to_vector<float>(), (x + pos.weight.narrow(0, 2, 4)).to_vector<float>());
  EXPECT_TRUE(test::throws_error([&] { pos.forward(randn({1, 7, 3})); }, {"sequence of 7 tokens is longer than the context 6"}));
  EXPECT_TRUE(test::throws_error([&] { pos.forward(x, 3); }, {"sequence of 7 tokens", "3 earlier and 4 new", "context 6"}));
  sum(y).backward();  // rows 2..5 get the batch's count, the others nothing
  EXPECT_EQ(pos.weight.grad().to_vector<float>(),
            (std::vector<float>{0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}));
}

TEST(PositionEmbedding, SinusoidalTableIsANonPersistentBuffer) {
  nn::SinusoidalPositionalEncoding pos(10, 6);
  EXPECT_TRUE(pos.state_dict().empty());
  EXPECT_EQ(pos.buffers().size(), 1u);
  const auto pe = pos.pe.to_vector<float>();
  for (int p = 0; p < 10; ++p)
    for (int i = 0; i < 6; ++i) {
      const double angle = p / std::pow(10000.0, (i - i % 2) / 6.0);
      EXPECT_NEAR(pe[p * 6 + i], i % 2 == 0 ? std::sin(angle) : std::cos(angle), 1e-6) << p << ", " << i;
    }
  const Tensor x = randn({3, 6});
  EXPECT_EQ(pos.forward(x, 7).to_vector<float>(), (x + pos.pe.narrow(0, 7, 3)).to_vector<float>());
  EXPECT_TRUE(test::throws_error([&] { pos.forward(x, 8); }, {"sequence of 11 tokens", "context 10"}));
  pos.to(DType::f64);
  EXPECT_EQ(pos.pe.dtype(), DType::f64);
}

// --- weight tying ---------------------------------------------------------------------------------------

struct Holder : nn::Module {
  explicit Holder(const Tensor& w) { register_parameter("weight", w); }
};
struct TiedNet : nn::Module {
  TiedNet() {
    weight = randn({3, 4});
    bias = register_parameter("bias", zeros({4}));
    enc = register_module("enc", std::make_shared<Holder>(weight));
    dec = register_module("dec", std::make_shared<Holder>(weight));
  }
  Tensor forward(const Tensor& x) override { return matmul(matmul(x, weight) + bias, weight.t()); }
  Tensor weight, bias;
  std::shared_ptr<Holder> enc, dec;
};

std::vector<std::string> keys(const NamedTensors& t) {
  std::vector<std::string> out;
  for (const auto& [n, v] : t) out.push_back(n);
  return out;
}

TEST(WeightTying, ListedSavedAndUpdatedOnce) {
  TiedNet net;
  EXPECT_EQ(keys(net.named_parameters()), (std::vector<std::string>{"bias", "enc.weight"}));
  EXPECT_EQ(net.parameters().size(), 2u);
  EXPECT_EQ(net.parameter_count(), 16);
  EXPECT_EQ(keys(net.state_dict()), (std::vector<std::string>{"bias", "enc.weight"}));
  // One SGD step: the shared tensor moves once, by its whole (accumulated) gradient.
  const Tensor before = net.weight.clone();
  optim::SGD opt(net.parameters(), {.lr = 0.1});
  sum(net.forward(randn({2, 3}))).backward();
  const Tensor g = net.weight.grad().clone();
  opt.step();
  EXPECT_LE(test::golden_mismatch(net.weight, before - g * 0.1, 1e-6, 1e-7), 1.0);
  // Saved once; a file with both names (as PyTorch writes) or with the first only loads strictly.
  const std::string path = ::testing::TempDir() + "/tied.safetensors";
  save(net, path);
  EXPECT_EQ(keys(safetensors::load(path).tensors), (std::vector<std::string>{"bias", "enc.weight"}));
  TiedNet other;
  load(other, path, true);
  EXPECT_EQ(other.weight.to_vector<float>(), net.weight.to_vector<float>());
  EXPECT_EQ(other.dec->named_parameters()[0].second.to_vector<float>(), net.weight.to_vector<float>());
  const Tensor w2 = randn({3, 4});
  EXPECT_TRUE(other.load_state_dict({{"bias", zeros({4})}, {"enc.weight", w2}, {"dec.weight", w2}}, true).empty());
  EXPECT_EQ(other.weight.to_vector<float>(), w2.to_vector<float>());
  // The first name stays required; a wrongly shaped other name is an error.
  EXPECT_TRUE(test::throws_error([&] { other.load_state_dict({{"bias", zeros({4})}, {"dec.weight", w2}}, true); },
                                 {"missing keys: enc.weight"}));
  EXPECT_TRUE(test::throws_error(
      [&] { other.load_state_dict({{"bias", zeros({4})}, {"enc.weight", w2}, {"dec.weight", zeros({2})}}, true); },
      {"dec.weight (tied"}));
  // Moving converts the one tensor (once), which every name still shares.
  other.to(DType::f64);
  EXPECT_EQ(other.weight.dtype(), DType::f64);
  EXPECT_EQ(other.dec->named_parameters()[0].second.impl_ptr(), other.enc->named_parameters()[0].second.impl_ptr());
  EXPECT_EQ(other.weight.to_vector<double>(), w2.to(DType::f64).to_vector<double>());
  std::remove(path.c_str());
}

// --- GPT ------------------------------------------------------------------------------------------------

// The logits of tokens [B, 8] decoded with the cache: a prompt of 3, a chunk of 3 on the non-empty cache (the
// bottom-right causal mask), then one token at a time.
Tensor decode_in_parts(nn::GPT& gpt, const Tensor& tokens, nn::DecodeState& state) {
  std::vector<Tensor> parts;
  for (const auto& [start, len] : std::vector<std::pair<int64_t, int64_t>>{{0, 3}, {3, 3}, {6, 1}, {7, 1}})
    parts.push_back(gpt.decode(tokens.narrow(1, start, len), state));
  return cat(parts, 1);
}

nn::GPTOptions gpt_options(const std::string& name) {
  if (name == "gpt_a")
    return {.vocab_size = 11, .context = 8, .dim = 16, .layers = 2, .heads = 2, .mlp_ratio = 4, .dropout = 0.0,
            .position = "learned", .tie_weights = true, .bias = true};
  return {.vocab_size = 13, .context = 8, .dim = 12, .layers = 2, .heads = 3, .mlp_ratio = 2, .dropout = 0.0,
          .position = "sinusoidal", .tie_weights = false, .bias = false};
}

class GptGolden : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(GptGolden, MatchesTheTwin) {
  const auto& [name, tag] = GetParam();
  const std::string pre = name + "." + tag;
  nn::GPT gpt(gpt_options(name));
  gpt.to(dtype_of(tag));
  load_golden_state(gpt, pre);
  gpt.eval();
  const Tensor logits = gpt.forward(get(pre + ".tokens"));
  expect_matches(logits, get(pre + ".y"), pre + " logits");
  sum(logits * get(pre + ".r")).backward();
  expect_param_grads(gpt, pre);
}

INSTANTIATE_TEST_SUITE_P(Cases, GptGolden,
                         ::testing::Combine(::testing::Values("gpt_a", "gpt_b"), ::testing::Values("f64", "f32")),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

TEST(GPT, KeysAndInit) {
  nn::GPT tied({.vocab_size = 50, .context = 16, .dim = 32, .layers = 3, .heads = 4});
  const auto k = keys(tied.state_dict());
  EXPECT_EQ(k.front(), "tok_emb.weight");
  EXPECT_EQ(k[1], "pos_emb.weight");
  EXPECT_EQ(k.back(), "ln_f.bias");
  EXPECT_EQ(k.size(), 2u + 3 * 12 + 2);
  EXPECT_EQ(tied.state_dict()[2].first, "blocks.0.self_attn.in_proj_weight");
  const auto std_of = [](const Tensor& t) { return t.to(DType::f64).std().item<double>(); };
  EXPECT_NEAR(std_of(tied.tok_emb->weight), 0.02, 0.002);
  auto& b = *tied.blocks->at<nn::TransformerEncoderLayer>(1);
  EXPECT_NEAR(std_of(b.self_attn->in_proj_weight), 0.02, 0.002);
  EXPECT_NEAR(std_of(b.linear1->weight), 0.02, 0.002);
  EXPECT_NEAR(std_of(b.linear2->weight), 0.02 / std::sqrt(6.0), 0.001);
  EXPECT_NEAR(std_of(b.self_attn->out_proj->weight), 0.02 / std::sqrt(6.0), 0.002);
  EXPECT_EQ(sum(abs(b.linear2->bias)).item<float>(), 0.0f);
  EXPECT_EQ(b.options.dim_feedforward, 128);
  EXPECT_TRUE(b.options.norm_first && b.options.batch_first && b.options.activation == "gelu");
  nn::GPT untied({.vocab_size = 50, .context = 16, .dim = 32, .layers = 1, .heads = 4, .position = "sinusoidal",
                  .tie_weights = false});
  const auto u = keys(untied.state_dict());
  EXPECT_EQ(u.back(), "head.weight");
  EXPECT_EQ(std::count(u.begin(), u.end(), "pos_emb.weight"), 0);
  EXPECT_TRUE(test::throws_error([] { nn::GPT({.vocab_size = 5, .dim = 30, .heads = 4}); }, {"dim 30", "heads 4"}));
  EXPECT_TRUE(test::throws_error([] { nn::GPT({.vocab_size = 5, .position = "alibi"}); },
                                 {"learned, sinusoidal or rotary", "alibi"}));
  EXPECT_TRUE(test::throws_error([&] { tied.forward(zeros({1, 17}, {.dtype = DType::i64})); },
                                 {"sequence of 17 tokens is longer than the model's context 16"}));
}

// PyTorch's GPT file (tools/make_transformer_golden.py: the gpt_a twin's state_dict) loads strictly and is written
// back with the same keys, shapes and bytes.
TEST(GPT, LoadsAndSavesPyTorchsFile) {
  const std::string torch_file = std::string(EMBER_TEST_DATA_DIR) + "/gpt_torch.safetensors";
  nn::GPT gpt(gpt_options("gpt_a"));
  load(gpt, torch_file, /*strict=*/true);
  const std::string path = ::testing::TempDir() + "/gpt_roundtrip.safetensors";
  save(gpt, path);
  const auto a = safetensors::load(torch_file), b = safetensors::load(path);
  std::set<std::string> ka, kb;
  for (const auto& [n, t] : a.tensors) ka.insert(n);
  for (const auto& [n, t] : b.tensors) kb.insert(n);
  EXPECT_EQ(ka, kb);
  for (const auto& [n, t] : a.tensors) {
    const Tensor* other = b.find(n);
    ASSERT_NE(other, nullptr) << n;
    EXPECT_EQ(other->shape(), t.shape()) << n;
    EXPECT_EQ(parity::bytes_of(*other), parity::bytes_of(t)) << n;
  }
  std::remove(path.c_str());
}

// Decoding a prompt, then a chunk of several tokens on a non-empty cache (the bottom-right causal mask), then one
// token at a time gives the logits of a forward over the whole sequence.
TEST(GPT, DecodeEqualsForward) {
  for (const std::string name : {"gpt_a", "gpt_b"}) {
    Generator gen(17);
    nn::GPTOptions o = gpt_options(name);
    nn::GPT gpt(o, &gen);
    gpt.to(DType::f64);
    gpt.eval();
    const Tensor tokens = randint(0, o.vocab_size, {2, 8}, {.dtype = DType::i64}, &gen);
    const Tensor full = gpt.forward(tokens);
    auto state = gpt.start_decoding(2);
    auto* s = dynamic_cast<nn::GPTDecodeState*>(state.get());
    ASSERT_NE(s, nullptr);
    const void* cache = s->keys[0].data_ptr();
    const Tensor decoded = decode_in_parts(gpt, tokens, *state);
    EXPECT_EQ(state->length, 8);
    EXPECT_EQ(s->keys[0].data_ptr(), cache) << "the cache was reallocated";
    EXPECT_EQ(s->keys[0].shape(), Shape({2, o.heads, 8, o.dim / o.heads}));
    EXPECT_LE(test::golden_mismatch(decoded, full, 1e-11, 1e-12), 1.0) << name;
    EXPECT_FALSE(decoded.requires_grad());
    EXPECT_TRUE(test::throws_error([&] { gpt.decode(tokens.narrow(1, 0, 1), *state); },
                                   {"holds 8 tokens", "exceed the model's context 8", "start a new state"}));
    EXPECT_TRUE(test::throws_error([&] { gpt.decode(tokens.narrow(0, 0, 1), *gpt.start_decoding(2)); }, {"the state's batch"}));
  }
}

// Grouped-query (2 kv heads) and multi-query (1) GPTs: the cache holds only the kv heads, decoding equals the
// forward, and the state_dict has the names of the plain model (in_proj with fewer rows).
TEST(GPT, GroupedQueryDecodeEqualsForward) {
  for (const int64_t kv_heads : {2, 1}) {
    Generator gen(19);
    const nn::GPTOptions o{.vocab_size = 11, .context = 8, .dim = 16, .layers = 2, .heads = 4, .dropout = 0.0,
                           .kv_heads = kv_heads};
    nn::GPT gpt(o, &gen);
    nn::GPTOptions plain_options = o;
    plain_options.kv_heads = 0;
    const nn::GPT plain(plain_options, &gen);
    std::vector<std::string> names, plain_names;
    for (const auto& [n, t] : gpt.state_dict()) names.push_back(n);
    for (const auto& [n, t] : plain.state_dict()) plain_names.push_back(n);
    EXPECT_EQ(names, plain_names);
    EXPECT_EQ(gpt.blocks->at<nn::TransformerEncoderLayer>(0)->self_attn->in_proj_weight.shape(), Shape({16 + 2 * kv_heads * 4, 16}));
    gpt.to(DType::f64);
    gpt.eval();
    const Tensor tokens = randint(0, o.vocab_size, {2, 8}, {.dtype = DType::i64}, &gen);
    const Tensor full = gpt.forward(tokens);
    auto state = gpt.start_decoding(2);
    auto* s = dynamic_cast<nn::GPTDecodeState*>(state.get());
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->keys[0].shape(), Shape({2, kv_heads, 8, 4}));
    EXPECT_EQ(s->values[1].shape(), Shape({2, kv_heads, 8, 4}));
    const Tensor decoded = decode_in_parts(gpt, tokens, *state);
    EXPECT_LE(test::golden_mismatch(decoded, full, 1e-11, 1e-12), 1.0) << kv_heads << " kv heads";
    EXPECT_NE(gpt.describe().find("kv_heads=" + std::to_string(kv_heads)), std::string::npos) << gpt.describe();
  }
}

// Rotary position embeddings in the attention: the module is apply_rotary on q and k of the plain one's
// projections; a rotary GPT (with grouped-query attention too) decodes with the cache as its forward, the cache
// holding keys rotated at their own positions; it has no pos_emb.
TEST(GPT, RotaryAttentionAndDecode) {
  Generator gen(29);
  nn::MultiheadAttention rope({.embed_dim = 8, .num_heads = 2, .batch_first = true, .num_kv_heads = 1, .rotary = true},
                              &gen);
  rope.to(DType::f64);
  nn::init::normal_(rope.in_proj_bias, 0.0, 0.5, &gen);
  const Tensor x = randn({2, 5, 8}, {.dtype = DType::f64}, &gen);
  const Tensor qkv = F::linear(x, rope.in_proj_weight, rope.in_proj_bias);
  const auto heads = [&](int64_t start, int64_t n) {
    return qkv.narrow(-1, start, n * 4).reshape({2, 5, n, 4}).transpose(1, 2);
  };
  const Tensor attn = F::scaled_dot_product_attention(F::apply_rotary(heads(0, 2)), F::apply_rotary(heads(8, 1)),
                                                      heads(12, 1), {.is_causal = true, .enable_gqa = true});
  const Tensor want = rope.out_proj->forward(attn.transpose(1, 2).reshape({2, 5, 8}));
  for (const bool need_weights : {false, true})
    EXPECT_LE(test::golden_mismatch(rope.forward(x, x, x, {.need_weights = need_weights, .is_causal = true}).output,
                                    want, 1e-12, 1e-13),
              1.0);
  EXPECT_NE(rope.describe().find("rotary=True"), std::string::npos);
  EXPECT_TRUE(test::throws_error([] { nn::MultiheadAttention({.embed_dim = 6, .num_heads = 2, .rotary = true}); },
                                 {"rotary needs an even head dim, got 3"}));

  const nn::GPTOptions o{.vocab_size = 11, .context = 8, .dim = 16, .layers = 2, .heads = 4, .dropout = 0.0,
                         .position = "rotary", .kv_heads = 2};
  nn::GPT gpt(o, &gen);
  EXPECT_EQ(gpt.pos_emb, nullptr);
  for (const auto& [n, t] : gpt.state_dict()) EXPECT_EQ(n.find("pos_emb"), std::string::npos) << n;
  gpt.to(DType::f64);
  gpt.eval();
  const Tensor tokens = randint(0, o.vocab_size, {2, 8}, {.dtype = DType::i64}, &gen);
  const Tensor full = gpt.forward(tokens);
  auto state = gpt.start_decoding(2);
  const Tensor decoded = decode_in_parts(gpt, tokens, *state);
  EXPECT_LE(test::golden_mismatch(decoded, full, 1e-11, 1e-12), 1.0);
  // The positions are seen: without them attention ignores the order of the keys, so swapping tokens 0 and 1
  // would leave the logits of position 2 as they are.
  const Tensor ab = from_vector<int64_t>({3, 5, 7}, {1, 3}), ba = from_vector<int64_t>({5, 3, 7}, {1, 3});
  EXPECT_GT(max(abs(gpt.forward(ab).select(1, 2) - gpt.forward(ba).select(1, 2))).item<double>(), 1e-6);
}

TEST(GPT, TrainsOnARepeatingSequence) {
  Generator gen(23);
  nn::GPT gpt({.vocab_size = 5, .context = 8, .dim = 16, .layers = 1, .heads = 2, .dropout = 0.0}, &gen);
  optim::Adam opt(gpt.parameters(), {.lr = 1e-2});
  const Tensor seq = from_vector<int64_t>({0, 1, 2, 3, 4, 0, 1, 2, 3}, {1, 9});
  const Tensor x = seq.narrow(1, 0, 8), y = seq.narrow(1, 1, 8);
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    opt.zero_grad();
    const Tensor loss = F::cross_entropy(gpt.forward(x).reshape({8, 5}), y.reshape({8}));
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<float>();
  }
  EXPECT_GT(first, 1.3);
  EXPECT_LT(last, 0.1);
}

// --- registry ---------------------------------------------------------------------------------------------

nn::LayerSpec spec(const std::string& type, std::vector<std::pair<std::string, nn::SpecValue>> args = {}) {
  return {type, std::move(args), "model[" + type + "]"};
}

TEST(Registry, BlockByBlockGpt) {
  const nn::ModelInput in{.sample_shape = {8}, .dtype = DType::i64, .vocab_size = 11};
  const auto model = nn::build_model({spec("embedding", {{"embedding_dim", int64_t{16}}}),
                                      spec("position_embedding", {{"kind", std::string("learned")}}),
                                      spec("transformer_block", {{"heads", int64_t{2}}, {"dropout", 0.0}}),
                                      spec("transformer_block", {{"heads", int64_t{4}}, {"dim_feedforward", int64_t{24}}}),
                                      spec("layer_norm"), spec("lm_head")},
                                     in);
  model->eval();
  const Tensor tokens = randint(0, 11, {2, 8});
  const Tensor y = model->forward(tokens);
  EXPECT_EQ(y.shape(), Shape({2, 8, 11}));
  const auto k = keys(model->state_dict());
  EXPECT_EQ(k[1], "1.weight");  // position_embedding's [T, D] table
  EXPECT_EQ(model->state_dict()[1].second.shape(), Shape({8, 16}));
  EXPECT_EQ(k[2], "2.self_attn.in_proj_weight");
  EXPECT_EQ(k.back(), "5.weight");  // lm_head: no bias by default
  // Causal: changing the last token leaves the earlier positions' logits as they were.
  Tensor changed = tokens.clone();
  changed.narrow(1, 7, 1).copy_(full({2, 1}, 3, {.dtype = DType::i64}));
  const Tensor y2 = model->forward(changed);
  EXPECT_EQ(y.narrow(1, 0, 7).to_vector<float>(), y2.narrow(1, 0, 7).to_vector<float>());
  // Sinusoidal: no parameters.
  const auto sin = nn::build_model({spec("embedding", {{"embedding_dim", int64_t{16}}}),
                                    spec("position_embedding", {{"kind", std::string("sinusoidal")}})},
                                   in);
  EXPECT_EQ(sin->state_dict().size(), 1u);
  EXPECT_TRUE(test::throws_error([&] { nn::build_model({spec("embedding", {{"embedding_dim", int64_t{16}}}),
                                                        spec("transformer_block", {{"heads", int64_t{3}}})}, in); },
                                 {"model[transformer_block]", "'heads' (3) must be positive and divide the input's dim 16"}));
  EXPECT_TRUE(test::throws_error([&] { nn::build_model({spec("position_embedding")}, in); },
                                 {"position_embedding needs a sequence [T, D]", "[8]"}));
  EXPECT_TRUE(test::throws_error([&] { nn::build_model({spec("lm_head")}, {.sample_shape = {8, 4}}); }, {"needs a vocabulary size"}));
}

TEST(Registry, WholeGpt) {
  const nn::ModelInput in{.sample_shape = {8}, .dtype = DType::i64, .vocab_size = 11};
  const auto model = nn::build_model({spec("gpt", {{"layers", int64_t{2}}, {"heads", int64_t{2}}, {"dim", int64_t{16}},
                                                   {"tie_weights", false}, {"position", std::string("sinusoidal")}})},
                                     in);
  auto gpt = std::dynamic_pointer_cast<nn::GPT>(model);
  ASSERT_NE(gpt, nullptr);
  EXPECT_EQ(gpt->max_context(), 8);
  EXPECT_EQ(gpt->vocab_size(), 11);
  EXPECT_EQ(model->state_dict().front().first, "tok_emb.weight");
  EXPECT_EQ(model->state_dict().back().first, "head.weight");
  EXPECT_EQ(model->forward(randint(0, 11, {3, 8})).shape(), Shape({3, 8, 11}));
  EXPECT_TRUE(test::throws_error([&] { nn::build_model({spec("gpt", {{"context", int64_t{16}}})}, in); },
                                 {"'context' (16) must equal the data's context", "8 tokens", "data.context"}));
  EXPECT_TRUE(test::throws_error([&] { nn::build_model({spec("gpt", {{"dim", int64_t{10}}, {"heads", int64_t{4}}})}, in); },
                                 {"model[gpt]", "not divisible by heads 4"}));
  EXPECT_TRUE(test::throws_error([&] { nn::build_model({spec("gpt")}, {.sample_shape = {8}, .dtype = DType::i64}); },
                                 {"needs a vocabulary size"}));

  // A Llama-style attention from YAML: grouped-query (2 kv heads for 4 heads) with rotary positions.
  const auto llama = std::dynamic_pointer_cast<nn::GPT>(
      nn::build_model({spec("gpt", {{"layers", int64_t{1}}, {"heads", int64_t{4}}, {"dim", int64_t{16}},
                                    {"kv_heads", int64_t{2}}, {"position", std::string("rotary")}})},
                      in));
  ASSERT_NE(llama, nullptr);
  EXPECT_EQ(llama->options.kv_heads, 2);
  EXPECT_EQ(llama->pos_emb, nullptr);
  EXPECT_EQ(llama->blocks->at<nn::TransformerEncoderLayer>(0)->self_attn->in_proj_weight.shape(), Shape({16 + 2 * 2 * 4, 16}));
  EXPECT_EQ(llama->forward(randint(0, 11, {2, 8})).shape(), Shape({2, 8, 11}));
  EXPECT_TRUE(test::throws_error(
      [&] { nn::build_model({spec("gpt", {{"heads", int64_t{4}}, {"dim", int64_t{16}}, {"kv_heads", int64_t{3}}})}, in); },
      {"model[gpt]", "3"}));
}

// --- CUDA parity ------------------------------------------------------------------------------------------

using GptParity = parity::Cuda;

TEST_F(GptParity, ForwardBackwardAndDecode) {
  Generator gen(29);
  nn::GPT cpu({.vocab_size = 17, .context = 12, .dim = 16, .layers = 2, .heads = 2, .dropout = 0.0}, &gen);
  nn::GPT gpu({.vocab_size = 17, .context = 12, .dim = 16, .layers = 2, .heads = 2, .dropout = 0.0});
  gpu.load_state_dict(cpu.state_dict());
  gpu.to(parity::kGpu);
  const Tensor tokens = randint(0, 17, {3, 12}, {.dtype = DType::i64}, &gen);
  const Tensor r = randn({3, 12, 17}, {}, &gen);
  const Tensor yc = cpu.forward(tokens), yg = gpu.forward(tokens.to(parity::kGpu));
  const auto tol = parity::tolerance(parity::Kind::reduce, DType::f32);
  EXPECT_TRUE(parity::matches(yc, yg, tol));
  sum(yc * r).backward();
  sum(yg * r.to(parity::kGpu)).backward();
  const auto pc = cpu.named_parameters(), pg = gpu.named_parameters();
  ASSERT_EQ(pc.size(), pg.size());
  for (size_t i = 0; i < pc.size(); ++i) EXPECT_TRUE(parity::matches(pc[i].second.grad(), pg[i].second.grad(), tol)) << pc[i].first;
  gpu.eval();
  auto state = gpu.start_decoding(3);
  const Tensor first = gpu.decode(tokens.narrow(1, 0, 5).to(parity::kGpu), *state);
  const Tensor next = gpu.decode(tokens.narrow(1, 5, 1).to(parity::kGpu), *state);
  EXPECT_TRUE(parity::matches(yc.narrow(1, 0, 6), cat({first, next}, 1), tol));
}

}  // namespace
