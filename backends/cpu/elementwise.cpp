// unary, binary and where: strided loops around the functors of backends/elementwise_math.h.
#include <type_traits>

#include "backends/checks.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/strided_loop.h"
#include "backends/dispatch.h"
#include "backends/elementwise_math.h"

namespace ember::cpu {
namespace {

using kernels::param_cast;

template <typename Out, typename In, typename F>
void unary_loop(const TensorArg& in, const TensorArg& out, F f) {
  strided_loop<2>({&out, &in}, [f](char** p, const int64_t* s, int64_t n) {
    if (s[0] == sizeof(Out) && s[1] == sizeof(In)) {
      Out* o = reinterpret_cast<Out*>(p[0]);
      const In* x = reinterpret_cast<const In*>(p[1]);
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(p[0] + i * s[0]) = f(*reinterpret_cast<const In*>(p[1] + i * s[1]));
    }
  });
}

template <typename Out, typename In, typename F>
void binary_loop(const TensorArg& a, const TensorArg& b, const TensorArg& out, F f) {
  strided_loop<3>({&out, &a, &b}, [f](char** p, const int64_t* s, int64_t n) {
    Out* o = reinterpret_cast<Out*>(p[0]);
    const In* x = reinterpret_cast<const In*>(p[1]);
    const In* y = reinterpret_cast<const In*>(p[2]);
    if (s[0] == sizeof(Out) && s[1] == sizeof(In) && s[2] == sizeof(In)) {
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], y[i]);
    } else if (s[0] == sizeof(Out) && s[1] == sizeof(In) && s[2] == 0) {  // tensor ⊕ broadcast scalar
      const In yv = *y;
      for (int64_t i = 0; i < n; ++i) o[i] = f(x[i], yv);
    } else if (s[0] == sizeof(Out) && s[1] == 0 && s[2] == sizeof(In)) {
      const In xv = *x;
      for (int64_t i = 0; i < n; ++i) o[i] = f(xv, y[i]);
    } else {
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<Out*>(p[0] + i * s[0]) =
            f(*reinterpret_cast<const In*>(p[1] + i * s[1]), *reinterpret_cast<const In*>(p[2] + i * s[2]));
    }
  });
}

}  // namespace

void CpuBackend::unary(UnaryOp op, const TensorArg& in, const TensorArg& out, double alpha, double beta) {
  checks::check_unary(op, in, out);
  kernels::dispatch_unary(op, in.dtype, [&](auto op_c, auto tag) {
    using T = decltype(tag);
    unary_loop<T, T>(in, out, kernels::UnaryFn<decltype(op_c)::value, T>{param_cast<T>(alpha), param_cast<T>(beta)});
  });
}

void CpuBackend::unary_backward(UnaryOp op, const TensorArg& grad_out, const TensorArg& saved,
                                const TensorArg& grad_in, double alpha, double beta) {
  checks::check_unary_backward(op, grad_out, saved, grad_in);
  kernels::dispatch_unary_backward(op, grad_out.dtype, [&](auto op_c, auto tag) {
    using T = decltype(tag);
    binary_loop<T, T>(grad_out, saved, grad_in,
                      kernels::UnaryBackwardFn<decltype(op_c)::value, T>{T(alpha), T(beta)});
  });
}

void CpuBackend::binary(BinaryOp op, const TensorArg& a, const TensorArg& b, const TensorArg& out) {
  checks::check_binary(op, a, b, out);
  kernels::dispatch_binary(op, a.dtype, [&](auto op_c, auto tag) {
    constexpr BinaryOp kOp = decltype(op_c)::value;
    using T = decltype(tag);
    using Out = std::conditional_t<is_comparison(kOp), bool, T>;
    binary_loop<Out, T>(a, b, out, kernels::BinaryFn<kOp, T>{});
  });
}

void CpuBackend::where(const TensorArg& cond, const TensorArg& a, const TensorArg& b, const TensorArg& out) {
  checks::check_where(cond, a, b, out);
  dispatch_dtype(out.dtype, "where", [&](auto tag) {
    using T = decltype(tag);
    strided_loop<4>({&out, &cond, &a, &b}, [](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        const bool c = *reinterpret_cast<const bool*>(p[1] + i * s[1]);
        *reinterpret_cast<T*>(p[0] + i * s[0]) =
            c ? *reinterpret_cast<const T*>(p[2] + i * s[2]) : *reinterpret_cast<const T*>(p[3] + i * s[3]);
      }
    });
  });
}

}  // namespace ember::cpu
