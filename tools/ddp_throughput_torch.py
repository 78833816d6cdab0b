#!/usr/bin/env python3
"""PyTorch's side of docs/benchmarks.md "Data-parallel (issue 16)": training throughput of the Fashion MLP and
CNN (the same layers as configs/fashion_mlp.yaml and configs/fashion_cnn.yaml) with DistributedDataParallel on
the gloo backend, one process per rank, on this machine.

  /usr/bin/python3 tools/ddp_throughput_torch.py --model mlp --world 2 --threads 1 --batch 64 --examples 60000

--batch is per process (the global batch is world x batch); each rank trains on its DistributedSampler shard of
the first --examples training images for one epoch; the first 5 steps are warm-up and not timed. Prints one JSON
line: {"model", "world", "threads", "batch", "samples_per_sec"} (global examples per second).
"""
import argparse
import gzip
import json
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

DATA = "/usr/share/datasets/fashion-mnist"


def load(examples):
    with gzip.open(os.path.join(DATA, "train-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 1, 28, 28)[:examples]
    with gzip.open(os.path.join(DATA, "train-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8)[:examples]
    x = (torch.from_numpy(images.astype(np.float32)) / 255.0 - 0.2860) / 0.3530
    return x, torch.from_numpy(labels.astype(np.int64))


def model(kind):
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Dropout(0.2), nn.Linear(512, 256),
                             nn.ReLU(), nn.Dropout(0.2), nn.Linear(256, 10))
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.3), nn.Linear(128, 10))


def run(rank, args):
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.world > 1:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29517")
        dist.init_process_group("gloo", rank=rank, world_size=args.world)
    x, y = load(args.examples)
    net = model(args.model)
    if args.world > 1:
        net = nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3) if args.model == "mlp" else torch.optim.Adam(net.parameters(), 2e-3)
    loss_fn = nn.CrossEntropyLoss()
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    shard = order[rank::args.world]
    steps = len(shard) // args.batch
    timed = 0
    for step in range(steps):
        if step == 5:
            if args.world > 1:
                dist.barrier()
            start = time.perf_counter()
        idx = shard[step * args.batch:(step + 1) * args.batch]
        opt.zero_grad(set_to_none=True)
        loss_fn(net(x[idx]), y[idx]).backward()
        opt.step()
        if step >= 5:
            timed += len(idx)
    if args.world > 1:
        dist.barrier()
    seconds = time.perf_counter() - start
    if rank == 0:
        print(json.dumps({"model": args.model, "world": args.world, "threads": args.threads, "batch": args.batch,
                          "samples_per_sec": timed * args.world / seconds}), flush=True)
    if args.world > 1:
        dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--world", type=int, default=1)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--examples", type=int, default=60000)
    args = p.parse_args()
    if args.world == 1:
        run(0, args)
    else:
        mp.spawn(run, args=(args,), nprocs=args.world)


if __name__ == "__main__":
    main()
