// Recurrent layers (nn/rnn.h): nn::LSTM / GRU / LSTMCell / GRUCell against PyTorch 1.13
// (tests/data/rnn_golden.safetensors, written by tools/make_rnn_golden.py) in f32 and f64 — outputs, final
// states and the gradients with respect to the input, the initial states and every parameter, with the
// state_dict keys in PyTorch's order; the recurrent language model (decode = forward, keys, tying); the
// registry types; errors; a CPU-vs-CUDA check of a whole LSTM/GRU (skipped without a GPU). Gradcheck and
// CUDA parity of the fused cells themselves: tests/op_table.h.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include "cuda_parity.h"
#include "test_helpers.h"

#include <cmath>
#include <map>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

using namespace ember;

namespace {

const char* kFile = "rnn_golden.safetensors";

// Same shape and |a - b| <= atol + rtol·|b| everywhere (on the CPU, in double).
bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  if (a.shape() != b.shape()) return false;
  const auto x = a.to(kCPU).contiguous().to_vector<double>(), y = b.to(kCPU).contiguous().to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i)
    if (!(std::abs(x[i] - y[i]) <= atol + rtol * std::abs(y[i]))) return false;
  return true;
}
bool equal(const Tensor& a, const Tensor& b) { return allclose(a, b, 0, 0); }

void expect_close(const Tensor& actual, const Tensor& expected, const std::string& what, double tol) {
  ASSERT_TRUE(actual.defined()) << what << ": undefined";
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  const auto a = actual.contiguous().to_vector<double>(), e = expected.to_vector<double>();
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], e[i], tol * (1 + std::abs(e[i]))) << what << " element " << i;
}

// A golden case: which module tools/make_rnn_golden.py built (I = 3, H = 4) and what it was given.
struct GoldenCase {
  std::string name;
  std::string kind;  // lstm, gru, lstmcell, grucell
  int64_t layers = 2;
  bool batch_first = false, state = false, bidirectional = false, bias = true;
};
void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.name; }

std::vector<GoldenCase> golden_cases() {
  std::vector<GoldenCase> cases;
  for (const std::string kind : {"lstm", "gru"}) {
    for (int bf = 0; bf < 2; ++bf)
      for (int s = 0; s < 2; ++s)
        cases.push_back({kind + "_bf" + std::to_string(bf) + "_s" + std::to_string(s), kind, 2, bf == 1, s == 1});
    cases.push_back({kind + "_unbatched", kind, 2, false, true});
    cases.push_back({kind + "_bidir", kind, 2, false, true, true});
    cases.push_back({kind + "_nobias", kind, 1, false, true, false, false});
  }
  for (const std::string kind : {"lstmcell", "grucell"}) {
    cases.push_back({kind, kind, 1, false, true});
    cases.push_back({kind + "_unbatched", kind, 1, false, false});
  }
  return cases;
}

std::shared_ptr<nn::Module> make_module(const GoldenCase& c) {
  if (c.kind == "lstmcell") return std::make_shared<nn::LSTMCell>(3, 4);
  if (c.kind == "grucell") return std::make_shared<nn::GRUCell>(3, 4);
  const auto o = nn::RNNOptions(3, 4).num_layers(c.layers).batch_first(c.batch_first).bidirectional(c.bidirectional).bias(c.bias);
  if (c.kind == "lstm") return std::make_shared<nn::LSTM>(o);
  return std::make_shared<nn::GRU>(o);
}

class RnnGolden : public ::testing::TestWithParam<std::tuple<GoldenCase, std::string>> {};

