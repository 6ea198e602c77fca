"""Megatron's tensor-parallel MLP and attention on real processes, against dense modules.

Run it under torchrun (gloo on CPU by default; ``--backend nccl`` uses ``cuda:LOCAL_RANK``)::

    torchrun --standalone --nproc-per-node 4 -m scaleout.demos.tensor_parallel

or, from a notebook or a test, the same worker on forked CPU processes::

    from scaleout.dist import run
    from scaleout.demos.tensor_parallel import check_tensor_parallel
    run(check_tensor_parallel, 4)          # one dict of errors and counts per rank

Every rank builds the same dense weights from one seed, keeps its shard (Shoeybi et al.
2019, Sec. 3: first MLP GEMM and the Q, K, V projections by columns, the second GEMM and
the output projection by rows), and runs forward and backward with Megatron's operators f
and g (``megatron/core/tensor_parallel/mappings.py``: ``_CopyToModelParallelRegion``,
``_ReduceFromModelParallelRegion``) written here as ``torch.autograd.Function``s around
``dist.all_reduce``. It then compares, on its own, the output and its weight gradients with
a dense single-process module (``torch.nn.MultiheadAttention`` for attention) and with the
numpy reference of :mod:`scaleout.tensor_parallel`. Everything is float64, so "equal"
means an error below 1e-10. Rank 0 prints one line per check; the exit status is non-zero
on any mismatch.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

from scaleout import tensor_parallel as tp
from scaleout.demos.common import (
    BACKENDS,
    default_device,
    error_lines,
    init_from_env,
    require_positive,
)

TOLERANCE = 1e-10
CALLS: Counter = Counter()  # all-reduces this process ran, by operator and pass


class CopyToTensorParallel(torch.autograd.Function):
    """Megatron's f: identity forward, all-reduce of the input gradient backward."""

    @staticmethod
    def forward(ctx, x):
        """Identity: every rank already holds the whole input."""
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        """dL/dX is the sum of the t branches' gradients: all-reduce it."""
        grad = grad.contiguous().clone()
        dist.all_reduce(grad)
        CALLS["f backward"] += 1
        return grad


class ReduceFromTensorParallel(torch.autograd.Function):
    """Megatron's g: all-reduce of the partial outputs forward, identity backward."""

    @staticmethod
    def forward(ctx, x):
        """Sum the partial outputs of the t ranks."""
        x = x.contiguous().clone()
        dist.all_reduce(x)
        CALLS["g forward"] += 1
        return x

    @staticmethod
    def backward(ctx, grad):
        """Identity: every rank needs the whole dL/dZ."""
        return grad


def weights(hidden: int, seed: int = 0) -> dict:
    """Dense float64 weights shared by every rank: MLP (w1 (h, 4h), b1, w2 (4h, h), b2) and
    attention (wq, wk, wv, wo, each (h, h), no biases)."""
    rng = np.random.default_rng(seed)
    h, f = hidden, 4 * hidden
    shapes = dict(w1=(h, f), b1=(f,), w2=(f, h), b2=(h,), wq=(h, h), wk=(h, h), wv=(h, h))
    out = {k: rng.standard_normal(shape) / np.sqrt(shape[0]) for k, shape in shapes.items()}
    out["wo"] = rng.standard_normal((h, h)) / np.sqrt(h)
    return out


def _leaf(array, device) -> torch.Tensor:
    return torch.tensor(np.ascontiguousarray(array), device=device, requires_grad=True)


def tensor_parallel_mlp(x, w: dict, rank: int, t: int, device):
    """Z = g(GeLU(f(X) A_r + a_r) B_r) + b2 on rank r; returns Z and the leaf tensors."""
    cols = tp.shard_slice(w["w1"].shape[1], t, rank)  # this rank's 4h/t columns
    p = dict(
        w1=_leaf(w["w1"][:, cols], device),
        b1=_leaf(w["b1"][cols], device),
        w2=_leaf(w["w2"][cols], device),
        b2=_leaf(w["b2"], device),
    )
    y = F.gelu(CopyToTensorParallel.apply(x) @ p["w1"] + p["b1"], approximate="tanh")
    z = ReduceFromTensorParallel.apply(y @ p["w2"]) + p["b2"]  # (b, s, h) on every rank
    return z, p


