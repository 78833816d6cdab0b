// conv2d on CUDA through cuDNN's legacy convolution API (cudnn_cnn.h; still in cuDNN 9). Plain C++: compiled
// by the host compiler, linked against cuDNN.
// - Math: CUDNN_CROSS_CORRELATION (what deep learning calls convolution), compute type = data type, and
//   CUDNN_FMA_MATH so f32 is true FP32 (no TF32 tensor cores) and comparable with the CPU backend.
// - Algorithms: cudnnGet*Algorithm_v7 heuristics, first result that succeeded (and is deterministic when
//   ember::cuda::deterministic_algorithms()), cached per (pass, device, dtype, shapes, params, determinism).
// - Workspace from the caching allocator (CudaBackend::Workspace); bias through cudnnAddTensor, its gradient
//   through cudnnConvolutionBackwardBias. Descriptors are RAII objects: nothing leaks when a call throws.
#include <algorithm>
#include <array>
#include <climits>
#include <initializer_list>
#include <map>
#include <mutex>
#include <vector>

#include "backends/checks.h"
#include "backends/cuda/cuda_backend.h"

namespace ember::cuda {
namespace {

template <typename D, cudnnStatus_t (*Create)(D*), cudnnStatus_t (*Destroy)(D)>
class Descriptor {
 public:
  Descriptor() { EMBER_CUDNN_CHECK(Create(&d_)); }
  ~Descriptor() { static_cast<void>(Destroy(d_)); }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  D get() const { return d_; }

 private:
  D d_ = nullptr;
};
using TensorDesc = Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc = Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc =
    Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;

int to_int(int64_t v) {
  EMBER_CHECK(v >= 0 && v <= INT_MAX, "conv2d: size ", v, " exceeds cuDNN's 32-bit limit; lower the batch size");
  return static_cast<int>(v);
}

void set_nchw(const TensorDesc& d, cudnnDataType_t t, int64_t n, int64_t c, int64_t h, int64_t w) {
  EMBER_CUDNN_CHECK(
      cudnnSetTensor4dDescriptor(d.get(), CUDNN_TENSOR_NCHW, t, to_int(n), to_int(c), to_int(h), to_int(w)));
}

// cuDNN's legacy API indexes with int: every operand's size must fit (checks::check_conv2d_* did the rest).
void check_int_sizes(std::initializer_list<const TensorArg*> operands) {
  for (const TensorArg* t : operands)
    if (t != nullptr) to_int(t->numel());
}

// The descriptors of one convolution: x [N, C, H, W], w [O, C/G, KH, KW], y [N, O, OH, OW].
struct Conv {
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  std::array<int64_t, 18> key{};  // everything the algorithm choice depends on but the pass and determinism

  Conv(const TensorArg& xa, const TensorArg& wa, const TensorArg& ya, const Conv2dParams& p) {
    const cudnnDataType_t t = xa.dtype == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    set_nchw(x, t, xa.shape[0], xa.shape[1], xa.shape[2], xa.shape[3]);
    set_nchw(y, t, ya.shape[0], ya.shape[1], ya.shape[2], ya.shape[3]);
    EMBER_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w.get(), t, CUDNN_TENSOR_NCHW, to_int(wa.shape[0]),
                                                 to_int(wa.shape[1]), to_int(wa.shape[2]), to_int(wa.shape[3])));
    EMBER_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv.get(), to_int(p.padding[0]), to_int(p.padding[1]),
                                                      to_int(p.stride[0]), to_int(p.stride[1]), to_int(p.dilation[0]),
                                                      to_int(p.dilation[1]), CUDNN_CROSS_CORRELATION, t));
    EMBER_CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv.get(), to_int(p.groups)));
    EMBER_CUDNN_CHECK(cudnnSetConvolutionMathType(conv.get(), CUDNN_FMA_MATH));
    key = {xa.device_index, static_cast<int64_t>(xa.dtype),
           xa.shape[0], xa.shape[1], xa.shape[2], xa.shape[3], wa.shape[0], wa.shape[2], wa.shape[3],
           ya.shape[2], ya.shape[3], p.stride[0], p.stride[1], p.padding[0], p.padding[1],
           p.dilation[0], p.dilation[1], p.groups};
  }
};

