#include "nn/layers.h"

#include <cmath>
#include <sstream>
#include <vector>

#include "core/raw.h"
#include "nn/init.h"

namespace ember::nn {
namespace {

// PyTorch's default for Linear and Conv2d: kaiming_uniform_(a = √5) on the weight, which is
// U(-1/√fan_in, 1/√fan_in), and the same bound for the bias.
void default_init(Tensor& weight, Tensor* bias, Generator* gen) {
  init::kaiming_uniform_(weight, std::sqrt(5.0), init::FanMode::fan_in, init::Nonlinearity::leaky_relu, gen);
  if (bias != nullptr) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(init::fans(weight).first));
    init::uniform_(*bias, -bound, bound, gen);
  }
}

std::string pair_str(const int64_t* v) {
  std::ostringstream s;
  if (v[0] == v[1]) s << v[0];
  else s << '(' << v[0] << ", " << v[1] << ')';
  return s.str();
}

}  // namespace

Linear::Linear(int64_t in, int64_t out, bool with_bias, Generator* gen) : in_features(in), out_features(out) {
  EMBER_CHECK(in > 0 && out > 0, "Linear: in_features (", in, ") and out_features (", out, ") must be positive");
  weight = register_parameter("weight", empty({out, in}));
  if (with_bias) bias = register_parameter("bias", empty({out}));
  default_init(weight, with_bias ? &bias : nullptr, gen);
}

Tensor Linear::forward(const Tensor& x) {
  check_input_dtype(x, weight);
  return functional::linear(x, weight, bias);
}

std::string Linear::describe() const {
  return "Linear(in=" + std::to_string(in_features) + ", out=" + std::to_string(out_features) +
         (bias.defined() ? "" : ", bias=false") + ")";
}

namespace {
// The checks Conv1d and Conv2d share, naming the layer.
void check_conv(const char* layer, int64_t in, int64_t out, int64_t groups, const int64_t* kernel, size_t dims) {
  EMBER_CHECK(in > 0 && out > 0, layer, ": in_channels (", in, ") and out_channels (", out,
              ") must be positive (set them in the options: ", layer, "Options(in_channels, out_channels, kernel_size))");
  EMBER_CHECK(groups > 0 && in % groups == 0 && out % groups == 0, layer, ": channels (in ", in, ", out ", out,
              ") must be positive multiples of groups (", groups, ")");
  for (size_t i = 0; i < dims; ++i) EMBER_CHECK(kernel[i] > 0, layer, ": kernel_size must be positive");
}

// PyTorch's check at construction: padding='same' needs stride 1.
template <size_t D>
void check_same(const char* layer, const ConvOptions<D>& o) {
  if (!o.padding().is_same()) return;
  for (size_t i = 0; i < D; ++i)
    EMBER_CHECK(o.stride()[i] == 1, layer, ": padding='same' is not supported for strided convolutions (stride ",
                o.stride()[i], "), as in PyTorch; give the padding as numbers instead");
}

functional::PadMode pad_mode(PaddingMode m) {
  switch (m) {
    case PaddingMode::reflect: return functional::PadMode::reflect;
    case PaddingMode::replicate: return functional::PadMode::replicate;
    case PaddingMode::circular: return functional::PadMode::circular;
    case PaddingMode::zeros: break;
  }
  return functional::PadMode::constant;
}

const char* padding_mode_name(PaddingMode m) {
  switch (m) {
    case PaddingMode::zeros: return "zeros";
    case PaddingMode::reflect: return "reflect";
    case PaddingMode::replicate: return "replicate";
    case PaddingMode::circular: return "circular";
  }
  return "?";
}

// A Conv module's forward, as PyTorch's _conv_forward: with padding_mode zeros conv itself; with another mode
// F::pad by _reversed_padding_repeated_twice (same: total dilation·(K-1), the left half ⌊total/2⌋), then an
// unpadded convolution. Unbatched inputs are padded as a batch of one.
template <size_t D, typename Conv>
Tensor conv_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const ConvOptions<D>& o, Conv conv) {
  if (o.padding_mode() == PaddingMode::zeros) return conv(x, weight, bias, o);
  std::vector<int64_t> pads;
  for (size_t r = 0; r < D; ++r) {
    const size_t d = D - 1 - r;
    const auto [left, right] = o.padding().before_after(d, weight.size(static_cast<int64_t>(2 + d)), o.dilation()[d]);
    pads.push_back(left);
    pads.push_back(right);
  }
  const bool unbatched = x.dim() == static_cast<int64_t>(D) + 1;
  const Tensor xb = unbatched ? x.unsqueeze(0) : x;
  ConvOptions<D> unpadded = o;
  unpadded.padding(0);
  const Tensor y = conv(functional::pad(xb, pads, pad_mode(o.padding_mode())), weight, bias, unpadded);
  return unbatched ? y.squeeze(0) : y;
}

