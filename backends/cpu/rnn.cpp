// The pointwise part of the LSTM and GRU cells over [B, H] elements (the formulas are backends/rnn_math.h's,
// shared with backends/cuda/rnn.cu); the step's matmuls run outside, through matmul.
#include <algorithm>
#include <tuple>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/parallel.h"
#include "backends/rnn_math.h"

namespace ember::cpu {
namespace {

// Calls f(b, j) for every element of [B, H], rows split across threads.
template <typename F>
void for_each_cell(int64_t B, int64_t H, F&& f) {
  // A step is small (B·H elements, a few transcendentals each): threads only from about 8192 elements on.
  parallel_for(B, std::max<int64_t>(1, 8192 / std::max<int64_t>(1, H)), [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b)
      for (int64_t j = 0; j < H; ++j) f(b, j);
  });
}

}  // namespace

void CpuBackend::lstm_cell_forward(const TensorArg& gates, const TensorArg& c_prev, const TensorArg& h,
                                   const TensorArg& c, const TensorArg& workspace) {
  const char* op = "lstm_cell";
  EMBER_CHECK(c_prev.ndim == 2, op, ": c_prev must be [B, H], got ", c_prev.ndim, " dims");
  const int64_t B = c_prev.shape[0], H = c_prev.shape[1];
  for (const auto& [name, t, width] : {std::tuple{"gates", &gates, 4 * H}, std::tuple{"h", &h, H},
                                       std::tuple{"c", &c, H}, std::tuple{"workspace", &workspace, 4 * H}})
    rnn_math::check_cell_operand(op, name, t, c_prev, B, width);
  dispatch_floating(c_prev.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    for_each_cell(B, H, [&](int64_t b, int64_t j) {
      rnn_math::lstm_forward_at(b, j, H, gates.ptr<T>(), c_prev.ptr<T>(), h.ptr<T>(), c.ptr<T>(), workspace.ptr<T>());
    });
  });
}

void CpuBackend::lstm_cell_backward(const TensorArg* grad_h, const TensorArg* grad_c, const TensorArg& c_prev,
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
  dispatch_floating(c_prev.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    for_each_cell(B, H, [&](int64_t b, int64_t j) {
      rnn_math::lstm_backward_at(b, j, H, ptr_or_null<const T>(grad_h), ptr_or_null<const T>(grad_c), c_prev.ptr<T>(),
                                 c.ptr<T>(), workspace.ptr<T>(), grad_gates.ptr<T>(), ptr_or_null<T>(grad_c_prev));
    });
  });
}

void CpuBackend::gru_cell_forward(const TensorArg& input_gates, const TensorArg& hidden_gates,
                                  const TensorArg& h_prev, const TensorArg& h, const TensorArg& workspace) {
  const char* op = "gru_cell";
  EMBER_CHECK(h_prev.ndim == 2, op, ": h_prev must be [B, H], got ", h_prev.ndim, " dims");
  const int64_t B = h_prev.shape[0], H = h_prev.shape[1];
  for (const auto& [name, t, width] :
       {std::tuple{"input_gates", &input_gates, 3 * H}, std::tuple{"hidden_gates", &hidden_gates, 3 * H},
        std::tuple{"h", &h, H}, std::tuple{"workspace", &workspace, 4 * H}})
    rnn_math::check_cell_operand(op, name, t, h_prev, B, width);
  dispatch_floating(h_prev.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    for_each_cell(B, H, [&](int64_t b, int64_t j) {
      rnn_math::gru_forward_at(b, j, H, input_gates.ptr<T>(), hidden_gates.ptr<T>(), h_prev.ptr<T>(), h.ptr<T>(),
                               workspace.ptr<T>());
    });
  });
}

void CpuBackend::gru_cell_backward(const TensorArg& grad_h, const TensorArg& h_prev, const TensorArg& workspace,
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
  dispatch_floating(h_prev.dtype, op, [&](auto tag) {
    using T = decltype(tag);
    for_each_cell(B, H, [&](int64_t b, int64_t j) {
      rnn_math::gru_backward_at(b, j, H, grad_h.ptr<T>(), h_prev.ptr<T>(), workspace.ptr<T>(),
                                ptr_or_null<T>(grad_input_gates), ptr_or_null<T>(grad_hidden_gates),
                                ptr_or_null<T>(grad_h_prev));
    });
  });
}

}  // namespace ember::cpu