enum class Pass : int { forward, backward_data, backward_filter };

struct Algo {
  int algo = 0;
  size_t workspace = 0;
};

// The first heuristic result that ran, is deterministic when asked, and uses no tensor-op (TF32/FP16) math.
template <typename Perf>
const Perf* pick(const std::vector<Perf>& results, int count, bool deterministic) {
  for (int i = 0; i < count; ++i) {
    const Perf& r = results[i];
    if (r.status != CUDNN_STATUS_SUCCESS) continue;
    if (deterministic && r.determinism != CUDNN_DETERMINISTIC) continue;
    if (r.mathType == CUDNN_TENSOR_OP_MATH || r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;
    return &r;
  }
  ember::detail::throw_error("conv2d: cuDNN offers no ", deterministic ? "deterministic " : "",
                             "FP32/FP64 algorithm for this convolution",
                             deterministic ? "; call ember::cuda::set_deterministic(false)" : "",
                             " or run it on the CPU");
}

Algo choose(DeviceContext& ctx, const Conv& c, Pass pass) {
  const bool det = deterministic_algorithms();
  std::array<int64_t, 20> key{static_cast<int64_t>(pass), det};
  std::copy(c.key.begin(), c.key.end(), key.begin() + 2);
  static std::mutex mutex;
  static std::map<std::array<int64_t, 20>, Algo> cache;
  {
    std::lock_guard lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  Algo a;
  int max = 0, n = 0;
  if (pass == Pass::forward) {
    EMBER_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(ctx.cudnn, &max));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(max);
    EMBER_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(ctx.cudnn, c.x.get(), c.w.get(), c.conv.get(), c.y.get(),
                                                             max, &n, perf.data()));
    const auto algo = pick(perf, n, det)->algo;
    a.algo = algo;
    EMBER_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(ctx.cudnn, c.x.get(), c.w.get(), c.conv.get(), c.y.get(),
                                                              algo, &a.workspace));
  } else if (pass == Pass::backward_data) {
    EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(ctx.cudnn, &max));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(max);
    EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(ctx.cudnn, c.w.get(), c.y.get(), c.conv.get(),
                                                                  c.x.get(), max, &n, perf.data()));
    const auto algo = pick(perf, n, det)->algo;
    a.algo = algo;
    EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(ctx.cudnn, c.w.get(), c.y.get(), c.conv.get(),
                                                                   c.x.get(), algo, &a.workspace));
  } else {
    EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(ctx.cudnn, &max));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(max);
    EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(ctx.cudnn, c.x.get(), c.y.get(), c.conv.get(),
                                                                    c.w.get(), max, &n, perf.data()));
    const auto algo = pick(perf, n, det)->algo;
    a.algo = algo;
    EMBER_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(ctx.cudnn, c.x.get(), c.y.get(), c.conv.get(),
                                                                     c.w.get(), algo, &a.workspace));
  }
  std::lock_guard lock(mutex);
  cache.emplace(key, a);
  return a;
}

void zero(DeviceContext& ctx, const TensorArg* t) {
  if (t != nullptr && t->numel() > 0)
    EMBER_CUDA_CHECK(cudaMemsetAsync(t->data, 0, t->numel() * dtype_size(t->dtype), ctx.stream));
}

bool empty_conv(const TensorArg& x, const TensorArg& w) { return x.numel() == 0 || w.numel() == 0; }

}  // namespace

