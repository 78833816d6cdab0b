"""What the tools/make_*_golden.py scripts share: storing one case's tensors under its key."""


def store_case(out, prefix, leaves, y, r):
    """out[PREFIX.K] = each leaf K (as it is now), out[PREFIX.gK] = its gradient where it has one, and
    out[PREFIX.y], out[PREFIX.r]: the output and the cotangent of sum(y * r)."""
    for k, v in leaves.items():
        out[f"{prefix}.{k}"] = v.detach().contiguous()
        if v.grad is not None:
            out[f"{prefix}.g{k}"] = v.grad.contiguous()
    out[f"{prefix}.y"] = y.detach().contiguous()
    out[f"{prefix}.r"] = r.contiguous()
