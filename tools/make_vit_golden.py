#!/usr/bin/python3
"""torchvision Vision Transformer references for tests/test_vit.cpp (issue 32), from Debian's python3-torch 1.13
and python3-torchvision 0.14:

  /usr/bin/python3 tools/make_vit_golden.py
      writes, for each case NAME below, tests/data/NAME.safetensors: the state dict of a seeded
      torchvision.models.VisionTransformer (its exact names: class_token, conv_proj.weight,
      encoder.layers.encoder_layer_0.self_attention.in_proj_weight, ..., heads.head.bias; their order in
      the metadata's `order`), and
      tests/data/NAME_ref.safetensors: the fixed input `x` [B, 3, S, S], labels `t` [B], the eval-mode logits
      `y`, and every parameter's gradient of cross_entropy(train-mode logits, t) as `grad.<name>` (dropout 0,
      so train and eval mode compute the same). Case vit_tiny also has the same in f64 (`f64.y`,
      `f64.grad.<name>`: the model's f32 weights converted to f64, the input likewise).
      And tests/data/vit_standard_shapes.json: the state_dict names and shapes, in order, of
      torchvision.models.vit_b_16() and vit_b_32() (too large to commit as weights).
  /usr/bin/python3 tools/make_vit_golden.py standard DIR ARCH
      the same for torchvision.models.ARCH() (vit_b_16 or vit_b_32, random init; 330 MB each, so written at
      test time): DIR/ARCH.safetensors and DIR/ARCH_ref.safetensors with one 224 x 224 image.
  /usr/bin/python3 tools/make_vit_golden.py check NAME FILE LOGITS
      loads FILE (a state dict Ember saved) into a fresh torchvision model NAME (a case above, vit_b_16 or
      vit_b_32) strictly (load_state_dict strict=True: a missing, unexpected or misshaped name fails) and
      checks its eval-mode logits on LOGITS' `x` against LOGITS' `y` (what Ember computed with those weights),
      1e-5 relative; exit status 1 with the reason otherwise. tests/test_vit.cpp runs both modes where
      /usr/bin/python3 imports torchvision.

torchvision's init leaves heads.head at zero (so every other gradient would be zero) and the layer norms at
1 and 0 (so swapping ln_1 and ln_2 would go unseen): every parameter of the small cases gets N(0, 0.2²) added
after the init; in the standard models (where that would swamp the init's scale) the tensors that start
constant (class token, biases, norms, the head) get N(0, 0.02²) added.
torchvision hard-codes 3 input channels; Ember's in_channels = 1 (Fashion-MNIST) is the same code with a
1-channel conv_proj.
"""
import json
import pathlib
import sys

import torch
import torch.nn.functional as F
import torchvision

from torchvision_check import check_strict_load, load_file, save_file

DATA = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data"
TINY = dict(num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64, num_classes=10)
CASES = {
    "vit_tiny": dict(image_size=28, patch_size=7, **TINY),
    "vit_tiny_rep": dict(image_size=32, patch_size=8, representation_size=16, **TINY),
}
F64 = ("vit_tiny",)
BATCH = 3


STANDARD = ("vit_b_16", "vit_b_32")


def model(name):
    if name in STANDARD:
        return getattr(torchvision.models, name)()
    if name not in CASES:
        sys.exit(f"unknown case {name!r}: expected one of {', '.join(list(CASES) + list(STANDARD))}")
    return torchvision.models.VisionTransformer(**CASES[name])


def gradients(m, x, t):
    m.train()
    m.zero_grad()
    F.cross_entropy(m(x), t).backward()
    return {f"grad.{k}": p.grad.detach().clone().contiguous() for k, p in m.named_parameters()}


def make(name, seed, out=DATA):
    torch.manual_seed(seed)
    m = model(name).float()
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for k, p in m.named_parameters():
            if name not in STANDARD:
                p.add_(0.2 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1 or k in ("class_token", "heads.head.weight"):
                p.add_(0.02 * torch.randn(p.shape, generator=g))
    state = {k: v.detach().clone().contiguous() for k, v in m.state_dict().items()}
    # safetensors sorts its entries: the metadata keeps torchvision's order (Ember's state_dict must match it)
    save_file(state, str(out / f"{name}.safetensors"), metadata={"order": ",".join(state)})

    size, classes, batch = (224, 1000, 1) if name in STANDARD else (CASES[name]["image_size"], CASES[name]["num_classes"], BATCH)
    x = torch.randn(batch, 3, size, size, generator=g)
    t = torch.randint(0, classes, (batch,), generator=g)
    ref = {"x": x, "t": t}
    m.eval()
    with torch.no_grad():
        ref["y"] = m(x).contiguous()
    ref.update(gradients(m, x, t))
    if name in F64:
        m = m.double()
        m.eval()
        with torch.no_grad():
            ref["f64.y"] = m(x.double()).contiguous()
        ref.update({f"f64.{k}": v for k, v in gradients(m, x.double(), t).items()})
    save_file(ref, str(out / f"{name}_ref.safetensors"))
    print(f"wrote {name}.safetensors and {name}_ref.safetensors ({len(ref)} reference tensors) in {out}")


def check(name, file, logits):
    ember = load_file(logits)
    check_strict_load(model(name).float(), f"torchvision VisionTransformer({name})", file, ember["x"], ember["y"])


def main():
    torch.set_num_threads(1)
    if len(sys.argv) == 5 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 4 and sys.argv[1] == "standard" and sys.argv[3] in STANDARD:
        make(sys.argv[3], seed=0, out=pathlib.Path(sys.argv[2]))
    elif len(sys.argv) == 1:
        for i, name in enumerate(CASES):
            make(name, seed=i)
        shapes = {arch: [[k, list(v.shape)] for k, v in getattr(torchvision.models, arch)().state_dict().items()]
                  for arch in STANDARD}
        lines = ",\n".join(f'"{arch}": [\n' + ",\n".join(json.dumps(e) for e in entries) + "]" for arch, entries in shapes.items())
        (DATA / "vit_standard_shapes.json").write_text("{\n" + lines + "\n}\n")
        print("wrote vit_standard_shapes.json")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
