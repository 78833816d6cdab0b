#include "nn/rnn.h"

#include <cmath>
#include <sstream>

#include "nn/init.h"

namespace ember::nn {
namespace {

int gate_count(RNNCell cell) { return cell == RNNCell::lstm ? 4 : 3; }
const char* cell_name(RNNCell cell) { return cell == RNNCell::lstm ? "LSTM" : "GRU"; }

// U(-1/√H, 1/√H) on every parameter, as PyTorch's RNNBase/RNNCellBase.reset_parameters.
void init_uniform(std::initializer_list<Tensor*> params, int64_t hidden_size, Generator* gen) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden_size));
  for (Tensor* p : params)
    if (p->defined()) init::uniform_(*p, -bound, bound, gen);
}

// A state argument: undefined → zeros [L·D, B, H]; otherwise checked against that shape.
Tensor initial_state(const Tensor& given, const char* name, const char* layer, int64_t LD, int64_t B, int64_t H,
                     bool batched, const Tensor& like) {
  if (!given.defined()) return zeros({LD, B, H}, {.dtype = like.dtype(), .device = like.device()});
  const Shape expected = batched ? Shape{LD, B, H} : Shape{LD, H};
  EMBER_CHECK(given.shape() == expected, layer, ": ", name, " must be ", expected,
              " (num_layers·directions, ", batched ? "batch, " : "", "hidden_size) for input of batch ", B,
              ", got ", given.shape());
  EMBER_CHECK(given.dtype() == like.dtype() && given.device() == like.device(), layer, ": ", name, " must be ",
              dtype_name(like.dtype()), " on ", like.device().str(), " as the input, got ",
              dtype_name(given.dtype()), " on ", given.device().str());
  return batched ? given : given.unsqueeze(1);
}

}  // namespace

RNNBase::RNNBase(RNNCell cell, const RNNOptions& opts, Generator* gen) : options(opts), cell_(cell), gen_(gen) {
  const RNNFields& o = options;
  const char* name = cell_name(cell);
  EMBER_CHECK(o.input_size > 0 && o.hidden_size > 0, name, ": input_size (", o.input_size, ") and hidden_size (",
              o.hidden_size, ") must be positive");
  EMBER_CHECK(o.num_layers >= 1, name, ": num_layers must be at least 1, got ", o.num_layers);
  EMBER_CHECK(o.dropout >= 0 && o.dropout < 1, name, ": dropout must be in [0, 1), got ", o.dropout);
  const int64_t H = o.hidden_size, G = gate_count(cell) * H, D = o.bidirectional ? 2 : 1;
  for (int64_t layer = 0; layer < o.num_layers; ++layer) {
    for (int64_t dir = 0; dir < D; ++dir) {
      const std::string suffix = "_l" + std::to_string(layer) + (dir == 1 ? "_reverse" : "");
      const int64_t in = layer == 0 ? o.input_size : D * H;
      Tensor wi = register_parameter("weight_ih" + suffix, empty({G, in}));
      Tensor wh = register_parameter("weight_hh" + suffix, empty({G, H}));
      Tensor bi = o.bias ? register_parameter("bias_ih" + suffix, empty({G})) : Tensor();
      Tensor bh = o.bias ? register_parameter("bias_hh" + suffix, empty({G})) : Tensor();
      init_uniform({&wi, &wh, &bi, &bh}, H, gen);
      weight_ih.push_back(wi);
      weight_hh.push_back(wh);
      bias_ih.push_back(bi);
      bias_hh.push_back(bh);
    }
  }
}

