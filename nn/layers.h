#pragma once
// Layers (torch.nn), with PyTorch's default initialisation so models train the same. Constructors take
// an optional Generator for their initial values (default: the global one). Shapes: N batch, C channels.
#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "nn/functional.h"
#include "nn/module.h"
#include "nn/options.h"

namespace ember::nn {

// y = x·Wᵀ + b; W [out, in] and b [out] ~ U(-1/√in, 1/√in).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Linear"; }
  std::string describe() const override;
  Tensor weight, bias;
  int64_t in_features, out_features;
};

// Conv2d and Conv1d, one template (LibTorch's ConvNdImpl). Conv2d:
// x [N, C_in, H, W] (or [C_in, H, W]) → [N, C_out, OH, OW]; weight [C_out, C_in/groups, KH, KW] and bias
// [C_out] ~ U(-1/√fan_in, 1/√fan_in) (PyTorch's init). Options: nn/options.h. padding may be nn::kSame /
// "same" (stride 1) or nn::kValid; padding_mode reflect / replicate / circular pads with F::pad first, as
// PyTorch's Conv2d (same + an even kernel: the odd extra on the right/bottom there too).
//   nn::Conv2d(nn::Conv2dOptions(1, 32, 3).stride(1).padding(1));   nn::Conv2d(1, 32, 3);
//   nn::Conv2d({.in_channels = 1, .out_channels = 32, .kernel_size = 3, .padding = 1});
template <size_t D>
class ConvNd : public Module {
 public:
  explicit ConvNd(const ConvOptions<D>& options, Generator* gen = nullptr);
  explicit ConvNd(const typename ConvOptions<D>::Fields& options, Generator* gen = nullptr)
      : ConvNd(ConvOptions<D>(options), gen) {}
  // cppcheck-suppress passedByValue ; two integers, cheaper by value
  ConvNd(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size, Generator* gen = nullptr)
      : ConvNd(ConvOptions<D>(in_channels, out_channels, kernel_size), gen) {}
  Tensor forward(const Tensor& x) override;
  static constexpr const char* kName = D == 1 ? "Conv1d" : "Conv2d";
  std::string type_name() const override { return kName; }
  std::string describe() const override;
  Tensor weight, bias;
  ConvOptions<D> options;
};
extern template class ConvNd<1>;
extern template class ConvNd<2>;

class Conv2d : public ConvNd<2> {
 public:
  using ConvNd::ConvNd;
};

// x [N, C_in, L] (or [C_in, L]) → [N, C_out, OL]; weight [C_out, C_in/groups, K], bias [C_out], PyTorch's
// init. Runs as a Conv2d of unit height (nn::functional::conv1d).
class Conv1d : public ConvNd<1> {
 public:
  using ConvNd::ConvNd;
};

// Transposed convolutions (PyTorch's ConvTranspose1d/2d): x [N, C_in, *] (or unbatched) → [N, C_out, *] with
// the output size (in - 1)·stride - 2·padding + dilation·(K - 1) + output_padding + 1; weight
// [C_in, C_out/groups, K...] and bias [C_out] ~ U(-1/√fan_in, 1/√fan_in), fan_in = C_out/groups · ΠK (PyTorch's
// init on this weight layout). forward(x, output_size) picks the output_padding that gives output_size
// (its last 1 or 2 values; it must lie within stride - 1 of the smallest size), as PyTorch's forward.
template <size_t D>
class ConvTransposeNd : public Module {
 public:
  explicit ConvTransposeNd(const ConvTransposeOptions<D>& options, Generator* gen = nullptr);
  explicit ConvTransposeNd(const typename ConvTransposeOptions<D>::Fields& options, Generator* gen = nullptr)
      : ConvTransposeNd(ConvTransposeOptions<D>(options), gen) {}
  // cppcheck-suppress passedByValue ; two integers, cheaper by value
  ConvTransposeNd(int64_t in_channels, int64_t out_channels, ExpandingArray<D> kernel_size, Generator* gen = nullptr)
      : ConvTransposeNd(ConvTransposeOptions<D>(in_channels, out_channels, kernel_size), gen) {}
  Tensor forward(const Tensor& x) override;
  Tensor forward(const Tensor& x, const std::vector<int64_t>& output_size);
  static constexpr const char* kName = D == 1 ? "ConvTranspose1d" : "ConvTranspose2d";
  std::string type_name() const override { return kName; }
  std::string describe() const override;
  Tensor weight, bias;
  ConvTransposeOptions<D> options;
};
extern template class ConvTransposeNd<1>;
extern template class ConvTransposeNd<2>;

