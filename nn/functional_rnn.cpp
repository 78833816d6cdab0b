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
  void release() override {
    c_prev.release();
    hc.release();
    workspace.release();
  }
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
  void release() override {
    h_prev.release();
    workspace.release();
  }
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
  EMBER_CHECK(c_prev.defined() && c_prev.dim() == 2, op, ": c_prev must be [B, H], got ",
              c_prev.defined() ? c_prev.shape().str() : std::string("an undefined tensor"));
  EMBER_CHECK(is_floating(c_prev.dtype()), op, ": needs floating tensors, got c_prev ", dtype_name(c_prev.dtype()));
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
  EMBER_CHECK(h_prev.defined() && h_prev.dim() == 2, op, ": h_prev must be [B, H], got ",
              h_prev.defined() ? h_prev.shape().str() : std::string("an undefined tensor"));
  EMBER_CHECK(is_floating(h_prev.dtype()), op, ": needs floating tensors, got h_prev ", dtype_name(h_prev.dtype()));
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
