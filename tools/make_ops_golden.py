#!/usr/bin/python3
"""Golden values for the element-wise ops (tests/test_ops.cpp, OpsGolden), from PyTorch (Debian's python3-torch):

    /usr/bin/python3 tools/make_ops_golden.py     # writes tests/data/ops_golden.safetensors

For each case NAME and dtype D (f32, f64) the file holds the input NAME.D.x, the output NAME.D.y, a random
cotangent NAME.D.r and the gradient of sum(y * r) with respect to x, NAME.D.gx. The f32 values are
PyTorch's own f32 computation, not rounded f64 ones. The inputs cover each op's interesting points (zero,
the kinks and thresholds, large magnitudes); the C++ test runs the op with the parameters stated here.
"""
import pathlib

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from golden_common import store_case

torch.manual_seed(0)
out = {}

# Spread values, plus the points where the ops change branch.
base = torch.cat([torch.randn(40) * 2, torch.tensor([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 3.0, -3.0, 10.0, -10.0,
                                                      1e-4, -1e-4, 25.0, -25.0, 0.2, -0.8, 0.6, 0.75])])
positive = torch.rand(40) * 4 + 0.05

CASES = {
    # name: (fn, input)
    "exp": (torch.exp, base),
    "expm1": (torch.expm1, base),
    "log": (torch.log, positive),
    "log1p": (torch.log1p, positive - 0.9),
    "sqrt": (torch.sqrt, positive),
    "rsqrt": (torch.rsqrt, positive),
    "reciprocal": (torch.reciprocal, positive),
    "sin": (torch.sin, base),
    "cos": (torch.cos, base),
    "tanh": (torch.tanh, base),
    "sigmoid": (torch.sigmoid, base),
    "silu": (F.silu, base),
    "relu": (F.relu, base),
    "abs": (torch.abs, base),
    "square": (torch.square, base),
    "neg": (torch.neg, base),
    "gelu": (F.gelu, base),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), base),
    "leaky_relu": (F.leaky_relu, base),                        # negative_slope 0.01
    "leaky_relu_02": (lambda x: F.leaky_relu(x, 0.2), base),
    "elu": (F.elu, base),                                      # alpha 1
    "elu_15": (lambda x: F.elu(x, 1.5), base),
    "softplus": (F.softplus, base),                            # beta 1, threshold 20
    "softplus_2_3": (lambda x: F.softplus(x, beta=2.0, threshold=3.0), base),
    "hardtanh": (F.hardtanh, base),                            # [-1, 1]
    "hardtanh_08_06": (lambda x: F.hardtanh(x, -0.8, 0.6), base),
    "clamp": (lambda x: torch.clamp(x, -0.8, 0.6), base),
    "pow_25": (lambda x: torch.pow(x, 2.5), positive),
    "pow_3": (lambda x: torch.pow(x, 3), base),
}

for name, (fn, x0) in CASES.items():
    r0 = torch.randn_like(x0)
    for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
        x = x0.to(dtype).clone().requires_grad_(True)
        y = fn(x)
        r = r0.to(dtype)
        (y * r).sum().backward()
        store_case(out, f"{name}.{tag}", {"x": x}, y, r)

path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "ops_golden.safetensors"
save_file(out, str(path))
print(f"wrote {len(out)} tensors to {path}")
