#pragma once
// The pointwise part of the recurrent cells (LSTM, GRU), written once as EMBER_HOST_DEVICE functions that
// backends/cpu/rnn.cpp and backends/cuda/rnn.cu both call, one (b, j) element (batch row b, hidden unit j)
// per call. The matmuls of a step (x·W_ihᵀ, h·W_hhᵀ) are done outside; these take the summed gates.
// Gate order is PyTorch's: LSTM i, f, g, o (gates [B, 4H]); GRU r, z, n (gates [B, 3H]).
//
// LSTM: i = σ(a_i), f = σ(a_f), g = tanh(a_g), o = σ(a_o); c = f·c_prev + i·g; h = o·tanh(c).
//   workspace [B, 4H] keeps (i, f, g, o); the backward takes it, c_prev and c.
// GRU (PyTorch's fused cell: input gates x·W_ihᵀ + b_ih and hidden gates h·W_hhᵀ + b_hh apart):
//   r = σ(x_r + h_r), z = σ(x_z + h_z), n = tanh(x_n + r·h_n), h' = n + z·(h - n).
//   workspace [B, 4H] keeps (r, z, n, h_n); the backward takes it and h.
#include <cstdint>

#include "backends/backend.h"
#include "backends/checks.h"
#include "backends/scalar_math.h"
#include "base/dtype.h"
#include "base/host_device.h"