def tensor_parallel_attention(x, w: dict, heads: int, rank: int, t: int, device):
    """Causal self-attention of this rank's heads a/t, output projection rows, then g."""
    b, s, h = x.shape
    cols = tp.shard_slice(h, t, rank)  # columns of this rank's heads
    p = {k: _leaf(w[k][:, cols], device) for k in ("wq", "wk", "wv")}
    p["wo"] = _leaf(w["wo"][cols], device)
    xf = CopyToTensorParallel.apply(x)

    def split(m):  # (b, s, h/t) -> (b, a/t, s, d)
        return m.view(b, s, heads // t, h // heads).transpose(1, 2)

    q, k, v = (split(xf @ p[name]) for name in ("wq", "wk", "wv"))
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (b, a/t, s, d)
    z = ReduceFromTensorParallel.apply(o.transpose(1, 2).reshape(b, s, h // t) @ p["wo"])
    return z, p


def dense_attention(x, w: dict, heads: int, device):
    """The same attention as one ``torch.nn.MultiheadAttention`` (no biases, causal)."""
    h = x.shape[-1]
    mha = torch.nn.MultiheadAttention(h, heads, bias=False, batch_first=True)
    mha = mha.to(device=device, dtype=torch.float64)
    with torch.no_grad():  # torch computes x W^T: its weights are ours transposed
        qkv = np.concatenate([w["wq"].T, w["wk"].T, w["wv"].T])
        mha.in_proj_weight.copy_(torch.from_numpy(qkv))
        mha.out_proj.weight.copy_(torch.from_numpy(np.ascontiguousarray(w["wo"].T)))
    s = x.shape[1]
    mask = torch.triu(torch.ones(s, s, dtype=torch.bool, device=device), 1)
    z, _ = mha(x, x, x, attn_mask=mask, need_weights=False)
    return z, mha


def _err(a, b) -> float:
    a = a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
    b = b.detach().cpu().numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    return float(np.max(np.abs(a - b), initial=0.0)) if a.shape == b.shape else float("inf")


def check_tensor_parallel(
    rank: int,
    world_size: int,
    batch: int = 2,
    seq: int = 6,
    hidden: int = 16,
    heads: int = 4,
    seed: int = 0,
) -> dict:
    """Run the TP MLP and attention forward and backward; return the largest errors (over
    all ranks) against the dense modules and the numpy reference, and this rank's count of
    all-reduces per operator and pass. Needs an initialised default process group."""
    t, device = world_size, default_device()
    if hidden % t or heads % t or hidden % heads:
        raise ValueError(f"world_size {t} must divide heads {heads}, which must divide hidden")
    w = weights(hidden, seed)
    rng = np.random.default_rng(seed + 1)
    x_np, dz_np = rng.standard_normal((2, batch, seq, hidden))  # input, upstream gradient
    dz = torch.from_numpy(dz_np).to(device)
    cols = tp.shard_slice(hidden, t, rank)
    errors = {}
    CALLS.clear()

    # MLP: tensor-parallel, dense, numpy.
    x = _leaf(x_np, device)
    z, p = tensor_parallel_mlp(x, w, rank, t, device)
    (z * dz).sum().backward()
    xd = _leaf(x_np, device)
    d = {k: _leaf(w[k], device) for k in ("w1", "b1", "w2", "b2")}
    zd = F.gelu(xd @ d["w1"] + d["b1"], approximate="tanh") @ d["w2"] + d["b2"]
    (zd * dz).sum().backward()
    f_cols = tp.shard_slice(4 * hidden, t, rank)
    errors["mlp output"] = max(_err(z, zd), _err(z, tp.mlp(x_np, *(w[k] for k in d))))
    errors["mlp grads"] = max(
        _err(p["w1"].grad, d["w1"].grad[:, f_cols]),
        _err(p["b1"].grad, d["b1"].grad[f_cols]),
        _err(p["w2"].grad, d["w2"].grad[f_cols]),
        _err(p["b2"].grad, d["b2"].grad),
        _err(x.grad, xd.grad),
    )

    # Attention: tensor-parallel, torch.nn.MultiheadAttention, numpy.
    x = _leaf(x_np, device)
    z, p = tensor_parallel_attention(x, w, heads, rank, t, device)
    (z * dz).sum().backward()
    xd = _leaf(x_np, device)
    zd, mha = dense_attention(xd, w, heads, device)
    (zd * dz).sum().backward()
    ref = tp.attention(x_np, w["wq"], w["wk"], w["wv"], w["wo"], heads)
    errors["attention output"] = max(_err(z, zd), _err(z, ref))
    dqkv = mha.in_proj_weight.grad.T  # (h, 3h): [dWq | dWk | dWv] in our layout
    errors["attention grads"] = max(
        *(
            _err(p[k].grad, dqkv[:, j * hidden : (j + 1) * hidden][:, cols])
            for j, k in enumerate(("wq", "wk", "wv"))
        ),
        _err(p["wo"].grad, mha.out_proj.weight.grad.T[cols]),
        _err(x.grad, xd.grad),
    )

    worst = torch.tensor(list(errors.values()), dtype=torch.float64, device=device)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)  # every rank reports the global worst
    return {
        "errors": dict(zip(errors, worst.cpu().tolist(), strict=True)),
        "allreduces": dict(CALLS),
    }


def report(result: dict, world_size: int) -> list[str]:
    """One line per check, ending in ``ok`` (error below TOLERANCE) or ``MISMATCH``."""
    lines = error_lines(result["errors"], world_size, TOLERANCE, width=17)
    counts = ", ".join(f"{k}: {v}" for k, v in sorted(result["allreduces"].items()))
    lines.append(f"all-reduces per rank (MLP + attention, forward + backward): {counts}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Entry point under torchrun; returns the exit status (0: every check passed)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=BACKENDS, default="gloo")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=6)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout-s", type=float, default=60.0, help="per-collective limit")
    args = parser.parse_args(argv)
    require_positive(parser, args, ("batch", "seq", "hidden", "heads"))
    rank, world_size = init_from_env(args.backend, args.timeout_s)
    try:
        result = check_tensor_parallel(
            rank, world_size, args.batch, args.seq, args.hidden, args.heads, args.seed
        )
    finally:
        dist.destroy_process_group()
    if rank == 0:
        print("\n".join(report(result, world_size)), flush=True)
    return 0 if all(err < TOLERANCE for err in result["errors"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