void CudaBackend::conv2d_forward(const TensorArg& x, const TensorArg& w, const TensorArg* bias, const TensorArg& y,
                                 const Conv2dParams& p) {
  checks::check_conv2d_forward(x, w, bias, y, p);
  check_int_sizes({&x, &w, &y});
  DeviceContext& ctx = context(x.device_index);
  if (y.numel() == 0) return;
  dispatch_floating(x.dtype, "conv2d", [&](auto tag) {
    using T = decltype(tag);
    const T one = 1, zero_scale = 0;
    const cudnnDataType_t t = x.dtype == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    if (empty_conv(x, w)) {  // no input channels (or an empty image): y = bias
      zero(ctx, &y);
    } else {
      const Conv c(x, w, y, p);
      const Algo a = choose(ctx, c, Pass::forward);
      Workspace ws(ctx, a.workspace);
      EMBER_CUDNN_CHECK(cudnnConvolutionForward(ctx.cudnn, &one, c.x.get(), x.data, c.w.get(), w.data, c.conv.get(),
                                                static_cast<cudnnConvolutionFwdAlgo_t>(a.algo), ws.as<void>(),
                                                ws.size(), &zero_scale, c.y.get(), y.data));
    }
    if (bias != nullptr) {  // y += bias, broadcast over N, OH, OW
      TensorDesc bd, yd;
      set_nchw(bd, t, 1, w.shape[0], 1, 1);
      set_nchw(yd, t, y.shape[0], y.shape[1], y.shape[2], y.shape[3]);
      EMBER_CUDNN_CHECK(cudnnAddTensor(ctx.cudnn, &one, bd.get(), bias->data, &one, yd.get(), y.data));
    }
  });
}

void CudaBackend::conv2d_backward(const TensorArg& x, const TensorArg& w, const TensorArg& grad_y,
                                  const TensorArg* grad_x, const TensorArg* grad_w, const TensorArg* grad_bias,
                                  const Conv2dParams& p) {
  checks::check_conv2d_backward(x, w, grad_y, grad_x, grad_w, grad_bias, p);
  check_int_sizes({&x, &w, &grad_y});
  DeviceContext& ctx = context(x.device_index);
  dispatch_floating(x.dtype, "conv2d_backward", [&](auto tag) {
    using T = decltype(tag);
    const T one = 1, zero_scale = 0;
    const cudnnDataType_t t = x.dtype == DType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    if (grad_bias != nullptr && grad_y.numel() == 0) {
      zero(ctx, grad_bias);
    } else if (grad_bias != nullptr) {  // Σ over N, OH, OW of grad_y
      TensorDesc dyd, bd;
      set_nchw(dyd, t, grad_y.shape[0], grad_y.shape[1], grad_y.shape[2], grad_y.shape[3]);
      set_nchw(bd, t, 1, w.shape[0], 1, 1);
      EMBER_CUDNN_CHECK(cudnnConvolutionBackwardBias(ctx.cudnn, &one, dyd.get(), grad_y.data, &zero_scale, bd.get(),
                                                     grad_bias->data));
    }
    if (grad_y.numel() == 0 || empty_conv(x, w)) {  // nothing flows: zero gradients
      zero(ctx, grad_x);
      zero(ctx, grad_w);
      return;
    }
    const Conv c(x, w, grad_y, p);
    if (grad_x != nullptr) {
      const Algo a = choose(ctx, c, Pass::backward_data);
      Workspace ws(ctx, a.workspace);
      EMBER_CUDNN_CHECK(cudnnConvolutionBackwardData(ctx.cudnn, &one, c.w.get(), w.data, c.y.get(), grad_y.data,
                                                     c.conv.get(), static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo),
                                                     ws.as<void>(), ws.size(), &zero_scale, c.x.get(), grad_x->data));
    }
    if (grad_w != nullptr) {
      const Algo a = choose(ctx, c, Pass::backward_filter);
      Workspace ws(ctx, a.workspace);
      EMBER_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
          ctx.cudnn, &one, c.x.get(), x.data, c.y.get(), grad_y.data, c.conv.get(),
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.algo), ws.as<void>(), ws.size(), &zero_scale, c.w.get(),
          grad_w->data));
    }
  });
}

}  // namespace ember::cuda
