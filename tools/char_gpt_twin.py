#!/usr/bin/python3
"""PyTorch twin of an ember-train language-model run of a GPT (configs/char_gpt.yaml).

It trains the same model from the same start on the same data in the same order, with PyTorch's own layers
(torch.nn.TransformerEncoderLayer, through tools/ember_gpt.py), optimizer (torch.optim.AdamW) and schedulers
(LinearLR + CosineAnnealingLR in SequentialLR), and reports the validation loss after each epoch, to compare
with Ember's metrics.jsonl (the issue's bar: within 2% at the end). What it shares with the Ember run:

  <run>/config.yaml        the resolved config: model, data, optimizer, scheduler, epochs
  <run>/vocab.json         the tokenizer (char: the code points in id order)
  <run>/init.safetensors   the model before the first step; loaded with load_state_dict(strict=True)
  --trace FILE             ember-train --trace-batches FILE: the window starts of every optimizer step

Only the dropout masks differ (PyTorch's generator, not Ember's). Run:

  ember-train --config configs/char_gpt.yaml --out runs/char_gpt --trace-batches runs/char_gpt/batches.jsonl
  /usr/bin/python3 tools/char_gpt_twin.py --run runs/char_gpt --threads 2
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
import yaml
from safetensors.torch import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ember_gpt import GPT  # noqa: E402

FORTUNES = "/usr/share/games/fortunes"


def read_corpus(path):
    """data::read_text / read_fortunes: a file's bytes, or a folder's regular files in byte-wise name order
    (no symlinks, subfolders or hidden files; the fortunes' .dat and .u8 skipped) joined with "\\n"."""
    skip = (".dat", ".u8") if not path else ()
    path = path or FORTUNES
    if os.path.isfile(path):
        return open(path, "rb").read()
    parts = []
    for name in sorted(os.listdir(path), key=lambda n: n.encode()):
        full = os.path.join(path, name)
        if name.startswith(".") or os.path.islink(full) or not os.path.isfile(full) or name.endswith(skip):
            continue
        parts.append(open(full, "rb").read())
    return b"\n".join(parts)


def encode(data, vocab):
    if vocab["type"] == "byte":
        return torch.tensor(list(data), dtype=torch.long)
    ids = {c: i for i, c in enumerate(vocab["tokens"])}
    return torch.tensor([ids[c] for c in data.decode("utf-8")], dtype=torch.long)


def gpt_spec(model):
    spec = model[0] if isinstance(model, list) else model
    if spec.get("type") != "gpt":
        sys.exit("the twin covers {type: gpt} models; this run's model is " + str(model))
    return spec


def no_decay_names(model, kinds):
    """The parameters that get no weight decay: biases, norm and embedding parameters (optimizer.no_decay)."""
    out = set()
    for mname, module in model.named_modules():
        for pname, _ in module.named_parameters(recurse=False):
            full = f"{mname}.{pname}" if mname else pname
            if "bias" in kinds and pname.endswith("bias"):
                out.add(full)
            if "norm" in kinds and isinstance(module, (torch.nn.LayerNorm, torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
                out.add(full)
            if "embedding" in kinds and isinstance(module, torch.nn.Embedding):
                out.add(full)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", required=True, help="the Ember run directory")
    ap.add_argument("--trace", help="the batch trace (default: <run>/batches.jsonl)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", help="write the results as JSON here (default: <run>/twin.json)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    cfg = yaml.safe_load(open(os.path.join(args.run, "config.yaml")))
    vocab = json.load(open(os.path.join(args.run, "vocab.json")))
    data, opt, sch = cfg["data"], cfg["optimizer"], cfg.get("scheduler", {"type": "none"})
    spec = gpt_spec(cfg["model"])
    T = int(data["context"])
    tokens = encode(read_corpus(data.get("path", "")), vocab)
    n = len(tokens)
    train_end = math.floor((1.0 - float(data["val_fraction"])) * n + 0.5)
    val_starts = [train_end + i * T for i in range((n - train_end - 1) // T)]

    model = GPT(vocab_size=vocab["vocab_size"], context=T, dim=spec["dim"], layers=spec["layers"],
                heads=spec["heads"], mlp_ratio=spec.get("mlp_ratio", 4), dropout=spec.get("dropout", 0.1),
                position=spec.get("position", "learned"), tie_weights=spec.get("tie_weights", True),
                bias=spec.get("bias", True))
    model.load_state_dict(load_file(os.path.join(args.run, "init.safetensors")), strict=True)

    assert opt["type"] == "adamw", "the twin implements optimizer.type adamw"
    skip = no_decay_names(model, set(opt.get("no_decay", [])))
    named = list(model.named_parameters())
    groups = [{"params": [p for k, p in named if k not in skip], "weight_decay": float(opt["weight_decay"])},
              {"params": [p for k, p in named if k in skip], "weight_decay": 0.0}]
    # NOTE: PyYAML reads numbers such as 1e-08 (no dot) as strings (YAML 1.1): float() them all.
    optimizer = torch.optim.AdamW([g for g in groups if g["params"]], lr=float(opt["lr"]),
                                  betas=tuple(float(b) for b in opt.get("betas", [0.9, 0.999])),
                                  eps=float(opt["eps"]), amsgrad=opt.get("amsgrad", False))
    trace = [json.loads(line) for line in open(args.trace or os.path.join(args.run, "batches.jsonl"))]
    epochs = int(cfg["epochs"])
    steps_per_epoch = len(trace) // epochs
    assert sch["type"] in ("cosine", "none") and sch.get("interval", "step") == "step", "the twin implements a per-step cosine schedule"
    scheduler = None
    if sch["type"] == "cosine":
        total = epochs * steps_per_epoch
        warm = int(sch.get("warmup_steps", 0))
        t_max = int(sch.get("t_max", 0)) or max(1, total - warm)
        cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, t_max, eta_min=float(sch.get("eta_min", 0.0)))
        scheduler = cosine
        if warm > 0:
            linear = torch.optim.lr_scheduler.LinearLR(optimizer, float(sch.get("warmup_start_factor", 1 / 3)), 1.0, warm)
            scheduler = torch.optim.lr_scheduler.SequentialLR(optimizer, [linear, cosine], milestones=[warm])
    micro = int(data["batch_size"])
    clip = float(opt.get("clip_grad_norm", 0))

    def window(starts, shift):
        return torch.stack([tokens[s + shift:s + shift + T] for s in starts])

    def evaluate():
        model.eval()
        total, count = 0.0, 0
        with torch.no_grad():
            bs = int(data.get("test_batch_size", 64))
            for i in range(0, len(val_starts), bs):
                s = val_starts[i:i + bs]
                logits = model(window(s, 0))
                total += F.cross_entropy(logits.reshape(-1, logits.size(-1)), window(s, 1).reshape(-1), reduction="sum").item()
                count += len(s) * T
        model.train()
        return total / count

    results, seconds = [], 0.0
    model.train()
    for epoch in range(epochs):
        started, loss_sum, seen = time.perf_counter(), 0.0, 0
        for row in trace[epoch * steps_per_epoch:(epoch + 1) * steps_per_epoch]:
            starts = row["starts"]
            optimizer.zero_grad(set_to_none=True)
            for i in range(0, len(starts), micro):
                s = starts[i:i + micro]
                logits = model(window(s, 0))
                loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), window(s, 1).reshape(-1))
                (loss * len(s) / len(starts)).backward()
                loss_sum += loss.item() * len(s)
                seen += len(s)
            if clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
        elapsed = time.perf_counter() - started  # training only, as Ember's samples_per_sec
        seconds += elapsed
        val = evaluate()
        results.append({"epoch": epoch + 1, "train_loss": loss_sum / seen, "val_loss": val,
                        "bits_per_char": val / math.log(2), "tokens_per_sec": seen * T / elapsed, "seconds": seconds})
        print(json.dumps(results[-1]), flush=True)
    json.dump({"threads": args.threads, "epochs": results}, open(args.out or os.path.join(args.run, "twin.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
