#pragma once
// Element types and the rules that combine them.
//
// Promotion (what `a + b` computes in), as in PyTorch for these types:
//   b8 < i64 < f32 < f64 — the result is the larger of the two.
//   A Python-like scalar (a 0-d tensor made from a C++ number) does not promote a tensor of the same
//   category: f32 tensor * 2.0 stays f32; an i64 tensor * 0.5 becomes f32 (the default float type).
// Float-only math (exp, log, sqrt, tanh, ...) on b8/i64 inputs computes in f32.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/error.h"

namespace ember {

enum class DType : uint8_t { b8, i64, f32, f64 };

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::b8: return 1;
    case DType::i64: return 8;
    case DType::f32: return 4;
    case DType::f64: return 8;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::b8: return "bool";
    case DType::i64: return "i64";
    case DType::f32: return "f32";
    case DType::f64: return "f64";
  }
  return "?";
}

constexpr bool is_floating(DType t) { return t == DType::f32 || t == DType::f64; }

constexpr DType promote_types(DType a, DType b) { return static_cast<uint8_t>(a) > static_cast<uint8_t>(b) ? a : b; }

// The dtype float-only math computes in: the input's own if floating, else f32.
constexpr DType to_floating(DType t) { return is_floating(t) ? t : DType::f32; }

template <typename T> struct dtype_of;
template <> struct dtype_of<bool> { static constexpr DType value = DType::b8; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::i64; };
template <> struct dtype_of<float> { static constexpr DType value = DType::f32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::f64; };
template <typename T> inline constexpr DType dtype_v = dtype_of<T>::value;

// The one place dtype dispatch happens: calls fn(T{}) with T the C++ type of `t`.
// Adding bf16/f16 later means adding a case here (and to dtype_of).
template <typename Fn>
decltype(auto) dispatch_dtype(DType t, std::string_view op, Fn&& fn) {
  switch (t) {
    case DType::b8: return fn(bool{});
    case DType::i64: return fn(int64_t{});
    case DType::f32: return fn(float{});
    case DType::f64: return fn(double{});
  }
  detail::throw_error(op, ": unsupported dtype ", static_cast<int>(t));
}

// Same, for ops defined on floating types only (the caller has already converted the input).
template <typename Fn>
decltype(auto) dispatch_floating(DType t, std::string_view op, Fn&& fn) {
  switch (t) {
    case DType::f32: return fn(float{});
    case DType::f64: return fn(double{});
    default: break;
  }
  detail::throw_error(op, ": expected a floating dtype (f32 or f64), got ", dtype_name(t),
                      "; convert with .to(DType::f32)");
}

}  // namespace ember