namespace ember::rnn_math {

template <typename T>
EMBER_HOST_DEVICE T sigmoid(T x) {
  return T(1) / (T(1) + kernels::m_exp(-x));
}

// Row b's four workspace values of unit j: (i, f, g, o) of the LSTM, (r, z, n, h_n) of the GRU, H apart.
template <typename T>
EMBER_HOST_DEVICE void store4(T* ws, int64_t b, int64_t j, int64_t H, T a0, T a1, T a2, T a3) {
  T* w = ws + b * 4 * H + j;
  w[0] = a0;
  w[H] = a1;
  w[2 * H] = a2;
  w[3 * H] = a3;
}

// One element of the LSTM cell forward. gates [B, 4H], c_prev/h/c [B, H], ws [B, 4H].
template <typename T>
EMBER_HOST_DEVICE void lstm_forward_at(int64_t b, int64_t j, int64_t H, const T* gates, const T* c_prev, T* h, T* c,
                                       T* ws) {
  const T* a = gates + b * 4 * H;
  const T i = sigmoid(a[j]), f = sigmoid(a[H + j]), g = kernels::m_tanh(a[2 * H + j]), o = sigmoid(a[3 * H + j]);
  const int64_t k = b * H + j;
  const T cn = f * c_prev[k] + i * g;
  c[k] = cn;
  h[k] = o * kernels::m_tanh(cn);
  store4(ws, b, j, H, i, f, g, o);
}

// One element of the LSTM cell backward: from grad_h and grad_c (either may be null: zero) to the gradient
// of the summed gates (pre-activation) and of c_prev (may be null: not wanted).
template <typename T>
EMBER_HOST_DEVICE void lstm_backward_at(int64_t b, int64_t j, int64_t H, const T* grad_h, const T* grad_c,
                                        const T* c_prev, const T* c, const T* ws, T* grad_gates, T* grad_c_prev) {
  const int64_t k = b * H + j;
  const T* w = ws + b * 4 * H;
  const T i = w[j], f = w[H + j], g = w[2 * H + j], o = w[3 * H + j];
  const T gh = grad_h != nullptr ? grad_h[k] : T(0);
  const T tc = kernels::m_tanh(c[k]);
  const T gc = (grad_c != nullptr ? grad_c[k] : T(0)) + gh * o * (T(1) - tc * tc);
  T* d = grad_gates + b * 4 * H;
  d[j] = gc * g * i * (T(1) - i);
  d[H + j] = gc * c_prev[k] * f * (T(1) - f);
  d[2 * H + j] = gc * i * (T(1) - g * g);
  d[3 * H + j] = gh * tc * o * (T(1) - o);
  if (grad_c_prev != nullptr) grad_c_prev[k] = gc * f;
}

// One element of the GRU cell forward. input_gates/hidden_gates [B, 3H], h_prev/h [B, H], ws [B, 4H].
template <typename T>
EMBER_HOST_DEVICE void gru_forward_at(int64_t b, int64_t j, int64_t H, const T* input_gates, const T* hidden_gates,
                                      const T* h_prev, T* h, T* ws) {
  const T* x = input_gates + b * 3 * H;
  const T* hg = hidden_gates + b * 3 * H;
  const T r = sigmoid(x[j] + hg[j]), z = sigmoid(x[H + j] + hg[H + j]);
  const T hn = hg[2 * H + j];
  const T n = kernels::m_tanh(x[2 * H + j] + r * hn);
  h[b * H + j] = n + z * (h_prev[b * H + j] - n);
  store4(ws, b, j, H, r, z, n, hn);
}

// One element of the GRU cell backward: grad_h → the gradients of the input gates, the hidden gates and
// h_prev (each output may be null: not wanted). The r and z parts of both gate gradients are equal.
template <typename T>
EMBER_HOST_DEVICE void gru_backward_at(int64_t b, int64_t j, int64_t H, const T* grad_h, const T* h_prev, const T* ws,
                                       T* grad_input_gates, T* grad_hidden_gates, T* grad_h_prev) {
  const int64_t k = b * H + j;
  const T* w = ws + b * 4 * H;
  const T r = w[j], z = w[H + j], n = w[2 * H + j], hn = w[3 * H + j];
  const T gh = grad_h[k];
  const T gn = gh * (T(1) - z) * (T(1) - n * n);  // through n's tanh: the gradient of x_n
  const T gr = gn * hn * r * (T(1) - r);
  const T gz = gh * (h_prev[k] - n) * z * (T(1) - z);
  if (grad_input_gates != nullptr) {
    T* d = grad_input_gates + b * 3 * H;
    d[j] = gr;
    d[H + j] = gz;
    d[2 * H + j] = gn;
  }
  if (grad_hidden_gates != nullptr) {
    T* d = grad_hidden_gates + b * 3 * H;
    d[j] = gr;
    d[H + j] = gz;
    d[2 * H + j] = gn * r;
  }
  if (grad_h_prev != nullptr) grad_h_prev[k] = gh * z;
}

// The four cells as index-loop bodies, element i = (b, j) = (i / H, i % H) of [B, H]: what both backends
// launch (the CPU's for_each_index, CUDA's launch_index) after checks::check_<cell>.
template <typename T>
struct LstmForward {
  const T *gates, *c_prev;
  T *h, *c, *ws;
  int64_t H;
  EMBER_HOST_DEVICE void operator()(int64_t i) const { lstm_forward_at(i / H, i % H, H, gates, c_prev, h, c, ws); }
};
template <typename T>
struct LstmBackward {
  const T *grad_h, *grad_c, *c_prev, *c, *ws;
  T *grad_gates, *grad_c_prev;
  int64_t H;
  EMBER_HOST_DEVICE void operator()(int64_t i) const {
    lstm_backward_at(i / H, i % H, H, grad_h, grad_c, c_prev, c, ws, grad_gates, grad_c_prev);
  }
};
template <typename T>
struct GruForward {
  const T *input_gates, *hidden_gates, *h_prev;
  T *h, *ws;
  int64_t H;
  EMBER_HOST_DEVICE void operator()(int64_t i) const {
    gru_forward_at(i / H, i % H, H, input_gates, hidden_gates, h_prev, h, ws);
  }
};
template <typename T>
struct GruBackward {
  const T *grad_h, *h_prev, *ws;
  T *grad_input_gates, *grad_hidden_gates, *grad_h_prev;
  int64_t H;
  EMBER_HOST_DEVICE void operator()(int64_t i) const {
    gru_backward_at(i / H, i % H, H, grad_h, h_prev, ws, grad_input_gates, grad_hidden_gates, grad_h_prev);
  }
};

// Each cell entry of both backends: its check, its dtype, its body over the B·H elements.
// `launch(n, body)` runs body(i) for i in [0, n) (the backend's index loop).
template <typename Launch>
void lstm_cell_forward(const TensorArg& gates, const TensorArg& c_prev, const TensorArg& h, const TensorArg& c,
                       const TensorArg& workspace, Launch&& launch) {
  const checks::CellDims d = checks::check_lstm_cell_forward(gates, c_prev, h, c, workspace);
  dispatch_floating(c_prev.dtype, "lstm_cell", [&](auto tag) {
    using T = decltype(tag);
    launch(d.B * d.H, LstmForward<T>{gates.ptr<T>(), c_prev.ptr<T>(), h.ptr<T>(), c.ptr<T>(), workspace.ptr<T>(), d.H});
  });
}

template <typename Launch>
void lstm_cell_backward(const TensorArg* grad_h, const TensorArg* grad_c, const TensorArg& c_prev, const TensorArg& c,
                        const TensorArg& workspace, const TensorArg& grad_gates, const TensorArg* grad_c_prev,
                        Launch&& launch) {
  const checks::CellDims d =
      checks::check_lstm_cell_backward(grad_h, grad_c, c_prev, c, workspace, grad_gates, grad_c_prev);
  dispatch_floating(c_prev.dtype, "lstm_cell_backward", [&](auto tag) {
    using T = decltype(tag);
    launch(d.B * d.H, LstmBackward<T>{ptr_or_null<const T>(grad_h), ptr_or_null<const T>(grad_c), c_prev.ptr<T>(),
                                      c.ptr<T>(), workspace.ptr<T>(), grad_gates.ptr<T>(), ptr_or_null<T>(grad_c_prev),
                                      d.H});
  });
}

template <typename Launch>
void gru_cell_forward(const TensorArg& input_gates, const TensorArg& hidden_gates, const TensorArg& h_prev,
                      const TensorArg& h, const TensorArg& workspace, Launch&& launch) {
  const checks::CellDims d = checks::check_gru_cell_forward(input_gates, hidden_gates, h_prev, h, workspace);
  dispatch_floating(h_prev.dtype, "gru_cell", [&](auto tag) {
    using T = decltype(tag);
    launch(d.B * d.H, GruForward<T>{input_gates.ptr<T>(), hidden_gates.ptr<T>(), h_prev.ptr<T>(), h.ptr<T>(),
                                    workspace.ptr<T>(), d.H});
  });
}

template <typename Launch>
void gru_cell_backward(const TensorArg& grad_h, const TensorArg& h_prev, const TensorArg& workspace,
                       const TensorArg* grad_input_gates, const TensorArg* grad_hidden_gates,
                       const TensorArg* grad_h_prev, Launch&& launch) {
  const checks::CellDims d =
      checks::check_gru_cell_backward(grad_h, h_prev, workspace, grad_input_gates, grad_hidden_gates, grad_h_prev);
  dispatch_floating(h_prev.dtype, "gru_cell_backward", [&](auto tag) {
    using T = decltype(tag);
    launch(d.B * d.H, GruBackward<T>{grad_h.ptr<T>(), h_prev.ptr<T>(), workspace.ptr<T>(),
                                     ptr_or_null<T>(grad_input_gates), ptr_or_null<T>(grad_hidden_gates),
                                     ptr_or_null<T>(grad_h_prev), d.H});
  });
}

}  // namespace ember::rnn_math
