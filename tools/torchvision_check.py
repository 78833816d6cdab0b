"""What the torchvision round-trip scripts share (tools/torchvision_resnet_roundtrip.py, tools/make_vit_golden.py):
a safetensors reader and writer that needs no package beyond torch (Debian's python3 has no `safetensors`),
and the check that an Ember-written state dict loads into torchvision's own model strictly and gives the
logits Ember gave."""
import json
import pathlib
import struct
import sys

import torch

# --- safetensors (https://github.com/huggingface/safetensors: an 8-byte little-endian header size, the JSON
# header {name: {dtype, shape, data_offsets}}, then the bytes) ---------------------------------------------
DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64", torch.int32: "I32"}


def save_file(tensors, path, metadata=None):
    header, chunks, offset = ({"__metadata__": metadata} if metadata else {}), [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        data = t.numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


def load_file(path):
    raw = pathlib.Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    by_name = {v: k for k, v in DTYPES.items()}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        data = bytearray(raw[8 + n + begin:8 + n + end])
        t = torch.frombuffer(data, dtype=by_name[info["dtype"]]) if data else torch.empty(0, dtype=by_name[info["dtype"]])
        out[name] = t.reshape(info["shape"]).clone()
    return out


def check_strict_load(m, what, file, x, want):
    """Loads `file` into the torchvision model `m` strictly and compares its eval logits on x with `want`
    (1e-5 relative); exits naming the file when either fails."""
    try:
        m.load_state_dict(load_file(file), strict=True)
    except RuntimeError as e:
        sys.exit(f"{file}: {what} does not load it strictly: {e}")
    m.eval()
    with torch.no_grad():
        y = m(x)
    err = ((y - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()
    if err > 1e-5:
        sys.exit(f"{file}: torchvision's eval logits from Ember's weights differ by {err:.3g} relative (> 1e-5)")
    print(f"ok: {file} loads into {what} strictly; eval logits within {err:.3g} relative")
