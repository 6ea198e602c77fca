"""Every collective of the book on real processes, checked against its numpy reference.

Run it under torchrun (gloo on CPU by default; ``--backend nccl`` uses ``cuda:LOCAL_RANK``)::

    torchrun --standalone --nproc-per-node 4 -m scaleout.demos.collectives [--numel 1001]

or, from a notebook, the same worker function on forked CPU processes::

    from scaleout.dist import run
    from scaleout.demos.collectives import check_collectives
    run(check_collectives, 4, kwargs={"numel": 10})   # one dict of errors per rank

Rank 0 prints one line per check (``all_reduce ... ok``); the exit status is non-zero on
any mismatch. Inputs are small integers stored as float32, so every sum is exact whatever
order a backend adds in: a correct collective matches its reference with error 0.0.

The reference semantics are :func:`scaleout.collectives.reference`; the hand-written ring
is the schedule of :func:`scaleout.collectives.ring_allreduce_schedule` (Patarasuk & Yuan,
JPDC 2009), here with real ``isend``/``irecv`` instead of a replayed array.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch
import torch.distributed as dist

from scaleout import checks
from scaleout.collectives import MAX_RANKS, chunk_bounds, reference
from scaleout.demos.common import BACKENDS, default_device, init_from_env

CHECKS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "ring_p2p")


def rank_inputs(world_size: int, numel: int, seed: int = 0) -> np.ndarray:
    """The ``(world_size, numel)`` float32 inputs, row r = rank r's buffer; integers in
    [-8, 8], identical on every rank (each rank builds all rows to compute the reference)."""
    world_size = checks.integer("world_size", world_size, 1, MAX_RANKS)
    numel = checks.integer("numel", numel, 1, checks.MAX_ELEMENTS // world_size)
    seed = checks.integer("seed", seed, 0, 2**63 - 1)
    rng = np.random.default_rng(seed)
    return rng.integers(-8, 9, size=(world_size, numel)).astype(np.float32)


def _error(got: torch.Tensor, want: np.ndarray) -> float:
    """Max absolute difference; inf when the shapes differ."""
    got = got.detach().cpu().double().numpy().reshape(-1)
    if got.shape != want.reshape(-1).shape:
        return float("inf")
    return float(np.max(np.abs(got - want.reshape(-1)), initial=0.0))


def _exchange(send: torch.Tensor, dst: int, recv: torch.Tensor, src: int) -> None:
    """Send ``send`` to ``dst`` while receiving ``recv`` from ``src``; both non-blocking, so
    a ring of simultaneous exchanges cannot deadlock. Empty chunks (n < p) are skipped on
    both sides alike, since both sides know the chunk sizes."""
    requests = []
    if send.numel():
        requests.append(dist.isend(send, dst))
    if recv.numel():
        requests.append(dist.irecv(recv, src))
    for request in requests:
        request.wait()


def ring_allreduce_p2p(tensor: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """Sum-all-reduce ``tensor`` in place over the default group with a hand-written ring.

    Only point-to-point ``isend``/``irecv`` to the right neighbour ``(rank + 1) % p`` and
    from the left one. The flat tensor is cut into p chunks
    (:func:`scaleout.collectives.chunk_bounds`).
    Reduce-scatter, p - 1 steps: at step s rank r sends chunk (r - s - 1) % p and adds the
    incoming chunk (r - s - 2) % p into its own; afterwards rank r holds the full sum of
    chunk r (torch's reduce_scatter convention). All-gather, p - 1 steps: at step s rank r
    sends chunk (r - s) % p and overwrites chunk (r - s - 1) % p with what arrives. These
    are the steps of :func:`scaleout.collectives.ring_allreduce_schedule`, transfer for
    transfer. 2(p - 1) steps, each moving about n/p elements per rank: 2(p - 1)/p * n sent
    per rank, the bandwidth optimum.
    Returns ``tensor``.
    """
    checks.instance("tensor", tensor, torch.Tensor)
    p = checks.integer("world_size", world_size, 1, MAX_RANKS)
    rank = checks.integer("rank", rank, 0, p - 1)
    if p == 1:
        return tensor
    flat = tensor.contiguous().view(-1)  # (n,) shares storage with tensor when contiguous
    bounds = chunk_bounds(flat.numel(), p).tolist()

    def chunk(i: int) -> torch.Tensor:
        return flat[bounds[i] : bounds[i + 1]]  # (~n/p,) contiguous view

    right, left = (rank + 1) % p, (rank - 1) % p
    scratch = torch.empty(bounds[1] - bounds[0], dtype=flat.dtype, device=flat.device)
    for s in range(p - 1):  # reduce-scatter
        send_i, recv_i = (rank - s - 1) % p, (rank - s - 2) % p
        incoming = scratch[: chunk(recv_i).numel()]
        _exchange(chunk(send_i), right, incoming, left)
        chunk(recv_i).add_(incoming)
    for s in range(p - 1):  # all-gather
        send_i, recv_i = (rank - s) % p, (rank - s - 1) % p
        _exchange(chunk(send_i), right, chunk(recv_i), left)
    if not tensor.is_contiguous():  # flat was a copy: write the result back
        tensor.copy_(flat.view_as(tensor))
    return tensor


def check_ring_allreduce(rank: int, world_size: int, numel: int = 1001, seed: int = 0) -> float:
    """Largest absolute difference between ``ring_allreduce_p2p`` and ``dist.all_reduce``
    on this rank's integer-valued input."""
    device = default_device()
    x = torch.from_numpy(rank_inputs(world_size, numel, seed)[rank]).to(device)
    ring, torch_sum = x.clone(), x.clone()
    ring_allreduce_p2p(ring, rank, world_size)
    dist.all_reduce(torch_sum)
    return float((ring - torch_sum).abs().max().item())


def check_collectives(rank: int, world_size: int, numel: int = 1001, seed: int = 0) -> dict:
    """Run each collective on rank-dependent data and compare it with its numpy reference.

    Needs an initialised default process group (torchrun +
    :func:`scaleout.demos.common.init_from_env`, or
    :func:`scaleout.dist.run`). ``numel`` is the elements per rank; any value >= 1 works,
    p need not divide it (all_to_all uses p * ceil(numel / p) elements). Returns
    ``{check: max_abs_error}`` for ``CHECKS``, the maximum over all ranks, so every
    rank returns the same dict; 0.0 means exact.
    """
    numel = checks.integer("numel", numel, 1, checks.MAX_ELEMENTS)
    p, device = world_size, default_device()
    buffers = rank_inputs(p, numel, seed)  # (p, n)
    bounds = chunk_bounds(numel, p).tolist()

    def mine() -> torch.Tensor:
        return torch.from_numpy(buffers[rank].copy()).to(device)  # (n,)

    errors = {}
    x = mine()
    dist.all_reduce(x)
    errors["all_reduce"] = _error(x, reference("allreduce", buffers)[rank])

    parts = [torch.empty(numel, device=device) for _ in range(p)]
    dist.all_gather(parts, mine())
    errors["all_gather"] = _error(torch.cat(parts), reference("allgather", buffers)[rank])

    x = mine()
    out = torch.empty(bounds[rank + 1] - bounds[rank], device=device)
    dist.reduce_scatter(out, [x[bounds[i] : bounds[i + 1]] for i in range(p)])
    errors["reduce_scatter"] = _error(out, reference("reducescatter", buffers)[rank])

    root = p - 1  # a root other than 0 catches root/rank mix-ups
    x = mine()
    dist.broadcast(x, src=root)
    errors["broadcast"] = _error(x, reference("broadcast", buffers, root=root)[rank])

    m = p * -(-numel // p)  # (p * ceil(n / p),): all_to_all needs p | m
    a2a = rank_inputs(p, m, seed + 1)
    out = torch.empty(m, device=device)
    dist.all_to_all_single(out, torch.from_numpy(a2a[rank].copy()).to(device))
    errors["all_to_all"] = _error(out, reference("alltoall", a2a)[rank])

    errors["ring_p2p"] = check_ring_allreduce(rank, p, numel, seed)

    worst = torch.tensor([errors[name] for name in CHECKS], dtype=torch.float64, device=device)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)  # every rank reports the global result
    return dict(zip(CHECKS, worst.cpu().tolist(), strict=True))


def report(errors: dict, world_size: int, numel: int) -> list[str]:
    """One line per check, ending in ``ok`` (error 0) or ``MISMATCH``."""
    lines = []
    for name, err in errors.items():
        verdict = "ok" if err == 0.0 else "MISMATCH"
        lines.append(f"{name:<15} world_size={world_size} numel={numel} max|err|={err:g} {verdict}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Entry point under torchrun; returns the exit status (0: every check exact)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=BACKENDS, default="gloo")
    parser.add_argument("--numel", type=int, default=1001, help="elements per rank (>= 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout-s", type=float, default=60.0, help="per-collective limit")
    args = parser.parse_args(argv)
    if args.numel < 1:
        parser.error(f"--numel must be >= 1, got {args.numel}")
    rank, world_size = init_from_env(args.backend, args.timeout_s)
    try:
        errors = check_collectives(rank, world_size, numel=args.numel, seed=args.seed)
    finally:
        dist.destroy_process_group()
    if rank == 0:
        print("\n".join(report(errors, world_size, args.numel)), flush=True)
    return 0 if all(err == 0.0 for err in errors.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
