"""ZeRO on real processes, each run checked against unsharded single-process Adam.

Run it under torchrun (gloo on CPU by default; ``--backend nccl`` uses ``cuda:LOCAL_RANK``)::

    torchrun --standalone --nproc-per-node 4 -m scaleout.demos.zero [--steps 5]

or, from a notebook, the same worker functions on forked CPU processes::

    from scaleout.dist import run
    from scaleout.demos.zero import train_zero1
    run(train_zero1, 4, kwargs={"steps": 5})     # one dict per rank

Three runs of the same seeded MLP on the same data (each rank trains on its slice of a
global batch):

* ``zero1``: ``torch.distributed.optim.ZeroRedundancyOptimizer`` wrapping Adam under DDP
  (ZeRO stage 1: optimizer states sharded, whole tensors per rank), next to plain DDP + Adam;
* ``zero3``: a hand-written ZeRO-3 step: every layer's flat parameters are sharded; the
  forward and the backward all-gather a layer just before using it and drop the full copy
  after; the weight gradient is reduce-scattered; Adam updates the local shard only;
* ``fsdp``: PyTorch's FSDP2 (``torch.distributed.fsdp.fully_shard``) on every layer.

Each must end with the parameters of single-process Adam on the whole batch (to float32
rounding). Rank 0 prints one line per run ending in ``ok`` or ``MISMATCH``, then each
rank's optimizer-state bytes under ZeRO-1 next to the prediction of
:func:`scaleout.memory.greedy_partition`. The chapter "ZeRO sharding" runs the same code.
"""

from __future__ import annotations

import argparse
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

from scaleout.demos.common import BACKENDS, default_device, init_from_env
from scaleout.memory import greedy_partition

DIMS = (32, 64, 64, 64, 64, 10)  # layer widths: 5 Linear layers, ReLU between them
BATCH_PER_RANK = 8
LR = 1e-3
RUNS = ("zero1", "zero3", "fsdp")
RTOL, ATOL = 1.3e-6, 1e-5  # torch.testing.assert_close's float32 defaults


def make_model(dims=DIMS, seed: int = 0) -> nn.Sequential:
    """The seeded MLP every run starts from (identical on every rank)."""
    torch.manual_seed(seed)
    layers = []
    for i, (a, b) in enumerate(zip(dims, dims[1:], strict=False)):
        layers.append(nn.Linear(a, b))
        if i < len(dims) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def make_data(world_size: int, steps: int, seed: int = 1, dims=DIMS):
    """(inputs, targets) of shape (steps, world_size * BATCH_PER_RANK, width): one global
    batch per step; rank r trains on rows [r * B, (r + 1) * B)."""
    g = torch.Generator().manual_seed(seed)
    n = world_size * BATCH_PER_RANK
    return torch.randn(steps, n, dims[0], generator=g), torch.randn(steps, n, dims[-1], generator=g)


