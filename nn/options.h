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
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

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
// PyTorch's string paddings of a convolution, as LibTorch's torch::kSame / torch::kValid: nn::kSame pads so
// that the output has the input's size (stride 1 only; the odd extra of an even dilated kernel goes to the
// right/bottom, as PyTorch), nn::kValid is no padding.
struct SamePadding {};
struct ValidPadding {};
inline constexpr SamePadding kSame{};
inline constexpr ValidPadding kValid{};

// A convolution's padding: D ints (one for all dims, or one per dim: both sides alike), kSame / kValid, or
// the strings "same" / "valid" (PyTorch's padding='same').
template <size_t D>
struct ConvPadding : ExpandingArray<D> {
  enum class Kind : uint8_t { values, same, valid };
  Kind kind = Kind::values;
  template <std::integral I>
  ConvPadding(I v) : ExpandingArray<D>(static_cast<int64_t>(v)) {}                // NOLINT: implicit
  ConvPadding(std::initializer_list<int64_t> list) : ExpandingArray<D>(list) {}     // NOLINT: {1, 2}
  ConvPadding(const ExpandingArray<D>& values) : ExpandingArray<D>(values) {}       // NOLINT: implicit
  ConvPadding(SamePadding) : ExpandingArray<D>(0), kind(Kind::same) {}              // NOLINT: nn::kSame
  ConvPadding(ValidPadding) : ExpandingArray<D>(0), kind(Kind::valid) {}            // NOLINT: nn::kValid
  ConvPadding(const char* mode) : ExpandingArray<D>(0) {                           // NOLINT: "same"
    const std::string_view m = mode != nullptr ? mode : "";
    EMBER_CHECK(m == "same" || m == "valid", "conv padding: expected \"same\", \"valid\" or integers, got \"", m,
                "\"");
    kind = m == "same" ? Kind::same : Kind::valid;
  }
  bool is_same() const { return kind == Kind::same; }
  bool is_valid() const { return kind == Kind::valid; }
  // Spatial dim d's padding before and after: the ints; none for "valid"; for "same" PyTorch's split of
  // dilation·(kernel - 1): ⌊total/2⌋ before, the odd extra after.
  std::pair<int64_t, int64_t> before_after(size_t d, int64_t kernel, int64_t dilation) const {
    if (is_valid()) return {0, 0};
    if (!is_same()) return {(*this)[d], (*this)[d]};
    const int64_t total = dilation * (kernel - 1);
    return {total / 2, total - total / 2};
  }
  bool operator==(const ConvPadding&) const = default;
};

// How a Conv Module pads its input (PyTorch's padding_mode): zeros is the convolution's own zero padding;
// the others pad with F::pad's reflect / replicate / circular modes first, then convolve unpadded.
enum class PaddingMode : uint8_t { zeros, reflect, replicate, circular };

template <size_t D>
struct ConvFields {
  int64_t in_channels = 0, out_channels = 0;  // the Module's; nn::functional reads them from the weight
  ExpandingArray<D> kernel_size = 3;          // the Module's; nn::functional reads it from the weight
  ExpandingArray<D> stride = 1;
  ConvPadding<D> padding = 0;                 // ints, nn::kSame / "same", nn::kValid / "valid"
  ExpandingArray<D> dilation = 1;
  int64_t groups = 1;
  bool bias = true;  // the Module's
  PaddingMode padding_mode = PaddingMode::zeros;  // the Module's (F::conv2d pads with zeros; use F::pad)
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
  EMBER_OPTION(ConvPadding<D>, padding)
  EMBER_OPTION(ExpandingArray<D>, dilation)
  EMBER_OPTION(int64_t, groups)
  EMBER_OPTION(bool, bias)
  EMBER_OPTION(PaddingMode, padding_mode)
};
using Conv1dOptions = ConvOptions<1>;
using Conv2dOptions = ConvOptions<2>;
using Conv1dFuncOptions = Conv1dOptions;  // LibTorch's names for F::conv1d/conv2d's options
using Conv2dFuncOptions = Conv2dOptions;

// The transposed convolutions (ConvTranspose{1,2}d, F::conv_transpose{1,2}d), LibTorch's field order:
// weight [in_channels, out_channels/groups, K...]; the output size along each dim is
// (in - 1)·stride - 2·padding + dilation·(kernel - 1) + output_padding + 1, output_padding < stride or
// dilation (it picks one of the input sizes a strided conv2d maps to the same output size).
template <size_t D>
struct ConvTransposeFields {
  int64_t in_channels = 0, out_channels = 0;  // the Module's
  ExpandingArray<D> kernel_size = 3;          // the Module's
  ExpandingArray<D> stride = 1;
  ExpandingArray<D> padding = 0;
  ExpandingArray<D> output_padding = 0;
  int64_t groups = 1;
  bool bias = true;  // the Module's
  ExpandingArray<D> dilation = 1;
};

