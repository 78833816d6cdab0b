#pragma once
// Each optimizer's options, with torch.optim 1.13's defaults for that optimizer, in both spellings:
//
//   optim::AdamW opt(params, {.lr = 1e-3, .weight_decay = 0.1});                      // designated fields
//   optim::SGD sgd(params, optim::SGDOptions(0.1).momentum(0.9).nesterov(true));      // LibTorch's builder
//   double m = sgd.defaults().momentum;  // or .momentum(), as LibTorch's getter
//
// Designated initializers follow the declaration order below (LibTorch's argument order). The builder
// form SGDOptions(lr) is C++20's parenthesized aggregate initialization (GCC >= 10, Clang >= 16);
// SGDOptions{lr} is the same everywhere. Each setter returns the options: on a temporary, a new value,
// so `auto o = AdamOptions(1e-3).eps(1e-6);` holds no reference into the temporary.
//
// Only what Ember implements is here (no foreach/fused/capturable/differentiable: one fused kernel per
// parameter is what Ember runs). A field reads as its value (`double lr = o.lr;`, `o.lr * 2`); where a
// template needs the plain type (std::max), use o.lr().
#include <array>
#include <cstddef>
#include <type_traits>

namespace ember::optim {
namespace detail {

// One field of an options struct: a value of type T that is also its own LibTorch setter and getter.
// Every field takes one 8-byte slot, and field I of Owner sits at byte 8·I (checked by static_asserts
// below each struct), so a field finds the struct it belongs to from its own address and a setter can
// return the whole options (the standard-layout struct starts at its first field).
template <class Owner, class T, size_t I>
struct Opt;
template <class U>
struct ValueOf {
  using type = U;
};
template <class Owner, class T, size_t I>
struct ValueOf<Opt<Owner, T, I>> {
  using type = T;
};
template <class U>
using value_of = typename ValueOf<U>::type;

template <class Owner, class T, size_t I>
struct alignas(8) Opt {
  static constexpr size_t slot = I;
  T value;

  // Implicit, so that `.lr = 1e-3`, `o.lr = 0.5` and `adamw.lr = adam.lr` work; a flag takes only a bool
  // and a number no bool (`.nesterov = 0.9` and `.lr = true` are compile errors).
  template <class U>
    requires(std::is_arithmetic_v<value_of<U>> && std::is_same_v<value_of<U>, bool> == std::is_same_v<T, bool>)
  constexpr Opt(const U& v) : value(static_cast<T>(static_cast<value_of<U>>(v))) {}  // NOLINT(google-explicit-constructor)

  constexpr operator T() const { return value; }  // NOLINT(google-explicit-constructor)
  constexpr T operator()() const { return value; }
  Owner& operator()(T v) & {
    value = v;
    return owner();
  }
  Owner operator()(T v) && {
    value = v;
    return owner();
  }

 private:
  Owner& owner() { return *reinterpret_cast<Owner*>(reinterpret_cast<std::byte*>(this) - 8 * I); }
};

template <class Owner, size_t I>
using Real = Opt<Owner, double, I>;
template <class Owner, size_t I>
using Flag = Opt<Owner, bool, I>;

}  // namespace detail

// torch.optim.SGD: momentum, dampening, Nesterov, L2 weight decay. torch 1.13 requires lr (no default);
// Ember's 1e-3 is LibTorch's and torch >= 2.2's.
struct SGDOptions {
  detail::Real<SGDOptions, 0> lr = 1e-3;
  detail::Real<SGDOptions, 1> momentum = 0;
  detail::Real<SGDOptions, 2> dampening = 0;
  detail::Real<SGDOptions, 3> weight_decay = 0;
  detail::Flag<SGDOptions, 4> nesterov = false;
  detail::Flag<SGDOptions, 5> maximize = false;
};

// torch.optim.Adam (L2 weight decay added to the gradient). betas() reads or sets beta1 and beta2 as a
// pair, as LibTorch's AdamOptions::betas.
struct AdamOptions {
  detail::Real<AdamOptions, 0> lr = 1e-3;
  detail::Real<AdamOptions, 1> beta1 = 0.9;
  detail::Real<AdamOptions, 2> beta2 = 0.999;
  detail::Real<AdamOptions, 3> eps = 1e-8;
  detail::Real<AdamOptions, 4> weight_decay = 0;
  detail::Flag<AdamOptions, 5> amsgrad = false;
  detail::Flag<AdamOptions, 6> maximize = false;