TEST_P(RnnGolden, MatchesPyTorch) {
  const auto& [c, dt] = GetParam();
  const std::string prefix = c.name + "." + dt + ".";
  const auto get = [&](const std::string& n) { return test::golden(kFile, prefix + n); };
  const double tol = dt == "f64" ? 1e-10 : 2e-5;
  const DType dtype = dt == "f64" ? DType::f64 : DType::f32;

  auto module = make_module(c);
  module->to(dtype);
  // The state_dict keys are PyTorch's, in PyTorch's order (the script saves that list as metadata).
  std::string keys;
  for (const auto& [k, v] : module->state_dict()) keys += (keys.empty() ? "" : ",") + k;
  EXPECT_EQ(keys, test::golden_file(kFile).metadata.at(c.name + ".keys"));
  NamedTensors params;
  for (const auto& [k, v] : module->state_dict()) params.emplace_back(k, get("param." + k));
  module->load_state_dict(params, /*strict=*/true);

  Tensor x = get("x").clone().requires_grad_();
  Tensor h0 = c.state ? get("h0").clone().requires_grad_() : Tensor();
  const bool lstm = c.kind == "lstm" || c.kind == "lstmcell";
  Tensor c0 = c.state && lstm ? get("c0").clone().requires_grad_() : Tensor();
  Tensor out, h_n, c_n;
  if (auto* rnn = dynamic_cast<nn::RNNBase*>(module.get())) {
    const nn::RNNOutput r = rnn->forward_with_state(x, h0, c0);
    out = r.output;
    h_n = r.h_n;
    c_n = r.c_n;
  } else if (auto* cell = dynamic_cast<nn::LSTMCell*>(module.get())) {
    std::tie(h_n, c_n) = cell->forward_with_state(x, h0, c0);
  } else {
    h_n = dynamic_cast<nn::GRUCell&>(*module).forward_with_state(x, h0);
  }
  Tensor loss = (h_n * get("r_h")).sum();
  expect_close(h_n, get("h_n"), "h_n", tol);
  if (out.defined()) {
    expect_close(out, get("out"), "output", tol);
    loss = loss + (out * get("r_out")).sum();
  }
  if (lstm) {
    expect_close(c_n, get("c_n"), "c_n", tol);
    loss = loss + (c_n * get("r_c")).sum();
  } else {
    EXPECT_FALSE(c_n.defined());
  }
  loss.backward();
  expect_close(x.grad(), get("grad.x"), "grad x", tol);
  if (h0.defined()) expect_close(h0.grad(), get("grad.h0"), "grad h0", tol);
  if (c0.defined()) expect_close(c0.grad(), get("grad.c0"), "grad c0", tol);
  for (const auto& [k, p] : module->named_parameters()) expect_close(p.grad(), get("grad.param." + k), "grad " + k, tol);
}

INSTANTIATE_TEST_SUITE_P(Rnn, RnnGolden, ::testing::Combine(::testing::ValuesIn(golden_cases()), ::testing::Values("f32", "f64")),
                         [](const auto& info) { return std::get<0>(info.param).name + "_" + std::get<1>(info.param); });

// --- layers ----------------------------------------------------------------------------------------------------

TEST(Rnn, ShapesAndDefaults) {
  nn::LSTM lstm(nn::LSTMOptions(5, 7).num_layers(3).batch_first(true).bidirectional(true));
  const auto r = lstm.forward_with_state(randn({2, 6, 5}));
  EXPECT_EQ(r.output.shape(), Shape({2, 6, 14}));
  EXPECT_EQ(r.h_n.shape(), Shape({6, 2, 7}));
  EXPECT_EQ(r.c_n.shape(), Shape({6, 2, 7}));
  // Indexed layer·D + direction: layer 0 takes the input (5), the layers above both directions (2·7).
  EXPECT_EQ(lstm.weight_ih[0].shape(), Shape({28, 5}));
  EXPECT_EQ(lstm.weight_ih[1].shape(), Shape({28, 5}));
  EXPECT_EQ(lstm.named_parameters()[4].first, "weight_ih_l0_reverse");
  for (size_t k = 2; k < 6; ++k) EXPECT_EQ(lstm.weight_ih[k].shape(), Shape({28, 14}));
  EXPECT_EQ(lstm.weight_hh[5].shape(), Shape({28, 7}));
  // init U(-1/√H, 1/√H)
  const double bound = 1 / std::sqrt(7.0);
  for (const Tensor& p : lstm.parameters()) {
    EXPECT_LE(p.abs().max().item<double>(), bound);
  }
  nn::GRU gru({.input_size = 5, .hidden_size = 3});
  const auto g = gru.forward_with_state(randn({4, 2, 5}));
  EXPECT_EQ(g.output.shape(), Shape({4, 2, 3}));
  EXPECT_EQ(g.h_n.shape(), Shape({1, 2, 3}));
  EXPECT_FALSE(g.c_n.defined());
  EXPECT_EQ(gru.forward(randn({4, 2, 5})).shape(), Shape({4, 2, 3}));
  EXPECT_EQ(gru.describe(), "GRU(5, 3)");
}

