#!/usr/bin/python3
"""Golden values for tests/test_losses.cpp and tests/test_norms.cpp, from PyTorch (Debian's python3-torch 1.13):

    /usr/bin/python3 tools/make_loss_golden.py   # writes tests/data/loss_golden.safetensors, norm_golden.safetensors

For each case NAME the files hold its inputs (NAME.x, ...), the output NAME.y, a random cotangent NAME.r and
the gradients of sum(y * r) with respect to each floating input (NAME.gx, ...); constants without gradient
(targets, weights, lengths) as NAME.KEY. Every case is stored twice: NAME computed in f64 and NAME_f32 computed
by PyTorch in f32. The C++ tests run the same op with the parameters written beside each case here and there.
"""
import math
import pathlib
import warnings

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from golden_common import store_case

warnings.filterwarnings("ignore", message="reduction: 'mean' divides")
torch.manual_seed(0)
files = {"loss": {}, "norm": {}}
out = files["loss"]


def case(name, fn, dtype, consts, **inputs):
    leaves = {k: v.clone().to(dtype).requires_grad_(True) for k, v in inputs.items()}
    c = {k: (v.clone().to(dtype) if v.is_floating_point() else v.clone()) for k, v in consts.items()}
    for k, v in c.items():
        out[f"{name}.{k}"] = v.clone().contiguous()  # before the op (which may update it: running statistics)
    y = fn(**leaves, **c)
    r = torch.randn_like(y)
    (y * r).sum().backward()
    store_case(out, name, leaves, y, r)
    return c


def case_both(name, fn, consts=None, after=None, **inputs):
    """NAME in f64 and NAME_f32 in f32. `after(c, suffix)` stores what the op changed (running statistics)."""
    for suffix, dtype in (("", torch.float64), ("_f32", torch.float32)):
        c = case(name + suffix, fn, dtype, consts or {}, **inputs)
        if after:
            after(c, name + suffix)


def pm1(n):  # targets of ±1
    return torch.randint(0, 2, (n,)).double() * 2 - 1


# --- losses ---------------------------------------------------------------------------------------------
x, t = torch.randn(4, 5) * 2, torch.randn(4, 5) * 2
case_both("smooth_l1", lambda x, t: F.smooth_l1_loss(x, t), x=x, t=t)
case_both("smooth_l1_beta_none", lambda x, t: F.smooth_l1_loss(x, t, beta=0.5, reduction="none"), x=x, t=t)
case_both("smooth_l1_beta0_sum", lambda x, t: F.smooth_l1_loss(x, t, beta=0.0, reduction="sum"), x=x, t=t)
case_both("huber", lambda x, t: F.huber_loss(x, t), x=x, t=t)
case_both("huber_delta_sum", lambda x, t: F.huber_loss(x, t, delta=0.7, reduction="sum"), x=x, t=t)
case_both("huber_delta_none", lambda x, t: F.huber_loss(x, t, delta=2.5, reduction="none"), x=x, t=t)

logp = torch.log_softmax(torch.randn(3, 5), 1)
p = torch.softmax(torch.randn(3, 5), 1)
p0 = p.clone()
p0[0, 1] = 0.0
p0[2, 4] = 0.0
case_both("kl_batchmean", lambda x, t: F.kl_div(x, t, reduction="batchmean"), x=logp, t=p)
case_both("kl_mean", lambda x, t: F.kl_div(x, t, reduction="mean"), x=logp, t=p)
case_both("kl_sum_zeros", lambda x, t: F.kl_div(x, t, reduction="sum"), consts={"t": p0}, x=logp)
case_both("kl_none_log_target", lambda x, t: F.kl_div(x, t, reduction="none", log_target=True), x=logp,
          t=torch.log_softmax(torch.randn(3, 5), 1))
case_both("kl_batchmean_log_target", lambda x, t: F.kl_div(x, t, reduction="batchmean", log_target=True), x=logp,
          t=torch.log_softmax(torch.randn(3, 5), 1))

