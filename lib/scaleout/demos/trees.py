"""The pipelined two-tree all-reduce on real processes, checked against ``dist.all_reduce``.

Run it under torchrun (gloo on CPU by default; ``--backend nccl`` uses ``cuda:LOCAL_RANK``)::

    torchrun --standalone --nproc-per-node 4 -m scaleout.demos.trees [--numel 1001] [--chunks 4]

or, from a notebook, the same worker function on forked CPU processes::

    from scaleout.dist import run
    from scaleout.demos.trees import check_tree_allreduce
    run(check_tree_allreduce, 5, kwargs={"numel": 10, "chunks": 2})  # one dict per rank

Every rank builds the schedule of :func:`scaleout.trees.tree_allreduce_schedule` (NCCL's
double binary tree from ``src/graph/trees.cc``, 2.8.3 rule; each tree carries half the
buffer in ``chunks`` pieces) and plays its own part of it: in each step it sends and
receives its messages with point-to-point operations, then adds what came up from a child
or copies what came down from a parent. The messages of one step go out as one
``batch_isend_irecv``: NCCL needs a step's sends and receives to one peer grouped (a send
and a receive between the same two ranks would otherwise wait for each other); gloo does
not mind. Inputs are small integers stored as float32, so sums are exact whatever the
order of additions, and a correct all-reduce matches gloo's with error 0.0.
"""

from __future__ import annotations

import argparse
import sys

import torch
import torch.distributed as dist

from scaleout import checks
from scaleout import trees as T
from scaleout.demos.collectives import rank_inputs
from scaleout.demos.common import BACKENDS, default_device, init_from_env

CHECKS = ("two_trees", "one_tree")


def run_steps_p2p(flat: torch.Tensor, rank: int, steps) -> torch.Tensor:
    """Play this rank's part of a schedule (a list of :class:`scaleout.collectives.Step`) on
    the 1-D tensor ``flat``, in place: per step, post every send and receive of this rank at
    once, wait for all, then add (``reduce``) or copy each received piece. Sends read the
    state before the step, as :func:`scaleout.collectives.replay` defines. Returns ``flat``."""
    for step in steps:
        ops, incoming = [], []
        for t in step.transfers:
            piece = slice(t.offset, t.offset + t.count)
            if t.src == rank:
                ops.append(dist.P2POp(dist.isend, flat[piece].clone(), t.dst))
            if t.dst == rank:
                buf = torch.empty(t.count, dtype=flat.dtype, device=flat.device)
                ops.append(dist.P2POp(dist.irecv, buf, t.src))
                incoming.append((piece, t.reduce, buf))
        if ops:
            for request in dist.batch_isend_irecv(ops):
                request.wait()
        for piece, reduce, buf in incoming:
            if reduce:
                flat[piece] += buf
            else:
                flat[piece] = buf
    return flat


def tree_allreduce_p2p(
    tensor: torch.Tensor, rank: int, world_size: int, chunks: int = 1, trees: int = 2
) -> torch.Tensor:
    """Sum-all-reduce ``tensor`` in place over NCCL's double binary tree (``trees=2``) or
    its first tree alone (``trees=1``), pipelined in ``chunks`` pieces per tree: the steps of
    :func:`scaleout.trees.tree_allreduce_schedule`, with real messages. Returns ``tensor``."""
    checks.instance("tensor", tensor, torch.Tensor)
    world_size = checks.integer("world_size", world_size, 1, T.MAX_RANKS)
    rank = checks.integer("rank", rank, 0, world_size - 1)
    if tensor.numel() == 0:
        raise checks.fail("tensor", "a tensor with at least one element", tensor)
    flat = tensor.contiguous().view(-1)  # (n,) shares storage with tensor when contiguous
    schedule = T.tree_allreduce_schedule(world_size, flat.numel(), chunks, trees)
    run_steps_p2p(flat, rank, schedule.steps())
    if not tensor.is_contiguous():  # flat was a copy: write the result back
        tensor.copy_(flat.view_as(tensor))
    return tensor


def check_tree_allreduce(
    rank: int, world_size: int, numel: int = 1001, chunks: int = 4, seed: int = 0
) -> dict:
    """Largest absolute difference from ``dist.all_reduce``, over all ranks, of the tree
    all-reduce with two trees and with one tree.

    Needs an initialised default process group (torchrun and
    :func:`~scaleout.demos.common.init_from_env`, or :func:`scaleout.dist.run`). Returns
    ``{"two_trees": err, "one_tree": err}``, the same on every rank; 0.0 means exact.
    """
    numel = checks.integer("numel", numel, 1, checks.MAX_ELEMENTS)
    chunks = checks.integer("chunks", chunks, 1, T.MAX_CHUNKS)
    device = default_device()
    x = torch.from_numpy(rank_inputs(world_size, numel, seed)[rank]).to(device)  # (n,)
    expected = x.clone()
    dist.all_reduce(expected)
    errors = []
    for trees in (2, 1):
        ours = tree_allreduce_p2p(x.clone(), rank, world_size, chunks, trees)
        errors.append(float((ours - expected).abs().max().item()))
    worst = torch.tensor(errors, dtype=torch.float64, device=device)
    dist.all_reduce(worst, op=dist.ReduceOp.MAX)  # every rank reports the global result
    return dict(zip(CHECKS, worst.cpu().tolist(), strict=True))


def main(argv: list[str] | None = None) -> int:
    """Entry point under torchrun; returns the exit status (0: both all-reduces exact)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=BACKENDS, default="gloo")
    parser.add_argument("--numel", type=int, default=1001, help="elements per rank (>= 1)")
    parser.add_argument("--chunks", type=int, default=4, help="pieces per tree (>= 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout-s", type=float, default=60.0, help="per-operation limit")
    args = parser.parse_args(argv)
    if args.numel < 1:
        parser.error(f"--numel must be >= 1, got {args.numel}")
    if args.chunks < 1:
        parser.error(f"--chunks must be >= 1, got {args.chunks}")
    rank, world_size = init_from_env(args.backend, args.timeout_s)
    try:
        errors = check_tree_allreduce(rank, world_size, args.numel, args.chunks, args.seed)
    finally:
        dist.destroy_process_group()
    if rank == 0:
        for name, err in errors.items():
            verdict = "ok" if err == 0.0 else "MISMATCH"
            print(
                f"{name:<10} world_size={world_size} numel={args.numel} chunks={args.chunks} "
                f"max|err|={err:g} {verdict}",
                flush=True,
            )
    return 0 if all(err == 0.0 for err in errors.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
