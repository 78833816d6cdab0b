#pragma once
// The operand checks of every backend entry, written once (ATen's "meta" functions): check_<entry> is
// called first by the CPU backend's and the CUDA backend's implementation of <entry> (backends/backend.h),
// so both accept the same calls and refuse the others with the same message, and a CPU test of a message
// (tests/test_op_checks.cpp) covers the CUDA backend's too. Host code only; each throws ember::Error naming
// the op and the operand, and returns the sizes the loops use where the entry has any.
//
// What they check is what the kernels rely on to stay inside their buffers: ranks, shapes that agree, dtypes,
// contiguity where the entry requires it, and the parameters' ranges. Core checks the user's call first
// (broadcasting, dims, dtypes, with the user's names); these checks are the backends' own floor below it.
// Checks of the data itself (an index out of range, a bad class target) run in the loops; their messages are
// the throw_* functions at the end, which both backends raise (the CPU at once, CUDA at its next call).
// Entries without a check: copy_bytes_host (raw bytes) and fill (any tensor).
#include <cstdint>
#include <string_view>

#include "backends/backend.h"

namespace ember::checks {

// --- element-wise (every operand of one shape: core has expanded them) --------------------------------------
void check_copy(const TensorArg& src, const TensorArg& dst);
void check_unary(UnaryOp op, const TensorArg& in, const TensorArg& out);
void check_unary_backward(UnaryOp op, const TensorArg& grad_out, const TensorArg& saved, const TensorArg& grad_in);
void check_binary(BinaryOp op, const TensorArg& a, const TensorArg& b, const TensorArg& out);
void check_where(const TensorArg& cond, const TensorArg& a, const TensorArg& b, const TensorArg& out);

// --- reductions, scans, sorts ------------------------------------------------------------------------------
// The number of reduced elements (the input's size over the dims where out has size 1).
int64_t check_reduce(ReduceOp op, const TensorArg& in, const TensorArg& out);
void check_arg_reduce(ArgReduceOp op, const TensorArg& in, const TensorArg& out, int dim);
void check_cumsum(const TensorArg& in, const TensorArg& out, int dim);
void check_sort(const TensorArg& in, const TensorArg& values, const TensorArg& indices, int dim);

// --- indexing, random, matmul, optimizer --------------------------------------------------------------------
void check_index(IndexOp op, const TensorArg& in, const TensorArg& index, const TensorArg& out, int dim);
// src (iterated, the index's shape) reduced into out along dim; index i64 of src's shape; not bool.
void check_scatter_reduce(ScatterReduceOp op, const TensorArg& src, const TensorArg& index, const TensorArg& out,
                          int dim);
void check_random(const TensorArg& out);
struct MatmulDims {
  int64_t B, M, N, K;
};
MatmulDims check_matmul(const TensorArg& a, const TensorArg& b, const TensorArg& out);
void check_optimizer_step(OptimizerOp op, const OptimizerParams& p, const TensorArg& param, const TensorArg& grad,
                          const TensorArg* s0, const TensorArg* s1, const TensorArg* s2);

// --- convolution, pooling -------------------------------------------------------------------------------------
// The output size of a convolution along one dim: ⌊(in + 2·pad - dilation·(kernel - 1) - 1) / stride⌋ + 1.
int64_t conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation);
void check_conv2d_forward(const TensorArg& x, const TensorArg& w, const TensorArg* bias, const TensorArg& y,
                          const Conv2dParams& p);
void check_conv2d_backward(const TensorArg& x, const TensorArg& w, const TensorArg& grad_y, const TensorArg* grad_x,
                           const TensorArg* grad_w, const TensorArg* grad_bias, const Conv2dParams& p);
struct PoolDims {
  int64_t planes, H, W, OH, OW;  // planes = N·C
};
PoolDims check_pool2d_forward(PoolOp op, const TensorArg& x, const TensorArg& y, const TensorArg* indices,
                              const Pool2dParams& p);
PoolDims check_pool2d_backward(PoolOp op, const TensorArg& grad_y, const TensorArg* indices, const TensorArg& grad_x,
                               const Pool2dParams& p);

// --- softmax, cross entropy, norms ----------------------------------------------------------------------------
struct RowDims {
  int64_t M, D;  // M rows of D elements (the last dim)
};
RowDims check_softmax_forward(const TensorArg& x, const TensorArg& y);
RowDims check_softmax_backward(const TensorArg& grad_y, const TensorArg& y, const TensorArg& grad_x);
struct XentDims {
  int64_t N, C;
};
XentDims check_cross_entropy_forward(const TensorArg& logits, const TensorArg& target, const TensorArg& loss,
                                     const TensorArg& lse, double label_smoothing);