case_both("cos_sim", lambda a, b: F.cosine_similarity(a, b), a=torch.randn(4, 5), b=torch.randn(4, 5))
case_both("cos_sim_dim0_bcast", lambda a, b: F.cosine_similarity(a, b, dim=0, eps=1e-6), a=torch.randn(5, 3),
          b=torch.randn(5, 1))
case_both("cos_sim_tiny", lambda a, b: F.cosine_similarity(a, b, dim=-1, eps=1e-3), a=torch.randn(3, 4) * 1e-4,
          b=torch.randn(3, 4))
case_both("pdist", lambda a, b: F.pairwise_distance(a, b), a=torch.randn(4, 5), b=torch.randn(4, 5))
case_both("pdist_p1_keepdim", lambda a, b: F.pairwise_distance(a, b, p=1.0, eps=1e-3, keepdim=True),
          a=torch.randn(4, 5), b=torch.randn(4, 5))
case_both("pdist_p3", lambda a, b: F.pairwise_distance(a, b, p=3.0), a=torch.randn(2, 3, 4), b=torch.randn(3, 4))

case_both("cos_emb", lambda a, b, t: F.cosine_embedding_loss(a, b, t, margin=0.2), consts={"t": pm1(6)},
          a=torch.randn(6, 4), b=torch.randn(6, 4))
case_both("cos_emb_none", lambda a, b, t: F.cosine_embedding_loss(a, b, t, margin=-0.3, reduction="none"),
          consts={"t": pm1(6)}, a=torch.randn(6, 4), b=torch.randn(6, 4))
case_both("cos_emb_1d", lambda a, b, t: F.cosine_embedding_loss(a, b, t, reduction="sum"),
          consts={"t": torch.tensor(-1.0)}, a=torch.randn(5), b=torch.randn(5))
case_both("margin_rank", lambda a, b, t: F.margin_ranking_loss(a, b, t, margin=0.5), consts={"t": pm1(8)},
          a=torch.randn(8), b=torch.randn(8))
case_both("margin_rank_none", lambda a, b, t: F.margin_ranking_loss(a, b, t, reduction="none"), consts={"t": pm1(8)},
          a=torch.randn(8), b=torch.randn(8))
case_both("triplet", lambda a, p, n: F.triplet_margin_loss(a, p, n), a=torch.randn(5, 4), p=torch.randn(5, 4),
          n=torch.randn(5, 4))
case_both("triplet_p1_swap_sum", lambda a, p, n: F.triplet_margin_loss(a, p, n, margin=2.0, p=1, swap=True,
                                                                      reduction="sum"),
          a=torch.randn(5, 4), p=torch.randn(5, 4), n=torch.randn(5, 4))
case_both("triplet_none_1d", lambda a, p, n: F.triplet_margin_loss(a, p, n, margin=3.0, eps=1e-3, reduction="none"),
          a=torch.randn(4), p=torch.randn(4), n=torch.randn(4))

counts = torch.tensor([[0.0, 1.0, 2.0, 5.0], [3.0, 0.0, 1.0, 7.0], [1.0, 4.0, 0.0, 2.0]])
case_both("poisson", lambda x, t: F.poisson_nll_loss(x, t), x=torch.randn(3, 4), t=counts)
# full: Stirling's term is discontinuous at target 1 (and PyTorch's target gradient NaN at 0): targets constant
case_both("poisson_rate_full_sum", lambda x, t: F.poisson_nll_loss(x, t, log_input=False, full=True, reduction="sum"),
          consts={"t": counts}, x=torch.rand(3, 4) * 3 + 0.1)
case_both("poisson_full_none", lambda x, t: F.poisson_nll_loss(x, t, full=True, eps=1e-4, reduction="none"),
          consts={"t": counts}, x=torch.randn(3, 4))

mu, y = torch.randn(4, 3), torch.randn(4, 3)
case_both("gauss", lambda x, t, v: F.gaussian_nll_loss(x, t, v), x=mu, t=y, v=torch.rand(4, 3) + 0.1)
case_both("gauss_short_full", lambda x, t, v: F.gaussian_nll_loss(x, t, v, full=True, reduction="sum"), x=mu, t=y,
          v=torch.rand(4) + 0.1)