RNNOutput RNNBase::forward_with_state(const Tensor& input, const Tensor& h0, const Tensor& c0) {
  const char* name = cell_name(cell_);
  const RNNFields& o = options;
  EMBER_CHECK(input.defined() && (input.dim() == 2 || input.dim() == 3), name, ": input must be ",
              o.batch_first ? "[B, T, input_size]" : "[T, B, input_size]", " or [T, input_size] (unbatched), got ",
              input.defined() ? input.shape().str() : std::string("an undefined tensor"));
  EMBER_CHECK(is_floating(input.dtype()), name, ": input must be floating (f32 or f64), got ",
              dtype_name(input.dtype()));
  check_input_dtype(input, weight_ih[0]);
  EMBER_CHECK(input.size(-1) == o.input_size, name, ": input has ", input.size(-1),
              " features in its last dim, but input_size is ", o.input_size);
  EMBER_CHECK(cell_ == RNNCell::lstm || !c0.defined(), name, ": a GRU has no cell state; pass only h0");
  const bool batched = input.dim() == 3;
  const Tensor x = !batched ? input.unsqueeze(1) : o.batch_first ? input.transpose(0, 1) : input;  // [T, B, I]
  const int64_t T = x.size(0), B = x.size(1), H = o.hidden_size, G = gate_count(cell_) * H;
  const int64_t D = o.bidirectional ? 2 : 1, L = o.num_layers;
  const Tensor h_init = initial_state(h0, "h0", name, L * D, B, H, batched, input);
  const Tensor c_init =
      cell_ == RNNCell::lstm ? initial_state(c0, "c0", name, L * D, B, H, batched, input) : Tensor();
  const bool lstm = cell_ == RNNCell::lstm;

  std::vector<Tensor> h_n, c_n;
  Tensor layer_input = x;
  for (int64_t layer = 0; layer < L; ++layer) {
    std::vector<Tensor> directions;
    for (int64_t dir = 0; dir < D; ++dir) {
      const size_t k = static_cast<size_t>(layer * D + dir);
      const int64_t in = layer_input.size(2);
      // The input projection of all T steps in one GEMM; an LSTM folds both biases into it (its cell takes
      // their sum), a GRU keeps b_hh with the hidden gates (n = tanh(x_n + r·(h_n + b_hn))).
      Tensor bias_in = bias_ih[k];
      if (lstm && bias_in.defined()) bias_in = bias_ih[k] + bias_hh[k];
      const Tensor xp = functional::linear(layer_input.reshape({T * B, in}), weight_ih[k], bias_in).view({T, B, G});
      const Tensor h_k = h_init.select(0, static_cast<int64_t>(k));
      const functional::RecurrentSequence seq =
          lstm ? functional::lstm_sequence(xp, weight_hh[k], h_k, c_init.select(0, static_cast<int64_t>(k)), dir == 1)
               : functional::gru_sequence(xp, weight_hh[k], bias_hh[k], h_k, dir == 1);
      directions.push_back(seq.output);
      h_n.push_back(seq.h_n);
      if (lstm) c_n.push_back(seq.c_n);
    }
    layer_input = D == 1 ? directions[0] : cat(directions, 2);
    if (layer + 1 < L && o.dropout > 0) layer_input = functional::dropout(layer_input, o.dropout, is_training(), gen_);
  }
  RNNOutput out;
  out.output = !batched ? layer_input.squeeze(1) : o.batch_first ? layer_input.transpose(0, 1).contiguous() : layer_input;
  out.h_n = stack(h_n, 0);
  if (lstm) out.c_n = stack(c_n, 0);
  if (!batched) {
    out.h_n = out.h_n.squeeze(1);
    if (lstm) out.c_n = out.c_n.squeeze(1);
  }
  return out;
}

std::string RNNBase::describe() const {
  const RNNFields& o = options;
  std::ostringstream s;
  s << cell_name(cell_) << "(" << o.input_size << ", " << o.hidden_size;
  if (o.num_layers != 1) s << ", num_layers=" << o.num_layers;
  if (!o.bias) s << ", bias=false";
  if (o.batch_first) s << ", batch_first=true";
  if (o.dropout != 0) s << ", dropout=" << o.dropout;
  if (o.bidirectional) s << ", bidirectional=true";
  s << ")";
  return s.str();
}

// --- cells ---------------------------------------------------------------------------------------------------

