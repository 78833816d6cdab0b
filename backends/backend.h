#pragma once
// The Backend interface: everything a device must do for Ember, grouped by enums (tinygrad's llops,
// ggml-backend's vtable) rather than one virtual per op. One instance per DeviceType, found with
// backend(Device). Backends never broadcast: core hands them views whose broadcast dims have stride 0.
//
// Conventions for every entry:
// - A TensorArg describes a strided view: `data` already points at element 0; strides are in elements.
// - Inputs and output of one call have the same dtype unless the entry says otherwise (core converts).
// - Outputs never overlap inputs unless they are the same view of the same memory (in-place ops).
// - Calls are asynchronous with respect to the host on devices that can be (CUDA); synchronize() waits.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/device.h"
#include "base/dtype.h"
#include "backends/elementwise_ops.h"

namespace ember {

inline constexpr int kMaxDims = 8;

struct TensorArg {
  void* data = nullptr;
  DType dtype = DType::f32;
  int device_index = 0;  // the GPU the data lives on (CUDA backend); 0 on the CPU
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= shape[d];
    return n;
  }
  bool is_contiguous() const {
    int64_t expected = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      if (shape[d] != 1 && strides[d] != expected) return false;
      expected *= shape[d];
    }
    return true;
  }
  template <typename T> T* ptr() const { return static_cast<T*>(data); }
};

// The data of an optional operand (a `const TensorArg*` parameter): nullptr when it is absent.
template <typename T> T* ptr_or_null(const TensorArg* a) { return a != nullptr ? a->ptr<T>() : nullptr; }

// The element-wise ops (UnaryOp, BinaryOp), their names and properties: backends/elementwise_ops.h.

// Reductions over the dims where the output has size 1 and the input does not (keepdim form).
enum class ReduceOp : uint8_t { sum, mean, max, min };
// Index of the max/min along one dim (first occurrence on ties, as PyTorch); i64 output.
enum class ArgReduceOp : uint8_t { argmax, argmin };
enum class RandomOp : uint8_t { uniform, normal, bernoulli };
// gather: out[i][j][k] = in[i][index[i][j][k]][k] (dim = 1). scatter_add: out[i][index[i][j][k]][k] += in[i][j][k].
// scatter: out[i][index[i][j][k]][k] = in[i][j][k] (with repeated indices, one of the writes wins: the last in
// row-major order on the CPU, an unspecified one on CUDA, as PyTorch).
enum class IndexOp : uint8_t { gather, scatter_add, scatter };
// scatter_reduce: out[i][index[i][j][k]][k] = op(out[i][index[i][j][k]][k], in[i][j][k]) (dim = 1); amax/amin
// propagate NaN (backends/index_math.h). torch's "mean" is sum then a division, done in core.
enum class ScatterReduceOp : uint8_t { sum, prod, amax, amin };

// --- parameters of the fused neural-network ops ---------------------------------------------------------
// Pairs are (height, width).
struct Conv2dParams {
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  int64_t dilation[2] = {1, 1};
  int64_t groups = 1;
};
enum class PoolOp : uint8_t { max, avg };
struct Pool2dParams {
  int64_t kernel[2] = {1, 1};
  int64_t stride[2] = {1, 1};
  int64_t padding[2] = {0, 0};
  bool count_include_pad = true;  // avg: divide by the full window, padding included (PyTorch's default)
  // Adaptive pooling (adaptive_avg/max_pool2d): kernel, stride and padding are unused; output (oh, ow) pools
  // the window nn_math::adaptive_start/end give from H, W and the output's OH, OW.
  bool adaptive = false;
};

// --- scaled dot-product attention ---
// scale multiplies q·k; causal masks key j > query i (top-left aligned, PyTorch's is_causal); dropout_p > 0
// zeroes each attention weight with probability dropout_p (Philox keyed by seed, offset + the weight's
// index ((b·H + h)·L + i)·S + j) and scales the rest by 1/(1 - dropout_p).
struct AttentionParams {
  double scale = 1.0;
  bool causal = false;
  double dropout_p = 0.0;
  uint64_t seed = 0, offset = 0;
};

