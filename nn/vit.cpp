#include "nn/vit.h"

#include <cmath>
#include <sstream>

#include "nn/init.h"

namespace ember::nn {

namespace {

constexpr double kLayerNormEps = 1e-6;  // torchvision's norm_layer = partial(nn.LayerNorm, eps=1e-6)

// torchvision's MLPBlock's Linear: xavier_uniform weight, N(0, 1e-6) bias.
std::shared_ptr<Linear> mlp_linear(int64_t in, int64_t out, Generator* gen) {
  auto l = std::make_shared<Linear>(in, out, true, gen);
  init::xavier_uniform_(l->weight, 1.0, gen);
  init::normal_(l->bias, 0.0, 1e-6, gen);
  return l;
}

void check_options(const VisionTransformerOptions& o) {
  EMBER_CHECK(o.image_size > 0 && o.patch_size > 0 && o.num_layers > 0 && o.num_heads > 0 && o.hidden_dim > 0 &&
                  o.mlp_dim > 0 && o.num_classes > 0 && o.in_channels > 0,
              "VisionTransformer: image_size (", o.image_size, "), patch_size (", o.patch_size, "), num_layers (",
              o.num_layers, "), num_heads (", o.num_heads, "), hidden_dim (", o.hidden_dim, "), mlp_dim (", o.mlp_dim,
              "), num_classes (", o.num_classes, ") and in_channels (", o.in_channels, ") must be positive");
  EMBER_CHECK(o.image_size % o.patch_size == 0, "VisionTransformer: image_size ", o.image_size,
              " is not a multiple of patch_size ", o.patch_size, "; pick a patch size that divides it");
  EMBER_CHECK(o.hidden_dim % o.num_heads == 0, "VisionTransformer: hidden_dim ", o.hidden_dim,
              " is not divisible by num_heads ", o.num_heads, "; pick a head count that divides it");
  EMBER_CHECK(o.dropout >= 0 && o.dropout < 1 && o.attention_dropout >= 0 && o.attention_dropout < 1,
              "VisionTransformer: dropout (", o.dropout, ") and attention_dropout (", o.attention_dropout,
              ") must be in [0, 1)");
  EMBER_CHECK(o.representation_size >= 0, "VisionTransformer: representation_size must be >= 0 (0: none), got ",
              o.representation_size);
}

}  // namespace

// --- ViTEncoderBlock ------------------------------------------------------------------------------------

ViTEncoderBlock::ViTEncoderBlock(const VisionTransformerOptions& o, Generator* gen) {
  const int64_t d = o.hidden_dim;
  ln_1 = register_module("ln_1", std::make_shared<LayerNorm>(Shape{d}, kLayerNormEps));
  self_attention = register_module(
      "self_attention",
      std::make_shared<MultiheadAttention>(
          MultiheadAttentionOptions{.embed_dim = d, .num_heads = o.num_heads, .dropout = o.attention_dropout, .batch_first = true},
          gen));
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout, gen));
  ln_2 = register_module("ln_2", std::make_shared<LayerNorm>(Shape{d}, kLayerNormEps));
  mlp = register_module("mlp", std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
                                   mlp_linear(d, o.mlp_dim, gen), std::make_shared<GELU>(),
                                   std::make_shared<Dropout>(o.dropout, gen), mlp_linear(o.mlp_dim, d, gen),
                                   std::make_shared<Dropout>(o.dropout, gen)}));
}

Tensor ViTEncoderBlock::forward(const Tensor& x) {
  EMBER_CHECK(x.dim() == 3, "ViTEncoderBlock: input must be [B, T, D], got ", x.shape());
  const Tensor y = x + dropout->forward(self_attention->forward(ln_1->forward(x)));
  return y + mlp->forward(ln_2->forward(y));
}

// --- ViTEncoder -----------------------------------------------------------------------------------------

ViTEncoder::ViTEncoder(int64_t seq_length, const VisionTransformerOptions& o, Generator* gen) {
  pos_embedding = register_parameter("pos_embedding", empty({1, seq_length, o.hidden_dim}));
  init::normal_(pos_embedding, 0.0, 0.02, gen);  // from BERT, as torchvision
  dropout = register_module("dropout", std::make_shared<Dropout>(o.dropout, gen));
  layers = register_module("layers", std::make_shared<ModuleDict>());
  for (int64_t i = 0; i < o.num_layers; ++i)
    layers->insert("encoder_layer_" + std::to_string(i), std::make_shared<ViTEncoderBlock>(o, gen));
  ln = register_module("ln", std::make_shared<LayerNorm>(Shape{o.hidden_dim}, kLayerNormEps));
}