XentDims check_cross_entropy_backward(const TensorArg& logits, const TensorArg& target, const TensorArg& lse,
                                      const TensorArg& grad_loss, const TensorArg& grad_logits,
                                      double label_smoothing);
struct BatchNormDims {
  int64_t N, C, S;  // x seen as [N, C, S]
};
BatchNormDims check_batch_norm_forward(const TensorArg& x, const TensorArg* weight, const TensorArg* bias,
                                       const TensorArg* running_mean, const TensorArg* running_var, const TensorArg& y,
                                       const TensorArg& save_mean, const TensorArg& save_invstd, bool training);
BatchNormDims check_batch_norm_backward(const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight,
                                        const TensorArg& save_mean, const TensorArg& save_invstd,
                                        const TensorArg* grad_x, const TensorArg* grad_weight,
                                        const TensorArg* grad_bias);
RowDims check_layer_norm_forward(const TensorArg& x, const TensorArg* weight, const TensorArg* bias,
                                 const TensorArg& y, const TensorArg& save_mean, const TensorArg& save_invstd);
RowDims check_layer_norm_backward(const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight,
                                  const TensorArg& save_mean, const TensorArg& save_invstd, const TensorArg* grad_x,
                                  const TensorArg* grad_weight, const TensorArg* grad_bias);
RowDims check_rms_norm_forward(const TensorArg& x, const TensorArg* weight, const TensorArg& y,
                               const TensorArg& save_invrms);
RowDims check_rms_norm_backward(const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight,
                                const TensorArg& save_invrms, const TensorArg* grad_x, const TensorArg* grad_weight);

// --- recurrent cells: {B, H} of the state (c_prev for the LSTM, h_prev for the GRU) ---------------------------
struct CellDims {
  int64_t B, H;
};
CellDims check_lstm_cell_forward(const TensorArg& gates, const TensorArg& c_prev, const TensorArg& h,
                                 const TensorArg& c, const TensorArg& workspace);
CellDims check_lstm_cell_backward(const TensorArg* grad_h, const TensorArg* grad_c, const TensorArg& c_prev,
                                  const TensorArg& c, const TensorArg& workspace, const TensorArg& grad_gates,
                                  const TensorArg* grad_c_prev);
CellDims check_gru_cell_forward(const TensorArg& input_gates, const TensorArg& hidden_gates, const TensorArg& h_prev,
                                const TensorArg& h, const TensorArg& workspace);
CellDims check_gru_cell_backward(const TensorArg& grad_h, const TensorArg& h_prev, const TensorArg& workspace,
                                 const TensorArg* grad_input_gates, const TensorArg* grad_hidden_gates,
                                 const TensorArg* grad_h_prev);

// --- attention: q [B, H, L, E], k [B, Hkv, S, E], v [B, Hkv, S, Ev] (H a multiple of Hkv) ---------------------
struct AttentionDims {
  int64_t B, H, L, S, E, Ev;
  int64_t Hkv;  // kv heads: H for plain attention, fewer for grouped-query attention (attention_math::kv_head)
};
AttentionDims check_attention_forward(const TensorArg& q, const TensorArg& k, const TensorArg& v,
                                      const TensorArg* mask, const TensorArg& out, const TensorArg& lse,
                                      const AttentionParams& p);
AttentionDims check_attention_backward(const TensorArg& q, const TensorArg& k, const TensorArg& v,
                                       const TensorArg* mask, const TensorArg& out, const TensorArg& lse,
                                       const TensorArg& grad_out, const TensorArg* grad_q, const TensorArg* grad_k,
                                       const TensorArg* grad_v, const AttentionParams& p);

// --- rotary: x a strided [B, H, L, E] view, cos and sin [L, R/2] (R <= E), out [B, H, L, E] -----------------
struct RotaryDims {
  int64_t B, H, L, E;
  int64_t pairs;  // R/2: the rotated pairs of each row
};
RotaryDims check_rotary(const TensorArg& x, const TensorArg& cos, const TensorArg& sin, const TensorArg& out);

// --- errors the loops find in the data ------------------------------------------------------------------------
// "gather/index_select: index 7 is out of range for dim 0 of size 3" (scatter, scatter_add: their names), then
// `where` (CUDA: which device found it).
[[noreturn]] void throw_index_out_of_range(IndexOp op, int64_t value, int64_t dim, int64_t limit,
                                           std::string_view where = {});
// A cross-entropy target outside [0, C) that is not the ignore_index; `ignore_index_is_class`: the
// ignore_index lies in [0, C) (the message then names it as the other valid value).
[[noreturn]] void throw_bad_target(int64_t value, int64_t sample, int64_t C, bool ignore_index_is_class,
                                   std::string_view where = {});

}  // namespace ember::checks
