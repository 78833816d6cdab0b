#!/usr/bin/python3
"""Writes tests/data/torch_written.safetensors with PyTorch + safetensors (Debian's python3-torch, PyPI's
safetensors). tests/test_safetensors.cpp reads it and checks the values below, which are simple formulas
so the test states them independently.

    /usr/bin/python3 tools/make_safetensors_golden.py
"""
import pathlib

import torch
from safetensors.torch import save_file

out = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "torch_written.safetensors"
tensors = {
    "weight": torch.arange(6, dtype=torch.float32).reshape(2, 3) / 4,           # [[0, .25, .5], [.75, 1, 1.25]]
    "bias": torch.arange(4, dtype=torch.float64) * -1.5,                      # [0, -1.5, -3, -4.5]
    "labels": torch.tensor([3, -2, 7], dtype=torch.int64),
    "mask": torch.tensor([True, False, True]),
    "half": torch.tensor([0.5, -2.0, 65504.0, 2.0 ** -24], dtype=torch.float16),  # incl. max and a subnormal
    "brain": torch.tensor([1.0, -3.5, 0.0078125], dtype=torch.bfloat16),
    "scalar": torch.tensor(2.5, dtype=torch.float32),                         # 0-d
    "empty": torch.zeros(0, 3, dtype=torch.float32),
}
save_file(tensors, str(out), metadata={"source": "torch", "torch": torch.__version__})
print(f"wrote {out}")
