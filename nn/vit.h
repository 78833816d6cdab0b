#pragma once
// The Vision Transformer (Dosovitskiy et al. 2020) as torchvision 0.14's torchvision.models.VisionTransformer:
// the same modules, forward, initialisation and state_dict names, so torchvision's files load into it
// strictly and its files load back into torchvision. Built from Ember's layers (Conv2d, LayerNorm,
// MultiheadAttention, Linear, GELU, Dropout).
//
// Shapes: B batch, C input channels, S image size, P patch size, N = (S/P)² patches, T = N + 1 tokens (the
// class token first), D hidden_dim, K classes.
#include <cstdint>
#include <memory>
#include <string>

#include "nn/layers.h"
#include "nn/transformer.h"

namespace ember::nn {

struct VisionTransformerOptions {
  int64_t image_size = 224;  // square images S × S; a multiple of patch_size
  int64_t patch_size = 16;
  int64_t num_layers = 12;
  int64_t num_heads = 12;  // must divide hidden_dim
  int64_t hidden_dim = 768;
  int64_t mlp_dim = 3072;
  double dropout = 0.0;            // after the position embedding, the attention and in the MLP (training)
  double attention_dropout = 0.0;  // on the attention weights (training)
  int64_t num_classes = 1000;
  int64_t representation_size = 0;  // > 0: heads.pre_logits (D → this) and tanh before heads.head
  int64_t in_channels = 3;          // torchvision hard-codes 3; 1 for grey images (Fashion-MNIST)
};

// torchvision's EncoderBlock, pre-norm:
//   x = x + dropout(self_attention(ln_1(x)));   x = x + mlp(ln_2(x))
// mlp is torchvision's MLPBlock, a Sequential: 0 Linear(D, mlp_dim), 1 GELU, 2 Dropout, 3 Linear(mlp_dim, D),
// 4 Dropout; its linears start xavier_uniform with N(0, 1e-6) biases. LayerNorms have eps 1e-6;
// self_attention is a batch-first MultiheadAttention (dropout attention_dropout, PyTorch's init).
class ViTEncoderBlock : public Module {
 public:
  explicit ViTEncoderBlock(const VisionTransformerOptions& options, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;  // [B, T, D] → [B, T, D]
  std::string type_name() const override { return "ViTEncoderBlock"; }

  std::shared_ptr<LayerNorm> ln_1, ln_2;
  std::shared_ptr<MultiheadAttention> self_attention;
  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<Sequential> mlp;
};

// torchvision's Encoder: pos_embedding [1, T, D] ~ N(0, 0.02) is added, then dropout, the blocks
// (layers.encoder_layer_{i}) and the final LayerNorm ln.
class ViTEncoder : public Module {
 public:
  ViTEncoder(int64_t seq_length, const VisionTransformerOptions& options, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;  // [B, T, D] → [B, T, D]
  std::string type_name() const override { return "ViTEncoder"; }

  Tensor pos_embedding;
  std::shared_ptr<Dropout> dropout;
  std::shared_ptr<ModuleDict> layers;  // encoder_layer_0, encoder_layer_1, ... (ViTEncoderBlock)
  std::shared_ptr<LayerNorm> ln;
};

// forward(x [B, C, S, S]) → logits [B, K]: conv_proj (a P × P convolution of stride P, C → D) makes the patch
// tokens [B, N, D] (row-major over the patch grid), class_token [1, 1, D] goes first, the encoder runs, and
// heads maps the class token's output to the logits. state_dict keys, in torchvision's order:
//   class_token, conv_proj.{weight,bias}, encoder.pos_embedding, encoder.layers.encoder_layer_{i}.{ln_1,
//   self_attention.{in_proj_weight,in_proj_bias,out_proj.weight,out_proj.bias}, ln_2, mlp.0, mlp.3}.*,
//   encoder.ln.*, heads.pre_logits.* (with representation_size), heads.head.*
// Init as torchvision: conv_proj.weight trunc_normal(std √(1/fan_in)) with zero bias, class_token zeros,
// heads.pre_logits trunc_normal(std √(1/D)) with zero bias, heads.head zeros (weight and bias).
class VisionTransformer : public Module {
 public:
  explicit VisionTransformer(const VisionTransformerOptions& options, Generator* gen = nullptr);
  Tensor forward(const Tensor& x) override;
  std::string type_name() const override { return "VisionTransformer"; }
  std::string describe() const override;
  int64_t seq_length() const { return encoder->pos_embedding.size(1); }  // T = N + 1

  Tensor class_token;
  std::shared_ptr<Conv2d> conv_proj;
  std::shared_ptr<ViTEncoder> encoder;
  std::shared_ptr<ModuleDict> heads;  // pre_logits (Linear), act (Tanh): with representation_size; head (Linear)
  VisionTransformerOptions options;
};

// torchvision's standard shapes (ViT-B/16, ViT-B/32, ViT-L/16) at image_size 224 and 3 channels.
std::shared_ptr<VisionTransformer> vit_b_16(int64_t num_classes = 1000, Generator* gen = nullptr);
std::shared_ptr<VisionTransformer> vit_b_32(int64_t num_classes = 1000, Generator* gen = nullptr);
std::shared_ptr<VisionTransformer> vit_l_16(int64_t num_classes = 1000, Generator* gen = nullptr);

}  // namespace ember::nn
