// The recurrent cells: the pointwise part of an LSTM / GRU step as one fused Backend op with a fused
// backward (backends/rnn_math.h), and the full steps torch.lstm_cell / torch.gru_cell over them.
#include "autograd/node.h"
#include "core/raw.h"
#include "nn/functional.h"

namespace ember::nn::functional {
namespace {

using autograd::SavedTensor;

// Output: h and c stacked as [2, B, H] (one differentiable output per node); the callers see its two slices.
struct LstmCellBackward : autograd::Node {
  SavedTensor c_prev, hc, workspace;
  std::string_view name() const override { return "lstm_cell"; }
  void release() override { release_all(c_prev, hc, workspace); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Tensor cp = c_prev.unpack(*this), out = hc.unpack(*this), ws = workspace.unpack(*this);
    const Tensor gy = raw::contiguous(g);
    const Tensor gh = raw::select(gy, 0, 0), gc = raw::select(gy, 0, 1), c = raw::select(out, 0, 1);
    Tensor gg = raw::empty(next[0].shape, cp.dtype(), cp.device());
    Tensor gcp = needs_grad(1) ? raw::empty(cp.shape(), cp.dtype(), cp.device()) : Tensor();
    const TensorArg gha = gh.arg(), gca = gc.arg();
    TensorArg gcpa;
    if (gcp.defined()) gcpa = gcp.arg();
    backend(cp.device()).lstm_cell_backward(&gha, &gca, cp.arg(), c.arg(), ws.arg(), gg.arg(),
                                            gcp.defined() ? &gcpa : nullptr);
    if (needs_grad(0)) grad_inputs[0] = gg;
    if (needs_grad(1)) grad_inputs[1] = gcp;
  }
};

struct GruCellBackward : autograd::Node {
  SavedTensor h_prev, workspace;
  std::string_view name() const override { return "gru_cell"; }
  void release() override { release_all(h_prev, workspace); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Tensor hp = h_prev.unpack(*this), ws = workspace.unpack(*this), gy = raw::contiguous(g);
    TensorArg args[3];
    const TensorArg* ptrs[3] = {nullptr, nullptr, nullptr};
    for (int i = 0; i < 3; ++i) {
      if (!needs_grad(i)) continue;
      grad_inputs[i] = raw::empty(next[i].shape, hp.dtype(), hp.device());
      args[i] = grad_inputs[i].arg();
      ptrs[i] = &args[i];
    }
    backend(hp.device()).gru_cell_backward(gy.arg(), hp.arg(), ws.arg(), ptrs[0], ptrs[1], ptrs[2]);
  }
};

// The previous state of a cell (lstm_cell's c_prev, gru_cell's h_prev): a floating [B, H] tensor.
void check_state(const char* op, const char* name, const Tensor& t) {
  EMBER_CHECK(t.defined() && t.dim() == 2, op, ": ", name, " must be [B, H], got ",
              t.defined() ? t.shape().str() : std::string("an undefined tensor"));
  EMBER_CHECK(is_floating(t.dtype()), op, ": needs floating tensors, got ", name, " ", dtype_name(t.dtype()));
}

// Checks that `t` is a floating [B, width] tensor of ref's dtype and device.
void check_cell_tensor(const char* op, const char* name, const Tensor& t, const Tensor& ref, int64_t B, int64_t width) {
  EMBER_CHECK(t.defined(), op, ": ", name, " is undefined");
  raw::check_same_device(ref, t, op);
  EMBER_CHECK(is_floating(t.dtype()) && t.dtype() == ref.dtype(), op, ": ", name, " must be ",
              dtype_name(ref.dtype()), " (a floating dtype, as the other operands), got ", dtype_name(t.dtype()));
  EMBER_CHECK(t.dim() == 2 && t.size(0) == B && t.size(1) == width, op, ": ", name, " must be [", B, ", ", width,
              "], got ", t.shape());
}

}  // namespace

std::pair<Tensor, Tensor> lstm_cell_pointwise(const Tensor& gates, const Tensor& c_prev) {
  const char* op = "lstm_cell";
  check_state(op, "c_prev", c_prev);
  const int64_t B = c_prev.size(0), H = c_prev.size(1);
  check_cell_tensor(op, "gates (the 4 gates i, f, g, o of each row)", gates, c_prev, B, 4 * H);
  const Tensor a = raw::contiguous(gates), cp = raw::contiguous(c_prev);
  Tensor hc = raw::empty({2, B, H}, cp.dtype(), cp.device());
  Tensor ws = raw::empty({B, 4 * H}, cp.dtype(), cp.device());
  backend(cp.device()).lstm_cell_forward(a.arg(), cp.arg(), raw::select(hc, 0, 0).arg(), raw::select(hc, 0, 1).arg(),
                                         ws.arg());
  if (auto node = autograd::make_node<LstmCellBackward>(gates, c_prev)) {
    node->c_prev.save(cp);
    node->hc.save(hc, /*is_output=*/true);
    node->workspace.save(ws);
    autograd::set_history(hc, std::move(node));
  }
  return {hc.select(0, 0), hc.select(0, 1)};
}

Tensor gru_cell_pointwise(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& h_prev) {
  const char* op = "gru_cell";
  check_state(op, "h_prev", h_prev);
  const int64_t B = h_prev.size(0), H = h_prev.size(1);
  check_cell_tensor(op, "input_gates (x·W_ihᵀ + b_ih: r, z, n)", input_gates, h_prev, B, 3 * H);
  check_cell_tensor(op, "hidden_gates (h·W_hhᵀ + b_hh: r, z, n)", hidden_gates, h_prev, B, 3 * H);
  const Tensor xg = raw::contiguous(input_gates), hg = raw::contiguous(hidden_gates), hp = raw::contiguous(h_prev);
  Tensor h = raw::empty({B, H}, hp.dtype(), hp.device());
  Tensor ws = raw::empty({B, 4 * H}, hp.dtype(), hp.device());
  backend(hp.device()).gru_cell_forward(xg.arg(), hg.arg(), hp.arg(), h.arg(), ws.arg());
  if (auto node = autograd::make_node<GruCellBackward>(input_gates, hidden_gates, h_prev)) {
    node->h_prev.save(hp);
    node->workspace.save(ws);
    autograd::set_history(h, std::move(node));
  }
  return h;
}

namespace {

// One direction of one recurrent layer over a whole sequence (nn::LSTM / nn::GRU), as one autograd node:
// the forward runs the T steps (h·W_hhᵀ GEMM + fused cell each), the backward runs backpropagation through
// time with the fused cell backward, writing each step's gate gradient into its slice of one [T, B, G]
// buffer (a node per step would make every step's gradient a full [T, B, G] tensor: O(T²)). W_hh's
// gradient is then one GEMM over all steps. Inputs: xp, w_hh, [b_hh (GRU with bias)], h0, [c0 (LSTM)].
// Output: y [T, B, H] (LSTM: [T + 1, B, H], c_n in the last row).
struct SequenceBackward : autograd::Node {
  bool lstm = true, reverse = false, has_b_hh = false;
  SavedTensor w_hh, h0, c0, y, cs, ws;
  std::string_view name() const override { return lstm ? "lstm_sequence" : "gru_sequence"; }
  void release() override { release_all(w_hh, h0, c0, y, cs, ws); }
  void backward(const Tensor& g, Tensor* grad_inputs) override {
    const Tensor w = w_hh.unpack(*this), h_init = h0.unpack(*this), out = y.unpack(*this), work = ws.unpack(*this);
    const Tensor c_init = lstm ? c0.unpack(*this) : Tensor(), cells = lstm ? cs.unpack(*this) : Tensor();
    const Tensor gy = raw::contiguous(g);
    const int64_t T = work.size(0), B = work.size(1), H = w.size(1), G = w.size(0);
    const DType dt = w.dtype();
    const Device dev = w.device();
    Backend& be = backend(dev);
    Tensor g_xp = raw::empty({T, B, G}, dt, dev);
    Tensor g_hg = lstm ? g_xp : raw::empty({T, B, G}, dt, dev);  // GRU: the hidden gates' gradient apart
    Tensor h_prev_all = raw::empty({T, B, H}, dt, dev);            // h_{t-1} of every step, for W_hh's gradient
    Tensor gh_next = raw::empty({B, H}, dt, dev);
    raw::fill_(gh_next, 0.0);
    Tensor gc_next = lstm ? raw::contiguous(raw::select(gy, 0, T)) : Tensor();
    const auto step_t = [&](int64_t p) { return reverse ? T - 1 - p : p; };
    for (int64_t p = T - 1; p >= 0; --p) {
      const int64_t t = step_t(p);
      const Tensor h_prev = p == 0 ? h_init : raw::select(out, 0, step_t(p - 1));
      raw::copy_(raw::select(h_prev_all, 0, t), h_prev);
      const Tensor gh = raw::binary(BinaryOp::add, raw::select(gy, 0, t), gh_next);
      const Tensor gxp_t = raw::select(g_xp, 0, t);
      if (lstm) {
        const Tensor c_prev = p == 0 ? c_init : raw::select(cells, 0, step_t(p - 1));
        Tensor gc_prev = raw::empty({B, H}, dt, dev);
        const TensorArg gha = gh.arg(), gca = gc_next.arg(), gcpa = gc_prev.arg();
        be.lstm_cell_backward(&gha, &gca, c_prev.arg(), raw::select(cells, 0, t).arg(), raw::select(work, 0, t).arg(),
                              gxp_t.arg(), &gcpa);
        gh_next = raw::matmul(gxp_t, w);
        gc_next = gc_prev;
      } else {
        const Tensor ghg_t = raw::select(g_hg, 0, t);
        Tensor gh_prev = raw::empty({B, H}, dt, dev);
        const TensorArg gxa = gxp_t.arg(), gha = ghg_t.arg(), ghpa = gh_prev.arg();
        be.gru_cell_backward(gh.arg(), h_prev.arg(), raw::select(work, 0, t).arg(), &gxa, &gha, &ghpa);
        gh_next = raw::binary(BinaryOp::add, gh_prev, raw::matmul(ghg_t, w));
      }
    }
    int i = 0;
    if (needs_grad(i)) grad_inputs[i] = g_xp;
    ++i;
    if (needs_grad(i))  // Σ_t g_tᵀ·h_{t-1}: [G, T·B] @ [T·B, H]
      grad_inputs[i] = raw::matmul(raw::transpose(raw::view(g_hg, {T * B, G}), 0, 1), raw::view(h_prev_all, {T * B, H}));
    ++i;
    if (has_b_hh) {
      if (needs_grad(i)) grad_inputs[i] = raw::reduce(ReduceOp::sum, g_hg, {0, 1}, false);
      ++i;
    }
    if (needs_grad(i)) grad_inputs[i] = gh_next;
    ++i;
    if (lstm && needs_grad(i)) grad_inputs[i] = gc_next;
  }
};

// The forward of SequenceBackward's op; returns {output, h_n, c_n}.
RecurrentSequence run_sequence(bool lstm, const Tensor& xp_in, const Tensor& w_hh, const Tensor& b_hh,
                               const Tensor& h0_in, const Tensor& c0_in, bool reverse) {
  const char* op = lstm ? "lstm_sequence" : "gru_sequence";
  const int gates = lstm ? 4 : 3;
  EMBER_CHECK(xp_in.defined() && xp_in.dim() == 3, op, ": xp must be [T, B, ", gates, "·H], got ",
              xp_in.defined() ? xp_in.shape().str() : std::string("an undefined tensor"));
  EMBER_CHECK(is_floating(xp_in.dtype()), op, ": needs floating tensors, got xp ", dtype_name(xp_in.dtype()));
  const int64_t T = xp_in.size(0), B = xp_in.size(1), G = xp_in.size(2), H = G / gates;
  EMBER_CHECK(G % gates == 0 && H > 0, op, ": xp's last dim (", G, ") must be ", gates, "·hidden_size");
  check_cell_tensor(op, "w_hh", w_hh, xp_in, G, H);
  check_cell_tensor(op, "h0", h0_in, xp_in, B, H);
  if (lstm) check_cell_tensor(op, "c0", c0_in, xp_in, B, H);
  if (b_hh.defined()) {
    raw::check_same_device(xp_in, b_hh, op);
    EMBER_CHECK(b_hh.dtype() == xp_in.dtype() && b_hh.dim() == 1 && b_hh.size(0) == G, op, ": b_hh must be [", G, "] ",
                dtype_name(xp_in.dtype()), ", got ", b_hh.shape(), " ", dtype_name(b_hh.dtype()));
  }
  if (T == 0) {
    return {raw::empty({0, B, H}, xp_in.dtype(), xp_in.device()), h0_in, lstm ? c0_in : Tensor()};
  }
  const Tensor xp = raw::contiguous(xp_in), h0 = raw::contiguous(h0_in), c0 = lstm ? raw::contiguous(c0_in) : Tensor();
  const Tensor whh_t = raw::transpose(w_hh, 0, 1);
  const DType dt = xp.dtype();
  const Device dev = xp.device();
  Backend& be = backend(dev);
  Tensor y = raw::empty({lstm ? T + 1 : T, B, H}, dt, dev);
  Tensor cells = lstm ? raw::empty({T, B, H}, dt, dev) : Tensor();
  Tensor work = raw::empty({T, B, 4 * H}, dt, dev);
  Tensor h = h0, c = c0;
  for (int64_t p = 0; p < T; ++p) {
    const int64_t t = reverse ? T - 1 - p : p;
    Tensor hg = raw::matmul(h, whh_t);
    const Tensor y_t = raw::select(y, 0, t), w_t = raw::select(work, 0, t);
    if (lstm) {
      const Tensor gates_t = raw::binary(BinaryOp::add, raw::select(xp, 0, t), hg);
      const Tensor c_t = raw::select(cells, 0, t);
      be.lstm_cell_forward(gates_t.arg(), c.arg(), y_t.arg(), c_t.arg(), w_t.arg());
      c = c_t;
    } else {
      if (b_hh.defined()) hg = raw::binary(BinaryOp::add, hg, b_hh);
      be.gru_cell_forward(raw::select(xp, 0, t).arg(), hg.arg(), h.arg(), y_t.arg(), w_t.arg());
    }
    h = y_t;
  }
  if (lstm) raw::copy_(raw::select(y, 0, T), c);
  std::vector<Tensor> inputs = {xp_in, w_hh};
  if (b_hh.defined()) inputs.push_back(b_hh);
  inputs.push_back(h0_in);
  if (lstm) inputs.push_back(c0_in);
  if (auto node = autograd::make_node<SequenceBackward>(inputs)) {
    node->lstm = lstm;
    node->reverse = reverse;
    node->has_b_hh = b_hh.defined();
    node->w_hh.save(w_hh);
    node->h0.save(h0);
    if (lstm) {
      node->c0.save(c0);
      node->cs.save(cells);
    }
    node->y.save(y, /*is_output=*/true);
    node->ws.save(work);
    autograd::set_history(y, std::move(node));
  }
  return {y.narrow(0, 0, T), y.select(0, reverse ? 0 : T - 1), lstm ? y.select(0, T) : Tensor()};
}

}  // namespace

RecurrentSequence lstm_sequence(const Tensor& xp, const Tensor& w_hh, const Tensor& h0, const Tensor& c0, bool reverse) {
  return run_sequence(true, xp, w_hh, Tensor(), h0, c0, reverse);
}
RecurrentSequence gru_sequence(const Tensor& xp, const Tensor& w_hh, const Tensor& b_hh, const Tensor& h0,
                               bool reverse) {
  return run_sequence(false, xp, w_hh, b_hh, h0, Tensor(), reverse);
}

namespace {

// The input projection plus the hidden projection of one step, checked; `gates` = 4 (LSTM) or 3 (GRU).
// Returns (x·W_ihᵀ + b_ih, h·W_hhᵀ + b_hh) for batched [B, I] / [B, H] operands.
std::pair<Tensor, Tensor> cell_projections(const char* op, int gates, const Tensor& x, const Tensor& h,
                                           const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                                           const Tensor& b_hh) {
  const int64_t H = h.size(1), G = gates * H;
  EMBER_CHECK(w_ih.defined() && w_ih.dim() == 2 && w_ih.size(0) == G && w_ih.size(1) == x.size(1), op,
              ": w_ih must be [", G, ", ", x.size(1), "] (", gates, "·hidden, input), got ",
              w_ih.defined() ? w_ih.shape().str() : std::string("undefined"));
  EMBER_CHECK(w_hh.defined() && w_hh.dim() == 2 && w_hh.size(0) == G && w_hh.size(1) == H, op, ": w_hh must be [",
              G, ", ", H, "] (", gates, "·hidden, hidden), got ",
              w_hh.defined() ? w_hh.shape().str() : std::string("undefined"));
  for (const auto& [b, name] : {std::pair{&b_ih, "b_ih"}, std::pair{&b_hh, "b_hh"}})
    EMBER_CHECK(!b->defined() || (b->dim() == 1 && b->size(0) == G), op, ": ", name, " must be [", G, "], got ",
                b->shape());
  return {linear(x, w_ih, b_ih), linear(h, w_hh, b_hh)};
}

}  // namespace

std::pair<Tensor, Tensor> lstm_cell(const Tensor& input, const Tensor& h, const Tensor& c, const Tensor& w_ih,
                                    const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh) {
  EMBER_CHECK(input.defined() && h.defined() && c.defined(), "lstm_cell: input, h and c must be defined");
  const bool batched = input.dim() == 2;
  EMBER_CHECK(input.dim() == 1 || input.dim() == 2, "lstm_cell: input must be [B, input_size] or [input_size], got ",
              input.shape());
  EMBER_CHECK(h.dim() == input.dim() && c.dim() == input.dim(), "lstm_cell: h and c must have ",
              batched ? "[B, hidden_size]" : "[hidden_size]", " for input ", input.shape(), ", got h ", h.shape(),
              " and c ", c.shape());
  const Tensor x = batched ? input : input.unsqueeze(0), hp = batched ? h : h.unsqueeze(0),
               cp = batched ? c : c.unsqueeze(0);
  EMBER_CHECK(hp.size(0) == x.size(0), "lstm_cell: h has batch ", hp.size(0), " but input has ", x.size(0));
  const auto [xg, hg] = cell_projections("lstm_cell", 4, x, hp, w_ih, w_hh, b_ih, b_hh);
  auto [h1, c1] = lstm_cell_pointwise(xg + hg, cp);
  if (!batched) return {h1.squeeze(0), c1.squeeze(0)};
  return {h1, c1};
}

Tensor gru_cell(const Tensor& input, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                const Tensor& b_hh) {
  EMBER_CHECK(input.defined() && h.defined(), "gru_cell: input and h must be defined");
  const bool batched = input.dim() == 2;
  EMBER_CHECK(input.dim() == 1 || input.dim() == 2, "gru_cell: input must be [B, input_size] or [input_size], got ",
              input.shape());
  EMBER_CHECK(h.dim() == input.dim(), "gru_cell: h must be ", batched ? "[B, hidden_size]" : "[hidden_size]",
              " for input ", input.shape(), ", got ", h.shape());
  const Tensor x = batched ? input : input.unsqueeze(0), hp = batched ? h : h.unsqueeze(0);
  EMBER_CHECK(hp.size(0) == x.size(0), "gru_cell: h has batch ", hp.size(0), " but input has ", x.size(0));
  const auto [xg, hg] = cell_projections("gru_cell", 3, x, hp, w_ih, w_hh, b_ih, b_hh);
  const Tensor h1 = gru_cell_pointwise(xg, hg, hp);
  return batched ? h1 : h1.squeeze(0);
}

}  // namespace ember::nn::functional