Tensor ViTEncoder::forward(const Tensor& x) {
  EMBER_CHECK(x.dim() == 3 && x.size(1) == pos_embedding.size(1) && x.size(2) == pos_embedding.size(2),
              "ViTEncoder: input must be [B, T, D] = [B, ", pos_embedding.size(1), ", ", pos_embedding.size(2),
              "], got ", x.shape());
  Tensor y = dropout->forward(x + pos_embedding);
  for (const auto& [name, layer] : *layers) y = layer->forward(y);
  return ln->forward(y);
}

// --- VisionTransformer ----------------------------------------------------------------------------------

VisionTransformer::VisionTransformer(const VisionTransformerOptions& o, Generator* gen) : options(o) {
  check_options(o);
  const int64_t d = o.hidden_dim, p = o.patch_size, grid = o.image_size / p;
  class_token = register_parameter("class_token", zeros({1, 1, d}));
  conv_proj = register_module("conv_proj", std::make_shared<Conv2d>(Conv2dOptions(o.in_channels, d, p).stride(p), gen));
  init::trunc_normal_(conv_proj->weight, 0.0, std::sqrt(1.0 / static_cast<double>(o.in_channels * p * p)), -2.0, 2.0, gen);
  init::zeros_(conv_proj->bias);
  encoder = register_module("encoder", std::make_shared<ViTEncoder>(grid * grid + 1, o, gen));
  heads = register_module("heads", std::make_shared<ModuleDict>());
  int64_t features = d;
  if (o.representation_size > 0) {
    auto pre_logits = std::make_shared<Linear>(d, o.representation_size, true, gen);
    init::trunc_normal_(pre_logits->weight, 0.0, std::sqrt(1.0 / static_cast<double>(d)), -2.0, 2.0, gen);
    init::zeros_(pre_logits->bias);
    heads->insert("pre_logits", pre_logits);
    heads->insert("act", std::make_shared<Tanh>());
    features = o.representation_size;
  }
  auto head = std::make_shared<Linear>(features, o.num_classes, true, gen);
  init::zeros_(head->weight);
  init::zeros_(head->bias);
  heads->insert("head", head);
}

std::string VisionTransformer::describe() const {
  std::ostringstream s;
  s << "VisionTransformer(image_size=" << options.image_size << ", patch_size=" << options.patch_size
    << ", in_channels=" << options.in_channels << ", num_layers=" << options.num_layers
    << ", num_heads=" << options.num_heads << ", hidden_dim=" << options.hidden_dim << ", mlp_dim=" << options.mlp_dim
    << ", dropout=" << options.dropout << ", attention_dropout=" << options.attention_dropout
    << ", num_classes=" << options.num_classes;
  if (options.representation_size > 0) s << ", representation_size=" << options.representation_size;
  s << ")";
  return s.str();
}

Tensor VisionTransformer::forward(const Tensor& x) {
  check_input_dtype(x, class_token);
  const int64_t c = options.in_channels, size = options.image_size, d = options.hidden_dim;
  EMBER_CHECK(x.dim() == 4 && x.size(1) == c && x.size(2) == size && x.size(3) == size,
              "VisionTransformer: input must be [B, C, H, W] = [B, ", c, ", ", size, ", ", size,
              "] (in_channels, image_size), got ", x.shape());
  const int64_t b = x.size(0), patches = seq_length() - 1;
  // [B, D, S/P, S/P] → [B, N, D]: the patches row-major, as torchvision's _process_input.
  const Tensor tokens = conv_proj->forward(x).reshape({b, d, patches}).permute({0, 2, 1});
  Tensor y = encoder->forward(cat({class_token.expand({b, -1, -1}), tokens}, 1));
  y = y.select(1, 0);  // the class token's output
  for (const auto& [name, layer] : *heads) y = layer->forward(y);
  return y;
}

// --- torchvision's standard shapes ----------------------------------------------------------------------

namespace {
std::shared_ptr<VisionTransformer> standard(int64_t patch, int64_t layers, int64_t heads, int64_t hidden, int64_t mlp,
                                            int64_t num_classes, Generator* gen) {
  return std::make_shared<VisionTransformer>(VisionTransformerOptions{.image_size = 224,
                                                                      .patch_size = patch,
                                                                      .num_layers = layers,
                                                                      .num_heads = heads,
                                                                      .hidden_dim = hidden,
                                                                      .mlp_dim = mlp,
                                                                      .num_classes = num_classes},
                                             gen);
}
}  // namespace

std::shared_ptr<VisionTransformer> vit_b_16(int64_t num_classes, Generator* gen) {
  return standard(16, 12, 12, 768, 3072, num_classes, gen);
}
std::shared_ptr<VisionTransformer> vit_b_32(int64_t num_classes, Generator* gen) {
  return standard(32, 12, 12, 768, 3072, num_classes, gen);
}
std::shared_ptr<VisionTransformer> vit_l_16(int64_t num_classes, Generator* gen) {
  return standard(16, 24, 16, 1024, 4096, num_classes, gen);
}

}  // namespace ember::nn
