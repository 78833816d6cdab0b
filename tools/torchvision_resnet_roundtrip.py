#!/usr/bin/python3
"""torchvision ResNet reference for Ember's round trip (issue 32), run AT TEST TIME (the weights are too big
to commit: resnet18 47 MB, resnet50 100 MB).

  make  DIR ARCH [--batch 2 --size 64 --seed 0]
      writes DIR/ARCH.safetensors: torchvision.models.ARCH()'s random-init state dict (torchvision's init,
      its exact names: conv1.weight, layer1.0.downsample.1.running_var, fc.bias, ...), and
      DIR/ARCH_ref.safetensors: the fixed input `x` [B, 3, S, S], labels `t` [B], the eval-mode logits
      `eval.y`, the train-mode logits `train.y`, every batch-norm buffer after that train-mode forward as
      `train.<name>` (running_mean, running_var, num_batches_tracked), and every parameter's gradient of
      the fixed loss cross_entropy(train-mode logits, t) as `grad.<name>`.
  check DIR ARCH FILE
      loads FILE (a state dict Ember saved) into a fresh torchvision ARCH strictly (load_state_dict
      strict=True: a missing, unexpected or misshaped name fails) and checks its eval-mode logits on `x`
      against the reference's `eval.y` (1e-5 relative); exit status 1 with the reason otherwise.

Debian's python3-torch 1.13 / python3-torchvision 0.14 are the reference (scripts/setup.sh installs them).
"""
import argparse
import sys

import torch
import torch.nn.functional as F
import torchvision
from safetensors.torch import load_file, save_file


def model(arch):
    if arch not in ("resnet18", "resnet34", "resnet50"):
        sys.exit(f"unknown arch {arch!r}: expected resnet18, resnet34 or resnet50")
    return getattr(torchvision.models, arch)()


def make(args):
    torch.manual_seed(args.seed)
    m = model(args.arch).float()
    state = {k: v.detach().clone().contiguous() for k, v in m.state_dict().items()}
    save_file(state, f"{args.dir}/{args.arch}.safetensors")

    g = torch.Generator().manual_seed(args.seed + 1)
    x = torch.randn(args.batch, 3, args.size, args.size, generator=g)
    t = torch.randint(0, 1000, (args.batch,), generator=g)
    ref = {"x": x, "t": t}
    m.eval()
    with torch.no_grad():
        ref["eval.y"] = m(x).contiguous()
    m.train()
    y = m(x)
    F.cross_entropy(y, t).backward()
    ref["train.y"] = y.detach().contiguous()
    for k, v in m.state_dict().items():
        if "running_" in k or "num_batches_tracked" in k:
            ref[f"train.{k}"] = v.detach().clone().contiguous()
    for k, p in m.named_parameters():
        ref[f"grad.{k}"] = p.grad.detach().contiguous()
    save_file(ref, f"{args.dir}/{args.arch}_ref.safetensors")


def check(args):
    m = model(args.arch).float()
    state = load_file(args.file)
    try:
        m.load_state_dict(state, strict=True)
    except RuntimeError as e:
        sys.exit(f"{args.file}: torchvision {args.arch} does not load it strictly: {e}")
    ref = load_file(f"{args.dir}/{args.arch}_ref.safetensors")
    m.eval()
    with torch.no_grad():
        y = m(ref["x"])
    want = ref["eval.y"]
    err = ((y - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()
    if err > 1e-5:
        sys.exit(f"{args.file}: torchvision's eval logits from Ember's weights differ by {err:.3g} relative (> 1e-5)")
    print(f"ok: {args.file} loads into torchvision {args.arch} strictly; eval logits within {err:.3g} relative")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make")
    mk.add_argument("dir")
    mk.add_argument("arch")
    mk.add_argument("--batch", type=int, default=2)
    mk.add_argument("--size", type=int, default=64)
    mk.add_argument("--seed", type=int, default=0)
    ck = sub.add_parser("check")
    ck.add_argument("dir")
    ck.add_argument("arch")
    ck.add_argument("file")
    args = p.parse_args()
    torch.set_num_threads(1)
    make(args) if args.cmd == "make" else check(args)


if __name__ == "__main__":
    main()