// A convolution's weight shape: [rows, cols, K...].
template <size_t D>
Shape weight_shape(int64_t rows, int64_t cols, const ExpandingArray<D>& kernel) {
  Shape shape{rows, cols};
  for (size_t d = 0; d < D; ++d) shape.push_back(kernel[d]);
  return shape;
}

// One number for a 1-D option, a pair (or one number when both are alike) for a 2-D one.
template <size_t D>
std::string dims_str(const ExpandingArray<D>& a) {
  return D == 1 ? std::to_string(a[0]) : pair_str(a.data());
}

template <size_t D>
std::string padding_str(const ConvPadding<D>& p) {
  if (p.is_same()) return "'same'";
  if (p.is_valid()) return "'valid'";
  return dims_str<D>(p);
}

// The output_padding that gives output_size (PyTorch's _ConvTransposeNd._output_padding).
template <size_t D>
ConvTransposeOptions<D> with_output_size(const char* layer, const Tensor& x, const Tensor& weight,
                                         const ConvTransposeOptions<D>& o, std::vector<int64_t> size) {
  const int64_t non_spatial = x.dim() == static_cast<int64_t>(D) + 2 ? 2 : 1;
  if (static_cast<int64_t>(size.size()) == non_spatial + static_cast<int64_t>(D)) size.erase(size.begin(), size.begin() + non_spatial);
  EMBER_CHECK(size.size() == D, layer, ": for ", x.dim(), "D input, output_size must have ", D, " or ",
              non_spatial + static_cast<int64_t>(D), " elements (got ", size.size(), ")");
  ConvTransposeOptions<D> out = o;
  for (size_t d = 0; d < D; ++d) {
    const int64_t in = x.size(x.dim() - static_cast<int64_t>(D) + static_cast<int64_t>(d));
    const int64_t lo = (in - 1) * o.stride()[d] - 2 * o.padding()[d] + o.dilation()[d] * (weight.size(2 + d) - 1) + 1;
    const int64_t hi = lo + o.stride()[d] - 1;
    EMBER_CHECK(size[d] >= lo && size[d] <= hi, layer, ": requested an output size of ", size[d], " for spatial dim ", d,
                ", but valid sizes range from ", lo, " to ", hi, " (for an input of ", in, ")");
    out.output_padding()[d] = size[d] - lo;
  }
  return out;
}

template <size_t D>
std::string conv_transpose_describe(const char* name, const ConvTransposeOptions<D>& o) {
  std::ostringstream s;
  s << name << "(" << o.in_channels() << ", " << o.out_channels() << ", kernel=" << dims_str(o.kernel_size())
    << ", stride=" << dims_str(o.stride()) << ", padding=" << dims_str(o.padding());
  if (o.output_padding() != ExpandingArray<D>(0)) s << ", output_padding=" << dims_str(o.output_padding());
  if (o.dilation() != ExpandingArray<D>(1)) s << ", dilation=" << dims_str(o.dilation());
  if (o.groups() != 1) s << ", groups=" << o.groups();
  if (!o.bias()) s << ", bias=false";
  return s.str() + ")";
}
}  // namespace

template <size_t D>
ConvNd<D>::ConvNd(const ConvOptions<D>& o, Generator* gen) : options(o) {
  check_conv(kName, o.in_channels(), o.out_channels(), o.groups(), o.kernel_size().data(), D);
  check_same(kName, o);
  weight = register_parameter("weight", empty(weight_shape(o.out_channels(), o.in_channels() / o.groups(), o.kernel_size())));
  if (o.bias()) bias = register_parameter("bias", empty({o.out_channels()}));
  default_init(weight, o.bias() ? &bias : nullptr, gen);  // fan_in = C/groups · ΠK, as PyTorch's
}

template <size_t D>
Tensor ConvNd<D>::forward(const Tensor& x) {
  check_input_dtype(x, weight);
  return conv_forward<D>(x, weight, bias, options, [](const auto&... a) {
    if constexpr (D == 1) return functional::conv1d(a...);
    else return functional::conv2d(a...);
  });
}