TEST(Rnn, DropoutBetweenLayersOnlyWhenTraining) {
  manual_seed(3);
  nn::LSTM lstm(nn::LSTMOptions(4, 8).num_layers(2).dropout(0.5));
  const Tensor x = randn({5, 3, 4});
  lstm.eval();
  const Tensor a = lstm.forward(x), b = lstm.forward(x);
  EXPECT_TRUE(equal(a, b));
  lstm.train();
  EXPECT_FALSE(allclose(lstm.forward(x), a, 1e-6, 1e-6));
  nn::LSTM single(nn::LSTMOptions(4, 8));  // one layer: dropout has no place to go
  single.train();
  EXPECT_TRUE(equal(single.forward(x), single.forward(x)));
}

TEST(Rnn, Errors) {
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2));
  EXPECT_TRUE(test::throws_error([&] { lstm.forward(randn({5, 2, 6})); }, {"LSTM", "6", "input_size is 3"}));
  EXPECT_TRUE(test::throws_error([&] { lstm.forward(randn({5})); }, {"LSTM", "[T, B, input_size]"}));
  EXPECT_TRUE(test::throws_error([&] { lstm.forward_with_state(randn({5, 2, 3}), zeros({1, 2, 4})); },
                                 {"LSTM", "h0", "[2, 2, 4]", "[1, 2, 4]"}));
  nn::GRU gru(nn::GRUOptions(3, 4));
  EXPECT_TRUE(test::throws_error([&] { gru.forward_with_state(randn({5, 2, 3}), {}, zeros({1, 2, 4})); },
                                 {"GRU", "no cell state"}));
  EXPECT_TRUE(test::throws_error([&] { nn::LSTM bad(nn::LSTMOptions(3, 4).dropout(1.0)); }, {"LSTM", "dropout"}));
  namespace F = nn::functional;
  EXPECT_TRUE(test::throws_error([&] { F::lstm_cell_pointwise(randn({2, 7}), randn({2, 2})); },
                                 {"lstm_cell", "gates", "[2, 8]", "[2, 7]"}));
  EXPECT_TRUE(test::throws_error([&] { F::gru_cell_pointwise(randn({2, 6}), randn({2, 6}), randn({2, 2}, {.dtype = DType::f64})); },
                                 {"gru_cell", "f64", "f32"}));
}

// --- the language model ---------------------------------------------------------------------------------------

TEST(RnnLanguageModel, KeysAndTying) {
  nn::RNNLanguageModel lm({.vocab_size = 11, .cell = "gru", .embedding_dim = 6, .hidden_size = 8, .num_layers = 2});
  std::vector<std::string> keys;
  for (const auto& [k, v] : lm.state_dict()) keys.push_back(k);
  const std::vector<std::string> expected = {
      "embedding.weight", "rnn.weight_ih_l0", "rnn.weight_hh_l0", "rnn.bias_ih_l0", "rnn.bias_hh_l0",
      "rnn.weight_ih_l1", "rnn.weight_hh_l1", "rnn.bias_ih_l1",  "rnn.bias_hh_l1", "head.weight", "head.bias"};
  EXPECT_EQ(keys, expected);
  EXPECT_EQ(lm.forward(from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3})).shape(), Shape({2, 3, 11}));

  nn::RNNLanguageModel tied({.vocab_size = 11, .embedding_dim = 8, .hidden_size = 8, .num_layers = 1, .tie_weights = true});
  keys.clear();
  for (const auto& [k, v] : tied.state_dict()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"embedding.weight", "rnn.weight_ih_l0", "rnn.weight_hh_l0", "rnn.bias_ih_l0",
                                            "rnn.bias_hh_l0", "head.bias"}));
  // The head uses the embedding matrix: its gradient gets both contributions.
  tied.eval();
  const Tensor tokens = from_vector<int64_t>({1, 2, 3}, {1, 3});
  tied.forward(tokens).sum().backward();
  const Tensor g = tied.embedding->weight.grad();
  // Row 10 is never looked up: its gradient comes from the head alone, Σ_t h_t.
  const Tensor h = tied.rnn->forward(tied.embedding->forward(tokens)).detach();
  EXPECT_TRUE(allclose(g.select(0, 10), h.sum({0, 1}), 1e-5, 1e-6));
  EXPECT_TRUE(test::throws_error([] { nn::RNNLanguageModel({.vocab_size = 5, .embedding_dim = 4, .hidden_size = 8, .tie_weights = true}); },
                                 {"tie_weights", "embedding_dim (4)", "hidden_size (8)"}));
}

