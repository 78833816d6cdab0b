// cuBLAS and cuDNN, loaded when a CUDA device is first used, not at process start.
//
// Linking libcublas.so makes the dynamic loader map it and libcublasLt (about 150 MiB resident, ~65 ms)
// into every process, including CPU runs of a CUDA build. Instead, Ember links neither: this file DEFINES
// the few cuBLAS/cuDNN entry points the CUDA backend calls. Each definition, on its first call, dlopens the
// library (the toolkit directory recorded at configure time, then the normal search path), looks up the real
// symbol and forwards to it; later calls go straight through a cached pointer. Function-local statics make
// the first call thread-safe.
//
// The real headers are included, so every definition below must match its declaration exactly: an
// extern "C" function defined with other parameter types is a compile error ("conflicting declaration").
// NOTE: adding a cuBLAS/cuDNN call to the backend means adding its line here; the link fails until then.
#include <dlfcn.h>

#include <cublas_v2.h>
#include <cudnn.h>

#include <string>

#include "base/error.h"

// EMBER_CUDA_LIBRARY_DIRS: ':'-separated directories where configure found the toolkit's and cuDNN's
// libraries (backends/CMakeLists.txt); tried before the dynamic loader's own search path.
#ifndef EMBER_CUDA_LIBRARY_DIRS
#define EMBER_CUDA_LIBRARY_DIRS ""
#endif

namespace ember::cuda {
namespace {

#define EMBER_LAZY_STR2(x) #x
#define EMBER_LAZY_STR(x) EMBER_LAZY_STR2(x)

// A library's soname follows its major version, which the headers this file was compiled with give.
struct Library {
  const char* soname;
  const char* what;     // for messages: "cuBLAS 13"
  const char* install;  // what to install when it is missing
};

const Library kCublas{"libcublas.so." EMBER_LAZY_STR(CUBLAS_VER_MAJOR), "cuBLAS " EMBER_LAZY_STR(CUBLAS_VER_MAJOR),
                      "the CUDA toolkit's cuBLAS (e.g. apt-get install libcublas-13-0)"};
const Library kCudnn{"libcudnn.so." EMBER_LAZY_STR(CUDNN_MAJOR), "cuDNN " EMBER_LAZY_STR(CUDNN_MAJOR),
                     "cuDNN " EMBER_LAZY_STR(CUDNN_MAJOR) " (e.g. apt-get install libcudnn9-cuda-13)"};

// dlopen of the recorded directories, then of the bare soname (LD_LIBRARY_PATH, ld.so.cache). Throws
// ember::Error naming the library, where it was looked for and what to install.
void* open_library(const Library& lib) {
  std::string tried;
  const std::string dirs = EMBER_CUDA_LIBRARY_DIRS;
  for (size_t start = 0; start <= dirs.size();) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    if (end > start) {
      const std::string path = dirs.substr(start, end - start) + "/" + lib.soname;
      if (void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
      tried += std::string("\n  ") + ::dlerror();
    }
    start = end + 1;
  }
  if (void* handle = ::dlopen(lib.soname, RTLD_NOW | RTLD_LOCAL)) return handle;
  tried += std::string("\n  ") + ::dlerror();
  detail::throw_error("the CUDA backend needs ", lib.what, " (", lib.soname, "), which cannot be loaded:", tried,
                      "\nInstall ", lib.install, ", or add its directory to LD_LIBRARY_PATH; or run on the CPU "
                      "(--device cpu)");
}

void* cublas_library() {
  static void* const handle = open_library(kCublas);  // a failed load throws and is retried on the next call
  return handle;
}
void* cudnn_library() {
  static void* const handle = open_library(kCudnn);
  return handle;
}

void* find_symbol(void* handle, const Library& lib, const char* name) {
  void* symbol = ::dlsym(handle, name);
  EMBER_CHECK(symbol != nullptr, lib.soname, " has no ", name, "; the library is older than the ", lib.what,
              " headers Ember was built with: install a newer ", lib.install);
  return symbol;
}

}  // namespace
}  // namespace ember::cuda

// One forwarding definition: the first call resolves `name` in the library, later ones reuse the pointer.
#define EMBER_LAZY(library, lib, ret, name, params, args)                                                 \
  extern "C" ret name params {                                                                           \
    static const auto real = reinterpret_cast<decltype(&name)>(                                          \
        ::ember::cuda::find_symbol(::ember::cuda::library(), ::ember::cuda::lib, EMBER_LAZY_STR(name))); \
    return real args;                                                                                    \
  }
#define EMBER_CUBLAS(ret, name, params, args) EMBER_LAZY(cublas_library, kCublas, ret, name, params, args)
#define EMBER_CUDNN(ret, name, params, args) EMBER_LAZY(cudnn_library, kCudnn, ret, name, params, args)