template <size_t D>
std::string ConvNd<D>::describe() const {
  const auto& o = options;
  std::ostringstream s;
  s << kName << "(" << o.in_channels() << ", " << o.out_channels() << ", kernel=" << dims_str(o.kernel_size())
    << ", stride=" << dims_str(o.stride()) << ", padding=" << padding_str(o.padding());
  if (o.dilation() != ExpandingArray<D>(1)) s << ", dilation=" << dims_str(o.dilation());
  if (o.groups() != 1) s << ", groups=" << o.groups();
  if (!o.bias()) s << ", bias=false";
  if (o.padding_mode() != PaddingMode::zeros) s << ", padding_mode=" << padding_mode_name(o.padding_mode());
  return s.str() + ")";
}

template class ConvNd<1>;
template class ConvNd<2>;

template <size_t D>
ConvTransposeNd<D>::ConvTransposeNd(const ConvTransposeOptions<D>& o, Generator* gen) : options(o) {
  check_conv(kName, o.in_channels(), o.out_channels(), o.groups(), o.kernel_size().data(), D);
  weight = register_parameter("weight", empty(weight_shape(o.in_channels(), o.out_channels() / o.groups(), o.kernel_size())));
  if (o.bias()) bias = register_parameter("bias", empty({o.out_channels()}));
  default_init(weight, o.bias() ? &bias : nullptr, gen);  // fan_in = C_out/groups · ΠK, as PyTorch's
}

template <size_t D>
Tensor ConvTransposeNd<D>::forward(const Tensor& x) {
  check_input_dtype(x, weight);
  if constexpr (D == 1) return functional::conv_transpose1d(x, weight, bias, options);
  else return functional::conv_transpose2d(x, weight, bias, options);
}

template <size_t D>
Tensor ConvTransposeNd<D>::forward(const Tensor& x, const std::vector<int64_t>& output_size) {
  const ConvTransposeOptions<D> o = with_output_size(kName, x, weight, options, output_size);
  if constexpr (D == 1) return functional::conv_transpose1d(x, weight, bias, o);
  else return functional::conv_transpose2d(x, weight, bias, o);
}

template <size_t D>
std::string ConvTransposeNd<D>::describe() const {
  return conv_transpose_describe(kName, options);
}

template class ConvTransposeNd<1>;
template class ConvTransposeNd<2>;

namespace {
std::string pool_describe(const char* name, const Pool2dOptions& o) {
  const auto& k = o.kernel_size();
  const int64_t stride[2] = {o.stride()[0] == 0 ? k[0] : o.stride()[0], o.stride()[1] == 0 ? k[1] : o.stride()[1]};
  return std::string(name) + "(kernel=" + pair_str(k.data()) + ", stride=" + pair_str(stride) +
         ", padding=" + pair_str(o.padding().data()) + (o.ceil_mode() ? ", ceil_mode=true" : "") + ")";
}
}  // namespace

std::string MaxPool2d::describe() const { return pool_describe("MaxPool2d", options); }
std::string AvgPool2d::describe() const { return pool_describe("AvgPool2d", options); }

namespace {
std::string pool1d_describe(const char* name, const Pool1dOptions& o) {
  const int64_t k = o.kernel_size()[0], stride = o.stride()[0] == 0 ? k : o.stride()[0];
  std::string s = std::string(name) + "(kernel=" + std::to_string(k) + ", stride=" + std::to_string(stride) +
                  ", padding=" + std::to_string(o.padding()[0]);
  if (o.dilation()[0] != 1) s += ", dilation=" + std::to_string(o.dilation()[0]);
  return s + (o.ceil_mode() ? ", ceil_mode=true" : "") + ")";
}
}  // namespace

std::string MaxPool1d::describe() const { return pool1d_describe("MaxPool1d", options); }
std::string AvgPool1d::describe() const { return pool1d_describe("AvgPool1d", options); }

std::string Upsample::describe() const {
  static const char* const kModes[] = {"nearest", "nearest-exact", "linear", "bilinear", "trilinear", "area"};
  std::ostringstream s;
  s << "Upsample(";
  const auto list = [&](const auto& v) {
    s << (v.size() == 1 ? "" : "[");
    for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
    s << (v.size() == 1 ? "" : "]");
  };
  if (options.size().has_value()) {
    s << "size=";
    list(*options.size());
  } else if (options.scale_factor().has_value()) {
    s << "scale_factor=";
    list(*options.scale_factor());
  }
  s << ", mode=" << kModes[static_cast<int>(options.mode())];
  if (options.align_corners().has_value()) s << ", align_corners=" << (*options.align_corners() ? "true" : "false");
  return s.str() + ")";
}