class RnnDecode : public ::testing::TestWithParam<std::string> {};

// A prompt decode then one token at a time gives the logits of forward() over the whole sequence.
TEST_P(RnnDecode, EqualsForward) {
  manual_seed(7);
  nn::RNNLanguageModel lm({.vocab_size = 13, .cell = GetParam(), .embedding_dim = 5, .hidden_size = 6, .num_layers = 2});
  lm.eval();
  NoGradGuard no_grad;
  const Tensor tokens = from_vector<int64_t>({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7}, {2, 7});
  const Tensor full = lm.forward(tokens);
  auto state = lm.start_decoding(2);
  std::vector<Tensor> parts = {lm.decode(tokens.narrow(1, 0, 3), *state)};
  for (int64_t t = 3; t < 7; ++t) parts.push_back(lm.decode(tokens.narrow(1, t, 1), *state));
  EXPECT_EQ(state->length, 7);
  const Tensor stepped = cat(parts, 1);
  ASSERT_EQ(stepped.shape(), full.shape());
  EXPECT_TRUE(allclose(stepped, full, 1e-5, 1e-6));
  EXPECT_EQ(lm.max_context(), 0);
  EXPECT_TRUE(test::throws_error([&] { lm.decode(tokens, *lm.start_decoding(3)); }, {"RNNLanguageModel", "[3, T_new]"}));
}
INSTANTIATE_TEST_SUITE_P(Rnn, RnnDecode, ::testing::Values("lstm", "gru"));

TEST(RnnLanguageModel, Learns) {
  // A repeating sequence is learnt: the loss falls well below log(V).
  manual_seed(1);
  nn::RNNLanguageModel lm({.vocab_size = 5, .embedding_dim = 8, .hidden_size = 16, .num_layers = 1, .dropout = 0});
  optim::Adam opt(lm.parameters(), {.lr = 0.05});
  const Tensor seq = from_vector<int64_t>({0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1}, {1, 17});
  const Tensor input = seq.narrow(1, 0, 16), target = seq.narrow(1, 1, 16);
  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    opt.zero_grad();
    const Tensor loss = nn::functional::cross_entropy(lm.forward(input).view({16, 5}), target.reshape({16}));
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_NEAR(first, std::log(5.0), 0.5);
  EXPECT_LT(last, 0.1);
}

// --- registry ---------------------------------------------------------------------------------------------------

nn::LayerSpec spec(const std::string& type, std::vector<std::pair<std::string, nn::SpecValue>> args = {}) {
  return {type, std::move(args), "test.yaml:1: model[0]"};
}

TEST(RnnRegistry, LayersOnSequences) {
  auto model = nn::build_sequential({spec("lstm", {{"hidden_size", int64_t{6}}, {"num_layers", int64_t{2}}}),
                                     spec("gru", {{"hidden_size", int64_t{3}}, {"bidirectional", true}})},
                                    Shape{9, 4});
  EXPECT_EQ(model->forward(randn({2, 9, 4})).shape(), Shape({2, 9, 6}));
  EXPECT_EQ(model->state_dict()[0].first, "0.weight_ih_l0");
  EXPECT_TRUE(test::throws_error([] { nn::build_sequential({spec("lstm", {{"hidden_size", int64_t{6}}})}, Shape{4}); },
                                 {"model[0]", "lstm", "[T, features]"}));
  EXPECT_TRUE(test::throws_error([] { nn::build_sequential({spec("lstm")}, Shape{9, 4}); }, {"missing required key 'hidden_size'"}));
  EXPECT_TRUE(test::throws_error([] { nn::build_sequential({spec("gru", {{"input_size", int64_t{4}}, {"hidden_size", int64_t{2}}})}, Shape{9, 4}); },
                                 {"'input_size' is not set by hand"}));
}