// --- cuBLAS (cublas_v2.h maps cublasCreate/cublasSetStream to these _v2 symbols) -------------------------
EMBER_CUBLAS(cublasStatus_t, cublasCreate_v2, (cublasHandle_t * handle), (handle))
EMBER_CUBLAS(cublasStatus_t, cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream), (handle, stream))
EMBER_CUBLAS(const char*, cublasGetStatusName, (cublasStatus_t status), (status))
EMBER_CUBLAS(const char*, cublasGetStatusString, (cublasStatus_t status), (status))
EMBER_CUBLAS(cublasStatus_t, cublasSgemmStridedBatched,
             (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
              const float* alpha, const float* A, int lda, long long int strideA, const float* B, int ldb,
              long long int strideB, const float* beta, float* C, int ldc, long long int strideC, int batchCount),
             (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC,
              batchCount))
EMBER_CUBLAS(cublasStatus_t, cublasDgemmStridedBatched,
             (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
              const double* alpha, const double* A, int lda, long long int strideA, const double* B, int ldb,
              long long int strideB, const double* beta, double* C, int ldc, long long int strideC, int batchCount),
             (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB, beta, C, ldc, strideC,
              batchCount))

// --- cuDNN: version, errors, handle ----------------------------------------------------------------------
EMBER_CUDNN(size_t, cudnnGetVersion, (void), ())
EMBER_CUDNN(const char*, cudnnGetErrorString, (cudnnStatus_t status), (status))
EMBER_CUDNN(cudnnStatus_t, cudnnCreate, (cudnnHandle_t * handle), (handle))
EMBER_CUDNN(cudnnStatus_t, cudnnSetStream, (cudnnHandle_t handle, cudaStream_t stream), (handle, stream))

// --- cuDNN: descriptors ----------------------------------------------------------------------------------
EMBER_CUDNN(cudnnStatus_t, cudnnCreateTensorDescriptor, (cudnnTensorDescriptor_t * desc), (desc))
EMBER_CUDNN(cudnnStatus_t, cudnnDestroyTensorDescriptor, (cudnnTensorDescriptor_t desc), (desc))
EMBER_CUDNN(cudnnStatus_t, cudnnSetTensor4dDescriptor,
            (cudnnTensorDescriptor_t desc, cudnnTensorFormat_t format, cudnnDataType_t type, int n, int c, int h, int w),
            (desc, format, type, n, c, h, w))
EMBER_CUDNN(cudnnStatus_t, cudnnCreateFilterDescriptor, (cudnnFilterDescriptor_t * desc), (desc))
EMBER_CUDNN(cudnnStatus_t, cudnnDestroyFilterDescriptor, (cudnnFilterDescriptor_t desc), (desc))
EMBER_CUDNN(cudnnStatus_t, cudnnSetFilter4dDescriptor,
            (cudnnFilterDescriptor_t desc, cudnnDataType_t type, cudnnTensorFormat_t format, int k, int c, int h, int w),
            (desc, type, format, k, c, h, w))
EMBER_CUDNN(cudnnStatus_t, cudnnCreateConvolutionDescriptor, (cudnnConvolutionDescriptor_t * desc), (desc))
EMBER_CUDNN(cudnnStatus_t, cudnnDestroyConvolutionDescriptor, (cudnnConvolutionDescriptor_t desc), (desc))
EMBER_CUDNN(cudnnStatus_t, cudnnSetConvolution2dDescriptor,
            (cudnnConvolutionDescriptor_t desc, int pad_h, int pad_w, int u, int v, int dilation_h, int dilation_w,
             cudnnConvolutionMode_t mode, cudnnDataType_t compute_type),
            (desc, pad_h, pad_w, u, v, dilation_h, dilation_w, mode, compute_type))
EMBER_CUDNN(cudnnStatus_t, cudnnSetConvolutionMathType, (cudnnConvolutionDescriptor_t desc, cudnnMathType_t math),
            (desc, math))
EMBER_CUDNN(cudnnStatus_t, cudnnSetConvolutionGroupCount, (cudnnConvolutionDescriptor_t desc, int groups),
            (desc, groups))

// --- cuDNN: convolution forward, backward data/filter/bias (x, w, y as cuDNN names them) ------------------
EMBER_CUDNN(cudnnStatus_t, cudnnGetConvolutionForwardAlgorithmMaxCount, (cudnnHandle_t handle, int* count),
            (handle, count))
EMBER_CUDNN(cudnnStatus_t, cudnnGetConvolutionForwardAlgorithm_v7,
            (cudnnHandle_t handle, const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
             const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t y, const int requested,
             int* returned, cudnnConvolutionFwdAlgoPerf_t* perf),
            (handle, x, w, conv, y, requested, returned, perf))
