#!/usr/bin/python3
"""Golden values for tests/test_rnn.cpp, from PyTorch (Debian's python3-torch, 1.13):

    /usr/bin/python3 tools/make_rnn_golden.py     # writes tests/data/rnn_golden.safetensors

For each case NAME (in f32 and f64: NAME.f32.*, NAME.f64.*) the file holds the module's parameters under
their PyTorch state_dict keys (NAME.f64.param.weight_ih_l0, ...), the input x, the initial states h0/c0
(when the case passes them), the outputs (out, h_n, c_n), random cotangents (r_out, r_h, r_c) and the
gradients of sum(out·r_out) + sum(h_n·r_h) + sum(c_n·r_c) with respect to x, h0, c0 and every parameter
(NAME.f64.grad.x, NAME.f64.grad.param.weight_ih_l0, ...). The metadata "NAME.keys" lists the module's
state_dict keys in PyTorch's order, which the test compares with Ember's.
The C++ test builds the same module from the parameters stated here (sizes, layers, flags).
"""
import pathlib

import torch
from safetensors.torch import save_file

torch.manual_seed(0)
out = {}
meta = {}

I, H, T, B = 3, 4, 5, 2


def put(prefix, name, t):
    out[f"{prefix}.{name}"] = t.detach().contiguous()


def run_case(name, make, x_shape, state, cell):
    """make(): the module; state: whether h0 (and c0) are passed; cell: a single-step Cell module."""
    module64 = make().double()
    x64 = torch.randn(*x_shape, dtype=torch.float64)
    meta[f"{name}.keys"] = ",".join(module64.state_dict().keys())
    lstm = isinstance(module64, (torch.nn.LSTM, torch.nn.LSTMCell))
    if cell:
        h_shape = (x_shape[0], module64.hidden_size) if len(x_shape) == 2 else (module64.hidden_size,)
    else:
        d = 2 if module64.bidirectional else 1
        batch = x_shape[0] if module64.batch_first else x_shape[1]
        h_shape = (module64.num_layers * d, batch, module64.hidden_size) if len(x_shape) == 3 else \
            (module64.num_layers * d, module64.hidden_size)
    h0_64 = torch.randn(*h_shape, dtype=torch.float64) if state else None
    c0_64 = torch.randn(*h_shape, dtype=torch.float64) if state and lstm else None
    for dtype, tag in ((torch.float64, "f64"), (torch.float32, "f32")):
        prefix = f"{name}.{tag}"
        module = make()
        module.load_state_dict(module64.state_dict())
        module = module.to(dtype)
        x = x64.detach().to(dtype).clone().requires_grad_()
        h0 = h0_64.detach().to(dtype).clone().requires_grad_() if h0_64 is not None else None
        c0 = c0_64.detach().to(dtype).clone().requires_grad_() if c0_64 is not None else None
        if cell:
            if lstm:
                res = module(x, (h0, c0)) if state else module(x)
                outs = {"h_n": res[0], "c_n": res[1]}
            else:
                outs = {"h_n": module(x, h0) if state else module(x)}
        else:
            if lstm:
                o, (hn, cn) = module(x, (h0, c0)) if state else module(x)
                outs = {"out": o, "h_n": hn, "c_n": cn}
            else:
                o, hn = module(x, h0) if state else module(x)
                outs = {"out": o, "h_n": hn}
        loss = 0
        for k, v in outs.items():
            r = torch.randn(v.shape, dtype=torch.float64).to(dtype)
            put(prefix, {"out": "r_out", "h_n": "r_h", "c_n": "r_c"}[k], r)
            put(prefix, k, v)
            loss = loss + (v * r).sum()
        loss.backward()
        put(prefix, "x", x)
        put(prefix, "grad.x", x.grad)
        if state:
            put(prefix, "h0", h0)
            put(prefix, "grad.h0", h0.grad)
            if lstm:
                put(prefix, "c0", c0)
                put(prefix, "grad.c0", c0.grad)
        for k, p in module.named_parameters():
            put(prefix, "param." + k, p)
            put(prefix, "grad.param." + k, p.grad)


# Two-layer LSTM and GRU, sequence-first and batch-first, with and without an initial state.
for kind, cls in (("lstm", torch.nn.LSTM), ("gru", torch.nn.GRU)):
    for bf in (False, True):
        for state in (False, True):
            shape = (B, T, I) if bf else (T, B, I)
            run_case(f"{kind}_bf{int(bf)}_s{int(state)}",
                     lambda cls=cls, bf=bf: cls(I, H, num_layers=2, batch_first=bf), shape, state, False)
    # unbatched [T, I] input with a state; bidirectional two layers; one layer without biases
    run_case(f"{kind}_unbatched", lambda cls=cls: cls(I, H, num_layers=2), (T, I), True, False)
    run_case(f"{kind}_bidir", lambda cls=cls: cls(I, H, num_layers=2, bidirectional=True), (T, B, I), True, False)
    run_case(f"{kind}_nobias", lambda cls=cls: cls(I, H, bias=False), (T, B, I), True, False)

# The cells: batched with a state, and unbatched from zeros.
for kind, cls in (("lstmcell", torch.nn.LSTMCell), ("grucell", torch.nn.GRUCell)):
    run_case(f"{kind}", lambda cls=cls: cls(I, H), (3, I), True, True)
    run_case(f"{kind}_unbatched", lambda cls=cls: cls(I, H), (I,), False, True)

path = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "rnn_golden.safetensors"
save_file(out, str(path), metadata=meta)
print(f"wrote {len(out)} tensors to {path} ({path.stat().st_size} bytes)")