class ConvTranspose2d : public ConvTransposeNd<2> {
 public:
  using ConvTransposeNd::ConvTransposeNd;
};

class ConvTranspose1d : public ConvTransposeNd<1> {
 public:
  using ConvTransposeNd::ConvTransposeNd;
};

// nn::MaxPool2d(2), nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).ceil_mode(true)),
// nn::MaxPool2d({.kernel_size = 3, .stride = 2}).
class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(const MaxPool2dOptions& options) : options(options) {}
  explicit MaxPool2d(const MaxPool2dOptions::Fields& options) : options(options) {}
  Tensor forward(const Tensor& x) override { return functional::max_pool2d(x, options); }
  // PyTorch's return_indices=True: (output, indices) for MaxUnpool2d.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x) {
    return functional::max_pool2d_with_indices(x, options);
  }
  std::string type_name() const override { return "MaxPool2d"; }
  std::string describe() const override;
  MaxPool2dOptions options;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(const AvgPool2dOptions& options) : options(options) {}
  explicit AvgPool2d(const AvgPool2dOptions::Fields& options) : options(options) {}
  Tensor forward(const Tensor& x) override { return functional::avg_pool2d(x, options); }
  std::string type_name() const override { return "AvgPool2d"; }
  std::string describe() const override;
  AvgPool2dOptions options;
};

// The 1-D pools of [N, C, L] (or [C, L]): nn::MaxPool1d(3), nn::AvgPool1d(nn::AvgPool1dOptions(3).stride(2)).
class MaxPool1d : public Module {
 public:
  explicit MaxPool1d(const MaxPool1dOptions& options) : options(options) {}
  explicit MaxPool1d(const MaxPool1dOptions::Fields& options) : options(options) {}
  Tensor forward(const Tensor& x) override { return functional::max_pool1d(x, options); }
  // PyTorch's return_indices=True: (output, indices) for MaxUnpool1d.
  std::tuple<Tensor, Tensor> forward_with_indices(const Tensor& x) {
    return functional::max_pool1d_with_indices(x, options);
  }
  std::string type_name() const override { return "MaxPool1d"; }
  std::string describe() const override;
  MaxPool1dOptions options;
};

class AvgPool1d : public Module {
 public:
  explicit AvgPool1d(const AvgPool1dOptions& options) : options(options) {}
  explicit AvgPool1d(const AvgPool1dOptions::Fields& options) : options(options) {}
  Tensor forward(const Tensor& x) override { return functional::avg_pool1d(x, options); }
  std::string type_name() const override { return "AvgPool1d"; }
  std::string describe() const override;
  AvgPool1dOptions options;
};

// The inverse of a max pooling: forward(x, indices) with the pooling's indices (MaxPool2d's
// forward_with_indices), optionally to output_size (the options', or one given to forward, as PyTorch).
class MaxUnpool2d : public Module {
 public:
  explicit MaxUnpool2d(const MaxUnpool2dOptions& options) : options(options) {}
  explicit MaxUnpool2d(const MaxUnpool2dOptions::Fields& options) : options(options) {}
  Tensor forward(const Tensor& x, const Tensor& indices) { return functional::max_unpool2d(x, indices, options); }
  Tensor forward(const Tensor& x, const Tensor& indices, const std::vector<int64_t>& output_size) {
    return functional::max_unpool2d(x, indices, MaxUnpool2dOptions(options).output_size(output_size));
  }
  std::string type_name() const override { return "MaxUnpool2d"; }
  MaxUnpool2dOptions options;
};