namespace {
void make_cell(Module& m, const char* name, int gates, int64_t I, int64_t H, bool bias, Generator* gen, Tensor& wi,
               Tensor& wh, Tensor& bi, Tensor& bh) {
  EMBER_CHECK(I > 0 && H > 0, name, ": input_size (", I, ") and hidden_size (", H, ") must be positive");
  wi = m.register_parameter("weight_ih", empty({gates * H, I}));
  wh = m.register_parameter("weight_hh", empty({gates * H, H}));
  if (bias) {
    bi = m.register_parameter("bias_ih", empty({gates * H}));
    bh = m.register_parameter("bias_hh", empty({gates * H}));
  }
  init_uniform({&wi, &wh, &bi, &bh}, H, gen);
}
Tensor zero_state(const Tensor& input, int64_t H) {
  const Shape s = input.dim() == 2 ? Shape{input.size(0), H} : Shape{H};
  return zeros(s, {.dtype = input.dtype(), .device = input.device()});
}
std::string cell_describe(const char* name, int64_t I, int64_t H, const Tensor& bias) {
  return std::string(name) + "(" + std::to_string(I) + ", " + std::to_string(H) + (bias.defined() ? "" : ", bias=false") + ")";
}
}  // namespace

LSTMCell::LSTMCell(int64_t I, int64_t H, bool bias, Generator* gen) : input_size(I), hidden_size(H) {
  make_cell(*this, "LSTMCell", 4, I, H, bias, gen, weight_ih, weight_hh, bias_ih, bias_hh);
}
std::pair<Tensor, Tensor> LSTMCell::forward_with_state(const Tensor& input, const Tensor& h, const Tensor& c) {
  EMBER_CHECK(input.defined(), "LSTMCell: input is undefined");
  check_input_dtype(input, weight_ih);
  return functional::lstm_cell(input, h.defined() ? h : zero_state(input, hidden_size),
                               c.defined() ? c : zero_state(input, hidden_size), weight_ih, weight_hh, bias_ih,
                               bias_hh);
}
std::string LSTMCell::describe() const { return cell_describe("LSTMCell", input_size, hidden_size, bias_ih); }

GRUCell::GRUCell(int64_t I, int64_t H, bool bias, Generator* gen) : input_size(I), hidden_size(H) {
  make_cell(*this, "GRUCell", 3, I, H, bias, gen, weight_ih, weight_hh, bias_ih, bias_hh);
}
Tensor GRUCell::forward_with_state(const Tensor& input, const Tensor& h) {
  EMBER_CHECK(input.defined(), "GRUCell: input is undefined");
  check_input_dtype(input, weight_ih);
  return functional::gru_cell(input, h.defined() ? h : zero_state(input, hidden_size), weight_ih, weight_hh, bias_ih,
                              bias_hh);
}
std::string GRUCell::describe() const { return cell_describe("GRUCell", input_size, hidden_size, bias_ih); }

// --- the language model --------------------------------------------------------------------------------------

