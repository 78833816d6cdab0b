// The pointwise part of the LSTM and GRU cells over [B, H] elements: the entries, checks and bodies are
// backends/rnn_math.h's (shared with backends/cuda/rnn.cu), run here in the CPU's index loop. The step's
// matmuls run outside, through matmul.
#include <cstdint>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/strided_loop.h"
#include "backends/rnn_math.h"

namespace ember::cpu {
namespace {

// A step is small (B·H elements, a few transcendentals each): threads only from about 8192 elements on.
const auto cells = [](int64_t n, const auto& body) { for_each_index(n, 8192, body); };

}  // namespace

void CpuBackend::lstm_cell_forward(const TensorArg& gates, const TensorArg& c_prev, const TensorArg& h,
                                   const TensorArg& c, const TensorArg& workspace) {
  rnn_math::lstm_cell_forward(gates, c_prev, h, c, workspace, cells);
}

void CpuBackend::lstm_cell_backward(const TensorArg* grad_h, const TensorArg* grad_c, const TensorArg& c_prev,
                                    const TensorArg& c, const TensorArg& workspace, const TensorArg& grad_gates,
                                    const TensorArg* grad_c_prev) {
  rnn_math::lstm_cell_backward(grad_h, grad_c, c_prev, c, workspace, grad_gates, grad_c_prev, cells);
}

void CpuBackend::gru_cell_forward(const TensorArg& input_gates, const TensorArg& hidden_gates,
                                  const TensorArg& h_prev, const TensorArg& h, const TensorArg& workspace) {
  rnn_math::gru_cell_forward(input_gates, hidden_gates, h_prev, h, workspace, cells);
}

void CpuBackend::gru_cell_backward(const TensorArg& grad_h, const TensorArg& h_prev, const TensorArg& workspace,
                                   const TensorArg* grad_input_gates, const TensorArg* grad_hidden_gates,
                                   const TensorArg* grad_h_prev) {
  rnn_math::gru_cell_backward(grad_h, h_prev, workspace, grad_input_gates, grad_hidden_gates, grad_h_prev, cells);
}

}  // namespace ember::cpu