EMBER_CUDNN(cudnnStatus_t, cudnnGetConvolutionForwardWorkspaceSize,
            (cudnnHandle_t handle, const cudnnTensorDescriptor_t x, const cudnnFilterDescriptor_t w,
             const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t y, cudnnConvolutionFwdAlgo_t algo,
             size_t* bytes),
            (handle, x, w, conv, y, algo, bytes))
EMBER_CUDNN(cudnnStatus_t, cudnnConvolutionForward,
            (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t x_desc, const void* x,
             const cudnnFilterDescriptor_t w_desc, const void* w, const cudnnConvolutionDescriptor_t conv,
             cudnnConvolutionFwdAlgo_t algo, void* workspace, size_t workspace_bytes, const void* beta,
             const cudnnTensorDescriptor_t y_desc, void* y),
            (handle, alpha, x_desc, x, w_desc, w, conv, algo, workspace, workspace_bytes, beta, y_desc, y))
EMBER_CUDNN(cudnnStatus_t, cudnnGetConvolutionBackwardFilterAlgorithmMaxCount, (cudnnHandle_t handle, int* count),
            (handle, count))
EMBER_CUDNN(cudnnStatus_t, cudnnGetConvolutionBackwardFilterAlgorithm_v7,
            (cudnnHandle_t handle, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
             const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw, const int requested,
             int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* perf),
            (handle, x, dy, conv, dw, requested, returned, perf))
EMBER_CUDNN(cudnnStatus_t, cudnnGetConvolutionBackwardFilterWorkspaceSize,
            (cudnnHandle_t handle, const cudnnTensorDescriptor_t x, const cudnnTensorDescriptor_t dy,
             const cudnnConvolutionDescriptor_t conv, const cudnnFilterDescriptor_t dw,
             cudnnConvolutionBwdFilterAlgo_t algo, size_t* bytes),
            (handle, x, dy, conv, dw, algo, bytes))
EMBER_CUDNN(cudnnStatus_t, cudnnConvolutionBackwardFilter,
            (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t x_desc, const void* x,
             const cudnnTensorDescriptor_t dy_desc, const void* dy, const cudnnConvolutionDescriptor_t conv,
             cudnnConvolutionBwdFilterAlgo_t algo, void* workspace, size_t workspace_bytes, const void* beta,
             const cudnnFilterDescriptor_t dw_desc, void* dw),
            (handle, alpha, x_desc, x, dy_desc, dy, conv, algo, workspace, workspace_bytes, beta, dw_desc, dw))
EMBER_CUDNN(cudnnStatus_t, cudnnGetConvolutionBackwardDataAlgorithmMaxCount, (cudnnHandle_t handle, int* count),
            (handle, count))
EMBER_CUDNN(cudnnStatus_t, cudnnGetConvolutionBackwardDataAlgorithm_v7,
            (cudnnHandle_t handle, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
             const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx, const int requested,
             int* returned, cudnnConvolutionBwdDataAlgoPerf_t* perf),
            (handle, w, dy, conv, dx, requested, returned, perf))
EMBER_CUDNN(cudnnStatus_t, cudnnGetConvolutionBackwardDataWorkspaceSize,
            (cudnnHandle_t handle, const cudnnFilterDescriptor_t w, const cudnnTensorDescriptor_t dy,
             const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t dx,
             cudnnConvolutionBwdDataAlgo_t algo, size_t* bytes),
            (handle, w, dy, conv, dx, algo, bytes))
EMBER_CUDNN(cudnnStatus_t, cudnnConvolutionBackwardData,
            (cudnnHandle_t handle, const void* alpha, const cudnnFilterDescriptor_t w_desc, const void* w,
             const cudnnTensorDescriptor_t dy_desc, const void* dy, const cudnnConvolutionDescriptor_t conv,
             cudnnConvolutionBwdDataAlgo_t algo, void* workspace, size_t workspace_bytes, const void* beta,
             const cudnnTensorDescriptor_t dx_desc, void* dx),
            (handle, alpha, w_desc, w, dy_desc, dy, conv, algo, workspace, workspace_bytes, beta, dx_desc, dx))
EMBER_CUDNN(cudnnStatus_t, cudnnConvolutionBackwardBias,
            (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t dy_desc, const void* dy,
             const void* beta, const cudnnTensorDescriptor_t db_desc, void* db),
            (handle, alpha, dy_desc, dy, beta, db_desc, db))
EMBER_CUDNN(cudnnStatus_t, cudnnAddTensor,
            (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t a_desc, const void* a,
             const void* beta, const cudnnTensorDescriptor_t c_desc, void* c),
            (handle, alpha, a_desc, a, beta, c_desc, c))