def loss_fn(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return ((out - target) ** 2).mean()


def reference_adam(world_size: int, steps: int, lr: float = LR) -> list[torch.Tensor]:
    """Parameters after ``steps`` of single-process Adam on the whole global batch."""
    model = make_model()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    xs, ys = make_data(world_size, steps)
    for x, y in zip(xs, ys, strict=True):
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def _mine(t: torch.Tensor, rank: int) -> torch.Tensor:
    return t[rank * BATCH_PER_RANK : (rank + 1) * BATCH_PER_RANK]


def tensor_bytes(state: dict) -> int:
    """Bytes of every tensor in an optimizer's ``state`` (local shards of DTensors)."""
    total = 0
    for per_param in state.values():
        for t in per_param.values():
            if torch.is_tensor(t):
                t = t.to_local() if hasattr(t, "to_local") else t
                total += t.numel() * t.element_size()
    return total


def train_zero1(rank: int, world_size: int, steps: int = 5, lr: float = LR) -> dict:
    """Plain DDP + Adam and DDP + ZeroRedundancyOptimizer(Adam), side by side.

    Returns ``params`` (ZeRO-1) and ``ddp_params`` (plain DP) on the CPU, and this rank's
    optimizer-state bytes under each (``state_bytes``, ``ddp_state_bytes``).
    """
    from torch.distributed.optim import ZeroRedundancyOptimizer
    from torch.nn.parallel import DistributedDataParallel as DDP

    device = default_device()
    ids = [device.index] if device.type == "cuda" else None
    plain, zero = (DDP(make_model().to(device), device_ids=ids) for _ in range(2))
    opt_plain = torch.optim.Adam(plain.parameters(), lr=lr)
    opt_zero = ZeroRedundancyOptimizer(zero.parameters(), optimizer_class=torch.optim.Adam, lr=lr)
    xs, ys = make_data(world_size, steps)
    for x, y in zip(xs, ys, strict=True):
        x, y = _mine(x, rank).to(device), _mine(y, rank).to(device)
        for model, opt in ((plain, opt_plain), (zero, opt_zero)):
            opt.zero_grad()
            loss_fn(model(x), y).backward()  # DDP all-reduces (averages) the gradients
            opt.step()  # ZeRO-1: update own tensors, then broadcast them to the others
    return {
        "params": [p.detach().cpu().clone() for p in zero.module.parameters()],
        "ddp_params": [p.detach().cpu().clone() for p in plain.module.parameters()],
        "state_bytes": tensor_bytes(opt_zero.optim.state),
        "ddp_state_bytes": tensor_bytes(opt_plain.state),
    }


def _all_gather(shard: torch.Tensor, world_size: int) -> torch.Tensor:
    full = torch.empty(world_size * shard.numel(), dtype=shard.dtype, device=shard.device)
    dist.all_gather_single(full, shard.detach().contiguous())
    return full


class ShardedLinear(torch.autograd.Function):
    """y = x W^T + b where this rank holds only ``shard``, its 1/p of the flat [W, b]."""

    @staticmethod
    def forward(ctx, x, shard, out_f, in_f, world_size):
        """All-gather the layer, compute ``x W^T + b``, keep only ``x`` and the shard."""
        full = _all_gather(shard, world_size)  # (p * shard,): the whole layer, briefly
        w = full[: out_f * in_f].view(out_f, in_f)
        b = full[out_f * in_f : out_f * in_f + out_f]
        ctx.save_for_backward(x, shard)  # not the full weights: they are freed on return
        ctx.dims = (out_f, in_f, world_size)
        return x @ w.T + b

    @staticmethod
    def backward(ctx, grad_y):
        """All-gather again; return the input gradient and this rank's summed, averaged
        shard of the weight gradient (reduce-scatter)."""
        x, shard = ctx.saved_tensors
        out_f, in_f, p = ctx.dims
        full = _all_gather(shard, p)  # gathered again for the backward
        grad_x = grad_y @ full[: out_f * in_f].view(out_f, in_f)
        grad_full = torch.zeros_like(full)
        grad_full[: out_f * in_f] = (grad_y.T @ x).reshape(-1)  # this rank's own gradient
        grad_full[out_f * in_f : out_f * in_f + out_f] = grad_y.sum(0)
        grad_shard = torch.empty_like(shard)
        dist.reduce_scatter_single(grad_shard, grad_full)  # sum over ranks, keep own shard
        return grad_x, grad_shard / p, None, None, None


def shard_layers(model: nn.Sequential, rank: int, world_size: int) -> list[tuple]:
    """(shard parameter, out_features, in_features) of each Linear: rank's 1/p of the flat
    [W, b], zero-padded so that p divides it."""
    shards = []
    for layer in model:
        if isinstance(layer, nn.Linear):
            flat = torch.cat([layer.weight.detach().reshape(-1), layer.bias.detach()])
            flat = torch.cat([flat, flat.new_zeros(-flat.numel() % world_size)])
            shard = nn.Parameter(flat.view(world_size, -1)[rank].clone())
            shards.append((shard, layer.out_features, layer.in_features))
    return shards


def train_zero3(rank: int, world_size: int, steps: int = 5, lr: float = LR) -> dict:
    """The hand-written ZeRO-3 step. Returns the full parameters (gathered at the end, in
    ``model.parameters()`` order), this rank's bytes of each kind of state, and the elements
    each collective carried."""
    device = default_device()
    shards = shard_layers(make_model().to(device), rank, world_size)
    opt = torch.optim.Adam([s for s, _, _ in shards], lr=lr)
    xs, ys = make_data(world_size, steps)
    for x, y in zip(xs, ys, strict=True):
        h = _mine(x, rank).to(device)
        for i, (shard, out_f, in_f) in enumerate(shards):
            h = ShardedLinear.apply(h, shard, out_f, in_f, world_size)
            h = torch.relu(h) if i < len(shards) - 1 else h
        opt.zero_grad()
        loss_fn(h, _mine(y, rank).to(device)).backward()
        opt.step()  # Adam on this rank's shards only
    params = []
    for shard, out_f, in_f in shards:
        full = _all_gather(shard, world_size).cpu()
        params += [full[: out_f * in_f].view(out_f, in_f), full[out_f * in_f :][:out_f]]
    held = {
        "parameters": sum(s.numel() * s.element_size() for s, _, _ in shards),
        "gradients": sum(s.grad.numel() * s.grad.element_size() for s, _, _ in shards),
        "optimizer states": tensor_bytes(opt.state),
    }
    padded = sum(s.numel() for s, _, _ in shards) * world_size
    return {"params": params, "state_bytes": held, "padded_params": padded}


def train_fsdp(rank: int, world_size: int, steps: int = 5, lr: float = LR) -> dict:
    """FSDP2: ``fully_shard`` each Linear, then the root. Returns the full parameters and
    this rank's local bytes of parameters, gradients and optimizer states."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    device = default_device()
    mesh = init_device_mesh(device.type, (world_size,))
    model = make_model().to(device)
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)  # parameters become DTensors sharded on dim 0
    fully_shard(model, mesh=mesh)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    xs, ys = make_data(world_size, steps)
    for x, y in zip(xs, ys, strict=True):
        opt.zero_grad()
        loss_fn(model(_mine(x, rank).to(device)), _mine(y, rank).to(device)).backward()
        opt.step()
    local = [p.to_local() for p in model.parameters()]
    grads = [p.grad.to_local() for p in model.parameters()]
    held = {
        "parameters": sum(t.numel() * t.element_size() for t in local),
        "gradients": sum(t.numel() * t.element_size() for t in grads),
        "optimizer states": tensor_bytes(opt.state),
    }
    params = [p.full_tensor().detach().cpu() for p in model.parameters()]
    return {"params": params, "state_bytes": held}


def max_error(params, reference) -> float:
    """Largest ``abs(a - b)`` over all parameters; inf if a tensor lies outside assert_close's
    float32 tolerance."""
    worst = 0.0
    for a, b in zip(params, reference, strict=True):
        if a.shape != b.shape or not torch.allclose(a, b, rtol=RTOL, atol=ATOL):
            return float("inf")
        worst = max(worst, float((a - b).abs().max()))
    return worst


def predicted_zero1_bytes(world_size: int) -> list[int]:
    """Optimizer-state bytes per rank that ZeroRedundancyOptimizer(Adam) should hold: its
    greedy partition of whole tensors (:func:`scaleout.memory.greedy_partition`), 8 bytes
    per element (exp_avg, exp_avg_sq in fp32) plus a 4-byte ``step`` per tensor."""
    sizes = [p.numel() for p in make_model().parameters()]
    owner, elements = greedy_partition(sizes, world_size)
    tensors = [int((owner == r).sum()) for r in range(world_size)]
    return [8 * int(e) + 4 * t for e, t in zip(elements, tensors, strict=True)]


def check_all(rank: int, world_size: int, steps: int = 5, runs=RUNS) -> dict:
    """Run ``runs`` and compare with :func:`reference_adam`; every rank returns
    ``{run: max error}`` (inf: mismatch) and its ZeRO-1 optimizer-state bytes."""
    reference = reference_adam(world_size, steps)
    train = {"zero1": train_zero1, "zero3": train_zero3, "fsdp": train_fsdp}
    errors, zero1_bytes = {}, None
    for name in runs:
        out = train[name](rank, world_size, steps)
        errors[name] = max_error(out["params"], reference)
        if name == "zero1":
            errors["ddp"] = max_error(out["ddp_params"], reference)
            zero1_bytes = out["state_bytes"]
    return {"errors": errors, "zero1_state_bytes": zero1_bytes}


def main(argv: list[str] | None = None) -> int:
    """Entry point under torchrun; returns the exit status (0: every run matches)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=BACKENDS, default="gloo")
    parser.add_argument("--steps", type=int, default=5, help="training steps (>= 1)")
    parser.add_argument("--runs", nargs="+", choices=RUNS, default=list(RUNS))
    parser.add_argument("--timeout-s", type=float, default=120.0, help="per-collective limit")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps must be >= 1, got {args.steps}")
    rank, world_size = init_from_env(args.backend, args.timeout_s)
    try:
        result = check_all(rank, world_size, args.steps, args.runs)
        per_rank = [None] * world_size
        dist.all_gather_object(per_rank, result)
    finally:
        dist.destroy_process_group()
    ok = all(r["errors"][k] != float("inf") for r in per_rank for k in r["errors"])
    if rank == 0:
        for name in per_rank[0]["errors"]:
            worst = max(r["errors"][name] for r in per_rank)
            verdict = "ok" if worst != float("inf") else "MISMATCH"
            print(f"{name:<6} world_size={world_size} steps={args.steps} "
                  f"max|param - reference|={worst:.2g} {verdict}")  # fmt: skip
        if "zero1" in args.runs:
            predicted = predicted_zero1_bytes(world_size)
            for r, res in enumerate(per_rank):
                measured = res["zero1_state_bytes"]
                verdict = "ok" if measured == predicted[r] else "MISMATCH"
                ok = ok and measured == predicted[r]
                print(f"zero1 rank {r}: optimizer-state bytes {measured} "
                      f"(predicted {predicted[r]}) {verdict}")  # fmt: skip
        sys.stdout.flush()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
