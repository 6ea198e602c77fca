"""An expert-parallel MoE layer on real processes, checked against the numpy reference.

Run it under torchrun (gloo on CPU by default; ``--backend nccl`` uses ``cuda:LOCAL_RANK``)::

    torchrun --standalone --nproc-per-node 4 -m scaleout.demos.moe
    torchrun --standalone --nproc-per-node 8 -m scaleout.demos.moe --ep 4   # EP x DP

or, from a notebook, the same worker on forked CPU processes::

    from scaleout.dist import run
    from scaleout.demos.moe import expert_parallel_layer
    run(expert_parallel_layer, 4)                # one dict per rank

The world of ``p`` ranks is a mesh of ``ep`` expert-parallel ranks times ``p / ep``
expert-data-parallel replicas (:func:`scaleout.moe.mesh`). Rank g routes the g-th block of
the tokens with :func:`scaleout.moe.route` (capacity claimed per rank, so tokens beyond
capacity are dropped), sends each kept copy to the rank of its expert inside its EP group
with ``dist.all_to_all_single`` and uneven splits (dispatch), runs its experts, and sends
the results back (combine); the backward pass runs the same two all-to-alls in reverse.
Expert gradients are all-reduced over the expert-data-parallel group, the router's over
all ranks. Everything is float64 and must equal :func:`scaleout.moe.layer_reference` and
:func:`scaleout.moe.layer_backward` on one process (outputs, input, router and expert
gradients). Rank 0 prints one line per check, ending in ``ok`` or ``MISMATCH``. The chapter
"Expert parallelism" runs the same steps in its cells.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch
import torch.distributed as dist

from scaleout import moe
from scaleout.demos.common import BACKENDS, default_device, init_from_env

TOKENS_PER_RANK, HIDDEN, FFN, EXPERTS, K, CAPACITY_FACTOR = 6, 4, 8, 8, 2, 1.0
RTOL, ATOL = 1e-10, 1e-12  # float64, different summation orders


def problem(world_size: int, tokens_per_rank=TOKENS_PER_RANK, seed: int = 0) -> dict:
    """The seeded layer every rank builds identically: ``x``, ``router_w``, ``experts``,
    ``grad_output`` (numpy, float64)."""
    rng = np.random.default_rng(seed)
    tokens = world_size * tokens_per_rank
    return {
        "x": rng.normal(size=(tokens, HIDDEN)),
        "router_w": rng.normal(size=(HIDDEN, EXPERTS)),
        "experts": moe.random_experts(EXPERTS, HIDDEN, FFN, seed=seed + 1),
        "grad_output": rng.normal(size=(tokens, HIDDEN)),
    }


class AllToAll(torch.autograd.Function):
    """``dist.all_to_all_single`` with uneven splits; its backward is the reverse
    all-to-all (receive splits and send splits swapped)."""

    @staticmethod
    def forward(ctx, x, send, recv, group):
        """Send ``send[j]`` rows of ``x`` to rank j; receive ``recv[i]`` rows from rank i."""
        ctx.splits, ctx.group = (send, recv), group
        out = x.new_empty(sum(recv), x.shape[1])
        dist.all_to_all_single(out, x.contiguous(), recv, send, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        """The reverse all-to-all: every received row's gradient goes back to its sender."""
        send, recv = ctx.splits
        back = grad.new_empty(sum(send), grad.shape[1])
        dist.all_to_all_single(back, grad.contiguous(), send, recv, group=ctx.group)
        return back, None, None, None


def expert_parallel_layer(rank: int, world_size: int, ep: int | None = None,
                          tokens_per_rank: int = TOKENS_PER_RANK) -> dict:  # fmt: skip
    """This rank's part of the layer, forward and backward. Returns numpy arrays: its
    ``output`` rows and ``grad_x`` rows, the summed ``grad_router``, its experts'
    ``grad_w1``/``grad_w2`` (reduced over their replicas), and its ``send``/``recv``
    splits."""
    ep = world_size if ep is None else ep
    grid = moe.mesh(world_size, ep)
    groups = {kind: [dist.new_group(g) for g in grid.groups(kind)] for kind in ("ep", "expert_dp")}
    where = grid.coords(rank)
    ep_group = groups["ep"][where["expert_dp"]]  # groups are listed in rank order
    dp_group = groups["expert_dp"][where["ep"]]
    e_rank = where["ep"]
    device = default_device()
    data = problem(world_size, tokens_per_rank)
    n, per = tokens_per_rank, EXPERTS // ep
    mine = slice(rank * n, (rank + 1) * n)

    def tensor(a, grad=True):
        return torch.tensor(a, dtype=torch.float64, device=device, requires_grad=grad)

    x = tensor(data["x"][mine])
    router_w = tensor(data["router_w"])
    w1 = tensor(data["experts"].w1[e_rank * per : (e_rank + 1) * per])  # my experts
    w2 = tensor(data["experts"].w2[e_rank * per : (e_rank + 1) * per])

    logits = x @ router_w  # (n, E)
    routing = moe.route(logits.detach().cpu().numpy(), K, CAPACITY_FACTOR)  # this rank's
    experts = torch.tensor(routing.experts, device=device)
    kept = torch.tensor(routing.kept, device=device)
    weights = torch.softmax(logits, dim=1).gather(1, experts)
    weights = weights / weights.sum(dim=1, keepdim=True) * kept  # normalised, then dropped

    tok, choice = torch.nonzero(kept, as_tuple=True)  # kept copies, token order
    order = torch.argsort(experts[tok, choice], stable=True)  # grouped by expert
    tok, choice = tok[order], choice[order]
    expert_of = experts[tok, choice]
    per_expert = torch.bincount(expert_of, minlength=EXPERTS)  # (E,) copies I send
    counts = torch.empty_like(per_expert)  # (ep * per,): from each rank, to my experts
    dist.all_to_all_single(counts, per_expert, group=ep_group)
    counts = counts.view(ep, per)
    send = per_expert.view(ep, per).sum(1).tolist()
    recv = counts.sum(1).tolist()

    received = AllToAll.apply(x[tok], send, recv, ep_group)  # dispatch
    local = torch.arange(per, device=device).repeat(ep).repeat_interleave(counts.flatten())
    out = torch.zeros_like(received)
    for e in range(per):
        rows = local == e
        out[rows] = torch.relu(received[rows] @ w1[e]) @ w2[e]
    back = AllToAll.apply(out, recv, send, ep_group)  # combine
    y = torch.zeros_like(x).index_add(0, tok, weights[tok, choice][:, None] * back)

    (y * tensor(data["grad_output"][mine], grad=False)).sum().backward()
    dist.all_reduce(router_w.grad)  # the router is data-parallel over every rank
    for w in (w1, w2):
        dist.all_reduce(w.grad, group=dp_group)  # expert replicas: the expert-DP group
    return {
        "output": y.detach().cpu().numpy(),
        "grad_x": x.grad.cpu().numpy(),
        "grad_router": router_w.grad.cpu().numpy(),
        "grad_w1": w1.grad.cpu().numpy(),
        "grad_w2": w2.grad.cpu().numpy(),
        "send": send,
        "recv": recv,
        "dropped": int(routing.dropped.sum()),
    }