TEST(RnnRegistry, WholeModel) {
  const nn::ModelInput input{.sample_shape = {12}, .dtype = DType::i64, .vocab_size = 20};
  auto model = nn::build_model({spec("rnn_lm", {{"cell", std::string("gru")}, {"embedding_dim", int64_t{8}},
                                                {"hidden_size", int64_t{8}}, {"num_layers", int64_t{1}},
                                                {"tie_weights", true}})},
                               input);
  auto* lm = dynamic_cast<nn::RNNLanguageModel*>(model.get());
  ASSERT_NE(lm, nullptr);
  EXPECT_EQ(lm->options.cell, "gru");
  EXPECT_EQ(lm->vocab_size(), 20);
  EXPECT_EQ(model->state_dict().front().first, "embedding.weight");
  EXPECT_EQ(model->state_dict().back().first, "head.bias");
  EXPECT_TRUE(test::throws_error([&] { nn::build_model({spec("rnn_lm", {{"cell", std::string("rnn")}})}, input); },
                                 {"'cell' must be lstm or gru"}));
  EXPECT_TRUE(test::throws_error([&] { nn::build_model({spec("rnn_lm", {{"tie_weights", true}})}, input); },
                                 {"tie_weights", "embedding_dim == hidden_size"}));
  EXPECT_TRUE(test::throws_error([] { nn::build_model({spec("rnn_lm")}, nn::ModelInput{.sample_shape = {12}, .dtype = DType::i64}); },
                                 {"vocabulary size"}));
}

// --- CUDA: a whole LSTM and GRU, forward and backward, against the CPU ------------------------------------------

using RnnCuda = parity::Cuda;
TEST_F(RnnCuda, LstmAndGruMatchCpu) {
  for (const bool lstm : {true, false}) {
    for (const DType dtype : {DType::f32, DType::f64}) {
      manual_seed(5);
      const auto o = nn::RNNOptions(3, 5).num_layers(2).batch_first(true).bidirectional(true);
      std::shared_ptr<nn::RNNBase> cpu = lstm ? std::shared_ptr<nn::RNNBase>(std::make_shared<nn::LSTM>(o))
                                              : std::shared_ptr<nn::RNNBase>(std::make_shared<nn::GRU>(o));
      std::shared_ptr<nn::RNNBase> gpu = lstm ? std::shared_ptr<nn::RNNBase>(std::make_shared<nn::LSTM>(o))
                                              : std::shared_ptr<nn::RNNBase>(std::make_shared<nn::GRU>(o));
      cpu->to(dtype);
      gpu->to(dtype);
      gpu->load_state_dict(cpu->state_dict());
      gpu->to(parity::kGpu);
      const Tensor x = randn({2, 6, 3}, {.dtype = dtype});
      Tensor xc = x.clone().requires_grad_(), xg = x.to(parity::kGpu).requires_grad_();
      const auto rc = cpu->forward_with_state(xc), rg = gpu->forward_with_state(xg);
      const double tol = dtype == DType::f64 ? 1e-10 : 1e-5;
      EXPECT_TRUE(allclose(rg.output.to(kCPU), rc.output, tol, tol));
      EXPECT_TRUE(allclose(rg.h_n.to(kCPU), rc.h_n, tol, tol));
      (rc.output.sum() + rc.h_n.sum()).backward();
      (rg.output.sum() + rg.h_n.sum()).backward();
      EXPECT_TRUE(allclose(xg.grad().to(kCPU), xc.grad(), tol, tol));
      const auto pc = cpu->named_parameters(), pg = gpu->named_parameters();
      for (size_t i = 0; i < pc.size(); ++i)
        EXPECT_TRUE(allclose(pg[i].second.grad().to(kCPU), pc[i].second.grad(), tol, tol)) << pc[i].first;
    }
  }
}

}  // namespace
