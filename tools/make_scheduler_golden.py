#!/usr/bin/python3
"""Golden learning-rate sequences for tests/test_scheduler.cpp, from PyTorch (Debian's python3-torch):

    /usr/bin/python3 tools/make_scheduler_golden.py     # writes tests/data/scheduler_golden.safetensors

Every configuration CFG runs on an optimizer with two parameter groups (lr 0.1 and 0.01; see OPTIMIZERS,
repeated in the C++ test) and stores
  CFG.lr        [S+1, 2]  each group's lr after construction (row 0) and after each of S steps (f64)
  CFG.momentum  [S+1, 2]  the same for SGD's momentum / Adam's beta1 (OneCycleLR configurations only)
plateau.metrics [S] is the metric sequence every ReduceLROnPlateau configuration is stepped with.
LinearWarmup(w, f) + X is PyTorch's SequentialLR([LinearLR(f, 1.0, total_iters=w), X], milestones=[w]).
"""
import math
import pathlib
import warnings

import torch
from torch.optim import lr_scheduler as S

warnings.filterwarnings("ignore")  # "lr_scheduler.step() before optimizer.step()": no gradients here
STEPS = 35

OPTIMIZERS = {
    "sgd": lambda groups: torch.optim.SGD(groups, lr=0.1, momentum=0.9),
    "adam": lambda groups: torch.optim.Adam(groups, lr=0.1),
    "adamw": lambda groups: torch.optim.AdamW(groups, lr=0.1),
}


def warmup(opt, steps, factor, after):
    return S.SequentialLR(opt, [S.LinearLR(opt, factor, 1.0, total_iters=steps), after(opt)], milestones=[steps])


CONFIGS = {  # name: (optimizer, scheduler factory, steps)
    "step_a": ("sgd", lambda o: S.StepLR(o, step_size=3, gamma=0.5), STEPS),
    "step_b": ("sgd", lambda o: S.StepLR(o, step_size=7), STEPS),
    "step_c": ("adam", lambda o: S.StepLR(o, step_size=1, gamma=1.05), STEPS),
    "multistep_a": ("sgd", lambda o: S.MultiStepLR(o, milestones=[5, 10, 20], gamma=0.5), STEPS),
    "multistep_b": ("sgd", lambda o: S.MultiStepLR(o, milestones=[3, 3, 12]), STEPS),
    "exp_a": ("sgd", lambda o: S.ExponentialLR(o, gamma=0.9), STEPS),
    "exp_b": ("adam", lambda o: S.ExponentialLR(o, gamma=0.99), STEPS),
    "cos_a": ("sgd", lambda o: S.CosineAnnealingLR(o, T_max=10), STEPS),  # past T_max: rises again
    "cos_b": ("sgd", lambda o: S.CosineAnnealingLR(o, T_max=25, eta_min=1e-3), STEPS),
    "cos_c": ("adam", lambda o: S.CosineAnnealingLR(o, T_max=3, eta_min=5e-3), STEPS),
    "cos_d": ("sgd", lambda o: S.CosineAnnealingLR(o, T_max=1), STEPS),
    "onecycle_cos_sgd": ("sgd", lambda o: S.OneCycleLR(o, max_lr=[0.5, 0.05], total_steps=STEPS), STEPS),
    "onecycle_linear_adam": ("adam", lambda o: S.OneCycleLR(
        o, max_lr=0.1, total_steps=40, pct_start=0.25, anneal_strategy="linear", div_factor=10.,
        final_div_factor=100.), STEPS),
    "onecycle_three_adamw": ("adamw", lambda o: S.OneCycleLR(
        o, max_lr=[0.2, 0.02], total_steps=36, three_phase=True, base_momentum=0.8, max_momentum=0.9), STEPS),
    "onecycle_nomom": ("sgd", lambda o: S.OneCycleLR(o, max_lr=0.3, total_steps=STEPS, pct_start=0.4,
                                                     cycle_momentum=False), STEPS),
    "onecycle_short": ("sgd", lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=2), 2),
    "warmup_cos": ("sgd", lambda o: warmup(o, 5, 0.1, lambda o: S.CosineAnnealingLR(o, T_max=30, eta_min=1e-4)), STEPS),
    "warmup_step": ("adam", lambda o: warmup(o, 3, 0.25, lambda o: S.StepLR(o, step_size=4, gamma=0.5)), STEPS),
    "warmup_multistep": ("sgd", lambda o: warmup(o, 4, 0.5, lambda o: S.MultiStepLR(o, [6, 9], 0.3)), STEPS),
    "warmup_exp": ("sgd", lambda o: warmup(o, 1, 0.3, lambda o: S.ExponentialLR(o, gamma=0.95)), STEPS),
    "warmup_onecycle": ("adam", lambda o: warmup(o, 4, 0.5, lambda o: S.OneCycleLR(o, max_lr=0.3, total_steps=31)), STEPS),
    "plateau_min_rel": ("sgd", lambda o: S.ReduceLROnPlateau(o, factor=0.5, patience=2, threshold=1e-2), STEPS),
    "plateau_max_abs": ("sgd", lambda o: S.ReduceLROnPlateau(
        o, mode="max", factor=0.3, patience=1, threshold=0.05, threshold_mode="abs", cooldown=2,
        min_lr=[0.01, 0.001]), STEPS),
    "plateau_default": ("adam", lambda o: S.ReduceLROnPlateau(o, patience=3, min_lr=2e-4), STEPS),
    "plateau_max_rel": ("sgd", lambda o: S.ReduceLROnPlateau(
        o, mode="max", factor=0.7, patience=0, threshold=0.02, cooldown=1, eps=1e-3), STEPS),
}

# A loss-like curve: falls, flattens with wiggles, has a spike and a NaN-free plateau.
metrics = [2.0 * math.exp(-0.3 * i) + 0.05 * math.sin(1.7 * i) + (0.4 if i == 17 else 0.0) for i in range(STEPS)]


def momentum(group):
    return group["betas"][0] if "betas" in group else group["momentum"]


out = {"plateau.metrics": torch.tensor(metrics, dtype=torch.float64)}
for name, (opt_name, make, steps) in CONFIGS.items():
    p1, p2 = torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)
    opt = OPTIMIZERS[opt_name]([{"params": [p1]}, {"params": [p2], "lr": 0.01}])
    sched = make(opt)
    lrs, moms = [[g["lr"] for g in opt.param_groups]], [[momentum(g) for g in opt.param_groups]]
    for i in range(steps):
        opt.step()
        sched.step(metrics[i]) if isinstance(sched, S.ReduceLROnPlateau) else sched.step()
        lrs.append([g["lr"] for g in opt.param_groups])
        moms.append([momentum(g) for g in opt.param_groups])
    out[f"{name}.lr"] = torch.tensor(lrs, dtype=torch.float64)
    if name.startswith("onecycle") or name == "warmup_onecycle":
        out[f"{name}.momentum"] = torch.tensor(moms, dtype=torch.float64)

path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "scheduler_golden.safetensors"
from safetensors.torch import save_file  # noqa: E402

save_file(out, str(path), metadata={"torch": torch.__version__})
print(f"wrote {path} ({len(out)} tensors)")
