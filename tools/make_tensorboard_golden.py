#!/usr/bin/env python3
"""Golden values for tests/test_tensorboard.cpp, from the reference implementations:

- histograms: PyTorch's own code (torch.utils.tensorboard: SummaryWriter's default "tensorflow" bins and
  summary.make_histogram), run on a few inputs;
- TFRecord framing: TensorBoard's own masked CRC-32C (tensorboard.compat.tensorflow_stub) of the RFC 3720
  vectors and of a framed record.

Debian's python3-torch has no `tensorboard` module to import torch.utils.tensorboard with, so the two
functions are taken from torch's source with `ast` and run as they are (the proto class replaced by a dict).
Run with Debian's python (PyTorch, numpy 1.24) from the repository root, after scripts/test_venv.sh:
    /usr/bin/python3 tools/make_tensorboard_golden.py > tests/data/tensorboard_golden.json
(.venv-test's site-packages is appended to the path, after Debian's numpy, for tensorboard only).
"""
import ast
import json
import os
import struct
import sys
import types

import numpy as np
import torch.utils  # noqa: F401  (locates torch's source)

torch_dir = os.path.dirname(sys.modules["torch.utils"].__file__)


def function_from(path, qualified):
    """The ast node of `qualified` ("Class.method" or "function") in the file `path`."""
    tree = ast.parse(open(path).read())
    names = qualified.split(".")
    nodes = tree.body
    for name in names:
        node = next(n for n in nodes if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == name)
        nodes = node.body
    return node


# SummaryWriter.__init__'s default_bins: the statements from `v = 1e-12` to `self.default_bins = ...`.
init = function_from(os.path.join(torch_dir, "tensorboard", "writer.py"), "SummaryWriter.__init__")
src = [ast.unparse(s) for s in init.body]
first = next(i for i, s in enumerate(src) if s.startswith("v = 1e-12"))
last = next(i for i, s in enumerate(src) if s.startswith("self.default_bins"))
self = types.SimpleNamespace()
exec("\n".join(src[first:last + 1]), {"self": self})
default_bins = self.default_bins

make_histogram_src = ast.unparse(function_from(os.path.join(torch_dir, "tensorboard", "summary.py"), "make_histogram"))
# NOTE: torch 1.13 (Debian's) calls np.greater(counts, 0, dtype=np.int32), which numpy >= 1.24 rejects ("No
# loop matching the specified signature"); later PyTorch releases call np.greater(counts, 0). The same
# support search, with their fix:
make_histogram_src = make_histogram_src.replace("np.greater(counts, 0, dtype=np.int32)", "np.greater(counts, 0)")
ns = {"np": np, "HistogramProto": lambda **kw: kw}
exec(make_histogram_src, ns)
make_histogram = ns["make_histogram"]

rng = np.random.RandomState(17)
inputs = {
    "normal_f32": rng.randn(200).astype(np.float32).astype(np.float64).tolist(),
    "with_zeros_and_edges": [0.0, 0.0, -1e-12, 1e-12, 1.1e-12, 3.0, -3.0, 1e19, -2.5e-7],
    "single": [0.125],
    "zeros": [0.0, 0.0, 0.0],
    "wide_uniform": rng.uniform(-1e4, 1e4, size=100).tolist(),
}
histograms = {}
for name, values in inputs.items():
    h = make_histogram(np.array(values, dtype=float), default_bins)
    histograms[name] = {k: (list(map(float, v)) if isinstance(v, (list, np.ndarray)) else float(v)) for k, v in h.items()}

import glob  # noqa: E402

sys.path += glob.glob(".venv-test/lib/python3*/site-packages")  # after Debian's numpy and torch
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c, crc32c  # noqa: E402

crc_vectors = {
    "zeros32": bytes(32),
    "ones32": b"\xff" * 32,
    "ascending32": bytes(range(32)),
    "123456789": b"123456789",
}
payload = b"ember tensorboard record"
header = struct.pack("<Q", len(payload))
record = header + struct.pack("<I", masked_crc32c(header)) + payload + struct.pack("<I", masked_crc32c(payload))
json.dump({
    "default_bins": len(default_bins),
    "inputs": inputs,
    "histograms": histograms,
    "crc32c": {k: crc32c(v) for k, v in crc_vectors.items()},
    "masked_crc32c": {k: masked_crc32c(v) for k, v in crc_vectors.items()},
    "record_payload": payload.decode(),
    "record_hex": record.hex(),
}, sys.stdout)
print()
