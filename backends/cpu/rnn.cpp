// The pointwise part of the LSTM and GRU cells over [B, H] elements (the formulas are backends/rnn_math.h's,
// shared with backends/cuda/rnn.cu); the step's matmuls run outside, through matmul.
#include <algorithm>

#include "backends/cpu/cpu_backend.h"
#include "base/parallel.h"
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
  const auto d = rnn_math::check_lstm_forward(gates, c_prev, h, c, workspace);
  const int64_t B = d.B, H = d.H;  // not a structured binding: lambdas capture them below
  dispatch_floating(c_prev.dtype, "lstm_cell", [&](auto tag) {
    using T = decltype(tag);
    for_each_cell(B, H, [&](int64_t b, int64_t j) {
      rnn_math::lstm_forward_at(b, j, H, gates.ptr<T>(), c_prev.ptr<T>(), h.ptr<T>(), c.ptr<T>(), workspace.ptr<T>());
    });
  });
}

void CpuBackend::lstm_cell_backward(const TensorArg* grad_h, const TensorArg* grad_c, const TensorArg& c_prev,
                                    const TensorArg& c, const TensorArg& workspace, const TensorArg& grad_gates,
                                    const TensorArg* grad_c_prev) {
  const auto d = rnn_math::check_lstm_backward(grad_h, grad_c, c_prev, c, workspace, grad_gates, grad_c_prev);
  const int64_t B = d.B, H = d.H;  // not a structured binding: lambdas capture them below
  dispatch_floating(c_prev.dtype, "lstm_cell_backward", [&](auto tag) {
    using T = decltype(tag);
    for_each_cell(B, H, [&](int64_t b, int64_t j) {
      rnn_math::lstm_backward_at(b, j, H, ptr_or_null<const T>(grad_h), ptr_or_null<const T>(grad_c), c_prev.ptr<T>(),
                                 c.ptr<T>(), workspace.ptr<T>(), grad_gates.ptr<T>(), ptr_or_null<T>(grad_c_prev));
    });
  });
}

void CpuBackend::gru_cell_forward(const TensorArg& input_gates, const TensorArg& hidden_gates,
                                  const TensorArg& h_prev, const TensorArg& h, const TensorArg& workspace) {
  const auto d = rnn_math::check_gru_forward(input_gates, hidden_gates, h_prev, h, workspace);
  const int64_t B = d.B, H = d.H;  // not a structured binding: lambdas capture them below
  dispatch_floating(h_prev.dtype, "gru_cell", [&](auto tag) {
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
  const auto d =
      rnn_math::check_gru_backward(grad_h, h_prev, workspace, grad_input_gates, grad_hidden_gates, grad_h_prev);
  const int64_t B = d.B, H = d.H;  // not a structured binding: lambdas capture them below
  dispatch_floating(h_prev.dtype, "gru_cell_backward", [&](auto tag) {
    using T = decltype(tag);
    for_each_cell(B, H, [&](int64_t b, int64_t j) {
      rnn_math::gru_backward_at(b, j, H, grad_h.ptr<T>(), h_prev.ptr<T>(), workspace.ptr<T>(),
                                ptr_or_null<T>(grad_input_gates), ptr_or_null<T>(grad_hidden_gates),
                                ptr_or_null<T>(grad_h_prev));
    });
  });
}

}  // namespace ember::cpu