BatchNorm::BatchNorm(int64_t n, int spatial_dims, double eps, double momentum, bool affine)
    : num_features(n), eps(eps), momentum(momentum), spatial_dims_(spatial_dims) {
  EMBER_CHECK(n > 0, type_name(), ": num_features must be positive, got ", n);
  if (affine) {
    weight = register_parameter("weight", ones({n}));
    bias = register_parameter("bias", zeros({n}));
  }
  running_mean = register_buffer("running_mean", zeros({n}));
  running_var = register_buffer("running_var", ones({n}));
  num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, {.dtype = DType::i64}));
}

Tensor BatchNorm::forward(const Tensor& x) {
  check_input_dtype(x, weight.defined() ? weight : running_mean);
  const int want = spatial_dims_ == 2 ? 4 : 0;
  EMBER_CHECK(want == 0 ? (x.dim() == 2 || x.dim() == 3) : x.dim() == want, type_name(), ": expected input ",
              want == 4 ? "[N, C, H, W]" : "[N, C] or [N, C, L]", ", got shape ", x.shape());
  EMBER_CHECK(x.size(1) == num_features, type_name(), ": the input has ", x.size(1), " channels (shape ", x.shape(),
              "), the layer was built for ", num_features);
  if (is_training()) raw::binary_(BinaryOp::add, num_batches_tracked, raw::scalar_like(num_batches_tracked, 1, true));
  return functional::batch_norm(x, running_mean, running_var, weight, bias, is_training(), momentum, eps);
}

std::string AdaptiveAvgPool2d::describe() const {
  return "AdaptiveAvgPool2d(output_size=[" + std::to_string(out_h) + ", " + std::to_string(out_w) + "])";
}
std::string AdaptiveMaxPool2d::describe() const {
  return "AdaptiveMaxPool2d(output_size=[" + std::to_string(out_h) + ", " + std::to_string(out_w) + "])";
}

std::string BatchNorm::describe() const { return type_name() + "(" + std::to_string(num_features) + ")"; }

LayerNorm::LayerNorm(const Shape& shape, double eps, bool affine, bool with_bias) : normalized_shape(shape), eps(eps) {
  if (affine) {
    weight = register_parameter("weight", ones(shape));
    if (with_bias) bias = register_parameter("bias", zeros(shape));
  }
}

Tensor LayerNorm::forward(const Tensor& x) {
  check_input_dtype(x, weight);
  return functional::layer_norm(x, normalized_shape, weight, bias, eps);
}

RMSNorm::RMSNorm(const RMSNormOptions& o) : normalized_shape(o.normalized_shape()), options(o) {
  EMBER_CHECK(normalized_shape.size() >= 1, "RMSNorm: normalized_shape must name at least one dim");
  EMBER_CHECK(!o.eps() || *o.eps() >= 0, "RMSNorm: eps must be >= 0, got ", *o.eps());
  if (o.elementwise_affine()) weight = register_parameter("weight", ones(normalized_shape));
}

Tensor RMSNorm::forward(const Tensor& x) {
  check_input_dtype(x, weight);
  return functional::rms_norm(x, normalized_shape, weight, options.eps());
}

std::string RMSNorm::describe() const {
  std::ostringstream s;
  s << "RMSNorm(" << normalized_shape;
  if (options.eps()) s << ", eps=" << *options.eps();
  s << (options.elementwise_affine() ? "" : ", elementwise_affine=false") << ")";
  return s.str();
}

Dropout::Dropout(double p, Generator* gen) : p(p), gen_(gen) {
  EMBER_CHECK(p >= 0 && p <= 1, "Dropout: p must be in [0, 1], got ", p);
}
std::string Dropout::describe() const {
  std::ostringstream s;
  s << "Dropout(p=" << p << ")";
  return s.str();
}

Embedding::Embedding(int64_t num, int64_t dim, Generator* gen) : Embedding(num, dim, functional::EmbeddingFuncOptions{}, gen) {}

