// The pointwise part of the LSTM and GRU cells, one thread per (b, j) element of [B, H], as
// backends/cpu/rnn.cpp: the formulas are backends/rnn_math.h's. The step's matmuls run through cuBLAS outside.
#include <tuple>

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
  const char* op = "lstm_cell";
  EMBER_CHECK(c_prev.ndim == 2, op, ": c_prev must be [B, H], got ", c_prev.ndim, " dims");
  const int64_t B = c_prev.shape[0], H = c_prev.shape[1];
  for (const auto& [name, t, width] : {std::tuple{"gates", &gates, 4 * H}, std::tuple{"h", &h, H},
                                       std::tuple{"c", &c, H}, std::tuple{"workspace", &workspace, 4 * H}})
    rnn_math::check_cell_operand(op, name, t, c_prev, B, width);
  DeviceContext& ctx = context(c_prev.device_index);
  dispatch_floating(c_prev.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    launch_index(ctx.stream, B * H,
                 LstmForward<T>{gates.ptr<T>(), c_prev.ptr<T>(), h.ptr<T>(), c.ptr<T>(), workspace.ptr<T>(), H});
  });
}

void CudaBackend::lstm_cell_backward(const TensorArg* grad_h, const TensorArg* grad_c, const TensorArg& c_prev,
                                     const TensorArg& c, const TensorArg& workspace, const TensorArg& grad_gates,
                                     const TensorArg* grad_c_prev) {
  const char* op = "lstm_cell_backward";
  EMBER_CHECK(c_prev.ndim == 2, op, ": c_prev must be [B, H], got ", c_prev.ndim, " dims");
  const int64_t B = c_prev.shape[0], H = c_prev.shape[1];
  for (const auto& [name, t, width] :
       {std::tuple{"grad_h", grad_h, H}, std::tuple{"grad_c", grad_c, H}, std::tuple{"c", &c, H},
        std::tuple{"workspace", &workspace, 4 * H}, std::tuple{"grad_gates", &grad_gates, 4 * H},
        std::tuple{"grad_c_prev", grad_c_prev, H}})
    rnn_math::check_cell_operand(op, name, t, c_prev, B, width);
  DeviceContext& ctx = context(c_prev.device_index);
  dispatch_floating(c_prev.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    launch_index(ctx.stream, B * H,
                 LstmBackward<T>{ptr_or_null<const T>(grad_h), ptr_or_null<const T>(grad_c), c_prev.ptr<T>(),
                                 c.ptr<T>(), workspace.ptr<T>(), grad_gates.ptr<T>(), ptr_or_null<T>(grad_c_prev), H});
  });
}

void CudaBackend::gru_cell_forward(const TensorArg& input_gates, const TensorArg& hidden_gates,
                                   const TensorArg& h_prev, const TensorArg& h, const TensorArg& workspace) {
  const char* op = "gru_cell";
  EMBER_CHECK(h_prev.ndim == 2, op, ": h_prev must be [B, H], got ", h_prev.ndim, " dims");
  const int64_t B = h_prev.shape[0], H = h_prev.shape[1];
  for (const auto& [name, t, width] :
       {std::tuple{"input_gates", &input_gates, 3 * H}, std::tuple{"hidden_gates", &hidden_gates, 3 * H},
        std::tuple{"h", &h, H}, std::tuple{"workspace", &workspace, 4 * H}})
    rnn_math::check_cell_operand(op, name, t, h_prev, B, width);
  DeviceContext& ctx = context(h_prev.device_index);
  dispatch_floating(h_prev.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    launch_index(ctx.stream, B * H,
                 GruForward<T>{input_gates.ptr<T>(), hidden_gates.ptr<T>(), h_prev.ptr<T>(), h.ptr<T>(),
                               workspace.ptr<T>(), H});
  });
}

void CudaBackend::gru_cell_backward(const TensorArg& grad_h, const TensorArg& h_prev, const TensorArg& workspace,
                                    const TensorArg* grad_input_gates, const TensorArg* grad_hidden_gates,
                                    const TensorArg* grad_h_prev) {
  const char* op = "gru_cell_backward";
  EMBER_CHECK(h_prev.ndim == 2, op, ": h_prev must be [B, H], got ", h_prev.ndim, " dims");
  const int64_t B = h_prev.shape[0], H = h_prev.shape[1];
  for (const auto& [name, t, width] :
       {std::tuple{"grad_h", &grad_h, H}, std::tuple{"workspace", &workspace, 4 * H},
        std::tuple{"grad_input_gates", grad_input_gates, 3 * H},
        std::tuple{"grad_hidden_gates", grad_hidden_gates, 3 * H}, std::tuple{"grad_h_prev", grad_h_prev, H}})
    rnn_math::check_cell_operand(op, name, t, h_prev, B, width);
  DeviceContext& ctx = context(h_prev.device_index);
  dispatch_floating(h_prev.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    launch_index(ctx.stream, B * H,
                 GruBackward<T>{grad_h.ptr<T>(), h_prev.ptr<T>(), workspace.ptr<T>(), ptr_or_null<T>(grad_input_gates),
                                ptr_or_null<T>(grad_hidden_gates), ptr_or_null<T>(grad_h_prev), H});
  });
}

}  // namespace ember::cuda