// --- rotary position embedding ---
// interleaved: rotate the pairs (2i, 2i+1) (GPT-J); else the pairs (i, i + R/2) (GPT-NeoX, Llama's
// rotate_half). inverse: rotate by -angle (the backward: the transpose of a rotation).
struct RotaryParams {
  bool interleaved = false;
  bool inverse = false;
};

// Fused optimizer updates: one pass over each parameter (PyTorch's single-tensor algorithms, same order of
// operations). `step` is the update's 1-based count (Adam's bias correction; SGD's first momentum step).
enum class OptimizerOp : uint8_t { sgd, adam, rmsprop };
struct OptimizerParams {
  double lr = 1e-3;
  double weight_decay = 0;
  bool decoupled_weight_decay = false;  // AdamW: p ← p·(1 - lr·wd) instead of adding wd·p to the gradient
  bool maximize = false;
  int64_t step = 1;
  // sgd
  double momentum = 0, dampening = 0;
  bool nesterov = false;
  // adam (beta1, beta2) and rmsprop (alpha = beta2)
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  bool amsgrad = false;
  bool centered = false;  // rmsprop
};

struct MemoryStats {
  size_t allocated = 0;      // bytes handed out to live tensors
  size_t peak_allocated = 0; // high-water mark of `allocated` since the last reset
  size_t reserved = 0;       // bytes held by the allocator (allocated + cached)
  uint64_t device_allocs = 0; // calls to the system/driver allocator (cache misses)
};

// allocate/deallocate with this device index on the CUDA backend serve page-locked (pinned) host memory:
// CPU tensors whose copies to the GPU are asynchronous (the DataLoader's batches for a CUDA run).
inline constexpr int kPinnedHostIndex = -1;