class MaxUnpool1d : public Module {
 public:
  explicit MaxUnpool1d(const MaxUnpool1dOptions& options) : options(options) {}
  explicit MaxUnpool1d(const MaxUnpool1dOptions::Fields& options) : options(options) {}
  Tensor forward(const Tensor& x, const Tensor& indices) { return functional::max_unpool1d(x, indices, options); }
  Tensor forward(const Tensor& x, const Tensor& indices, const std::vector<int64_t>& output_size) {
    return functional::max_unpool1d(x, indices, MaxUnpool1dOptions(options).output_size(output_size));
  }
  std::string type_name() const override { return "MaxUnpool1d"; }
  MaxUnpool1dOptions options;
};

// F::interpolate as a layer (PyTorch's nn.Upsample): nn::Upsample(nn::UpsampleOptions().scale_factor({2.0})
// .mode(nn::InterpolateMode::bilinear).align_corners(false)).
class Upsample : public Module {
 public:
  explicit Upsample(const UpsampleOptions& options) : options(options) {}
  explicit Upsample(const UpsampleOptions::Fields& options) : options(options) {}
  Tensor forward(const Tensor& x) override { return functional::interpolate(x, options); }
  std::string type_name() const override { return "Upsample"; }
  std::string describe() const override;
  UpsampleOptions options;
};

// [*, C·r², H, W] → [*, C, H·r, W·r] and back (F::pixel_shuffle / pixel_unshuffle).
class PixelShuffle : public Module {
 public:
  explicit PixelShuffle(int64_t upscale_factor) : upscale_factor(upscale_factor) {}
  Tensor forward(const Tensor& x) override { return functional::pixel_shuffle(x, upscale_factor); }
  std::string type_name() const override { return "PixelShuffle"; }
  std::string describe() const override { return "PixelShuffle(upscale_factor=" + std::to_string(upscale_factor) + ")"; }
  int64_t upscale_factor;
};

class PixelUnshuffle : public Module {
 public:
  explicit PixelUnshuffle(int64_t downscale_factor) : downscale_factor(downscale_factor) {}
  Tensor forward(const Tensor& x) override { return functional::pixel_unshuffle(x, downscale_factor); }
  std::string type_name() const override { return "PixelUnshuffle"; }
  std::string describe() const override {
    return "PixelUnshuffle(downscale_factor=" + std::to_string(downscale_factor) + ")";
  }
  int64_t downscale_factor;
};

// Adaptive pooling to output_size (one size: out×out, as PyTorch's AdaptiveAvgPool2d(7)) from any H, W.
class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(int64_t output_size) : out_h(output_size), out_w(output_size) {}
  AdaptiveAvgPool2d(int64_t out_h, int64_t out_w) : out_h(out_h), out_w(out_w) {}
  Tensor forward(const Tensor& x) override { return functional::adaptive_avg_pool2d(x, out_h, out_w); }
  std::string type_name() const override { return "AdaptiveAvgPool2d"; }
  std::string describe() const override;
  int64_t out_h, out_w;
};

class AdaptiveMaxPool2d : public Module {
 public:
  explicit AdaptiveMaxPool2d(int64_t output_size) : out_h(output_size), out_w(output_size) {}
  AdaptiveMaxPool2d(int64_t out_h, int64_t out_w) : out_h(out_h), out_w(out_w) {}
  Tensor forward(const Tensor& x) override { return functional::adaptive_max_pool2d(x, out_h, out_w); }
  std::string type_name() const override { return "AdaptiveMaxPool2d"; }
  std::string describe() const override;
  int64_t out_h, out_w;
};