case_both("gauss_last1_none", lambda x, t, v: F.gaussian_nll_loss(x, t, v, reduction="none"), x=mu, t=y,
          v=torch.rand(4, 1) + 0.1)
case_both("gauss_clamped", lambda x, t, v: F.gaussian_nll_loss(x, t, v, eps=1e-3),
          x=mu, t=y, v=torch.tensor([[1e-5, 0.5, 2.0], [0.7, 1e-4, 0.3], [0.2, 0.9, 1e-6], [1.5, 0.4, 0.6]]))

prob, tp = torch.sigmoid(torch.randn(4, 3) * 2), torch.rand(4, 3)
case_both("bce", lambda x, t: F.binary_cross_entropy(x, t), x=prob, t=tp)
case_both("bce_weight_sum", lambda x, t, w: F.binary_cross_entropy(x, t, weight=w, reduction="sum"),
          consts={"w": torch.rand(3) + 0.5}, x=prob, t=tp)
case_both("bce_none", lambda x, t: F.binary_cross_entropy(x, t, reduction="none"), x=prob, t=tp)
# probabilities 0 and 1: logs clamped at -100 (gradients by PyTorch's formula; no gradcheck at the boundary)
case_both("bce_edges", lambda x, t: F.binary_cross_entropy(x, t, reduction="none"),
          consts={"t": torch.tensor([0.0, 1.0, 0.3, 1.0, 0.0, 0.6])}, x=torch.tensor([0.0, 1.0, 0.5, 0.0, 1.0, 0.2]))

ml_t = torch.randint(0, 2, (4, 5)).double()
case_both("mlsm", lambda x, t: F.multilabel_soft_margin_loss(x, t), consts={"t": ml_t}, x=torch.randn(4, 5) * 3)
case_both("mlsm_weight_none", lambda x, t, w: F.multilabel_soft_margin_loss(x, t, weight=w, reduction="none"),
          consts={"w": torch.rand(5) + 0.5}, x=torch.randn(4, 5), t=torch.rand(4, 5))
case_both("mlsm_1d_sum", lambda x, t: F.multilabel_soft_margin_loss(x, t, reduction="sum"),
          consts={"t": torch.tensor([1.0, 0.0, 1.0])}, x=torch.randn(3))

# ctc_loss. PyTorch's gradient for log_probs assumes they are a log_softmax (see nn/functional_ctc.cpp), so the
# cases with log_probs as the leaf compare that gradient, and the _logits cases (logits -> log_softmax -> ctc)
# are gradchecked.
T, N, C = 7, 3, 5
lp = torch.log_softmax(torch.randn(T, N, C) * 2, 2)
padded = torch.tensor([[1, 2, 2, 0], [3, 1, 0, 0], [4, 4, 3, 1]])  # lengths 3, 2, 4 (repeats need blanks)
ilen, tlen = torch.tensor([7, 5, 7]), torch.tensor([3, 2, 4])
case_both("ctc_mean", lambda x, tg, il, tl: F.ctc_loss(x, tg, il, tl, blank=0),
          consts={"tg": padded, "il": ilen, "tl": tlen}, x=lp)
case_both("ctc_logits_sum", lambda x, tg, il, tl: F.ctc_loss(torch.log_softmax(x, 2), tg, il, tl, reduction="sum"),
          consts={"tg": padded, "il": ilen, "tl": tlen}, x=torch.randn(T, N, C))
concat = torch.tensor([0, 2, 1, 3, 3, 0, 2])  # lengths 2, 0, 5; blank = 4
case_both("ctc_concat_blank_last_none", lambda x, tg, il, tl: F.ctc_loss(x, tg, il, tl, blank=4, reduction="none"),
          consts={"tg": concat, "il": torch.tensor([4, 3, 7]), "tl": torch.tensor([2, 0, 5])}, x=lp)
