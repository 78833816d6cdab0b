#pragma once
// EMBER_HOST_DEVICE marks code compiled for the CPU and, under nvcc, for the GPU too: the element math
// (kernels.h) and the index arithmetic (strided.h) that both backends share.
#if defined(__CUDACC__)
#define EMBER_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define EMBER_HOST_DEVICE inline
#endif
