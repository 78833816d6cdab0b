#pragma once
// Every CUDA runtime, cuBLAS and cuDNN call goes through one of these: a failure throws ember::Error
// naming the file, line, call and the library's error string. After each kernel launch,
// EMBER_CUDA_CHECK_LAUNCH() reports a bad launch configuration at once (execution errors surface at the
// next synchronising call, as with every asynchronous API).
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

namespace ember::cuda::detail {
[[noreturn]] void throw_call_error(const char* file, int line, const char* call, const char* library,
                                   const char* error_name, const char* error_string);
}  // namespace ember::cuda::detail

#define EMBER_CUDA_CHECK(call)                                                                             \
  do {                                                                                                     \
    const cudaError_t ember_err_ = (call);                                                                 \
    if (ember_err_ != cudaSuccess) [[unlikely]]                                                            \
      ::ember::cuda::detail::throw_call_error(__FILE__, __LINE__, #call, "CUDA", cudaGetErrorName(ember_err_), \
                                              cudaGetErrorString(ember_err_));                             \
  } while (0)

#define EMBER_CUBLAS_CHECK(call)                                                                         \
  do {                                                                                                   \
    const cublasStatus_t ember_st_ = (call);                                                             \
    if (ember_st_ != CUBLAS_STATUS_SUCCESS) [[unlikely]]                                                 \
      ::ember::cuda::detail::throw_call_error(__FILE__, __LINE__, #call, "cuBLAS", cublasGetStatusName(ember_st_), \
                                              cublasGetStatusString(ember_st_));                         \
  } while (0)

#define EMBER_CUDNN_CHECK(call)                                                                          \
  do {                                                                                                   \
    const cudnnStatus_t ember_st_ = (call);                                                              \
    if (ember_st_ != CUDNN_STATUS_SUCCESS) [[unlikely]]                                                  \
      ::ember::cuda::detail::throw_call_error(__FILE__, __LINE__, #call, "cuDNN", cudnnGetErrorString(ember_st_), ""); \
  } while (0)

#define EMBER_CUDA_CHECK_LAUNCH() EMBER_CUDA_CHECK(cudaGetLastError())