# sample 1 cannot align (2 labels need 2 steps, it has 1): infinite, zeroed with zero_infinity
case_both("ctc_zero_infinity", lambda x, tg, il, tl: F.ctc_loss(x, tg, il, tl, reduction="none", zero_infinity=True),
          consts={"tg": padded, "il": torch.tensor([7, 1, 6]), "tl": tlen}, x=lp)
case_both("ctc_zero_infinity_mean", lambda x, tg, il, tl: F.ctc_loss(x, tg, il, tl, zero_infinity=True),
          consts={"tg": padded, "il": torch.tensor([7, 1, 6]), "tl": tlen}, x=lp)
case_both("ctc_unbatched_logits", lambda x, tg, il, tl: F.ctc_loss(torch.log_softmax(x, 1), tg, il, tl),
          consts={"tg": torch.tensor([2, 3, 3]), "il": torch.tensor(6), "tl": torch.tensor(3)}, x=torch.randn(6, 4))

# --- norms ----------------------------------------------------------------------------------------------
out = files["norm"]
case_both("gn", lambda x, w, b: F.group_norm(x, 3, w, b), x=torch.randn(2, 6, 3, 2), w=torch.randn(6), b=torch.randn(6))
case_both("gn_one_group", lambda x: F.group_norm(x, 1, eps=1e-3), x=torch.randn(3, 4, 5))
case_both("gn_weight_only", lambda x, w: F.group_norm(x, 2, w), x=torch.randn(2, 4, 5), w=torch.randn(4))
# (bias without weight: PyTorch 1.13's group_norm backward fails on it, so the C++ test checks it by composition)
case_both("gn_per_channel", lambda x, w, b: F.group_norm(x, 4, w, b), x=torch.randn(2, 4, 3, 3), w=torch.randn(4),
          b=torch.randn(4))
case_both("gn_2d", lambda x: F.group_norm(x, 2), x=torch.randn(5, 6))


def running(c, name):
    out[f"{name}.rm_after"] = c["rm"].clone()
    out[f"{name}.rv_after"] = c["rv"].clone()


rm0, rv0 = torch.randn(3), torch.rand(3) + 0.5
case_both("in1d", lambda x, w, b: F.instance_norm(x, weight=w, bias=b), x=torch.randn(2, 3, 5), w=torch.randn(3),
          b=torch.randn(3))
case_both("in2d_running", lambda x, rm, rv: F.instance_norm(x, rm, rv, momentum=0.2, eps=1e-3),
          consts={"rm": rm0, "rv": rv0}, after=running, x=torch.randn(4, 3, 3, 2))
case_both("in_eval", lambda x, w, b, rm, rv: F.instance_norm(x, rm, rv, w, b, use_input_stats=False),
          consts={"rm": rm0, "rv": rv0}, x=torch.randn(2, 3, 4), w=torch.randn(3), b=torch.randn(3))

case_both("lrn", lambda x: F.local_response_norm(x, 3), x=torch.randn(2, 7, 3) * 3)
case_both("lrn_4d", lambda x: F.local_response_norm(x, 4, alpha=0.1, beta=0.6, k=2.0), x=torch.randn(2, 6, 3, 2) * 2)
case_both("lrn_size1", lambda x: F.local_response_norm(x, 1, alpha=0.5), x=torch.randn(2, 3, 4))
case_both("lrn_wide", lambda x: F.local_response_norm(x, 9, alpha=0.3, beta=1.2, k=0.5), x=torch.randn(2, 4, 2, 2, 2))

case_both("normalize", lambda x: F.normalize(x), x=torch.randn(3, 4))
case_both("normalize_p1_dim0", lambda x: F.normalize(x, p=1.0, dim=0), x=torch.randn(3, 4))
case_both("normalize_inf", lambda x: F.normalize(x, p=math.inf, dim=-1), x=torch.randn(2, 3, 4))
case_both("normalize_p3_eps", lambda x: F.normalize(x, p=3.0, dim=1, eps=0.5), x=torch.randn(3, 4) * 0.3)

data = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data"
for stem, tensors in files.items():
    save_file(tensors, str(data / f"{stem}_golden.safetensors"))
    print(f"{stem}_golden.safetensors: {len(tensors)} tensors")