// Batch norm over C of [N, C] / [N, C, L] (BatchNorm1d) or [N, C, H, W] (BatchNorm2d). weight = 1,
// bias = 0; buffers running_mean = 0, running_var = 1, num_batches_tracked (i64).
class BatchNorm : public Module {
 public:
  BatchNorm(int64_t num_features, int spatial_dims, double eps = 1e-5, double momentum = 0.1, bool affine = true);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return spatial_dims_ == 2 ? "BatchNorm2d" : "BatchNorm1d"; }
  std::string describe() const override;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  int64_t num_features;
  double eps, momentum;

 private:
  int spatial_dims_;
};
class BatchNorm1d : public BatchNorm {
 public:
  explicit BatchNorm1d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = true)
      : BatchNorm(num_features, 1, eps, momentum, affine) {}
};
class BatchNorm2d : public BatchNorm {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = true)
      : BatchNorm(num_features, 2, eps, momentum, affine) {}
};

// Normalises over the trailing dims normalized_shape; with affine, weight = 1 and (unless bias = false,
// PyTorch 2.1's LayerNorm(bias=False)) bias = 0 of that shape.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(const Shape& normalized_shape, double eps = 1e-5, bool affine = true, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "LayerNorm"; }
  Tensor weight, bias;
  Shape normalized_shape;
  double eps;
};

// Root-mean-square norm over the trailing dims normalized_shape (PyTorch 2.4's RMSNorm): with
// elementwise_affine, weight = 1 of that shape; eps none: the machine epsilon of the input's dtype.
//   nn::RMSNorm(Shape{d});  nn::RMSNorm(nn::RMSNormOptions({d}).eps(1e-6));  nn::RMSNorm({.normalized_shape = {d}})
class RMSNorm : public Module {
 public:
  explicit RMSNorm(const RMSNormOptions& options);
  explicit RMSNorm(const RMSNormOptions::Fields& options) : RMSNorm(RMSNormOptions(options)) {}
  explicit RMSNorm(const Shape& normalized_shape, std::optional<double> eps = std::nullopt,
                   bool elementwise_affine = true)
      : RMSNorm(RMSNormOptions(normalized_shape.vec()).eps(eps).elementwise_affine(elementwise_affine)) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "RMSNorm"; }
  std::string describe() const override;
  Tensor weight;
  Shape normalized_shape;
  RMSNormOptions options;
};

class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override { return functional::dropout(x, p, is_training(), gen_); }
  std::string type_name() const override { return "Dropout"; }
  std::string describe() const override;
  double p;

 private:
  Generator* gen_;
};

// Lookup table: weight [num_embeddings, dim] ~ N(0, 1); forward(indices i64) → [*, dim]. With padding_idx
// (negative counts from the end), that row starts at zero and gets no gradient, as PyTorch:
// Embedding(10, 4, {.padding_idx = 0}) (an options struct: a bare 0 would convert to the Generator*).
// max_norm (renormalises the looked-up rows in place at each forward), norm_type and scale_grad_by_freq as
// functional::embedding's.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, Generator* gen = nullptr);
  Embedding(int64_t num_embeddings, int64_t embedding_dim, const functional::EmbeddingFuncOptions& options,
            Generator* gen = nullptr);
  Tensor forward(const Tensor& indices) override {
    return functional::embedding(indices, weight, {.padding_idx = padding_idx, .max_norm = max_norm,
                                                   .norm_type = norm_type, .scale_grad_by_freq = scale_grad_by_freq});
  }
  std::string type_name() const override { return "Embedding"; }
  Tensor weight;
  std::optional<int64_t> padding_idx;  // normalised to [0, num_embeddings)
  std::optional<double> max_norm;
  double norm_type = 2.0;
  bool scale_grad_by_freq = false;
};

