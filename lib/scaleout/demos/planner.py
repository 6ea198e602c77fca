"""A 2 x 2 x 2 (data x pipeline x tensor) mesh on 8 processes, checked against one process.

Run it under torchrun (gloo on CPU by default; ``--backend nccl`` puts every tensor on
``cuda:LOCAL_RANK``, eight GPUs)::

    torchrun --standalone --nproc-per-node 8 -m scaleout.demos.planner [--backend nccl]

or, from a notebook or a test, the same worker on forked CPU processes::

    from scaleout.dist import run
    from scaleout.demos.planner import train_3d
    run(train_3d, 8)          # one dict per rank: losses and errors against one process

The process groups come from one rank layout, :class:`scaleout.mesh.Mesh` in Megatron-Core's
order (``megatron/core/parallel_state.py``: tensor ranks adjacent, then data, then
pipeline; rank = t + T (d + D p)), the layout the planner prices. The model
is a stack of ``pp`` residual MLP blocks (the MLP half of a transformer layer), one per
pipeline stage; each block is split over the tensor group as in Megatron (Shoeybi et al.
2019, Sec. 3: first weight by columns, second by rows, operators f and g); micro-batches
run in GPipe order (all forwards, then all backwards) with ``dist.send``/``dist.recv``
between stages; gradients are summed over the data group. Float64 throughout, so equal
means an error below 1e-10. The exit status is non-zero on any mismatch.
"""

from __future__ import annotations

import argparse
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

from scaleout.demos.common import BACKENDS, default_device, init_from_env
from scaleout.mesh import Mesh

TOLERANCE = 1e-10