template <size_t D>
class ConvTransposeOptions : public ConvTransposeFields<D> {
 public:
  using Fields = ConvTransposeFields<D>;
  ConvTransposeOptions() = default;
  template <std::same_as<Fields> F>
  ConvTransposeOptions(const F& fields) : Fields(fields) {}  // NOLINT: implicit, as ConvOptions
  ConvTransposeOptions(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size)
      : Fields{in_channels, out_channels, kernel_size} {}
  EMBER_OPTION(int64_t, in_channels)
  EMBER_OPTION(int64_t, out_channels)
  EMBER_OPTION(ExpandingArray<D>, kernel_size)
  EMBER_OPTION(ExpandingArray<D>, stride)
  EMBER_OPTION(ExpandingArray<D>, padding)
  EMBER_OPTION(ExpandingArray<D>, output_padding)
  EMBER_OPTION(int64_t, groups)
  EMBER_OPTION(bool, bias)
  EMBER_OPTION(ExpandingArray<D>, dilation)
};
using ConvTranspose1dOptions = ConvTransposeOptions<1>;
using ConvTranspose2dOptions = ConvTransposeOptions<2>;
using ConvTranspose1dFuncOptions = ConvTranspose1dOptions;  // LibTorch's names
using ConvTranspose2dFuncOptions = ConvTranspose2dOptions;

template <size_t D>
struct PoolFields {
  ExpandingArray<D> kernel_size = 2;
  ExpandingArray<D> stride = 0;  // 0: the kernel size (PyTorch's default)
  ExpandingArray<D> padding = 0;
  bool ceil_mode = false;          // ⌈⌉ instead of ⌊⌋ in OH, OW (PyTorch's ceil_mode)
  bool count_include_pad = true;   // avg only: padded zeros count in the divisor
  ExpandingArray<D> dilation = 1;  // max only: the spacing of a window's elements
  std::optional<int64_t> divisor_override{};  // avg_pool2d only: divide every window's sum by this instead
};
using Pool2dFields = PoolFields<2>;

// Pool2dOptions(kernel_size), then .stride() .padding() .ceil_mode() .count_include_pad() .dilation()
// .divisor_override(); an int converts (max_pool2d(x, 2), nn::MaxPool2d(2)). Pool1dOptions likewise, for
// max_pool1d / avg_pool1d.
template <size_t D>
class PoolOptions : public PoolFields<D> {
 public:
  using Fields = PoolFields<D>;
  PoolOptions() = default;
  template <std::same_as<Fields> F>
  PoolOptions(const F& fields) : Fields(fields) {}                         // NOLINT: as ConvOptions
  // cppcheck-suppress passedByValue ; two integers, cheaper by value
  PoolOptions(ExpandingArray<D> kernel_size) : Fields{kernel_size} {}     // NOLINT: {2, 3}
  PoolOptions(int64_t kernel_size) : Fields{kernel_size} {}               // NOLINT: max_pool2d(x, 2)
  EMBER_OPTION(ExpandingArray<D>, kernel_size)
  EMBER_OPTION(ExpandingArray<D>, stride)
  EMBER_OPTION(ExpandingArray<D>, padding)
  EMBER_OPTION(bool, ceil_mode)
  EMBER_OPTION(bool, count_include_pad)
  EMBER_OPTION(ExpandingArray<D>, dilation)
  EMBER_OPTION(std::optional<int64_t>, divisor_override)
};
using Pool2dOptions = PoolOptions<2>;
using MaxPool2dOptions = Pool2dOptions;  // LibTorch's names; count_include_pad is ignored by max
using AvgPool2dOptions = Pool2dOptions;
using Pool1dOptions = PoolOptions<1>;
using MaxPool1dOptions = Pool1dOptions;
using AvgPool1dOptions = Pool1dOptions;
using MaxPool1dFuncOptions = Pool1dOptions;  // LibTorch's names for the functions' options
using AvgPool1dFuncOptions = Pool1dOptions;
using MaxPool2dFuncOptions = Pool2dOptions;
using AvgPool2dFuncOptions = Pool2dOptions;

