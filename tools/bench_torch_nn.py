#!/usr/bin/python3
"""LibTorch's side of bench/bench_nn.cpp: the same conv2d shapes and passes through Debian's python3-torch
(the same libtorch the C++ API uses; Python's overhead is negligible at these millisecond sizes), in its
best configuration (docs/benchmarks.md; tools/compare_conv_vs_libtorch.py runs it so, with the OpenBLAS
kernel family matching the CPU: SkylakeX with AVX-512 F/BW/VL/DQ, Haswell with AVX2): by hand,

    OPENBLAS_CORETYPE=<SkylakeX|Haswell> OPENBLAS_NUM_THREADS=1 \
    GLIBC_TUNABLES=glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=1073741824 \
    /usr/bin/python3 tools/bench_torch_nn.py [threads]
"""
import os
import sys
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 2)
torch.set_flush_denormal(True)
torch.manual_seed(0)


def timeit(fn, min_time=1.0):
    fn()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < min_time:
        fn()
        n += 1
    return (time.perf_counter() - start) / n


for N, C, H, O in [(64, 1, 28, 32), (64, 32, 14, 64)]:
    flops = 2.0 * N * O * H * H * C * 9
    x, w, b = torch.randn(N, C, H, H), torch.randn(O, C, 3, 3), torch.randn(O)
    fwd = timeit(lambda: F.conv2d(x, w, b, padding=1))
    xg = x.clone().requires_grad_(C > 1)
    wg, bg = w.clone().requires_grad_(), b.clone().requires_grad_()
    g = torch.randn(N, O, H, H)

    def step():
        wg.grad = bg.grad = xg.grad = None
        F.conv2d(xg, wg, bg, padding=1).backward(g)

    fb = timeit(step)
    passes = 3 if C > 1 else 2
    print(f"conv2d N{N} C{C} H{H} O{O}: forward {flops / fwd / 1e9:.1f} GFLOP/s, "
          f"forward+backward {flops * passes / fb / 1e9:.1f} GFLOP/s")

# bench_nn's BM_CharGptTrainStep: one training step of configs/char_gpt.yaml's model through tools/ember_gpt.py
# (PyTorch's own TransformerEncoderLayer), batch 32 x 128 tokens, AdamW.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ember_gpt import GPT  # noqa: E402

gpt = GPT(vocab_size=113, context=128, dim=128, layers=4, heads=4, mlp_ratio=4, dropout=0.1, position="learned",
          tie_weights=True, bias=True)
adamw = torch.optim.AdamW(gpt.parameters(), lr=1e-3)
tokens, targets = torch.randint(0, 113, (32, 128)), torch.randint(0, 113, (32, 128))


def gpt_step():
    adamw.zero_grad()
    loss = F.cross_entropy(gpt(tokens).flatten(0, 1), targets.flatten())
    loss.backward()
    adamw.step()
    loss.item()


t = timeit(gpt_step, 3.0)
print(f"char GPT train step: {t * 1e3:.0f} ms ({32 * 128 / t:.0f} tokens/s)")
