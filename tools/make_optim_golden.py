#!/usr/bin/python3
"""Golden optimizer trajectories for tests/test_optim.cpp, from PyTorch (Debian's python3-torch):

    /usr/bin/python3 tools/make_optim_golden.py     # writes tests/data/optim_golden.safetensors

For every configuration CFG (the hyperparameters are repeated in the C++ test):
  CFG.quad64 / CFG.quad32  [20, 5]  x after each of 20 steps on 0.5·Σ c·x² + Σ d·x (f64 and f32)
  CFG.mlp                  [20, P]  all parameters of a 4-8-3 tanh MLP (f64, cross entropy on a fixed
                                    batch) after each step, flattened in named_parameters() order
and torch.optim's constructor defaults, read from the signatures (the metadata names the torch version):
  defaults.OPT.FIELD       []       f64 (bools as 0/1; betas as beta1 and beta2). Left out: SGD's lr,
                                    which torch 1.13 requires, and foreach/capturable/differentiable/fused,
                                    implementation switches Ember does not have.
"""
import inspect
import pathlib

import torch
from torch.optim.optimizer import required

torch.manual_seed(0)
out = {}
c = torch.tensor([1.0, 2.0, 0.5, 3.0, 0.1], dtype=torch.float64)
d = torch.tensor([0.3, -0.2, 0.1, 0.0, -1.0], dtype=torch.float64)
x0 = torch.tensor([1.0, -2.0, 3.0, 0.5, -0.25], dtype=torch.float64)
out.update({"quad.c": c, "quad.d": d, "quad.x0": x0})

mlp = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)).double()
init = {k: v.detach().clone() for k, v in mlp.named_parameters()}
for k, v in init.items():
    out[f"mlp.init.{k}"] = v
bx, by = torch.randn(6, 4, dtype=torch.float64), torch.tensor([0, 2, 1, 1, 0, 2])
out["mlp.x"], out["mlp.y"] = bx, by

configs = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1),
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01),
    "sgd_nesterov": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
    "adam": lambda p: torch.optim.Adam(p, lr=0.01),
    "adam_amsgrad": lambda p: torch.optim.Adam(p, lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1, amsgrad=True),
    "adamw": lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1),
    "rmsprop": lambda p: torch.optim.RMSprop(p, lr=0.01),
    "rmsprop_centered": lambda p: torch.optim.RMSprop(p, lr=0.01, alpha=0.9, momentum=0.5, centered=True, weight_decay=0.01),
}

for name, make in configs.items():
    for dtype, key in [(torch.float64, "quad64"), (torch.float32, "quad32")]:
        x = x0.clone().to(dtype).requires_grad_()
        opt, traj = make([x]), []
        for _ in range(20):
            opt.zero_grad()
            (0.5 * (c.to(dtype) * x * x).sum() + (d.to(dtype) * x).sum()).backward()
            opt.step()
            traj.append(x.detach().clone())
        out[f"{name}.{key}"] = torch.stack(traj)
    with torch.no_grad():
        for k, p in mlp.named_parameters():
            p.copy_(init[k])
    opt, traj = make(list(mlp.parameters())), []
    for _ in range(20):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(mlp(bx), by).backward()
        opt.step()
        traj.append(torch.cat([p.detach().flatten() for p in mlp.parameters()]))
    out[f"{name}.mlp"] = torch.stack(traj)

NOT_OPTIONS = {"self", "params", "foreach", "capturable", "differentiable", "fused"}
for cls in [torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW, torch.optim.RMSprop]:
    for key, param in inspect.signature(cls.__init__).parameters.items():
        if key in NOT_OPTIONS or param.default is required:
            continue
        values = {"beta1": param.default[0], "beta2": param.default[1]} if key == "betas" else {key: param.default}
        for field, value in values.items():
            out[f"defaults.{cls.__name__.lower()}.{field}"] = torch.tensor(float(value), dtype=torch.float64)

path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "optim_golden.safetensors"
from safetensors.torch import save_file  # noqa: E402

save_file({k: v.clone().contiguous() for k, v in out.items()}, str(path), metadata={"torch": torch.__version__})
print(f"wrote {path} ({len(out)} tensors)")
