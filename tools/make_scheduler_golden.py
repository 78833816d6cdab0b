#!/usr/bin/python3
"""Golden learning-rate sequences for tests/test_scheduler.cpp, from PyTorch (Debian's python3-torch):

    /usr/bin/python3 tools/make_scheduler_golden.py     # writes tests/data/scheduler_golden.safetensors

Every configuration CFG runs on an optimizer with two parameter groups (lr 0.1 and 0.01; see OPTIMIZERS,
repeated in the C++ test) and stores
  CFG.lr        [S+1, 2]  each group's lr after construction (row 0) and after each of S steps (f64)
  CFG.momentum  [S+1, 2]  the same for SGD's/RMSprop's momentum or Adam's beta1 (configurations that
                          cycle the momentum: OneCycleLR, CyclicLR)
plateau.metrics [S] is the metric sequence every ReduceLROnPlateau configuration is stepped with;
cawr.epochs [S] the epochs the CosineAnnealingWarmRestarts "cawr_epochs*" configurations are stepped with
(step(epoch); NaN: a plain step()).
LinearWarmup(w, f) + X is PyTorch's SequentialLR([LinearLR(f, 1.0, total_iters=w), X], milestones=[w]).
The lambdas of LambdaLR/MultiplicativeLR are repeated in the C++ test.
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
    "rmsprop": lambda groups: torch.optim.RMSprop(groups, lr=0.1, momentum=0.5),
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
    # issue 30: the rest of torch.optim.lr_scheduler
    "lambda_a": ("sgd", lambda o: S.LambdaLR(o, lambda e: 0.95 ** e), STEPS),
    "lambda_b": ("adam", lambda o: S.LambdaLR(o, [lambda e: 1.0 / (1 + e), lambda e: e // 3 * 0.5 + 1]), STEPS),
    "mult_a": ("sgd", lambda o: S.MultiplicativeLR(o, lambda e: 0.9), STEPS),
    "mult_b": ("adam", lambda o: S.MultiplicativeLR(o, [lambda e: 0.97, lambda e: 1.0 + 0.01 * e]), STEPS),
    "constant_a": ("sgd", lambda o: S.ConstantLR(o), STEPS),
    "constant_b": ("adam", lambda o: S.ConstantLR(o, factor=0.5, total_iters=8), STEPS),
    "constant_c": ("sgd", lambda o: S.ConstantLR(o, factor=0.7, total_iters=0), STEPS),
    "linear_a": ("sgd", lambda o: S.LinearLR(o), STEPS),
    "linear_b": ("adam", lambda o: S.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=12), STEPS),
    "linear_c": ("sgd", lambda o: S.LinearLR(o, start_factor=1.0, end_factor=0.0, total_iters=20), STEPS),
    "poly_a": ("sgd", lambda o: S.PolynomialLR(o), STEPS),
    "poly_b": ("adam", lambda o: S.PolynomialLR(o, total_iters=20, power=2.0), STEPS),
    "poly_c": ("sgd", lambda o: S.PolynomialLR(o, total_iters=30, power=0.5), STEPS),
    "cawr_a": ("sgd", lambda o: S.CosineAnnealingWarmRestarts(o, T_0=10), STEPS),
    "cawr_b": ("adam", lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=1e-3), STEPS),
    "cawr_epochs_a": ("sgd", lambda o: S.CosineAnnealingWarmRestarts(o, T_0=4, T_mult=2, eta_min=1e-4), STEPS),
    "cawr_epochs_b": ("sgd", lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, eta_min=2e-3), STEPS),
    "cyclic_tri": ("sgd", lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4), STEPS),
    "cyclic_tri2": ("sgd", lambda o: S.CyclicLR(o, base_lr=[0.01, 0.001], max_lr=[0.1, 0.01], step_size_up=3,
                                                step_size_down=5, mode="triangular2"), STEPS),
    "cyclic_exp": ("adam", lambda o: S.CyclicLR(o, base_lr=0.001, max_lr=0.05, step_size_up=2.5, mode="exp_range",
                                                gamma=0.97, cycle_momentum=False), STEPS),
    "cyclic_rms": ("rmsprop", lambda o: S.CyclicLR(o, base_lr=0.002, max_lr=0.02, step_size_up=6, step_size_down=2,
                                                   base_momentum=0.5, max_momentum=[0.7, 0.6]), STEPS),
    "cyclic_fn_cycle": ("sgd", lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=2, step_size_down=3,
                                                    scale_fn=lambda x: 1.0 / x), STEPS),
    "cyclic_fn_iter": ("sgd", lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5, scale_fn=lambda x: 0.99 ** x,
                                                   scale_mode="iterations", cycle_momentum=False), STEPS),
    "seq_const_exp": ("sgd", lambda o: S.SequentialLR(o, [S.ConstantLR(o, 0.5, 3), S.ExponentialLR(o, 0.9)], [3]), STEPS),
    "seq_linear_cos_step": ("adam", lambda o: S.SequentialLR(
        o, [S.LinearLR(o, 0.1, 1.0, 4), S.CosineAnnealingLR(o, 10), S.StepLR(o, 3, 0.5)], [4, 14]), STEPS),
    "seq_lambda_poly": ("sgd", lambda o: S.SequentialLR(
        o, [S.LambdaLR(o, lambda e: 1.0 + e), S.PolynomialLR(o, 10, 2.0)], [5]), STEPS),
    "seq_mult_cawr": ("sgd", lambda o: S.SequentialLR(
        o, [S.MultiplicativeLR(o, lambda e: 0.8), S.CosineAnnealingWarmRestarts(o, 4, 2)], [6]), STEPS),
    "seq_cyclic_first": ("sgd", lambda o: S.SequentialLR(
        o, [S.CyclicLR(o, 0.01, 0.1, step_size_up=3), S.ExponentialLR(o, 0.9)], [10]), STEPS),
    "seq_cyclic_second": ("adam", lambda o: S.SequentialLR(
        o, [S.LinearLR(o, 0.5, 1.0, 3), S.CyclicLR(o, 0.02, 0.2, step_size_up=2, cycle_momentum=False)], [5]), STEPS),
    "seq_const_onecycle": ("sgd", lambda o: S.SequentialLR(
        o, [S.ConstantLR(o, 0.1, 2), S.OneCycleLR(o, max_lr=0.5, total_steps=40)], [2]), STEPS),
    "chain_const_exp": ("sgd", lambda o: S.ChainedScheduler([S.ConstantLR(o, 0.1, 2), S.ExponentialLR(o, 0.9)]), STEPS),
    "chain_three": ("adam", lambda o: S.ChainedScheduler(
        [S.LinearLR(o, 0.2, 1.0, 6), S.StepLR(o, 4, 0.5), S.MultiplicativeLR(o, lambda e: 0.99)]), STEPS),
    "chain_cawr_const": ("sgd", lambda o: S.ChainedScheduler(
        [S.CosineAnnealingWarmRestarts(o, 5), S.ConstantLR(o, 0.5, 7)]), STEPS),
}

# A loss-like curve: falls, flattens with wiggles, has a spike and a NaN-free plateau.
metrics = [2.0 * math.exp(-0.3 * i) + 0.05 * math.sin(1.7 * i) + (0.4 if i == 17 else 0.0) for i in range(STEPS)]
# Fractional epochs (a per-batch schedule with 5 batches an epoch: 0.2, 0.4, ...), then plain steps, a
# jump back and forward, and whole epochs given as numbers.
cawr_epochs = [0.2 * (i + 1) for i in range(20)] + [math.nan] * 4 + [2.5, 30.0, math.nan, math.nan, 7.0, 13.0, 14.6,
                                                                     math.nan, 50.25, 0.0, math.nan]
assert len(cawr_epochs) == STEPS


def momentum(group):
    return group["betas"][0] if "betas" in group else group["momentum"]


def sched_cycles_momentum(sched):
    inner = getattr(sched, "_schedulers", [sched])
    return any(getattr(s, "cycle_momentum", False) for s in inner)


def advance(name, sched, i):
    if isinstance(sched, S.ReduceLROnPlateau):
        sched.step(metrics[i])
    elif name.startswith("cawr_epochs") and not math.isnan(cawr_epochs[i]):
        sched.step(cawr_epochs[i])
    else:
        sched.step()


out = {"plateau.metrics": torch.tensor(metrics, dtype=torch.float64),
       "cawr.epochs": torch.tensor(cawr_epochs, dtype=torch.float64)}
for name, (opt_name, make, steps) in CONFIGS.items():
    p1, p2 = torch.zeros(2, requires_grad=True), torch.zeros(3, requires_grad=True)
    opt = OPTIMIZERS[opt_name]([{"params": [p1]}, {"params": [p2], "lr": 0.01}])
    sched = make(opt)
    lrs, moms = [[g["lr"] for g in opt.param_groups]], [[momentum(g) for g in opt.param_groups]]
    for i in range(steps):
        opt.step()
        advance(name, sched, i)
        lrs.append([g["lr"] for g in opt.param_groups])
        moms.append([momentum(g) for g in opt.param_groups])
    out[f"{name}.lr"] = torch.tensor(lrs, dtype=torch.float64)
    if "onecycle" in name or ("cyclic" in name and sched_cycles_momentum(sched)):
        out[f"{name}.momentum"] = torch.tensor(moms, dtype=torch.float64)

path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "scheduler_golden.safetensors"
from safetensors.torch import save_file  # noqa: E402

save_file(out, str(path), metadata={"torch": torch.__version__})
print(f"wrote {path} ({len(out)} tensors)")
