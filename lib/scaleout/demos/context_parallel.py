"""Sequence parallelism, ring attention and Ulysses on real processes, against dense modules.

Run it under torchrun (gloo on CPU by default; ``--backend nccl`` uses ``cuda:LOCAL_RANK``)::

    torchrun --standalone --nproc-per-node 4 -m scaleout.demos.context_parallel

or, from a notebook or a test, the same worker on forked CPU processes::

    from scaleout.dist import run
    from scaleout.demos.context_parallel import check_context_parallel
    run(check_context_parallel, 4)          # one dict of errors and counts per rank

Three checks, float64 throughout ("equal" means an error below 1e-10), each against the
same computation on one process, gradients included:

* **Megatron sequence parallelism** (Korthikanti et al. 2022, Sec. 4.2.2): the layer norm
  runs on this rank's s/t tokens, an all-gather rebuilds the sequence before the
  tensor-parallel MLP (column-parallel, GeLU, row-parallel) and a reduce-scatter leaves
  each rank its s/t tokens of the sum; backward the other way round (Megatron-LM
  ``megatron/core/tensor_parallel/mappings.py``: ``_GatherFromSequenceParallelRegion``,
  ``_ReduceScatterToSequenceParallelRegion``). The replicated layer-norm weights' gradients
  are all-reduced, as Megatron-LM does for sequence-parallel parameters.
* **Ring attention** (Liu et al. 2023) with the zig-zag layout: K/V blocks go around the
  ring with ``batch_isend_irecv``, each rank merging block results with the log-sum-exp
  rule; the backward pass sends the blocks around again with their K/V-gradient
  accumulators, which end on their owner (FlashAttention's backward per block, Dao 2023,
  Algorithm 2, with the final log-sum-exp).
* **Ulysses** (Jacobs et al. 2023): ``all_to_all_single`` from sequence-sharded to
  head-sharded Q, K, V, local causal attention, and back; backward, the inverse
  all-to-alls.

Rank 0 prints one line per check; the exit status is non-zero on any mismatch.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

from scaleout import context_parallel as CP
from scaleout.demos.common import (
    BACKENDS,
    default_device,
    error_lines,
    init_from_env,
    require_positive,
)

TOLERANCE = 1e-10
CALLS: Counter = Counter()  # collectives and point-to-point messages this process ran


# ---------------------------------------------------------------- sequence parallelism


class GatherSequence(torch.autograd.Function):
    """Forward: all-gather the sequence shards (s/t, ...) -> (s, ...); backward:
    reduce-scatter the gradient back to this rank's s/t rows."""

    @staticmethod
    def forward(ctx, x):
        """All-gather along the sequence (first) dimension."""
        out = x.new_empty((x.shape[0] * dist.get_world_size(), *x.shape[1:]))
        dist.all_gather_single(out, x.contiguous())
        CALLS["all-gather"] += 1
        return out

    @staticmethod
    def backward(ctx, grad):
        """Every rank's rows fed every rank's MLP: sum the gradients, keep my rows."""
        out = grad.new_empty((grad.shape[0] // dist.get_world_size(), *grad.shape[1:]))
        dist.reduce_scatter_single(out, grad.contiguous())
        CALLS["reduce-scatter"] += 1
        return out


class ScatterSequence(torch.autograd.Function):
    """Forward: reduce-scatter the partial sums (s, ...) -> my s/t rows of the sum;
    backward: all-gather the gradient (every rank's partial needs all of it)."""

    @staticmethod
    def forward(ctx, x):
        """Sum the t partial outputs and keep this rank's rows."""
        out = x.new_empty((x.shape[0] // dist.get_world_size(), *x.shape[1:]))
        dist.reduce_scatter_single(out, x.contiguous())
        CALLS["reduce-scatter"] += 1
        return out

    @staticmethod
    def backward(ctx, grad):
        """The gradient of a sum is the same for every term: all-gather it."""
        out = grad.new_empty((grad.shape[0] * dist.get_world_size(), *grad.shape[1:]))
        dist.all_gather_single(out, grad.contiguous())
        CALLS["all-gather"] += 1
        return out


def _leaf(array, device) -> torch.Tensor:
    return torch.tensor(np.ascontiguousarray(array), device=device, requires_grad=True)


def _err(a, b) -> float:
    a = a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
    b = b.detach().cpu().numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    return float(np.max(np.abs(a - b), initial=0.0)) if a.shape == b.shape else float("inf")


def _sp_block(x, ln_w, ln_b, w1, b1, w2, gather, scatter):
    """LayerNorm -> gather -> GeLU(x W1 + b1) W2 -> scatter, plus the residual."""
    y = F.layer_norm(x, x.shape[-1:], ln_w, ln_b)
    return x + scatter(F.gelu(gather(y) @ w1 + b1, approximate="tanh") @ w2)


def check_sequence_parallel(rank, t, device, seq=16, batch=2, hidden=16, seed=0) -> dict:
    """Megatron sequence parallelism against the dense block; largest errors on this rank."""
    rng = np.random.default_rng(seed)
    x_np, dz_np = rng.standard_normal((2, seq, batch, hidden))  # (s, b, h)
    w = dict(ln_w=1 + rng.standard_normal(hidden) / 4, ln_b=rng.standard_normal(hidden) / 4,
             w1=rng.standard_normal((hidden, 4 * hidden)) / 4, b1=rng.standard_normal(4 * hidden),
             w2=rng.standard_normal((4 * hidden, hidden)) / 8)  # fmt: skip
    rows, cols = (
        slice(rank * seq // t, (rank + 1) * seq // t),
        slice(rank * 4 * hidden // t, (rank + 1) * 4 * hidden // t),
    )
    # Sequence-parallel: my rows of x, my columns of W1 and b1, my rows of W2.
    x = _leaf(x_np[rows], device)
    p = dict(ln_w=_leaf(w["ln_w"], device), ln_b=_leaf(w["ln_b"], device),
             w1=_leaf(w["w1"][:, cols], device), b1=_leaf(w["b1"][cols], device),
             w2=_leaf(w["w2"][cols], device))  # fmt: skip
    z = _sp_block(x, *p.values(), GatherSequence.apply, ScatterSequence.apply)  # (s/t, b, h)
    (z * torch.from_numpy(dz_np[rows]).to(device)).sum().backward()
    for name in ("ln_w", "ln_b"):  # replicated parameters: sum their gradients
        dist.all_reduce(p[name].grad)
    # Dense.
    xd = _leaf(x_np, device)
    d = {k: _leaf(v, device) for k, v in w.items()}
    zd = _sp_block(xd, *d.values(), lambda y: y, lambda y: y)
    (zd * torch.from_numpy(dz_np).to(device)).sum().backward()
    return {
        "sequence parallel output": _err(z, zd[rows]),
        "sequence parallel grads": max(
            _err(x.grad, xd.grad[rows]), _err(p["w1"].grad, d["w1"].grad[:, cols]),
            _err(p["b1"].grad, d["b1"].grad[cols]), _err(p["w2"].grad, d["w2"].grad[cols]),
            _err(p["ln_w"].grad, d["ln_w"].grad), _err(p["ln_b"].grad, d["ln_b"].grad),
        ),
    }  # fmt: skip


# ---------------------------------------------------------------- ring attention


def _ring_pass(tensors):
    """Send every tensor to rank r + 1 and receive the same shapes from rank r - 1."""
    r, p = dist.get_rank(), dist.get_world_size()
    received = [torch.empty_like(x) for x in tensors]
    ops = [dist.P2POp(dist.isend, x.contiguous(), (r + 1) % p) for x in tensors]
    ops += [dist.P2POp(dist.irecv, y, (r - 1) % p) for y in received]
    for request in dist.batch_isend_irecv(ops):
        request.wait()
    CALLS["ring messages sent"] += len(tensors)
    return received


def _block(q, k, v, mask, scale):
    """One block: normalised output and log-sum-exp per row (-inf where nothing is seen)."""
    s = (q @ k.transpose(-1, -2) * scale).masked_fill(~mask, -math.inf)  # (h, n, n)
    m = s.amax(dim=-1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    e = torch.exp(s - m)
    total = e.sum(dim=-1, keepdim=True)
    out = torch.where(total > 0, (e @ v) / total.clamp_min(1e-300), torch.zeros_like(q))
    return out, (m + torch.log(total)).squeeze(-1)


class RingAttention(torch.autograd.Function):
    """Causal ring attention of this rank's rows (global positions ``pos``)."""

    @staticmethod
    def forward(ctx, q, k, v, pos):
        """cp steps: attend to the held K/V block, merge, pass it on (overlapped on GPUs:
        the next block is in flight while this one is computed)."""
        scale = q.shape[-1] ** -0.5
        out, lse = torch.zeros_like(q), torch.full(q.shape[:2], -math.inf, dtype=q.dtype,
                                                   device=q.device)  # fmt: skip
        kb, vb, kpos = k, v, pos
        for step in range(dist.get_world_size()):
            mask = kpos[None, :] <= pos[:, None]  # causal, by global position
            if bool(mask.any()):
                o, l_b = _block(q, kb, vb, mask, scale)
                new = torch.logaddexp(lse, l_b)  # the exact merge
                out = out * torch.exp(lse - new)[..., None] + o * torch.exp(l_b - new)[..., None]
                lse = new
            if step < dist.get_world_size() - 1:
                kb, vb, kpos = _ring_pass([kb, vb, kpos])
        ctx.save_for_backward(q, k, v, pos, out, lse)
        return out

    @staticmethod
    def backward(ctx, dout):
        """The blocks go around again with their gradient accumulators dK, dV, which come
        home after cp passes; dQ accumulates locally."""
        q, k, v, pos, out, lse = ctx.saved_tensors
        scale = q.shape[-1] ** -0.5
        delta = (dout * out).sum(dim=-1, keepdim=True)  # D = rowsum(dO * O)
        dq = torch.zeros_like(q)
        kb, vb, kpos = k, v, pos
        dkb, dvb = torch.zeros_like(k), torch.zeros_like(v)
        p = dist.get_world_size()
        for step in range(p):
            mask = kpos[None, :] <= pos[:, None]
            if bool(mask.any()):
                s = (q @ kb.transpose(-1, -2) * scale).masked_fill(~mask, -math.inf)
                prob = torch.exp(s - lse[..., None])  # the final softmax, block by block
                dvb = dvb + prob.transpose(-1, -2) @ dout
                ds = prob * (dout @ vb.transpose(-1, -2) - delta)
                dq = dq + ds @ kb * scale
                dkb = dkb + ds.transpose(-1, -2) @ q * scale
            if step < p - 1:
                kb, vb, kpos, dkb, dvb = _ring_pass([kb, vb, kpos, dkb, dvb])
            else:
                dkb, dvb = _ring_pass([dkb, dvb])  # the accumulators come home
        return dq, dkb, dvb, None


def check_ring_attention(rank, cp, device, seq=16, heads=2, head_dim=8, seed=0) -> dict:
    """Zig-zag causal ring attention against dense causal attention and the numpy ring."""
    rng = np.random.default_rng(seed)
    q_np, k_np, v_np, do_np = rng.standard_normal((4, heads, seq, head_dim))
    pos = CP.shard_positions(seq, cp, "zigzag")[rank]  # my chunks rank and 2cp-1-rank
    q, k, v = (_leaf(a[:, pos], device) for a in (q_np, k_np, v_np))
    out = RingAttention.apply(q, k, v, torch.from_numpy(pos).to(device))
    (out * torch.from_numpy(do_np[:, pos]).to(device)).sum().backward()
    qd, kd, vd = (_leaf(a, device) for a in (q_np, k_np, v_np))
    od = F.scaled_dot_product_attention(qd, kd, vd, is_causal=True)
    (od * torch.from_numpy(do_np).to(device)).sum().backward()
    ring_np, _ = CP.ring_attention(q_np, k_np, v_np, cp, causal=True, layout="zigzag")
    return {
        "ring attention output": max(_err(out, od[:, pos]), _err(out, ring_np[:, pos])),
        "ring attention grads": max(
            _err(q.grad, qd.grad[:, pos]),
            _err(k.grad, kd.grad[:, pos]),
            _err(v.grad, vd.grad[:, pos]),
        ),  # fmt: skip
    }


# ---------------------------------------------------------------- Ulysses


def _sequence_to_heads(x):
    """(h, s/cp, d) on every rank -> (h/cp, s, d): chunk j of my buffer (heads block j)
    goes to rank j; I receive rank j's sequence block for my heads."""
    p = dist.get_world_size()
    h, n, d = x.shape
    send = x.reshape(p, h // p, n, d).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    CALLS["all-to-all"] += 1
    return recv.permute(1, 0, 2, 3).reshape(h // p, p * n, d)


def _heads_to_sequence(y):
    """(h/cp, s, d) -> (h, s/cp, d), the inverse all-to-all."""
    p = dist.get_world_size()
    hc, s, d = y.shape
    send = y.reshape(hc, p, s // p, d).permute(1, 0, 2, 3).contiguous()
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    CALLS["all-to-all"] += 1
    return recv.reshape(p * hc, s // p, d)


class SequenceToHeads(torch.autograd.Function):
    """All-to-all to head-sharded forward; the inverse all-to-all backward."""

    @staticmethod
    def forward(ctx, x):
        """Sequence-sharded -> head-sharded."""
        return _sequence_to_heads(x)

    @staticmethod
    def backward(ctx, grad):
        """Head-sharded gradient -> sequence-sharded."""
        return _heads_to_sequence(grad)


class HeadsToSequence(torch.autograd.Function):
    """All-to-all back to sequence-sharded forward; the inverse backward."""

    @staticmethod
    def forward(ctx, y):
        """Head-sharded -> sequence-sharded."""
        return _heads_to_sequence(y)

    @staticmethod
    def backward(ctx, grad):
        """Sequence-sharded gradient -> head-sharded."""
        return _sequence_to_heads(grad)


def check_ulysses(rank, cp, device, seq=16, heads=4, head_dim=8, seed=0) -> dict:
    """Ulysses attention against dense causal attention and the numpy Ulysses."""
    rng = np.random.default_rng(seed)
    q_np, k_np, v_np, do_np = rng.standard_normal((4, heads, seq, head_dim))
    rows = slice(rank * seq // cp, (rank + 1) * seq // cp)  # contiguous: Ulysses is balanced
    q, k, v = (_leaf(a[:, rows], device) for a in (q_np, k_np, v_np))
    qh, kh, vh = (SequenceToHeads.apply(x) for x in (q, k, v))  # (h/cp, s, d)
    out = HeadsToSequence.apply(F.scaled_dot_product_attention(qh, kh, vh, is_causal=True))
    (out * torch.from_numpy(do_np[:, rows]).to(device)).sum().backward()
    qd, kd, vd = (_leaf(a, device) for a in (q_np, k_np, v_np))
    od = F.scaled_dot_product_attention(qd, kd, vd, is_causal=True)
    (od * torch.from_numpy(do_np).to(device)).sum().backward()
    ref = CP.ulysses_attention(q_np, k_np, v_np, cp, causal=True)
    return {
        "ulysses output": max(_err(out, od[:, rows]), _err(out, ref[:, rows])),
        "ulysses grads": max(
            _err(q.grad, qd.grad[:, rows]),
            _err(k.grad, kd.grad[:, rows]),
            _err(v.grad, vd.grad[:, rows]),
        ),  # fmt: skip
    }


def check_context_parallel(rank: int, world_size: int, seq: int = 16, heads: int = 4,
                           head_dim: int = 8, hidden: int = 16, seed: int = 0) -> dict:  # fmt: skip
    """All three checks on an initialised default process group; the largest errors over
    all ranks and this rank's count of collectives and messages."""
    device = default_device()
    if seq % (2 * world_size) or heads % world_size or hidden % world_size:
        raise ValueError(f"world_size {world_size} must divide heads, hidden and seq / 2")
    CALLS.clear()
    torch.manual_seed(seed)
    errors = check_sequence_parallel(rank, world_size, device, seq, 2, hidden, seed)
    errors |= check_ring_attention(rank, world_size, device, seq, 2, head_dim, seed)
    errors |= check_ulysses(rank, world_size, device, seq, heads, head_dim, seed)
    worst = torch.tensor(list(errors.values()), dtype=torch.float64, device=device)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)
    return {"errors": dict(zip(errors, worst.cpu().tolist(), strict=True)), "calls": dict(CALLS)}


def report(result: dict, world_size: int) -> list[str]:
    """One line per check, ending in ``ok`` (error below TOLERANCE) or ``MISMATCH``."""
    lines = error_lines(result["errors"], world_size, TOLERANCE, width=25)
    counts = ", ".join(f"{k}: {v}" for k, v in sorted(result["calls"].items()))
    lines.append(f"per rank: {counts}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Entry point under torchrun; returns the exit status (0: every check passed)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=BACKENDS, default="gloo")
    parser.add_argument("--seq", type=int, default=16)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--head-dim", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout-s", type=float, default=60.0, help="per-collective limit")
    args = parser.parse_args(argv)
    require_positive(parser, args, ("seq", "heads", "head_dim", "hidden"))
    rank, world_size = init_from_env(args.backend, args.timeout_s)
    try:
        result = check_context_parallel(rank, world_size, args.seq, args.heads, args.head_dim,
                                        args.hidden, args.seed)  # fmt: skip
    finally:
        dist.destroy_process_group()
    if rank == 0:
        print("\n".join(report(result, world_size)), flush=True)
    return 0 if all(err < TOLERANCE for err in result["errors"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
