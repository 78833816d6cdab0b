#pragma once
// conv2d through oneDNN (Debian's libdnnl, the library LibTorch uses for CPU convolution), when this build
// has it (EMBER_ONEDNN). f32 only; each entry returns false when oneDNN cannot serve the case, and the
// caller falls back to im2col + GEMM. Primitives are created once per shape and cached.
#include "backends/backend.h"

namespace ember::cpu {

bool onednn_available();
bool onednn_conv2d_forward(const TensorArg& x, const TensorArg& w, const TensorArg* bias, const TensorArg& y,
                           const Conv2dParams& p);
bool onednn_conv2d_backward(const TensorArg& x, const TensorArg& w, const TensorArg& grad_y, const TensorArg* grad_x,
                            const TensorArg* grad_w, const TensorArg* grad_bias, const Conv2dParams& p);

}  // namespace ember::cpu