// max_unpool{1,2}d / nn::MaxUnpool{1,2}d: the pooling that made the indices (stride 0: the kernel size)
// and, optionally, the output's spatial size (default (in - 1)·stride - 2·padding + kernel; one given must
// lie strictly within stride of that default, as PyTorch). output_size may also be the full [N, C, ...].
template <size_t D>
struct MaxUnpoolFields {
  ExpandingArray<D> kernel_size = 2;
  ExpandingArray<D> stride = 0;
  ExpandingArray<D> padding = 0;
  std::optional<std::vector<int64_t>> output_size{};
};
template <size_t D>
class MaxUnpoolOptions : public MaxUnpoolFields<D> {
 public:
  using Fields = MaxUnpoolFields<D>;
  MaxUnpoolOptions() = default;
  template <std::same_as<Fields> F>
  MaxUnpoolOptions(const F& fields) : Fields(fields) {}                    // NOLINT: as ConvOptions
  // cppcheck-suppress passedByValue ; two integers, cheaper by value
  MaxUnpoolOptions(ExpandingArray<D> kernel_size) : Fields{kernel_size} {}  // NOLINT: {2, 3}
  MaxUnpoolOptions(int64_t kernel_size) : Fields{kernel_size} {}            // NOLINT: max_unpool2d(x, i, 2)
  EMBER_OPTION(ExpandingArray<D>, kernel_size)
  EMBER_OPTION(ExpandingArray<D>, stride)
  EMBER_OPTION(ExpandingArray<D>, padding)
  EMBER_OPTION(std::optional<std::vector<int64_t>>, output_size)
};
using MaxUnpool1dOptions = MaxUnpoolOptions<1>;
using MaxUnpool2dOptions = MaxUnpoolOptions<2>;
using MaxUnpool1dFuncOptions = MaxUnpool1dOptions;  // LibTorch's names
using MaxUnpool2dFuncOptions = MaxUnpool2dOptions;

// F::interpolate / nn::Upsample (torch.nn.functional.interpolate, PyTorch 1.13): mode and, for the linear
// modes, align_corners; exactly one of size and scale_factor (one value for every spatial dim, or one per
// dim). recompute_scale_factor: compute the source positions from the output size instead of scale_factor.
enum class InterpolateMode : uint8_t { nearest, nearest_exact, linear, bilinear, trilinear, area };
struct InterpolateFields {
  std::optional<std::vector<int64_t>> size{};
  std::optional<std::vector<double>> scale_factor{};
  InterpolateMode mode = InterpolateMode::nearest;
  std::optional<bool> align_corners{};  // linear modes only (default false); nearest and area refuse it
  std::optional<bool> recompute_scale_factor{};
};
class InterpolateOptions : public InterpolateFields {
 public:
  using Fields = InterpolateFields;
  InterpolateOptions() = default;
  template <std::same_as<Fields> F>
  InterpolateOptions(const F& fields) : Fields(fields) {}  // NOLINT: as ConvOptions
  EMBER_OPTION(std::optional<std::vector<int64_t>>, size)
  EMBER_OPTION(std::optional<std::vector<double>>, scale_factor)
  EMBER_OPTION(InterpolateMode, mode)
  EMBER_OPTION(std::optional<bool>, align_corners)
  EMBER_OPTION(std::optional<bool>, recompute_scale_factor)
};
using InterpolateFuncOptions = InterpolateOptions;  // LibTorch's names
using UpsampleOptions = InterpolateOptions;


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


// --- nn::RMSNorm's options (PyTorch 2.4's names) ---
struct RMSNormFields {
  std::vector<int64_t> normalized_shape{};  // the trailing dims normalised over
  std::optional<double> eps{};              // none: the machine epsilon of the input's dtype (torch.finfo)
  bool elementwise_affine = true;           // weight = 1 of normalized_shape
};
// RMSNormOptions({dim}).eps(1e-6).elementwise_affine(false)
class RMSNormOptions : public RMSNormFields {
 public:
  using Fields = RMSNormFields;
  RMSNormOptions() = default;
  template <std::same_as<Fields> F>
  RMSNormOptions(const F& fields) : Fields(fields) {}  // NOLINT: as ConvOptions
  explicit RMSNormOptions(std::vector<int64_t> normalized_shape) : Fields{std::move(normalized_shape)} {}
  EMBER_OPTION(std::vector<int64_t>, normalized_shape)
  EMBER_OPTION(std::optional<double>, eps)
  EMBER_OPTION(bool, elementwise_affine)
};

}  // namespace ember::nn
