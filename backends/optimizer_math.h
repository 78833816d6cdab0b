#pragma once
// The fused optimizer updates' math (PyTorch 1.13's single-tensor SGD, Adam/AdamW and RMSprop), one
// element per call: backends/cpu/optimizer_step.cpp and backends/cuda/optimizer_step.cu run this functor.
#include <cmath>
#include <cstdint>

#include "backends/backend.h"
#include "backends/scalar_math.h"
#include "base/host_device.h"

namespace ember::kernels {

// Same order of operations, and every derived constant (1 - β, lr / bias correction, 1 - lr·wd) computed
// in double and rounded once to T, as PyTorch's Python scalars are: f32 trajectories then match PyTorch's
// to about an ulp per step.
template <typename T>
struct OptimizerStep {
  T lr, wd, momentum, one_minus_dampening, beta1, one_minus_beta1, beta2, one_minus_beta2, eps, step_size,
      bc2_sqrt, decay;
  bool decoupled, maximize, nesterov, amsgrad, centered, first_step;

  explicit OptimizerStep(const OptimizerParams& p)
      : lr(T(p.lr)), wd(T(p.weight_decay)), momentum(T(p.momentum)), one_minus_dampening(T(1.0 - p.dampening)),
        beta1(T(p.beta1)), one_minus_beta1(T(1.0 - p.beta1)), beta2(T(p.beta2)), one_minus_beta2(T(1.0 - p.beta2)),
        eps(T(p.eps)), step_size(T(p.lr / (1.0 - ::pow(p.beta1, static_cast<double>(p.step))))),
        bc2_sqrt(T(::sqrt(1.0 - ::pow(p.beta2, static_cast<double>(p.step))))), decay(T(1.0 - p.lr * p.weight_decay)),
        decoupled(p.decoupled_weight_decay), maximize(p.maximize), nesterov(p.nesterov), amsgrad(p.amsgrad),
        centered(p.centered), first_step(p.step == 1) {}

  // Updates element i. `op` is a template parameter (one straight-line loop body per optimizer, which the
  // compiler vectorises); s0..s2 are only read where the configuration has that buffer.
  template <OptimizerOp kOp>
  EMBER_HOST_DEVICE void apply(int64_t i, T* param, const T* grad, T* s0, T* s1, T* s2) const {
    T g = maximize ? -grad[i] : grad[i];
    T p = param[i];
    if constexpr (kOp == OptimizerOp::sgd) {
      if (wd != T(0)) g = g + wd * p;
      if (momentum != T(0)) {
        const T buf = first_step ? g : s0[i] * momentum + one_minus_dampening * g;
        s0[i] = buf;
        g = nesterov ? g + momentum * buf : buf;
      }
      p = p + (-lr) * g;
    } else if constexpr (kOp == OptimizerOp::adam) {
      if (decoupled) p = p * decay;
      else if (wd != T(0)) g = g + wd * p;
      const T m = s0[i] * beta1 + one_minus_beta1 * g;
      const T v = s1[i] * beta2 + one_minus_beta2 * g * g;
      s0[i] = m;
      s1[i] = v;
      T denom_src = v;
      if (amsgrad) {
        denom_src = m_max(s2[i], v);
        s2[i] = denom_src;
      }
      const T denom = m_sqrt(denom_src) / bc2_sqrt + eps;
      p = p + (-step_size) * (m / denom);
    } else {  // rmsprop: alpha is beta2
      if (wd != T(0)) g = g + wd * p;
      const T square_avg = s0[i] * beta2 + one_minus_beta2 * g * g;
      s0[i] = square_avg;
      T avg;
      if (centered) {
        const T grad_avg = s2[i] * beta2 + one_minus_beta2 * g;
        s2[i] = grad_avg;
        avg = m_sqrt(square_avg + T(-1) * grad_avg * grad_avg) + eps;
      } else {
        avg = m_sqrt(square_avg) + eps;
      }
      if (momentum > T(0)) {
        const T buf = s1[i] * momentum + g / avg;
        s1[i] = buf;
        p = p + (-lr) * buf;
      } else {
        p = p + (-lr) * (g / avg);
      }
    }
    param[i] = p;
  }
};

}  // namespace ember::kernels