// torch.nn.EmbeddingBag: weight [num_embeddings, dim] ~ N(0, 1) (the padding row, if any, starts at zero);
// forward(input, offsets, per_sample_weights) is functional::embedding_bag with these options.
struct EmbeddingBagOptions {
  std::optional<double> max_norm{};
  double norm_type = 2.0;
  bool scale_grad_by_freq = false;
  std::string mode = "mean";  // "sum", "mean" or "max"
  bool include_last_offset = false;
  std::optional<int64_t> padding_idx{};
};
class EmbeddingBag : public Module {
 public:
  EmbeddingBag(int64_t num_embeddings, int64_t embedding_dim, const EmbeddingBagOptions& options = {},
               Generator* gen = nullptr);
  // A 2-D input [B, N]: B bags of N indices.
  Tensor forward(const Tensor& input) override { return forward(input, Tensor()); }
  Tensor forward(const Tensor& input, const Tensor& offsets, const Tensor& per_sample_weights = {});
  std::string type_name() const override { return "EmbeddingBag"; }
  std::string describe() const override;
  Tensor weight;
  EmbeddingBagOptions options;  // padding_idx normalised to [0, num_embeddings)
};

class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1) : start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& x) override { return x.flatten(start_dim, end_dim); }
  std::string type_name() const override { return "Flatten"; }
  int64_t start_dim, end_dim;
};

// The activation layers without parameters, one line each: X(class, registry type, forward). Each line
// makes the Module here and its `{type: <registry type>}` entry in the layer registry (nn/registry.cpp).
#define EMBER_ACTIVATION_LAYERS(X)   \
  X(ReLU, "relu", relu(x))           \
  X(Tanh, "tanh", tanh(x))           \
  X(Sigmoid, "sigmoid", sigmoid(x))  \
  X(SiLU, "silu", silu(x))

#define EMBER_X(Name, type, expr)                                      \
  class Name : public Module {                                         \
   public:                                                             \
    Tensor forward(const Tensor& x) override { return expr; }          \
    std::string type_name() const override { return #Name; }          \
  };
EMBER_ACTIVATION_LAYERS(EMBER_X)
#undef EMBER_X

// The activations with parameters (PyTorch's defaults).
class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none") : approximate(std::move(approximate)) {}
  Tensor forward(const Tensor& x) override { return gelu(x, approximate); }
  std::string type_name() const override { return "GELU"; }
  std::string approximate;  // "none" (erf) or "tanh"
};
class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01) : negative_slope(negative_slope) {}
  Tensor forward(const Tensor& x) override { return leaky_relu(x, negative_slope); }
  std::string type_name() const override { return "LeakyReLU"; }
  double negative_slope;
};
class ELU : public Module {
 public:
  explicit ELU(double alpha = 1.0) : alpha(alpha) {}
  Tensor forward(const Tensor& x) override { return elu(x, alpha); }
  std::string type_name() const override { return "ELU"; }
  double alpha;
};
class Softplus : public Module {
 public:
  explicit Softplus(double beta = 1.0, double threshold = 20.0) : beta(beta), threshold(threshold) {}
  Tensor forward(const Tensor& x) override { return softplus(x, beta, threshold); }
  std::string type_name() const override { return "Softplus"; }
  double beta, threshold;
};
class Hardtanh : public Module {
 public:
  explicit Hardtanh(double min_val = -1.0, double max_val = 1.0) : min_val(min_val), max_val(max_val) {}
  Tensor forward(const Tensor& x) override { return hardtanh(x, min_val, max_val); }
  std::string type_name() const override { return "Hardtanh"; }
  double min_val, max_val;
};

class Softmax : public Module {
 public:
  explicit Softmax(int64_t dim = -1) : dim(dim) {}
  Tensor forward(const Tensor& x) override { return softmax(x, dim); }
  std::string type_name() const override { return "Softmax"; }
  int64_t dim;
};

// Runs its children in order; children are named "0", "1", ... as in PyTorch.
class Sequential : public Module {
 public:
  Sequential() = default;
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> module);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "Sequential"; }
  size_t size() const { return named_children().size(); }
  std::shared_ptr<Module> operator[](size_t i) const { return named_children().at(i).second; }
};

