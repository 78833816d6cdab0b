#pragma once
// The options of the conv and pooling layers, shared by the nn:: Modules and nn::functional (one struct
// each, LibTorch's field names). Three ways to write them:
//
//   nn::Conv2d(nn::Conv2dOptions(1, 32, 3).stride(1).padding(1))                     // LibTorch's builder
//   nn::Conv2d({.in_channels = 1, .out_channels = 32, .kernel_size = 3, .padding = 1})  // designated
//   F::max_pool2d(x, 2);  F::max_pool2d(x, F::MaxPool2dOptions(3).stride(2).ceil_mode(true));
//
// The fields live in a plain aggregate (`Conv2dOptions::Fields`, what designated initialisers fill; every
// Module and function that takes options also takes the fields); the options class adds LibTorch's
// accessors: `o.stride(2)` sets and returns the options, `o.stride()` reads.
// A spatial field takes one int for every dim or a list of one per dim ({3, 5}: height 3, width 5).
#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "base/error.h"

namespace ember::nn {

// D ints written as one (3 → {3, 3}) or as D (LibTorch's ExpandingArray).
template <size_t D>
struct ExpandingArray {
  std::array<int64_t, D> values;
  ExpandingArray(int64_t v) { values.fill(v); }  // NOLINT: implicit, as LibTorch's
  ExpandingArray(std::initializer_list<int64_t> list) {
    EMBER_CHECK(list.size() == D || list.size() == 1, "expected ", D, " values (one per spatial dim) or one for all, got ",
                list.size());
    if (list.size() == 1) values.fill(*list.begin());
    else std::copy(list.begin(), list.end(), values.begin());
  }
  int64_t operator[](size_t i) const { return values[i]; }
  int64_t& operator[](size_t i) { return values[i]; }
  const int64_t* data() const { return values.data(); }
  static constexpr size_t size() { return D; }
  bool operator==(const ExpandingArray&) const = default;
};

// One accessor pair of an options class: o.name(v) sets the field and returns the options; o.name() reads it.
// Also used by the options of other layer families (nn/rnn.h).
#define EMBER_OPTION(Type, name)                         \
  auto& name(const Type& v) {                           \
    Fields::name = v;                                    \
    return *this;                                        \
  }                                                      \
  const Type& name() const { return Fields::name; }     \
  Type& name() { return Fields::name; }

// The fields (aggregates, for designated initialisers); use them through the options classes below.
template <size_t D>
struct ConvFields {
  int64_t in_channels = 0, out_channels = 0;  // the Module's; nn::functional reads them from the weight
  ExpandingArray<D> kernel_size = 3;          // the Module's; nn::functional reads it from the weight
  ExpandingArray<D> stride = 1;
  ExpandingArray<D> padding = 0;
  ExpandingArray<D> dilation = 1;
  int64_t groups = 1;
  bool bias = true;  // the Module's
};

// Conv{1,2}dOptions(in_channels, out_channels, kernel_size), then .stride() .padding() .dilation() .groups()
// .bias(). nn::functional::conv{1,2}d uses stride, padding, dilation and groups (the rest comes from the
// weight and bias given), so F::conv2d(x, w, b, F::Conv2dOptions().stride(2)) needs no channels.
template <size_t D>
class ConvOptions : public ConvFields<D> {
 public:
  using Fields = ConvFields<D>;
  ConvOptions() = default;
  // From the fields filled by designated initialisers (a template, so that a braced list such as {3, 5}
  // is never read as the fields).
  template <std::same_as<Fields> F>
  ConvOptions(const F& fields) : Fields(fields) {}  // NOLINT: implicit
  ConvOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : Fields{in_channels, out_channels, kernel_size} {}
  EMBER_OPTION(int64_t, in_channels)
  EMBER_OPTION(int64_t, out_channels)
  EMBER_OPTION(ExpandingArray<D>, kernel_size)
  EMBER_OPTION(ExpandingArray<D>, stride)
  EMBER_OPTION(ExpandingArray<D>, padding)
  EMBER_OPTION(ExpandingArray<D>, dilation)
  EMBER_OPTION(int64_t, groups)
  EMBER_OPTION(bool, bias)
};
using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;

struct Pool2dFields {
  ExpandingArray<2> kernel_size = 2;
  ExpandingArray<2> stride = 0;  // 0: the kernel size (PyTorch's default)
  ExpandingArray<2> padding = 0;
  bool ceil_mode = false;          // ⌈⌉ instead of ⌊⌋ in OH, OW (PyTorch's ceil_mode)
  bool count_include_pad = true;   // avg only: padded zeros count in the divisor
};

// Pool2dOptions(kernel_size), then .stride() .padding() .ceil_mode() .count_include_pad(); an int converts
// (max_pool2d(x, 2), nn::MaxPool2d(2)).
class Pool2dOptions : public Pool2dFields {
 public:
  using Fields = Pool2dFields;
  Pool2dOptions() = default;
  template <std::same_as<Fields> F>
  Pool2dOptions(const F& fields) : Fields(fields) {}                         // NOLINT: as ConvOptions
  // cppcheck-suppress passedByValue ; two integers, cheaper by value
  Pool2dOptions(ExpandingArray<2> kernel_size) : Fields{kernel_size} {}     // NOLINT: {2, 3}
  Pool2dOptions(int64_t kernel_size) : Fields{kernel_size} {}               // NOLINT: max_pool2d(x, 2)
  EMBER_OPTION(ExpandingArray<2>, kernel_size)
  EMBER_OPTION(ExpandingArray<2>, stride)
  EMBER_OPTION(ExpandingArray<2>, padding)
  EMBER_OPTION(bool, ceil_mode)
  EMBER_OPTION(bool, count_include_pad)
};
using MaxPool2dOptions = Pool2dOptions;  // LibTorch's names; count_include_pad is ignored by max
using AvgPool2dOptions = Pool2dOptions;


// --- the norm layers' options (nn::GroupNorm, nn::InstanceNorm1d/2d, nn::LocalResponseNorm), LibTorch's ---
struct GroupNormFields {
  int64_t num_groups = 1, num_channels = 0;
  double eps = 1e-5;
  bool affine = true;  // weight = 1 and bias = 0, [num_channels]
};
// GroupNormOptions(num_groups, num_channels).eps(1e-3).affine(false)
class GroupNormOptions : public GroupNormFields {
 public:
  using Fields = GroupNormFields;
  GroupNormOptions() = default;
  template <std::same_as<Fields> F>
  GroupNormOptions(const F& fields) : Fields(fields) {}  // NOLINT: as ConvOptions
  GroupNormOptions(int64_t num_groups, int64_t num_channels) : Fields{num_groups, num_channels} {}
  EMBER_OPTION(int64_t, num_groups)
  EMBER_OPTION(int64_t, num_channels)
  EMBER_OPTION(double, eps)
  EMBER_OPTION(bool, affine)
};

struct InstanceNormFields {
  int64_t num_features = 0;
  double eps = 1e-5;
  double momentum = 0.1;
  bool affine = false;               // weight = 1 and bias = 0, [num_features] (PyTorch's default: none)
  bool track_running_stats = false;  // buffers running_mean/var (and num_batches_tracked); eval uses them
};
// InstanceNormOptions(num_features).affine(true).track_running_stats(true)
class InstanceNormOptions : public InstanceNormFields {
 public:
  using Fields = InstanceNormFields;
  InstanceNormOptions() = default;
  template <std::same_as<Fields> F>
  InstanceNormOptions(const F& fields) : Fields(fields) {}  // NOLINT: as ConvOptions
  explicit InstanceNormOptions(int64_t num_features) : Fields{num_features} {}
  EMBER_OPTION(int64_t, num_features)
  EMBER_OPTION(double, eps)
  EMBER_OPTION(double, momentum)
  EMBER_OPTION(bool, affine)
  EMBER_OPTION(bool, track_running_stats)
};

struct LocalResponseNormFields {
  int64_t size = 1;
  double alpha = 1e-4, beta = 0.75, k = 1.0;
};
// LocalResponseNormOptions(size).alpha(1e-4).beta(0.75).k(1)
class LocalResponseNormOptions : public LocalResponseNormFields {
 public:
  using Fields = LocalResponseNormFields;
  LocalResponseNormOptions() = default;
  template <std::same_as<Fields> F>
  LocalResponseNormOptions(const F& fields) : Fields(fields) {}  // NOLINT: as ConvOptions
  explicit LocalResponseNormOptions(int64_t size) : Fields{size} {}
  EMBER_OPTION(int64_t, size)
  EMBER_OPTION(double, alpha)
  EMBER_OPTION(double, beta)
  EMBER_OPTION(double, k)
};


}  // namespace ember::nn