// --- the compute entries of every backend: one line each, with its signature -------------------------
// Backend declares them pure virtual; each backend declares its overrides with
// `EMBER_BACKEND_OPS(EMBER_BACKEND_OVERRIDE)`, so a signature is written once, here.
//
// copy: strided copy within this device, converting dtype if src and dst differ; dst may be strided.
// copy_bytes_host: raw bytes between this device and the host (to_host: device → host).
// unary: ops marked float_only in backends/elementwise_ops.h need f32/f64; no op takes bool.
// unary_backward: grad_in = grad_out · f'(x) of a unary op (f32/f64), from `saved`: x, y or nothing, as the
//   op's table line says (for `none`, pass any tensor of the shape: it is not read). One shape and dtype.
// binary: comparisons write b8 outputs; all others write the inputs' dtype.
// where: out = cond ? a : b; cond is b8, a/b/out share a dtype.
// reduce: over the dims where out has size 1 and `in` does not (keepdim form).
// arg_reduce: `out` (i64) has the input's shape with `dim` set to 1.
// cumsum: out = the running sum of `in` along `dim` (reverse: from the end, Σ_{j≥i}); in and out have one
//   shape and dtype (f32, f64 or i64; f32 accumulates in double). Rows along dim are independent.
// sort: values (in's dtype) and indices (i64) have in's shape: each row along `dim` sorted stably, ascending
//   or descending, NaN counting as the largest value (kernels::sort_before); indices are positions in the row.
// index: index is i64 with the shape of the iterated tensor (out for gather, in for scatter_add/scatter).
// random: counter-based Philox (element i of a call depends only on seed, offset and i). uniform in [a, b);
//   normal with mean a and std b; bernoulli: 1 with probability a. out is contiguous.
// matmul: out[b] = a[b] @ b[b]: a [B, M, K], b [B, K, N], out [B, M, N] contiguous. Each matrix of a and b
//   must have a unit stride in one of its two dims (row- or column-major); batch strides are free (0 allowed).
// optimizer_step: updates param in place from grad. State buffers (same shape, zero-initialised by the
//   optimizer): sgd: s0 = momentum buffer (when momentum ≠ 0); adam: s0 = exp_avg, s1 = exp_avg_sq,
//   s2 = max_exp_avg_sq (amsgrad); rmsprop: s0 = square_avg, s1 = momentum buffer, s2 = grad_avg (centered).
//
// The fused neural-network ops: all operands contiguous; an optional output passed as nullptr is not computed.
// conv2d: x [N, C, H, W], w [O, C/groups, KH, KW], bias [O], y [N, O, OH, OW].
// pool2d: x [N, C, H, W], y [N, C, OH, OW]; max writes `indices` (i64, y's shape: h * W + w of each window's
//   first maximum), which its backward routes the gradient to.
// softmax / log_softmax over the last dim of x seen as [M, D]; the backward takes the forward's output.
// cross_entropy with class indices: logits [N, C], target i64 [N] → loss [N] (0 where target ==
//   ignore_index) and lse [N] (each row's log-sum-exp, for the backward). With label smoothing ε the target
//   distribution is (1-ε)·onehot + ε/C. Backward: grad_logits = grad_loss[n] · (softmax - target
//   distribution), zero rows where ignored. Targets outside [0, C) other than ignore_index throw.
// batch_norm over x [N, C, S] (S = H·W, or 1). Training: batch statistics (biased variance for the
//   normalisation, unbiased for the running update: running = (1-momentum)·running + momentum·batch);
//   eval: running statistics. save_mean/save_invstd [C] are what the backward needs, in both modes.
// layer_norm over the last D elements of x seen as [M, D]; weight/bias [D]; save_mean/save_invstd [M].
// rms_norm over the last D elements of x seen as [M, D]: y = x·invrms·weight, invrms = 1/sqrt(mean(x²) + eps);
//   weight [D] or nullptr; save_invrms [M] is what the backward needs.
// attention: out = dropout(softmax(q·kᵀ·scale + mask)) · v without materialising the [L, S] scores:
//   q [B, H, L, E], k [B, Hkv, S, E], v [B, Hkv, S, Ev], out [B, H, L, Ev], lse [B, H, L] (each row's
//   log-sum-exp of the scores, all the backward needs besides out); mask: additive, q's dtype, a strided
//   [B, H, L, S] view (broadcast dims have stride 0) or nullptr. Grouped-query attention when Hkv < H
//   (H a multiple of Hkv): query head h reads kv head h / (H / Hkv), and the backward's dK, dV of a kv head
//   sum its group's query heads (in a fixed order: deterministic). A fully masked row gives 0 (PyTorch's
//   _safe_softmax) and its lse is +inf. The backward recomputes the scores block by block and writes the requested input gradients.
// rotary: out = x rotated pairwise by the angles of cos/sin [L, R/2] (row l: position l's cos/sin of each
//   pair's angle) over the first R dims of each row, the other E - R copied: x a strided [B, H, L, E] view,
//   out contiguous [B, H, L, E]. Pair j of row l (elements a, b): a' = a·cos - b·sin, b' = b·cos + a·sin
//   (sin negated when inverse). The backward is the entry with inverse on the output gradient.
// lstm_cell / gru_cell: the pointwise part of one recurrent step (the matmuls are done outside), PyTorch's
//   gate order. LSTM: gates [B, 4H] (x·W_ihᵀ + b_ih + h·W_hhᵀ + b_hh, order i, f, g, o), c_prev [B, H] → h, c
//   [B, H] and workspace [B, 4H] (the activated gates, for the backward); backward: grad_h, grad_c (either
//   nullptr: zero) → grad_gates [B, 4H] and grad_c_prev (nullptr: not computed). GRU: input_gates
//   (x·W_ihᵀ + b_ih) and hidden_gates (h·W_hhᵀ + b_hh) [B, 3H] (order r, z, n), h_prev [B, H] → h [B, H] and
//   workspace [B, 4H] (r, z, n, h_n); backward: grad_h → grad_input_gates, grad_hidden_gates [B, 3H],
//   grad_h_prev [B, H] (each nullptr: not computed). Formulas: backends/rnn_math.h.
#define EMBER_BACKEND_OPS(X)                                                                                       \
  X(copy, (const TensorArg& src, const TensorArg& dst))                                                            \
  X(copy_bytes_host, (void* device_ptr, void* host_ptr, size_t bytes, bool to_host, int device_index))             \
  X(fill, (const TensorArg& out, double value))                                                                    \
  X(unary, (UnaryOp op, const TensorArg& in, const TensorArg& out, double alpha, double beta))                     \
  X(unary_backward, (UnaryOp op, const TensorArg& grad_out, const TensorArg& saved, const TensorArg& grad_in,      \
                     double alpha, double beta))                                                                   \
  X(binary, (BinaryOp op, const TensorArg& a, const TensorArg& b, const TensorArg& out))                           \
  X(where, (const TensorArg& cond, const TensorArg& a, const TensorArg& b, const TensorArg& out))                  \
  X(reduce, (ReduceOp op, const TensorArg& in, const TensorArg& out))                                              \
  X(arg_reduce, (ArgReduceOp op, const TensorArg& in, const TensorArg& out, int dim))                              \
  X(cumsum, (const TensorArg& in, const TensorArg& out, int dim, bool reverse))                                    \
  X(sort, (const TensorArg& in, const TensorArg& values, const TensorArg& indices, int dim, bool descending))      \
  X(index, (IndexOp op, const TensorArg& in, const TensorArg& index, const TensorArg& out, int dim))               \
  X(random, (RandomOp op, const TensorArg& out, uint64_t seed, uint64_t offset, double a, double b))               \
  X(matmul, (const TensorArg& a, const TensorArg& b, const TensorArg& out))                                        \
  X(optimizer_step, (OptimizerOp op, const OptimizerParams& p, const TensorArg& param, const TensorArg& grad,      \
                     const TensorArg* s0, const TensorArg* s1, const TensorArg* s2))                               \
  X(conv2d_forward, (const TensorArg& x, const TensorArg& w, const TensorArg* bias, const TensorArg& y,            \
                     const Conv2dParams& p))                                                                       \
  X(conv2d_backward, (const TensorArg& x, const TensorArg& w, const TensorArg& grad_y, const TensorArg* grad_x,    \
                      const TensorArg* grad_w, const TensorArg* grad_bias, const Conv2dParams& p))                 \
  X(pool2d_forward, (PoolOp op, const TensorArg& x, const TensorArg& y, const TensorArg* indices,                  \
                     const Pool2dParams& p))                                                                       \
  X(pool2d_backward, (PoolOp op, const TensorArg& grad_y, const TensorArg* indices, const TensorArg& grad_x,       \
                      const Pool2dParams& p))                                                                      \
  X(softmax_forward, (const TensorArg& x, const TensorArg& y, bool log))                                           \
  X(softmax_backward, (const TensorArg& grad_y, const TensorArg& y, const TensorArg& grad_x, bool log))            \
  X(cross_entropy_forward, (const TensorArg& logits, const TensorArg& target, const TensorArg& loss,               \
                            const TensorArg& lse, int64_t ignore_index, double label_smoothing))                   \
  X(cross_entropy_backward, (const TensorArg& logits, const TensorArg& target, const TensorArg& lse,               \
                             const TensorArg& grad_loss, const TensorArg& grad_logits, int64_t ignore_index,       \
                             double label_smoothing))                                                              \
  X(batch_norm_forward, (const TensorArg& x, const TensorArg* weight, const TensorArg* bias,                       \
                         const TensorArg* running_mean, const TensorArg* running_var, const TensorArg& y,          \
                         const TensorArg& save_mean, const TensorArg& save_invstd, bool training, double momentum, \
                         double eps))                                                                              \
  X(batch_norm_backward, (const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight,                    \
                          const TensorArg& save_mean, const TensorArg& save_invstd, const TensorArg* grad_x,       \
                          const TensorArg* grad_weight, const TensorArg* grad_bias, bool training))                \
  X(layer_norm_forward, (const TensorArg& x, const TensorArg* weight, const TensorArg* bias, const TensorArg& y,   \
                         const TensorArg& save_mean, const TensorArg& save_invstd, double eps))                    \
  X(layer_norm_backward, (const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight,                    \
                          const TensorArg& save_mean, const TensorArg& save_invstd, const TensorArg* grad_x,       \
                          const TensorArg* grad_weight, const TensorArg* grad_bias))                               \
  X(rms_norm_forward, (const TensorArg& x, const TensorArg* weight, const TensorArg& y,                            \
                       const TensorArg& save_invrms, double eps))                                                  \
  X(rms_norm_backward, (const TensorArg& grad_y, const TensorArg& x, const TensorArg* weight,                      \
                        const TensorArg& save_invrms, const TensorArg* grad_x, const TensorArg* grad_weight))      \
  /* --- recurrent cells (backends/rnn_math.h): see the comment above the list --- */                             \
  X(lstm_cell_forward, (const TensorArg& gates, const TensorArg& c_prev, const TensorArg& h, const TensorArg& c,   \
                        const TensorArg& workspace))                                                               \
  X(lstm_cell_backward, (const TensorArg* grad_h, const TensorArg* grad_c, const TensorArg& c_prev,                \
                         const TensorArg& c, const TensorArg& workspace, const TensorArg& grad_gates,              \
                         const TensorArg* grad_c_prev))                                                            \
  X(gru_cell_forward, (const TensorArg& input_gates, const TensorArg& hidden_gates, const TensorArg& h_prev,       \
                       const TensorArg& h, const TensorArg& workspace))                                            \
  X(gru_cell_backward, (const TensorArg& grad_h, const TensorArg& h_prev, const TensorArg& workspace,              \
                        const TensorArg* grad_input_gates, const TensorArg* grad_hidden_gates,                     \
                        const TensorArg* grad_h_prev))                                                             \
  X(attention_forward, (const TensorArg& q, const TensorArg& k, const TensorArg& v, const TensorArg* mask,          \
                        const TensorArg& out, const TensorArg& lse, const AttentionParams& p))                     \
  X(attention_backward, (const TensorArg& q, const TensorArg& k, const TensorArg& v, const TensorArg* mask,         \
                         const TensorArg& out, const TensorArg& lse, const TensorArg& grad_out,                    \
                         const TensorArg* grad_q, const TensorArg* grad_k, const TensorArg* grad_v,                \
                         const AttentionParams& p))                                                                \
  X(rotary, (const TensorArg& x, const TensorArg& cos, const TensorArg& sin, const TensorArg& out,                 \
             const RotaryParams& p))                                                                               \
  /* --- scatter reductions (backends/index_math.h: the per-element math and the operand check) --- */             \
  X(scatter_reduce, (ScatterReduceOp op, const TensorArg& src, const TensorArg& index, const TensorArg& out, int dim))

