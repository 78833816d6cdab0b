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

// One per library's status type; the macros below pass the call's text and place.
inline void check_call(cudaError_t e, const char* file, int line, const char* call) {
  if (e != cudaSuccess) [[unlikely]]
    throw_call_error(file, line, call, "CUDA", cudaGetErrorName(e), cudaGetErrorString(e));
}
inline void check_call(cublasStatus_t s, const char* file, int line, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) [[unlikely]]
    throw_call_error(file, line, call, "cuBLAS", cublasGetStatusName(s), cublasGetStatusString(s));
}
inline void check_call(cudnnStatus_t s, const char* file, int line, const char* call) {
  if (s != CUDNN_STATUS_SUCCESS) [[unlikely]] throw_call_error(file, line, call, "cuDNN", cudnnGetErrorString(s), "");
}
}  // namespace ember::cuda::detail

#define EMBER_CUDA_CHECK(call) ::ember::cuda::detail::check_call((call), __FILE__, __LINE__, #call)
#define EMBER_CUBLAS_CHECK(call) ::ember::cuda::detail::check_call((call), __FILE__, __LINE__, #call)
#define EMBER_CUDNN_CHECK(call) ::ember::cuda::detail::check_call((call), __FILE__, __LINE__, #call)

#define EMBER_CUDA_CHECK_LAUNCH() EMBER_CUDA_CHECK(cudaGetLastError())