// A list of modules, registered as children "0", "1", ... (PyTorch's nn.ModuleList, so state_dict keys
// match: "layers.0.weight"). It has no forward: the owner calls its entries.
class ModuleList : public Module {
 public:
  ModuleList() = default;
  ModuleList(std::initializer_list<std::shared_ptr<Module>> modules);
  void push_back(std::shared_ptr<Module> module);
  void append(std::shared_ptr<Module> module) { push_back(std::move(module)); }
  std::string type_name() const override { return "ModuleList"; }
  size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.empty(); }
  // Checked: an index past the end throws, naming the size.
  const std::shared_ptr<Module>& operator[](size_t i) const;
  // The entry as its own type (nullptr if it is another type): list.at<nn::Linear>(0)->weight.
  template <typename M>
  std::shared_ptr<M> at(size_t i) const { return std::dynamic_pointer_cast<M>((*this)[i]); }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

// Modules by name, in insertion order (PyTorch's nn.ModuleDict): the keys are the children's names, so
// state_dict keys read "heads.cls.weight". Names follow register_module's rules (non-empty, no '.').
class ModuleDict : public Module {
 public:
  ModuleDict() = default;
  ModuleDict(std::initializer_list<std::pair<std::string, std::shared_ptr<Module>>> modules);
  // Adds `name`; a name already present throws (PyTorch's update() would replace it; use a new name).
  void insert(const std::string& name, std::shared_ptr<Module> module);
  std::string type_name() const override { return "ModuleDict"; }
  size_t size() const { return named_children().size(); }
  bool empty() const { return named_children().empty(); }
  bool contains(const std::string& name) const;
  // An unknown name throws, listing the names there are.
  const std::shared_ptr<Module>& operator[](const std::string& name) const;
  template <typename M>
  std::shared_ptr<M> at(const std::string& name) const { return std::dynamic_pointer_cast<M>((*this)[name]); }
  std::vector<std::string> keys() const;
  // Iterates (name, module) pairs in insertion order.
  auto begin() const { return named_children().begin(); }
  auto end() const { return named_children().end(); }
};

// --- losses as modules: forward(input, target) ---------------------------------------------------------
class CrossEntropyLoss : public Module {
 public:
  explicit CrossEntropyLoss(functional::CrossEntropyOptions options = {}) : options(std::move(options)) {}
  Tensor forward(const Tensor& logits, const Tensor& target) { return functional::cross_entropy(logits, target, options); }
  std::string type_name() const override { return "CrossEntropyLoss"; }
  functional::CrossEntropyOptions options;
};

class NLLLoss : public Module {
 public:
  explicit NLLLoss(functional::NLLLossOptions options = {}) : options(std::move(options)) {}
  Tensor forward(const Tensor& log_probs, const Tensor& target) { return functional::nll_loss(log_probs, target, options); }
  std::string type_name() const override { return "NLLLoss"; }
  functional::NLLLossOptions options;
};

