#!/usr/bin/env python3
"""torchvision's side of the image loader benchmark (bench/image_loader_throughput.cpp), on the same folder:
ImageFolder (PIL decode, convert('RGB')) + DataLoader with the same transforms and worker count, samples/s
per epoch. Also makes the benchmark's JPEG folder.

    /usr/bin/python3 tools/image_loader_torch.py --make DIR [--count 500]   # 500x375 JPEGs, 2 classes
    /usr/bin/python3 tools/image_loader_torch.py DIR [--workers 2] [--batch 64] [--epochs 3] [--crop 224]

--crop 0: ToTensor + Normalize only (images of one size, e.g. Fashion-MNIST's PNGs; gray ones are read as
'L', as Ember's channels: auto does). Uses Debian's python3-torchvision (0.14) and python3-pil.
"""
import argparse
import math
import os
import random
import time

import torch
from PIL import Image
from torchvision import datasets, transforms


def make(folder, count):
    rng = random.Random(0)
    for i in range(count):
        cls = "class_a" if i % 2 == 0 else "class_b"
        os.makedirs(os.path.join(folder, cls), exist_ok=True)
        w, h = 500, 375
        img = Image.new("RGB", (w, h))
        # smooth color fields with some texture: compresses like a photo (~40-60 kB at quality 90)
        fx, fy, ph = rng.uniform(0.01, 0.05), rng.uniform(0.01, 0.05), rng.uniform(0, 6.3)
        px = [(int(127 + 120 * math.sin(x * fx + ph)), int(127 + 120 * math.sin(y * fy + ph)),
               int(127 + 120 * math.sin((x + y) * 0.02 + ph)) ^ (rng.randrange(32) if (x * y) % 7 == 0 else 0))
              for y in range(h) for x in range(w)]
        img.putdata(px)
        img.save(os.path.join(folder, cls, f"{i:04d}.jpg"), quality=90)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("folder")
    p.add_argument("--make", action="store_true")
    p.add_argument("--count", type=int, default=500)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--crop", type=int, default=224)
    a = p.parse_args()
    if a.make:
        make(a.folder, a.count)
        return
    torch.set_num_threads(1)
    if a.crop > 0:
        tf = transforms.Compose([transforms.RandomResizedCrop(a.crop), transforms.RandomHorizontalFlip(),
                                 transforms.ToTensor(),
                                 transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
        loader_fn = None  # ImageFolder's default: convert('RGB')
    else:
        tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize([0.5], [0.5])])
        loader_fn = lambda path: Image.open(path).convert("L")
    t0 = time.time()
    ds = datasets.ImageFolder(a.folder, transform=tf, **({"loader": loader_fn} if loader_fn else {}))
    print(f"{a.folder}: {len(ds)} images, {len(ds.classes)} classes; opened in {time.time() - t0:.2f} s")
    loader = torch.utils.data.DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=a.workers,
                                         persistent_workers=a.workers > 0)
    for e in range(a.epochs):
        t0 = time.time()
        seen = 0
        for x, _ in loader:
            seen += x.shape[0]
        s = time.time() - t0
        print(f"epoch {e + 1}: {seen} samples in {s:.3f} s = {seen / s:.0f} samples/s")


if __name__ == "__main__":
    main()
