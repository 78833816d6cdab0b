#pragma once
// What the CPU-vs-CUDA parity tests share (tests/test_cuda_parity.cpp: the op table; test_cuda_backend.cpp:
// the backend entries autograd does not reach, errors and memory, training): the fixtures that skip without
// a GPU, the tolerances and the comparison.
//
// Tolerances. A GPU value passes when |gpu - cpu| <= rtol·|cpu| + atol·scale, with scale the largest |cpu|
// value of that tensor: a result that cancels to ~0 is judged against the size of the values that cancelled,
// not against itself. NaN must meet NaN, ±inf the same infinity.
//   exact        — bits equal: selections (max pooling, dropout masks, argmax, where, comparisons), copies
//                  and conversions, integer math, uniform/bernoulli draws. Nothing is rounded differently.
//   elementwise  — f64 rtol 1e-10, atol 1e-12; f32 rtol 1e-5, atol 1e-6. One op per element, but the device's
//                  libm (exp, log, tanh, erf, pow) differs from glibc by an ulp or two, and either compiler
//                  may contract a·b + c into an FMA; chained (the backward formulas) that is ~10 ulps, far
//                  inside these bounds (f32: ~80 ulps).
//   reduce       — f64 rtol 1e-9, atol 1e-11; f32 rtol 1e-4, atol 1e-5. Sums (reductions, matmul, softmax,
//                  norms, losses, and every gradient: the backward sums over broadcast dims and batch) run
//                  in a different order on each device (OpenBLAS/OpenMP chunks vs cuBLAS/thread-block
//                  trees): the error grows with the number of terms (up to 1000 here) and cancellation.
//   conv         — f64 rtol 1e-9, atol 1e-10; f32 rtol 1e-4, atol 1e-4. cuDNN may pick Winograd or FFT
//                  algorithms (f32 without TF32: the backend sets CUDNN_FMA_MATH), whose error is relative
//                  to the output's scale rather than to each element.
// Where a test states its own tolerance, the comment there says why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <ember/ember.h>

#include "op_table.h"  // Kind: how a result is computed, which each table line states

namespace ember::parity {

constexpr Device kGpu{DeviceType::CUDA, 0};

// Fixtures that skip the test, with the reason, where no usable GPU is present.
template <typename Base>
class SkipWithoutGpu : public Base {
 protected:
  void SetUp() override {
    if (!ember::cuda::is_available()) GTEST_SKIP() << "needs a CUDA GPU: " << ember::cuda::unavailable_reason();
  }
};
using Cuda = SkipWithoutGpu<::testing::Test>;
template <typename Param>
using CudaWithParam = SkipWithoutGpu<::testing::TestWithParam<Param>>;

// --- tolerances and comparison ---------------------------------------------------------------------------

using optable::Kind;

struct Tol {
  double rtol = 0, atol = 0;  // atol is relative to the tensor's largest |value| (see the file comment)
};

inline Tol tolerance(Kind kind, DType dtype) {
  if (!is_floating(dtype)) return {};  // bool and i64 results are exact on every path
  const bool f64 = dtype == DType::f64;
  switch (kind) {
    case Kind::exact: return {};
    case Kind::elementwise: return f64 ? Tol{1e-10, 1e-12} : Tol{1e-5, 1e-6};
    case Kind::reduce: return f64 ? Tol{1e-9, 1e-11} : Tol{1e-4, 1e-5};
    case Kind::conv: return f64 ? Tol{1e-9, 1e-10} : Tol{1e-4, 1e-4};
  }
  return {};
}

inline std::vector<unsigned char> bytes_of(const Tensor& t) {
  const Tensor host = t.detach().to(kCPU).contiguous();
  const auto* p = static_cast<const unsigned char*>(host.data_ptr());
  return std::vector<unsigned char>(p, p + host.numel() * host.element_size());
}

inline std::string number(double v) {
  std::ostringstream s;
  s << std::setprecision(17) << v;
  return s.str();
}

// `cpu` (the reference, on the CPU) against `gpu` (which must be on the GPU): same shape and dtype, and
// values within `tol`; a zero tolerance compares the bits.
inline ::testing::AssertionResult matches(const Tensor& cpu, const Tensor& gpu, Tol tol) {
  if (!cpu.defined() || !gpu.defined())
    return ::testing::AssertionFailure() << (cpu.defined() ? "the CUDA" : "the CPU") << " tensor is undefined";
  if (!cpu.device().is_cpu()) return ::testing::AssertionFailure() << "the reference is on " << cpu.device();
  if (!gpu.device().is_cuda()) return ::testing::AssertionFailure() << "the result is on " << gpu.device() << ", not on the GPU";
  if (!(cpu.shape() == gpu.shape()))
    return ::testing::AssertionFailure() << "shape " << gpu.shape() << " on the GPU, " << cpu.shape() << " on the CPU";
  if (cpu.dtype() != gpu.dtype())
    return ::testing::AssertionFailure() << "dtype " << dtype_name(gpu.dtype()) << " on the GPU, " << dtype_name(cpu.dtype())
                                         << " on the CPU";
  const std::vector<double> c = cpu.to_vector<double>(), g = gpu.to_vector<double>();
  if (tol.rtol == 0 && tol.atol == 0) {
    const std::vector<unsigned char> cb = bytes_of(cpu), gb = bytes_of(gpu);
    if (cb == gb) return ::testing::AssertionSuccess();
    const size_t size = cpu.element_size();
    size_t first = 0, count = 0;
    for (size_t i = 0; i < c.size(); ++i)
      if (std::memcmp(&cb[i * size], &gb[i * size], size) != 0 && count++ == 0) first = i;
    return ::testing::AssertionFailure() << count << " of " << c.size() << " elements differ in their bits; first: element "
                                         << first << ", cpu " << number(c[first]) << ", cuda " << number(g[first]);
  }
  double scale = 0;
  for (double v : c)
    if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
  size_t bad = 0, worst = 0;
  double worst_ratio = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    double ratio;
    if (std::isnan(c[i]) || std::isnan(g[i]) || std::isinf(c[i]) || std::isinf(g[i])) {
      const bool same = (std::isnan(c[i]) && std::isnan(g[i])) || c[i] == g[i];
      ratio = same ? 0 : std::numeric_limits<double>::infinity();
    } else {
      const double allowed = tol.rtol * std::abs(c[i]) + tol.atol * scale, err = std::abs(g[i] - c[i]);
      ratio = err == 0 ? 0 : allowed == 0 ? std::numeric_limits<double>::infinity() : err / allowed;
    }
    if (ratio > 1) ++bad;
    if (ratio > worst_ratio) worst_ratio = ratio, worst = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << c.size() << " elements outside rtol " << tol.rtol << " + atol "
                                       << tol.atol << " x scale " << number(scale) << "; worst: element " << worst
                                       << ", cpu " << number(c[worst]) << ", cuda " << number(g[worst]) << " ("
                                       << number(worst_ratio) << "x the allowed difference)";
}

inline ::testing::AssertionResult same(const Tensor& cpu, const Tensor& gpu) { return matches(cpu, gpu, {}); }

// The same view of the same values on both devices: `view` applied to `base` and to its copy on the GPU.
struct Both {
  Tensor cpu, gpu;
};
inline Both both(const Tensor& base, const std::function<Tensor(const Tensor&)>& view = [](const Tensor& t) { return t; }) {
  return {view(base), view(base.to(kGpu))};
}


}  // namespace ember::parity
