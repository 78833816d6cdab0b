// The pointwise part of the LSTM and GRU cells, one thread per (b, j) element of [B, H]: the entries, checks
// and bodies are backends/rnn_math.h's (shared with backends/cpu/rnn.cpp), launched here. The step's matmuls
// run through cuBLAS outside.
#include "backends/cuda/loops.cuh"
#include "backends/rnn_math.h"

namespace ember::cuda {

void CudaBackend::lstm_cell_forward(const TensorArg& gates, const TensorArg& c_prev, const TensorArg& h,
                                    const TensorArg& c, const TensorArg& workspace) {
  rnn_math::lstm_cell_forward(gates, c_prev, h, c, workspace, index_launcher(context(c_prev.device_index)));
}

void CudaBackend::lstm_cell_backward(const TensorArg* grad_h, const TensorArg* grad_c, const TensorArg& c_prev,
                                     const TensorArg& c, const TensorArg& workspace, const TensorArg& grad_gates,
                                     const TensorArg* grad_c_prev) {
  rnn_math::lstm_cell_backward(grad_h, grad_c, c_prev, c, workspace, grad_gates, grad_c_prev,
                               index_launcher(context(c_prev.device_index)));
}

void CudaBackend::gru_cell_forward(const TensorArg& input_gates, const TensorArg& hidden_gates,
                                   const TensorArg& h_prev, const TensorArg& h, const TensorArg& workspace) {
  rnn_math::gru_cell_forward(input_gates, hidden_gates, h_prev, h, workspace,
                             index_launcher(context(h_prev.device_index)));
}

void CudaBackend::gru_cell_backward(const TensorArg& grad_h, const TensorArg& h_prev, const TensorArg& workspace,
                                    const TensorArg* grad_input_gates, const TensorArg* grad_hidden_gates,
                                    const TensorArg* grad_h_prev) {
  rnn_math::gru_cell_backward(grad_h, h_prev, workspace, grad_input_gates, grad_hidden_gates, grad_h_prev,
                              index_launcher(context(h_prev.device_index)));
}

}  // namespace ember::cuda