Embedding::Embedding(int64_t num, int64_t dim, const functional::EmbeddingFuncOptions& options, Generator* gen) {
  const std::optional<int64_t> padding = options.padding_idx;
  EMBER_CHECK(num > 0 && dim > 0, "Embedding: sizes must be positive, got ", num, " x ", dim);
  if (padding.has_value()) {
    EMBER_CHECK(*padding >= -num && *padding < num, "Embedding: padding_idx ", *padding, " must be within the ", num,
                " embeddings (in [-", num, ", ", num, "))");
    padding_idx = *padding < 0 ? *padding + num : *padding;
  }
  max_norm = options.max_norm;
  norm_type = options.norm_type;
  scale_grad_by_freq = options.scale_grad_by_freq;
  weight = register_parameter("weight", empty({num, dim}));
  init::normal_(weight, 0.0, 1.0, gen);
  if (padding_idx.has_value()) {  // PyTorch's reset_parameters: the padding row starts at zero
    NoGradGuard no_grad;
    weight.select(0, *padding_idx).fill_(0.0);
  }
}

EmbeddingBag::EmbeddingBag(int64_t num, int64_t dim, const EmbeddingBagOptions& o, Generator* gen) : options(o) {
  EMBER_CHECK(num > 0 && dim > 0, "EmbeddingBag: sizes must be positive, got ", num, " x ", dim);
  EMBER_CHECK(o.mode == "sum" || o.mode == "mean" || o.mode == "max", "EmbeddingBag: mode must be \"sum\", \"mean\" "
              "or \"max\", got \"", o.mode, "\"");
  if (o.padding_idx.has_value()) {
    const int64_t pad = *o.padding_idx;
    EMBER_CHECK(pad >= -num && pad < num, "EmbeddingBag: padding_idx ", pad, " must be within the ", num,
                " embeddings (in [-", num, ", ", num, "))");
    options.padding_idx = pad < 0 ? pad + num : pad;
  }
  weight = register_parameter("weight", empty({num, dim}));
  init::normal_(weight, 0.0, 1.0, gen);
  if (options.padding_idx.has_value()) {
    NoGradGuard no_grad;
    weight.select(0, *options.padding_idx).fill_(0.0);
  }
}

Tensor EmbeddingBag::forward(const Tensor& input, const Tensor& offsets, const Tensor& per_sample_weights) {
  return functional::embedding_bag(input, weight,
                                   {.offsets = offsets, .max_norm = options.max_norm, .norm_type = options.norm_type,
                                    .scale_grad_by_freq = options.scale_grad_by_freq, .mode = options.mode,
                                    .per_sample_weights = per_sample_weights,
                                    .include_last_offset = options.include_last_offset,
                                    .padding_idx = options.padding_idx});
}

std::string EmbeddingBag::describe() const {
  return "EmbeddingBag(" + std::to_string(weight.size(0)) + ", " + std::to_string(weight.size(1)) + ", mode=" +
         options.mode + ")";
}

ModuleList::ModuleList(std::initializer_list<std::shared_ptr<Module>> modules) {
  for (const auto& m : modules) push_back(m);
}

void ModuleList::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(modules_.size()), module);
  modules_.push_back(std::move(module));
}

const std::shared_ptr<Module>& ModuleList::operator[](size_t i) const {
  EMBER_CHECK(i < modules_.size(), "ModuleList: index ", i, " is out of range for a list of ", modules_.size(),
              " modules");
  return modules_[i];
}

ModuleDict::ModuleDict(std::initializer_list<std::pair<std::string, std::shared_ptr<Module>>> modules) {
  for (const auto& [name, m] : modules) insert(name, m);
}

void ModuleDict::insert(const std::string& name, std::shared_ptr<Module> module) {
  EMBER_CHECK(!contains(name), "ModuleDict: the key '", name, "' is already present; give the module another name");
  register_module(name, std::move(module));
}

bool ModuleDict::contains(const std::string& name) const {
  for (const auto& [key, m] : named_children())
    if (key == name) return true;
  return false;
}

const std::shared_ptr<Module>& ModuleDict::operator[](const std::string& name) const {
  for (const auto& [key, m] : named_children())
    if (key == name) return m;
  std::string keys;
  for (const auto& [key, m] : named_children()) keys += (keys.empty() ? "" : ", ") + key;
  detail::throw_error("ModuleDict: no module named '", name, "' (the keys are: ", keys.empty() ? "none" : keys, ")");
}

std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const auto& [key, m] : named_children()) out.push_back(key);
  return out;
}