def train_3d(rank, world_size, dp=2, pp=2, tp=2, batch=8, hidden=8, steps=3, lr=0.1,
             device=None):  # fmt: skip
    """One rank of the 3D run; returns its losses and its errors against one process.
    ``device``: where this rank's tensors live (default: the CPU; ``cuda:k`` under nccl)."""
    dev = torch.device("cpu") if device is None else device
    torch.manual_seed(0)  # every rank draws the same full weights and data (on the host)
    w1 = [torch.randn(hidden, 2 * hidden, dtype=torch.float64) / hidden**0.5 for _ in range(pp)]
    w2 = [torch.randn(2 * hidden, hidden, dtype=torch.float64) / hidden**0.5 for _ in range(pp)]
    x, y = torch.randn(batch, hidden, dtype=torch.float64), torch.randn(batch, hidden).double()
    w1, w2 = [w.to(dev) for w in w1], [w.to(dev) for w in w2]
    x, y = x.to(dev), y.to(dev)

    # One process: the reference, full batch, plain SGD on the mean squared error.
    ref = [w.clone().requires_grad_() for w in w1 + w2]
    ref_losses = []
    for _ in range(steps):
        h = x
        for j in range(pp):
            h = h + F.gelu(h @ ref[j]) @ ref[pp + j]
        loss = ((h - y) ** 2).mean()
        ref_losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            for w in ref:
                w -= lr * w.grad
                w.grad = None

    # The mesh: Megatron-Core's rank order (tensor ranks adjacent, then data, then pipeline),
    # the one the planner prices. Every rank creates every group, in the same order.
    mesh = Mesh(tp=tp, dp=dp, pp=pp)
    assert mesh.size == world_size
    me = mesh.coords(rank)
    i, j, k = me["dp"], me["pp"], me["tp"]  # my dp, pp, tp coordinates
    groups = {}
    for name in ("tp", "pp", "dp"):
        for ranks in mesh.groups(name):
            group = dist.new_group(ranks)
            if rank in ranks:
                groups[name] = (group, ranks)
    print(f"(dp, pp, tp) = ({i}, {j}, {k}); tensor group {groups['tp'][1]}, "
          f"pipeline group {groups['pp'][1]}, data group {groups['dp'][1]}")  # fmt: skip
    tp_group, dp_group = groups["tp"][0], groups["dp"][0]

    class F_op(torch.autograd.Function):  # identity forward, all-reduce backward
        @staticmethod
        def forward(ctx, a):
            return a

        @staticmethod
        def backward(ctx, grad):
            grad = grad.clone()
            dist.all_reduce(grad, group=tp_group)
            return grad

    class G_op(torch.autograd.Function):  # all-reduce forward, identity backward
        @staticmethod
        def forward(ctx, a):
            a = a.clone()
            dist.all_reduce(a, group=tp_group)
            return a

        @staticmethod
        def backward(ctx, grad):
            return grad

    cols = slice(k * 2 * hidden // tp, (k + 1) * 2 * hidden // tp)
    my_w1 = w1[j][:, cols].clone().requires_grad_()  # (h, 2h/t): column split
    my_w2 = w2[j][cols, :].clone().requires_grad_()  # (2h/t, h): row split
    rows = slice(i * batch // dp, (i + 1) * batch // dp)  # my data shard
    micro = (batch // dp) // 2  # two micro-batches per step
    prev = None if j == 0 else mesh.rank(dp=i, pp=j - 1, tp=k)
    nxt = None if j == pp - 1 else mesh.rank(dp=i, pp=j + 1, tp=k)

    losses = []
    for _ in range(steps):
        inputs, outputs, total = [], [], torch.zeros((), dtype=torch.float64, device=dev)
        for mb in range(2):  # forwards
            if prev is None:
                h_in = x[rows][mb * micro : (mb + 1) * micro]
            else:
                h_in = torch.empty(micro, hidden, dtype=torch.float64, device=dev)
                dist.recv(h_in, src=prev)
                h_in.requires_grad_()
            h_out = h_in + G_op.apply(F.gelu(F_op.apply(h_in) @ my_w1) @ my_w2)  # (b, h)
            if nxt is not None:
                dist.send(h_out.detach(), dst=nxt)
            else:
                target = y[rows][mb * micro : (mb + 1) * micro]
                h_out = ((h_out - target) ** 2).sum() / (batch * hidden)  # this share of the mean
                total += h_out.detach()
            inputs.append(h_in)
            outputs.append(h_out)
        for mb in range(2):  # backwards
            if nxt is None:
                outputs[mb].backward()
            else:
                grad = torch.empty(micro, hidden, dtype=torch.float64, device=dev)
                dist.recv(grad, src=nxt)
                outputs[mb].backward(grad)
            if prev is not None:
                dist.send(inputs[mb].grad, dst=prev)
        for w in (my_w1, my_w2):  # data parallelism: sum the gradient shares
            dist.all_reduce(w.grad, group=dp_group)
        with torch.no_grad():
            for w in (my_w1, my_w2):
                w -= lr * w.grad
                w.grad = None
        dist.all_reduce(total, group=dp_group)  # the last stage's loss, whole batch
        losses.append(total.item())

    err_w = max(
        (my_w1 - ref[j][:, cols]).abs().max().item(),
        (my_w2 - ref[pp + j][cols, :]).abs().max().item(),
    )
    last = j == pp - 1
    err_loss = max(abs(a - b) for a, b in zip(losses, ref_losses, strict=True)) if last else 0.0
    return {
        "coords": (i, j, k),
        "losses": losses if last else None,
        "reference_losses": ref_losses,
        "weight_error": err_w,
        "loss_error": err_loss,
    }


def main(argv=None) -> int:
    """Entry point under torchrun; returns the exit status (0: the mesh equals one process)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=BACKENDS, default="gloo")
    parser.add_argument("--timeout-s", type=float, default=60.0, help="per-collective limit")
    args = parser.parse_args(argv)
    rank, world = init_from_env(args.backend, args.timeout_s)
    if world != 8:
        raise SystemExit(f"run with --nproc-per-node 8 (a 2 x 2 x 2 mesh), got {world}")
    device = default_device()  # collectives take tensors on the backend's device (nccl: CUDA)
    out = train_3d(rank, world, device=device)
    ok = out["weight_error"] < TOLERANCE and out["loss_error"] < TOLERANCE
    flags = torch.tensor([0 if ok else 1], device=device)
    dist.all_reduce(flags)
    if rank == world - 1:
        print(f"losses {[round(v, 10) for v in out['losses']]}")
        print(f"reference {[round(v, 10) for v in out['reference_losses']]}")
    if rank == 0:
        print("3D run equals one process" if flags.item() == 0 else "MISMATCH")
    dist.barrier()
    dist.destroy_process_group()
    return int(flags.item())


if __name__ == "__main__":
    sys.exit(main())