#define EMBER_LOSS(Name, fn, Options)                                                                        \
  class Name : public Module {                                                                               \
   public:                                                                                                   \
    explicit Name(functional::Options options = {}) : options(std::move(options)) {}                        \
    Tensor forward(const Tensor& input, const Tensor& target) { return functional::fn(input, target, options); } \
    std::string type_name() const override { return #Name; }                                                 \
    functional::Options options;                                                                             \
  };
EMBER_LOSS(MSELoss, mse_loss, MSELossOptions)
EMBER_LOSS(L1Loss, l1_loss, L1LossOptions)
EMBER_LOSS(BCEWithLogitsLoss, binary_cross_entropy_with_logits, BCEWithLogitsOptions)
EMBER_LOSS(SmoothL1Loss, smooth_l1_loss, SmoothL1LossOptions)
EMBER_LOSS(HuberLoss, huber_loss, HuberLossOptions)
EMBER_LOSS(KLDivLoss, kl_div, KLDivOptions)
EMBER_LOSS(BCELoss, binary_cross_entropy, BinaryCrossEntropyOptions)
EMBER_LOSS(MultiLabelSoftMarginLoss, multilabel_soft_margin_loss, MultiLabelSoftMarginLossOptions)
EMBER_LOSS(PoissonNLLLoss, poisson_nll_loss, PoissonNLLLossOptions)
EMBER_LOSS(CosineSimilarity, cosine_similarity, CosineSimilarityOptions)  // forward(x1, x2)
EMBER_LOSS(PairwiseDistance, pairwise_distance, PairwiseDistanceOptions)  // forward(x1, x2)
#undef EMBER_LOSS

// The losses of three inputs: forward(input1, input2, target) / (anchor, positive, negative) / (input, target, var).
#define EMBER_LOSS3(Name, fn, Options)                                                                       \
  class Name : public Module {                                                                               \
   public:                                                                                                   \
    explicit Name(functional::Options options = {}) : options(std::move(options)) {}                        \
    Tensor forward(const Tensor& a, const Tensor& b, const Tensor& c) { return functional::fn(a, b, c, options); } \
    std::string type_name() const override { return #Name; }                                                 \
    functional::Options options;                                                                             \
  };
EMBER_LOSS3(CosineEmbeddingLoss, cosine_embedding_loss, CosineEmbeddingLossOptions)
EMBER_LOSS3(MarginRankingLoss, margin_ranking_loss, MarginRankingLossOptions)
EMBER_LOSS3(TripletMarginLoss, triplet_margin_loss, TripletMarginLossOptions)
EMBER_LOSS3(GaussianNLLLoss, gaussian_nll_loss, GaussianNLLLossOptions)
#undef EMBER_LOSS3

// forward(log_probs [T, N, C], targets, input_lengths, target_lengths), as nn.CTCLoss.
class CTCLoss : public Module {
 public:
  explicit CTCLoss(functional::CTCLossOptions options = {}) : options(std::move(options)) {}
  Tensor forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                 const Tensor& target_lengths) {
    return functional::ctc_loss(log_probs, targets, input_lengths, target_lengths, options);
  }
  std::string type_name() const override { return "CTCLoss"; }
  functional::CTCLossOptions options;
};

// LibTorch's names of the loss modules' options: nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().weight(w)).
using CrossEntropyLossOptions = functional::CrossEntropyFuncOptions;
using NLLLossOptions = functional::NLLLossFuncOptions;
using MSELossOptions = functional::MSELossFuncOptions;
using L1LossOptions = functional::L1LossFuncOptions;
using BCEWithLogitsLossOptions = functional::BinaryCrossEntropyWithLogitsFuncOptions;
using SmoothL1LossOptions = functional::SmoothL1LossFuncOptions;
using HuberLossOptions = functional::HuberLossFuncOptions;
using KLDivLossOptions = functional::KLDivFuncOptions;
using BCELossOptions = functional::BinaryCrossEntropyFuncOptions;
using MultiLabelSoftMarginLossOptions = functional::MultiLabelSoftMarginLossFuncOptions;
using MultilabelSoftMarginLossOptions = functional::MultiLabelSoftMarginLossFuncOptions;
using PoissonNLLLossOptions = functional::PoissonNLLLossFuncOptions;
using GaussianNLLLossOptions = functional::GaussianNLLLossFuncOptions;
using CosineEmbeddingLossOptions = functional::CosineEmbeddingLossFuncOptions;
using MarginRankingLossOptions = functional::MarginRankingLossFuncOptions;
using TripletMarginLossOptions = functional::TripletMarginLossFuncOptions;
using CosineSimilarityOptions = functional::CosineSimilarityFuncOptions;
using PairwiseDistanceOptions = functional::PairwiseDistanceFuncOptions;
using CTCLossOptions = functional::CTCLossFuncOptions;

// --- norm layers, round 3 -------------------------------------------------------------------------------
// Group norm of [N, C, *] over num_groups groups of channels; with affine, weight = 1 and bias = 0 [C].
//   nn::GroupNorm(2, 6);  nn::GroupNorm(nn::GroupNormOptions(2, 6).eps(1e-3));  nn::GroupNorm({.num_groups = 2, ...})
class GroupNorm : public Module {
 public:
  explicit GroupNorm(const GroupNormOptions& options);
  explicit GroupNorm(const GroupNormOptions::Fields& options) : GroupNorm(GroupNormOptions(options)) {}
  GroupNorm(int64_t num_groups, int64_t num_channels, double eps = 1e-5, bool affine = true)
      : GroupNorm(GroupNormOptions(num_groups, num_channels).eps(eps).affine(affine)) {}
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "GroupNorm"; }
  std::string describe() const override;
  Tensor weight, bias;
  GroupNormOptions options;
};