Sequential::Sequential(std::initializer_list<std::shared_ptr<Module>> modules) {
  for (const auto& m : modules) push_back(m);
}

void Sequential::push_back(std::shared_ptr<Module> module) {
  register_module(std::to_string(named_children().size()), std::move(module));
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& [name, child] : named_children()) y = child->forward(y);
  return y;
}

GroupNorm::GroupNorm(const GroupNormOptions& o) : options(o) {
  EMBER_CHECK(o.num_groups() > 0 && o.num_channels() > 0, "GroupNorm: num_groups (", o.num_groups(),
              ") and num_channels (", o.num_channels(), ") must be positive");
  EMBER_CHECK(o.num_channels() % o.num_groups() == 0, "GroupNorm: num_channels (", o.num_channels(),
              ") must be divisible by num_groups (", o.num_groups(), ")");
  if (o.affine()) {
    weight = register_parameter("weight", ones({o.num_channels()}));
    bias = register_parameter("bias", zeros({o.num_channels()}));
  }
}

Tensor GroupNorm::forward(const Tensor& x) {
  EMBER_CHECK(x.dim() >= 2 && x.size(1) == options.num_channels(), "GroupNorm: expected input [N, ",
              options.num_channels(), ", *] (the layer's num_channels), got shape ", x.shape());
  check_input_dtype(x, weight);
  return functional::group_norm(x, options.num_groups(), weight, bias, options.eps());
}

std::string GroupNorm::describe() const {
  std::ostringstream s;
  s << "GroupNorm(" << options.num_groups() << ", " << options.num_channels() << ", eps=" << options.eps()
    << (options.affine() ? "" : ", affine=false") << ")";
  return s.str();
}

InstanceNorm::InstanceNorm(const InstanceNormOptions& o, int spatial_dims) : options(o), spatial_dims_(spatial_dims) {
  const int64_t n = o.num_features();
  EMBER_CHECK(n > 0, type_name(), ": num_features must be positive, got ", n);
  if (o.affine()) {
    weight = register_parameter("weight", ones({n}));
    bias = register_parameter("bias", zeros({n}));
  }
  if (o.track_running_stats()) {
    running_mean = register_buffer("running_mean", zeros({n}));
    running_var = register_buffer("running_var", ones({n}));
    num_batches_tracked = register_buffer("num_batches_tracked", zeros({}, {.dtype = DType::i64}));
  }
}

Tensor InstanceNorm::forward(const Tensor& x) {
  const int batched = spatial_dims_ + 2;
  EMBER_CHECK(x.dim() == batched || x.dim() == batched - 1, type_name(), ": expected input ",
              spatial_dims_ == 2 ? "[N, C, H, W] or [C, H, W]" : "[N, C, L] or [C, L]", ", got shape ", x.shape());
  if (x.dim() == batched - 1) return forward(x.unsqueeze(0)).squeeze(0);  // unbatched
  // PyTorch only warns about another channel count when nothing per channel is kept; Ember refuses then too
  // unless there is nothing per channel at all.
  EMBER_CHECK(x.size(1) == options.num_features() || (!options.affine() && !options.track_running_stats()),
              type_name(), ": the input has ", x.size(1), " channels (shape ", x.shape(), "), the layer was built for ",
              options.num_features());
  check_input_dtype(x, weight.defined() ? weight : running_mean);
  return functional::instance_norm(x, running_mean, running_var, weight, bias,
                                   is_training() || !options.track_running_stats(), options.momentum(), options.eps());
}

std::string InstanceNorm::describe() const {
  std::ostringstream s;
  s << type_name() << "(" << options.num_features() << ", eps=" << options.eps() << ", momentum=" << options.momentum()
    << ", affine=" << (options.affine() ? "true" : "false")
    << ", track_running_stats=" << (options.track_running_stats() ? "true" : "false") << ")";
  return s.str();
}

LocalResponseNorm::LocalResponseNorm(const LocalResponseNormOptions& o) : options(o) {
  EMBER_CHECK(o.size() > 0, "LocalResponseNorm: size must be positive, got ", o.size());
}

std::string LocalResponseNorm::describe() const {
  std::ostringstream s;
  s << "LocalResponseNorm(" << options.size() << ", alpha=" << options.alpha() << ", beta=" << options.beta()
    << ", k=" << options.k() << ")";
  return s.str();
}

}  // namespace ember::nn
