#!/usr/bin/python3
"""torchvision ResNet reference for Ember's round trip (issue 32).

  make  DIR ARCH [--batch 2 --size 64 --seed 0 --train-dtype f64]
      writes DIR/ARCH.safetensors: the model's state dict (f32; torchvision's init, its exact names:
      conv1.weight, layer1.0.downsample.1.running_var, fc.bias, ...), and DIR/ARCH_ref.safetensors: the fixed
      input `x` [B, in_channels, S, S] (f32), labels `t` [B], the eval-mode logits `eval.y` (f32), then, with
      the model and x converted to --train-dtype, the train-mode logits `train.y`, every batch-norm buffer
      after that train-mode forward as `train.<name>` (running_mean, running_var, num_batches_tracked), and
      every parameter's gradient of the fixed loss cross_entropy(train-mode logits, t) as `grad.<name>`.
      f64 by default: a deep network's train-mode gradients are ill-conditioned in f32 (batch norm over few
      values per channel: torchvision's own f32 and f64 gradients of resnet50 at 2x3x64x64 differ by up to
      0.23 relative), so only f64 checks them to 1e-4.
  check DIR ARCH FILE
      loads FILE (a state dict Ember saved) into a fresh ARCH strictly (load_state_dict strict=True: a
      missing, unexpected or misshaped name fails) and checks its eval-mode logits on `x` against the
      reference's `eval.y` (1e-5 relative); exit status 1 with the reason otherwise.
  golden
      writes the small models' files into tests/data (what tests/test_resnet.cpp reads; rerun and commit them
      after a change here): `make tests/data ARCH --batch 4 --size 32 --train-dtype f32` for each tiny ARCH
      below (small enough to be well-conditioned: their f32 gradients are within 3e-5 of f64 ones).

ARCH: resnet18, resnet34, resnet50 (torchvision.models.ARCH(): too big to commit, resnet18 is 47 MB and
resnet50 100 MB, so tests/test_resnet.cpp makes them at test time where torchvision is installed), or one of
the tiny models built from torchvision's own ResNet class and blocks (its _make_layer, its names and forward)
with small widths, 10 classes and 3 input channels:
  resnet_tiny_basic       BasicBlock, blocks [1, 2, 1, 1], widths 4, 8, 16, 32, torchvision's stem
                          (7x7 stride-2 conv, 3x3 stride-2 max pool)
  resnet_tiny_bottleneck  Bottleneck, blocks [1, 2, 1, 1], widths 4, 8, 16, 32 (outputs 4x), the small-image
                          stem (3x3 stride-1 conv, no max pool: torchvision's maxpool replaced by Identity)
The tiny models' batch-norm weights, biases and running statistics are random (not torchvision's 1, 0, 0, 1),
so that a swapped or unused one shows in the logits.

Debian's python3-torch 1.13 / python3-torchvision 0.14 are the reference. Files are read and written by the
small safetensors codec below (the `safetensors` package is not a Debian package).
"""
import argparse
import pathlib
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.models.resnet import BasicBlock, Bottleneck, ResNet

from torchvision_check import check_strict_load, load_file, save_file

TINY = {
    "resnet_tiny_basic": (BasicBlock, [1, 2, 1, 1], "imagenet"),
    "resnet_tiny_bottleneck": (Bottleneck, [1, 2, 1, 1], "small"),
}
TINY_WIDTH = 4
TINY_CLASSES = 10

# --- the models -----------------------------------------------------------------------------------------
def tiny(arch):
    block, layers, stem = TINY[arch]
    m = ResNet(block, [1, 1, 1, 1], num_classes=TINY_CLASSES)
    w = TINY_WIDTH
    m.inplanes = w
    if stem == "imagenet":
        m.conv1 = nn.Conv2d(3, w, kernel_size=7, stride=2, padding=3, bias=False)
    else:
        m.conv1 = nn.Conv2d(3, w, kernel_size=3, stride=1, padding=1, bias=False)
        m.maxpool = nn.Identity()
    m.bn1 = nn.BatchNorm2d(w)
    m.layer1 = m._make_layer(block, w, layers[0])
    m.layer2 = m._make_layer(block, 2 * w, layers[1], stride=2)
    m.layer3 = m._make_layer(block, 4 * w, layers[2], stride=2)
    m.layer4 = m._make_layer(block, 8 * w, layers[3], stride=2)
    m.fc = nn.Linear(8 * w * block.expansion, TINY_CLASSES)
    for mod in m.modules():  # torchvision's init (ResNet.__init__), then random batch-norm state (above)
        if isinstance(mod, nn.Conv2d):
            nn.init.kaiming_normal_(mod.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(mod, nn.BatchNorm2d):
            with torch.no_grad():
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.5, 0.5)
                mod.running_mean.uniform_(-0.5, 0.5)
                mod.running_var.uniform_(0.5, 1.5)
                mod.num_batches_tracked.fill_(3)
    return m


def model(arch):
    if arch in TINY:
        return tiny(arch)
    if arch not in ("resnet18", "resnet34", "resnet50"):
        sys.exit(f"unknown arch {arch!r}: expected resnet18, resnet34, resnet50, {', '.join(TINY)}")
    return getattr(torchvision.models, arch)()


def make(args):
    torch.manual_seed(args.seed)
    m = model(args.arch).float()
    state = {k: v.detach().clone().contiguous() for k, v in m.state_dict().items()}
    save_file(state, f"{args.dir}/{args.arch}.safetensors")

    g = torch.Generator().manual_seed(args.seed + 1)
    x = torch.randn(args.batch, m.conv1.in_channels, args.size, args.size, generator=g)
    t = torch.randint(0, m.fc.out_features, (args.batch,), generator=g)
    ref = {"x": x, "t": t}
    m.eval()
    with torch.no_grad():
        ref["eval.y"] = m(x).contiguous()
    m.train()
    if args.train_dtype == "f64":
        m, x = m.double(), x.double()
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
    ref = load_file(f"{args.dir}/{args.arch}_ref.safetensors")
    check_strict_load(model(args.arch).float(), f"torchvision {args.arch}", args.file, ref["x"], ref["eval.y"])


def golden(_):
    out = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data"
    for arch in TINY:
        make(argparse.Namespace(dir=str(out), arch=arch, batch=4, size=32, seed=0, train_dtype="f32"))
        print(f"wrote {out}/{arch}.safetensors and {arch}_ref.safetensors")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    mk = sub.add_parser("make")
    mk.add_argument("dir")
    mk.add_argument("arch")
    mk.add_argument("--batch", type=int, default=2)
    mk.add_argument("--size", type=int, default=64)
    mk.add_argument("--seed", type=int, default=0)
    mk.add_argument("--train-dtype", choices=["f32", "f64"], default="f64")
    ck = sub.add_parser("check")
    ck.add_argument("dir")
    ck.add_argument("arch")
    ck.add_argument("file")
    sub.add_parser("golden")
    args = p.parse_args()
    torch.set_num_threads(1)
    {"make": make, "check": check, "golden": golden}[args.cmd](args)


if __name__ == "__main__":
    main()