// Instance norm: each (sample, channel) normalised over its L (InstanceNorm1d: [N, C, L] or unbatched [C, L])
// or H·W (InstanceNorm2d: [N, C, H, W] or [C, H, W]). PyTorch's defaults: no affine, no running statistics.
// With track_running_stats, training updates running_mean/var (and eval uses them); num_batches_tracked is
// kept for state-dict parity (PyTorch's InstanceNorm never advances it).
class InstanceNorm : public Module {
 public:
  InstanceNorm(const InstanceNormOptions& options, int spatial_dims);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return spatial_dims_ == 2 ? "InstanceNorm2d" : "InstanceNorm1d"; }
  std::string describe() const override;
  Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  InstanceNormOptions options;

 private:
  int spatial_dims_;
};
class InstanceNorm1d : public InstanceNorm {
 public:
  explicit InstanceNorm1d(const InstanceNormOptions& options) : InstanceNorm(options, 1) {}
  explicit InstanceNorm1d(const InstanceNormOptions::Fields& options) : InstanceNorm(InstanceNormOptions(options), 1) {}
  explicit InstanceNorm1d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = false,
                          bool track_running_stats = false)
      : InstanceNorm(InstanceNormOptions(num_features).eps(eps).momentum(momentum).affine(affine)
                         .track_running_stats(track_running_stats), 1) {}
};
class InstanceNorm2d : public InstanceNorm {
 public:
  explicit InstanceNorm2d(const InstanceNormOptions& options) : InstanceNorm(options, 2) {}
  explicit InstanceNorm2d(const InstanceNormOptions::Fields& options) : InstanceNorm(InstanceNormOptions(options), 2) {}
  explicit InstanceNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1, bool affine = false,
                          bool track_running_stats = false)
      : InstanceNorm(InstanceNormOptions(num_features).eps(eps).momentum(momentum).affine(affine)
                         .track_running_stats(track_running_stats), 2) {}
};

// x / (k + alpha/size · Σ x² over `size` neighbouring channels)^beta (nn::functional::local_response_norm).
class LocalResponseNorm : public Module {
 public:
  explicit LocalResponseNorm(const LocalResponseNormOptions& options);
  explicit LocalResponseNorm(const LocalResponseNormOptions::Fields& options)
      : LocalResponseNorm(LocalResponseNormOptions(options)) {}
  explicit LocalResponseNorm(int64_t size, double alpha = 1e-4, double beta = 0.75, double k = 1.0)
      : LocalResponseNorm(LocalResponseNormOptions(size).alpha(alpha).beta(beta).k(k)) {}
  Tensor forward(const Tensor& x) override {
    return functional::local_response_norm(x, options.size(), options.alpha(), options.beta(), options.k());
  }
  std::string type_name() const override { return "LocalResponseNorm"; }
  std::string describe() const override;
  LocalResponseNormOptions options;
};

}  // namespace ember::nn