def reference(world_size: int, tokens_per_rank=TOKENS_PER_RANK) -> dict:
    """The single-process layer and its gradients (capacity claimed per rank: blocks)."""
    d = problem(world_size, tokens_per_rank)
    kw = {"capacity_factor": CAPACITY_FACTOR, "blocks": world_size}
    y, routing = moe.layer_forward(d["x"], d["router_w"], d["experts"], K, **kw)
    grads = moe.layer_backward(d["x"], d["router_w"], d["experts"], K, d["grad_output"], **kw)
    return {"output": y, "routing": routing, **grads}


def compare(results: list[dict], ep: int, tokens_per_rank=TOKENS_PER_RANK) -> dict:
    """``{check: max abs error}`` of the ranks' results against :func:`reference` (inf if
    outside tolerance), and the dispatch plan's splits against the ranks' own."""
    world = len(results)
    ref = reference(world, tokens_per_rank)
    per = EXPERTS // ep

    def err(got, want):
        ok = got.shape == want.shape and np.allclose(got, want, rtol=RTOL, atol=ATOL)
        return float(np.max(np.abs(got - want))) if ok else float("inf")

    out = {
        "output": err(np.concatenate([r["output"] for r in results]), ref["output"]),
        "grad_x": err(np.concatenate([r["grad_x"] for r in results]), ref["x"]),
        "grad_router": max(err(r["grad_router"], ref["router_w"]) for r in results),
    }
    for name, key in (("grad_w1", "w1"), ("grad_w2", "w2")):
        out[name] = max(
            err(r[name], ref[key][(g % ep) * per : (g % ep + 1) * per])
            for g, r in enumerate(results)
        )
    # copies from each rank's tokens to each expert, inside each EP group of ep ranks
    per_expert = moe.dispatch_plan(ref["routing"], world).per_expert.reshape(world, ep, per)
    splits_ok = True
    for g, r in enumerate(results):
        first = (g // ep) * ep  # the first rank of g's EP group
        send = per_expert[g].sum(axis=1)
        recv = per_expert[first : first + ep, g % ep].sum(axis=1)
        splits_ok &= r["send"] == send.astype(int).tolist()
        splits_ok &= r["recv"] == recv.astype(int).tolist()
    out["splits"] = 0.0 if splits_ok else float("inf")
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point under torchrun; returns the exit status (0: every check matches)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=BACKENDS, default="gloo")
    parser.add_argument("--ep", type=int, default=None, help="expert-parallel ranks")
    parser.add_argument("--tokens", type=int, default=TOKENS_PER_RANK, help="tokens per rank")
    parser.add_argument("--timeout-s", type=float, default=120.0, help="per-collective limit")
    args = parser.parse_args(argv)
    if args.tokens < 1 or args.tokens > 4096:
        parser.error(f"--tokens must be in [1, 4096], got {args.tokens}")
    if args.ep is not None and (args.ep < 1 or EXPERTS % args.ep):
        parser.error(f"--ep must divide the {EXPERTS} experts, got {args.ep}")
    rank, world_size = init_from_env(args.backend, args.timeout_s)
    ep = world_size if args.ep is None else args.ep
    try:
        if world_size % ep or EXPERTS % ep:
            raise SystemExit(f"--ep {ep} must divide the world size {world_size} and {EXPERTS}")
        result = expert_parallel_layer(rank, world_size, ep, args.tokens)
        per_rank = [None] * world_size
        dist.all_gather_object(per_rank, result)
    finally:
        dist.destroy_process_group()
    errors = compare(per_rank, ep, args.tokens)
    if rank == 0:
        dropped = sum(r["dropped"] for r in per_rank)
        for name, worst in errors.items():
            verdict = "ok" if worst != float("inf") else "MISMATCH"
            print(f"{name:<11} world_size={world_size} ep={ep} dropped={dropped} "
                  f"max|got - reference|={worst:.2g} {verdict}")  # fmt: skip
        sys.stdout.flush()
    return 0 if all(v != float("inf") for v in errors.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
