// The pointwise part of the LSTM and GRU cells, one thread per (b, j) element of [B, H], as
// backends/cpu/rnn.cpp: the formulas are backends/rnn_math.h's. The step's matmuls run through cuBLAS outside.

#include "backends/cuda/loops.cuh"
#include "backends/rnn_math.h"

namespace ember::cuda {
namespace {

template <typename T>
struct LstmForward {
  const T *gates, *c_prev;
  T *h, *c, *ws;
  int64_t H;
  __device__ void operator()(int64_t i) const { rnn_math::lstm_forward_at(i / H, i % H, H, gates, c_prev, h, c, ws); }
};
template <typename T>
struct LstmBackward {
  const T *grad_h, *grad_c, *c_prev, *c, *ws;
  T *grad_gates, *grad_c_prev;
  int64_t H;
  __device__ void operator()(int64_t i) const {
    rnn_math::lstm_backward_at(i / H, i % H, H, grad_h, grad_c, c_prev, c, ws, grad_gates, grad_c_prev);
  }
};
template <typename T>
struct GruForward {
  const T *input_gates, *hidden_gates, *h_prev;
  T *h, *ws;
  int64_t H;
  __device__ void operator()(int64_t i) const {
    rnn_math::gru_forward_at(i / H, i % H, H, input_gates, hidden_gates, h_prev, h, ws);
  }
};
template <typename T>
struct GruBackward {
  const T *grad_h, *h_prev, *ws;
  T *grad_input_gates, *grad_hidden_gates, *grad_h_prev;
  int64_t H;
  __device__ void operator()(int64_t i) const {
    rnn_math::gru_backward_at(i / H, i % H, H, grad_h, h_prev, ws, grad_input_gates, grad_hidden_gates, grad_h_prev);
  }
};

}  // namespace

void CudaBackend::lstm_cell_forward(const TensorArg& gates, const TensorArg& c_prev, const TensorArg& h,
                                    const TensorArg& c, const TensorArg& workspace) {
  const auto d = rnn_math::check_lstm_forward(gates, c_prev, h, c, workspace);
  const int64_t B = d.B, H = d.H;  // not a structured binding: lambdas capture them below
  DeviceContext& ctx = context(c_prev.device_index);
  dispatch_floating(c_prev.dtype, "lstm_cell", [&](auto tag) {
    using T = decltype(tag);
    launch_index(ctx.stream, B * H,
                 LstmForward<T>{gates.ptr<T>(), c_prev.ptr<T>(), h.ptr<T>(), c.ptr<T>(), workspace.ptr<T>(), H});
  });
}

void CudaBackend::lstm_cell_backward(const TensorArg* grad_h, const TensorArg* grad_c, const TensorArg& c_prev,
                                     const TensorArg& c, const TensorArg& workspace, const TensorArg& grad_gates,
                                     const TensorArg* grad_c_prev) {
  const auto d = rnn_math::check_lstm_backward(grad_h, grad_c, c_prev, c, workspace, grad_gates, grad_c_prev);
  const int64_t B = d.B, H = d.H;  // not a structured binding: lambdas capture them below
  DeviceContext& ctx = context(c_prev.device_index);
  dispatch_floating(c_prev.dtype, "lstm_cell_backward", [&](auto tag) {
    using T = decltype(tag);
    launch_index(ctx.stream, B * H,
                 LstmBackward<T>{ptr_or_null<const T>(grad_h), ptr_or_null<const T>(grad_c), c_prev.ptr<T>(),
                                 c.ptr<T>(), workspace.ptr<T>(), grad_gates.ptr<T>(), ptr_or_null<T>(grad_c_prev), H});
  });
}

void CudaBackend::gru_cell_forward(const TensorArg& input_gates, const TensorArg& hidden_gates,
                                   const TensorArg& h_prev, const TensorArg& h, const TensorArg& workspace) {
  const auto d = rnn_math::check_gru_forward(input_gates, hidden_gates, h_prev, h, workspace);
  const int64_t B = d.B, H = d.H;  // not a structured binding: lambdas capture them below
  DeviceContext& ctx = context(h_prev.device_index);
  dispatch_floating(h_prev.dtype, "gru_cell", [&](auto tag) {
    using T = decltype(tag);
    launch_index(ctx.stream, B * H,
                 GruForward<T>{input_gates.ptr<T>(), hidden_gates.ptr<T>(), h_prev.ptr<T>(), h.ptr<T>(),
                               workspace.ptr<T>(), H});
  });
}

void CudaBackend::gru_cell_backward(const TensorArg& grad_h, const TensorArg& h_prev, const TensorArg& workspace,
                                    const TensorArg* grad_input_gates, const TensorArg* grad_hidden_gates,
                                    const TensorArg* grad_h_prev) {
  const auto d =
      rnn_math::check_gru_backward(grad_h, h_prev, workspace, grad_input_gates, grad_hidden_gates, grad_h_prev);
  const int64_t B = d.B, H = d.H;  // not a structured binding: lambdas capture them below
  DeviceContext& ctx = context(h_prev.device_index);
  dispatch_floating(h_prev.dtype, "gru_cell_backward", [&](auto tag) {
    using T = decltype(tag);
    launch_index(ctx.stream, B * H,
                 GruBackward<T>{grad_h.ptr<T>(), h_prev.ptr<T>(), workspace.ptr<T>(), ptr_or_null<T>(grad_input_gates),
                                ptr_or_null<T>(grad_hidden_gates), ptr_or_null<T>(grad_h_prev), H});
  });
}

}  // namespace ember::cuda