RNNLanguageModel::RNNLanguageModel(const RNNLMOptions& o, Generator* gen) : options(o), gen_(gen) {
  EMBER_CHECK(o.vocab_size > 0, "RNNLanguageModel: vocab_size must be positive, got ", o.vocab_size);
  EMBER_CHECK(o.cell == "lstm" || o.cell == "gru", "RNNLanguageModel: cell must be \"lstm\" or \"gru\", got \"",
              o.cell, "\"");
  EMBER_CHECK(o.dropout >= 0 && o.dropout < 1, "RNNLanguageModel: dropout must be in [0, 1), got ", o.dropout);
  EMBER_CHECK(!o.tie_weights || o.embedding_dim == o.hidden_size, "RNNLanguageModel: tie_weights needs embedding_dim (",
              o.embedding_dim, ") == hidden_size (", o.hidden_size, "): the head reuses the embedding matrix");
  embedding = register_module("embedding", std::make_shared<Embedding>(o.vocab_size, o.embedding_dim, gen));
  const RNNOptions ro = RNNOptions(o.embedding_dim, o.hidden_size).num_layers(o.num_layers).batch_first(true).dropout(
      o.num_layers > 1 ? o.dropout : 0.0);
  if (o.cell == "lstm") rnn = register_module("rnn", std::static_pointer_cast<RNNBase>(std::make_shared<LSTM>(ro, gen)));
  else rnn = register_module("rnn", std::static_pointer_cast<RNNBase>(std::make_shared<GRU>(ro, gen)));
  if (o.tie_weights) {
    init::uniform_(embedding->weight, -0.1, 0.1, gen);
    head = register_module("head", std::make_shared<Module>());
    head_bias = head->register_parameter("bias", empty({o.vocab_size}));
    const double bound = 1.0 / std::sqrt(static_cast<double>(o.hidden_size));  // Linear(H, V)'s bias init
    init::uniform_(head_bias, -bound, bound, gen);
  } else {
    auto linear = std::make_shared<Linear>(o.hidden_size, o.vocab_size, true, gen);
    head_bias = linear->bias;
    head = register_module("head", std::static_pointer_cast<Module>(linear));
  }
}

Tensor RNNLanguageModel::head_weight() const {
  if (options.tie_weights) return embedding->weight;
  return std::static_pointer_cast<Linear>(head)->weight;
}

Tensor RNNLanguageModel::logits(const Tensor& hidden) {
  return functional::linear(functional::dropout(hidden, options.dropout, is_training(), gen_), head_weight(),
                            head_bias);
}

Tensor RNNLanguageModel::forward(const Tensor& tokens) {
  EMBER_CHECK(tokens.defined() && tokens.dim() == 2 && tokens.dtype() == DType::i64,
              "RNNLanguageModel: expected token ids i64 [B, T], got ",
              tokens.defined() ? std::string(dtype_name(tokens.dtype())) + " " + tokens.shape().str()
                               : std::string("an undefined tensor"));
  const Tensor x = functional::dropout(embedding->forward(tokens), options.dropout, is_training(), gen_);
  return logits(rnn->forward_with_state(x).output);
}

std::unique_ptr<DecodeState> RNNLanguageModel::start_decoding(int64_t batch) const {
  EMBER_CHECK(batch > 0, "RNNLanguageModel: start_decoding needs a positive batch, got ", batch);
  auto state = std::make_unique<RNNDecodeState>();
  state->batch = batch;
  return state;
}

Tensor RNNLanguageModel::decode(const Tensor& tokens, DecodeState& state) {
  auto* s = dynamic_cast<RNNDecodeState*>(&state);
  EMBER_CHECK(s != nullptr, "RNNLanguageModel: decode needs the state its own start_decoding() made");
  EMBER_CHECK(tokens.defined() && tokens.dim() == 2 && tokens.dtype() == DType::i64 && tokens.size(0) == s->batch,
              "RNNLanguageModel: decode expected token ids i64 [", s->batch, ", T_new] (the state's batch), got ",
              tokens.defined() ? std::string(dtype_name(tokens.dtype())) + " " + tokens.shape().str()
                               : std::string("an undefined tensor"));
  const Tensor x = functional::dropout(embedding->forward(tokens), options.dropout, is_training(), gen_);
  const RNNOutput out = rnn->forward_with_state(x, s->h, s->c);
  s->h = out.h_n.detach();
  s->c = out.c_n.defined() ? out.c_n.detach() : Tensor();
  s->length += tokens.size(1);
  return logits(out.output);
}

std::string RNNLanguageModel::describe() const {
  const RNNLMOptions& o = options;
  std::ostringstream s;
  s << "RNNLanguageModel(vocab=" << o.vocab_size << ", cell=" << o.cell << ", embedding_dim=" << o.embedding_dim
    << ", hidden_size=" << o.hidden_size << ", num_layers=" << o.num_layers << ", dropout=" << o.dropout
    << (o.tie_weights ? ", tie_weights=true" : "") << ")";
  return s.str();
}

}  // namespace ember::nn
