#!/usr/bin/python3
"""Golden parameter-group trajectories for tests/test_optim.cpp (ParamGroups.*), from PyTorch (Debian's
python3-torch):

    /usr/bin/python3 tools/make_param_groups_golden.py   # writes tests/data/param_groups_golden.safetensors

The model (f64): Embedding(5, 4) -> LayerNorm(4) -> Linear(4, 3) (Sequential, names "0", "1", "2") on a
[2, 6] batch of token ids with cross entropy over the 12 positions. The groups are what
optim::weight_decay_groups makes with no_decay = [bias, norm, embedding]: decayed = [2.weight], the rest
(0.weight, 1.weight, 1.bias, 2.bias) with weight_decay 0. For every configuration CFG:
  CFG  [10, P]  all parameters after each of 10 steps, flattened in named_parameters() order
"""
import pathlib

import torch

torch.manual_seed(0)
out = {}
model = torch.nn.Sequential(torch.nn.Embedding(5, 4), torch.nn.LayerNorm(4), torch.nn.Linear(4, 3)).double()
with torch.no_grad():  # LayerNorm starts at (1, 0): perturb it so its decay (or not) shows
    model[1].weight.add_(0.1 * torch.randn(4, dtype=torch.float64))
    model[1].bias.add_(0.1 * torch.randn(4, dtype=torch.float64))
init = {k: v.detach().clone() for k, v in model.named_parameters()}
for k, v in init.items():
    out[f"init.{k}"] = v
x = torch.randint(0, 5, (2, 6))
y = torch.randint(0, 3, (2, 6))
out["x"], out["y"] = x, y
decay_names = ["2.weight"]


def groups(decay_options, no_decay_options):
    named = dict(model.named_parameters())
    decay = [named[n] for n in named if n in decay_names]
    rest = [named[n] for n in named if n not in decay_names]
    return [dict(params=decay, **decay_options), dict(params=rest, **no_decay_options)]


configs = {
    # AdamW as GPT training uses it: one lr, weight decay on the matrices only.
    "adamw": lambda: torch.optim.AdamW(groups({"weight_decay": 0.1}, {"weight_decay": 0.0}), lr=0.01),
    # SGD with momentum and a different lr per group.
    "sgd": lambda: torch.optim.SGD(groups({"lr": 0.1, "weight_decay": 0.05}, {"lr": 0.02, "weight_decay": 0.0}),
                                   lr=0.5, momentum=0.9),
    # Groups that set only their lr take every other value from the optimizer's defaults: AdamW's weight
    # decay 1e-2 and RMSprop's alpha 0.99 (the C++ test builds them from AdamWOptions / RMSpropOptions).
    "adamw_defaults": lambda: torch.optim.AdamW(groups({}, {"lr": 0.001}), lr=0.01),
    "rmsprop_defaults": lambda: torch.optim.RMSprop(groups({}, {"lr": 0.003}), lr=0.01),
}

for name, make in configs.items():
    with torch.no_grad():
        for k, p in model.named_parameters():
            p.copy_(init[k])
    opt, traj = make(), []
    for _ in range(10):
        opt.zero_grad()
        logits = model(x)
        torch.nn.functional.cross_entropy(logits.reshape(-1, 3), y.reshape(-1)).backward()
        opt.step()
        traj.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    out[name] = torch.stack(traj)

path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "param_groups_golden.safetensors"
from safetensors.torch import save_file  # noqa: E402

save_file({k: v.clone().contiguous() for k, v in out.items()}, str(path), metadata={"torch": torch.__version__})
print(f"wrote {path} ({len(out)} tensors)")
