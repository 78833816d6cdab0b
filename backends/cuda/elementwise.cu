// copy (with dtype conversion), fill, unary, binary and where: the functors of backends/elementwise_math.h
// (the CPU's loop bodies) in the element-wise launchers of loops.cuh.
#include <type_traits>

#include "backends/checks.h"
#include "backends/cuda/loops.cuh"
#include "backends/dispatch.h"
#include "backends/elementwise_math.h"

namespace ember::cuda {
namespace {

template <typename To, typename From>
struct CastOp {
  __device__ void operator()(char** p) const {
    *reinterpret_cast<To*>(p[0]) = static_cast<To>(*reinterpret_cast<const From*>(p[1]));
  }
};

template <typename T>
struct FillOp {
  T value;
  __device__ void operator()(char** p) const { *reinterpret_cast<T*>(p[0]) = value; }
};

template <typename Out, typename In, typename F>
struct MapOp {
  F f;
  __device__ void operator()(char** p) const {
    *reinterpret_cast<Out*>(p[0]) = f(*reinterpret_cast<const In*>(p[1]));
  }
};

template <typename Out, typename In, typename F>
struct ZipOp {
  F f;
  __device__ void operator()(char** p) const {
    *reinterpret_cast<Out*>(p[0]) = f(*reinterpret_cast<const In*>(p[1]), *reinterpret_cast<const In*>(p[2]));
  }
};

template <typename T>
struct WhereOp {
  __device__ void operator()(char** p) const {
    *reinterpret_cast<T*>(p[0]) =
        *reinterpret_cast<const bool*>(p[1]) ? *reinterpret_cast<const T*>(p[2]) : *reinterpret_cast<const T*>(p[3]);
  }
};

}  // namespace

void CudaBackend::copy(const TensorArg& src, const TensorArg& dst) {
  checks::check_copy(src, dst);
  const cudaStream_t stream = context(dst.device_index).stream;
  dispatch_dtype(src.dtype, "copy", [&](auto from) {
    dispatch_dtype(dst.dtype, "copy", [&](auto to) {
      launch_elementwise<2>(stream, {&dst, &src}, CastOp<decltype(to), decltype(from)>{});
    });
  });
}

void CudaBackend::fill(const TensorArg& out, double value) {
  const cudaStream_t stream = context(out.device_index).stream;
  dispatch_dtype(out.dtype, "fill", [&](auto tag) {
    using T = decltype(tag);
    launch_elementwise<1>(stream, {&out}, FillOp<T>{static_cast<T>(value)});
  });
}

void CudaBackend::unary(UnaryOp op, const TensorArg& in, const TensorArg& out, double alpha, double beta) {
  checks::check_unary(op, in, out);
  const cudaStream_t stream = context(out.device_index).stream;
  kernels::dispatch_unary(op, in.dtype, [&](auto op_c, auto tag) {
    using T = decltype(tag);
    using F = kernels::UnaryFn<decltype(op_c)::value, T>;
    launch_elementwise<2>(stream, {&out, &in},
                          MapOp<T, T, F>{F{kernels::param_cast<T>(alpha), kernels::param_cast<T>(beta)}});
  });
}

void CudaBackend::unary_backward(UnaryOp op, const TensorArg& grad_out, const TensorArg& saved,
                                 const TensorArg& grad_in, double alpha, double beta) {
  checks::check_unary_backward(op, grad_out, saved, grad_in);
  const cudaStream_t stream = context(grad_in.device_index).stream;
  kernels::dispatch_unary_backward(op, grad_out.dtype, [&](auto op_c, auto tag) {
    using T = decltype(tag);
    using F = kernels::UnaryBackwardFn<decltype(op_c)::value, T>;
    launch_elementwise<3>(stream, {&grad_in, &grad_out, &saved}, ZipOp<T, T, F>{F{T(alpha), T(beta)}});
  });
}

void CudaBackend::binary(BinaryOp op, const TensorArg& a, const TensorArg& b, const TensorArg& out) {
  checks::check_binary(op, a, b, out);
  const cudaStream_t stream = context(out.device_index).stream;
  kernels::dispatch_binary(op, a.dtype, [&](auto op_c, auto tag) {
    constexpr BinaryOp kOp = decltype(op_c)::value;
    using T = decltype(tag);
    using Out = std::conditional_t<is_comparison(kOp), bool, T>;
    launch_elementwise<3>(stream, {&out, &a, &b}, ZipOp<Out, T, kernels::BinaryFn<kOp, T>>{});
  });
}

void CudaBackend::where(const TensorArg& cond, const TensorArg& a, const TensorArg& b, const TensorArg& out) {
  checks::check_where(cond, a, b, out);
  const cudaStream_t stream = context(out.device_index).stream;
  dispatch_dtype(out.dtype, "where", [&](auto tag) {
    launch_elementwise<4>(stream, {&out, &cond, &a, &b}, WhereOp<decltype(tag)>{});
  });
}

}  // namespace ember::cuda