// What a backend class writes to declare every entry: `EMBER_BACKEND_OPS(EMBER_BACKEND_OVERRIDE)`.
#define EMBER_BACKEND_OVERRIDE(name, params) void name params override;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceType type() const = 0;

  // --- memory -----------------------------------------------------------------------------------
  // Throws ember::Error on out-of-memory with the size requested and what is allocated/reserved.
  virtual void* allocate(size_t bytes, int device_index) = 0;
  virtual void deallocate(void* ptr, size_t bytes, int device_index) = 0;
  virtual MemoryStats memory_stats(int device_index) = 0;
  virtual void reset_peak_memory_stats(int device_index) = 0;
  virtual void empty_cache(int device_index) = 0;
  virtual void synchronize(int device_index) = 0;

  // The compute entries, declared from EMBER_BACKEND_OPS (below the class): one pure virtual each.
#define EMBER_X(name, params) virtual void name params = 0;
  EMBER_BACKEND_OPS(EMBER_X)
#undef EMBER_X

  // A line for logs and ember-devices: what this backend runs on (CPU model, GEMM kernel, threads...).
  virtual std::string describe() = 0;
};

// The backend serving `device`. Throws ember::Error when this build or machine cannot serve it.
Backend& backend(Device device);

// Testing only: serve `type` with `b` (nullptr restores the default). Lets tests run core's cross-device
// paths and error messages with a CPU-backed stand-in for CUDA on machines without a GPU.
void set_backend_override(DeviceType type, Backend* b);

}  // namespace ember