  std::array<double, 2> betas() const { return {beta1, beta2}; }
  AdamOptions& betas(std::array<double, 2> b) & { return beta1(b[0]).beta2(b[1]); }
  AdamOptions betas(std::array<double, 2> b) && { return beta1(b[0]).beta2(b[1]); }
};

// torch.optim.AdamW: Adam with decoupled weight decay (p ← p·(1 - lr·wd)), default 1e-2.
struct AdamWOptions {
  detail::Real<AdamWOptions, 0> lr = 1e-3;
  detail::Real<AdamWOptions, 1> beta1 = 0.9;
  detail::Real<AdamWOptions, 2> beta2 = 0.999;
  detail::Real<AdamWOptions, 3> eps = 1e-8;
  detail::Real<AdamWOptions, 4> weight_decay = 1e-2;
  detail::Flag<AdamWOptions, 5> amsgrad = false;
  detail::Flag<AdamWOptions, 6> maximize = false;

  std::array<double, 2> betas() const { return {beta1, beta2}; }
  AdamWOptions& betas(std::array<double, 2> b) & { return beta1(b[0]).beta2(b[1]); }
  AdamWOptions betas(std::array<double, 2> b) && { return beta1(b[0]).beta2(b[1]); }
};

// torch.optim.RMSprop: alpha is the smoothing constant of the squared-gradient average (default 0.99).
struct RMSpropOptions {
  detail::Real<RMSpropOptions, 0> lr = 1e-2;
  detail::Real<RMSpropOptions, 1> alpha = 0.99;
  detail::Real<RMSpropOptions, 2> eps = 1e-8;
  detail::Real<RMSpropOptions, 3> weight_decay = 0;
  detail::Real<RMSpropOptions, 4> momentum = 0;
  detail::Flag<RMSpropOptions, 5> centered = false;
  detail::Flag<RMSpropOptions, 6> maximize = false;
};

// The slots: each field at 8·(its index), nothing else in the struct.
#define EMBER_OPTION_SLOT(S, field) \
  static_assert(offsetof(S, field) == 8 * decltype(S::field)::slot, #S "::" #field " is not at its slot")
static_assert(std::is_standard_layout_v<SGDOptions> && sizeof(SGDOptions) == 8 * 6);
EMBER_OPTION_SLOT(SGDOptions, lr);
EMBER_OPTION_SLOT(SGDOptions, momentum);
EMBER_OPTION_SLOT(SGDOptions, dampening);
EMBER_OPTION_SLOT(SGDOptions, weight_decay);
EMBER_OPTION_SLOT(SGDOptions, nesterov);
EMBER_OPTION_SLOT(SGDOptions, maximize);
static_assert(std::is_standard_layout_v<AdamOptions> && sizeof(AdamOptions) == 8 * 7);
EMBER_OPTION_SLOT(AdamOptions, lr);
EMBER_OPTION_SLOT(AdamOptions, beta1);
EMBER_OPTION_SLOT(AdamOptions, beta2);
EMBER_OPTION_SLOT(AdamOptions, eps);
EMBER_OPTION_SLOT(AdamOptions, weight_decay);
EMBER_OPTION_SLOT(AdamOptions, amsgrad);
EMBER_OPTION_SLOT(AdamOptions, maximize);
static_assert(std::is_standard_layout_v<AdamWOptions> && sizeof(AdamWOptions) == 8 * 7);
EMBER_OPTION_SLOT(AdamWOptions, lr);
EMBER_OPTION_SLOT(AdamWOptions, beta1);
EMBER_OPTION_SLOT(AdamWOptions, beta2);
EMBER_OPTION_SLOT(AdamWOptions, eps);
EMBER_OPTION_SLOT(AdamWOptions, weight_decay);
EMBER_OPTION_SLOT(AdamWOptions, amsgrad);
EMBER_OPTION_SLOT(AdamWOptions, maximize);
static_assert(std::is_standard_layout_v<RMSpropOptions> && sizeof(RMSpropOptions) == 8 * 7);
EMBER_OPTION_SLOT(RMSpropOptions, lr);
EMBER_OPTION_SLOT(RMSpropOptions, alpha);
EMBER_OPTION_SLOT(RMSpropOptions, eps);
EMBER_OPTION_SLOT(RMSpropOptions, weight_decay);
EMBER_OPTION_SLOT(RMSpropOptions, momentum);
EMBER_OPTION_SLOT(RMSpropOptions, centered);
EMBER_OPTION_SLOT(RMSpropOptions, maximize);
#undef EMBER_OPTION_SLOT

}  // namespace ember::optim
