"""Data-parallel training on real processes, checked against one process on the whole batch.

Run it under torchrun (gloo on CPU by default; ``--backend nccl`` uses ``cuda:LOCAL_RANK``)::

    torchrun --standalone --nproc-per-node 4 -m scaleout.demos.data_parallel [--steps 3]

or, from a notebook, the same worker on forked CPU processes::

    from scaleout.dist import run
    from scaleout.demos.data_parallel import check_data_parallel
    run(check_data_parallel, 4, kwargs={"steps": 3})      # one report dict per rank

A small seeded MLP is trained for a few SGD steps three ways: with a hand-written gradient
all-reduce after the backward pass, with ``torch.nn.parallel.DistributedDataParallel``, and
with DDP plus gradient accumulation under ``no_sync``. Each rank also trains the model
alone on the whole global batch (the reference); every way must give the same parameters
(``torch.testing.assert_close``). DDP's buckets, seen through a communication hook, must be
those of :func:`scaleout.data_parallel.ddp_buckets` (one bucket in the first iteration, the
rebuilt ones after it), and the number of bucket all-reduces must be the one the chapter
predicts. Two steps under bf16 autocast check what the buckets cost: fp32 buffers, a second
copy of the gradients unless ``gradient_as_bucket_view=True``
(:func:`scaleout.data_parallel.gradient_memory`), rebuilt in the order the gradients
arrived. Rank 0 prints one line per check; the exit status is non-zero on any mismatch.
The chapter "Data parallelism" runs the same steps in its cells.
"""

from __future__ import annotations

import argparse
import contextlib
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel as DDP

from scaleout.data_parallel import ddp_buckets, gradient_memory
from scaleout.demos.common import BACKENDS, default_device, init_from_env

WIDTHS = (64, 256, 256, 256, 10)  # the chapter's MLP: 4 Linear layers, 8 parameter tensors
LR = 0.1


def make_model(seed: int = 0) -> nn.Sequential:
    """The MLP ``WIDTHS``, with ReLUs between its Linear layers, initialised from ``seed``."""
    torch.manual_seed(seed)
    layers = []
    for i, (a, b) in enumerate(zip(WIDTHS[:-1], WIDTHS[1:], strict=True)):
        layers += [nn.Linear(a, b)] + ([nn.ReLU()] if i < len(WIDTHS) - 2 else [])
    return nn.Sequential(*layers)


def make_batches(steps: int, batch: int, seed: int = 1) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``steps`` global batches (inputs (batch, 64), class labels (batch,)), seeded."""
    g = torch.Generator().manual_seed(seed)
    return [
        (
            torch.randn(batch, WIDTHS[0], generator=g),
            torch.randint(0, WIDTHS[-1], (batch,), generator=g),
        )
        for _ in range(steps)
    ]


def train_single(steps: int, batch: int, device=None) -> list[torch.Tensor]:
    """The reference: one process, SGD on each whole global batch; final parameters."""
    model = make_model().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    for x, y in make_batches(steps, batch):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x.to(device)), y.to(device)).backward()
        opt.step()
    return [p.detach() for p in model.parameters()]


def _shard(x, y, rank, world_size, device):
    return x.chunk(world_size)[rank].to(device), y.chunk(world_size)[rank].to(device)


def train_handwritten(rank: int, world_size: int, steps: int, batch: int) -> list[torch.Tensor]:
    """Each rank: its shard, backward, then one all-reduce per gradient and a division."""
    device = default_device()
    model = make_model().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    for x, y in make_batches(steps, batch):
        xs, ys = _shard(x, y, rank, world_size, device)
        opt.zero_grad()
        nn.functional.cross_entropy(model(xs), ys).backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)  # sum over ranks ...
            p.grad /= world_size  # ... divided by p: the average gradient
        opt.step()
    return [p.detach() for p in model.parameters()]


def train_ddp(
    rank: int,
    world_size: int,
    steps: int,
    batch: int,
    k: int = 1,
    no_sync: bool = True,
    bucket_cap_mb: float | None = None,
):
    """DDP training with ``k`` micro-steps per optimizer step; returns (parameters, log).

    ``log`` lists, per bucket all-reduce, the names of the bucket's parameters (a comm hook
    records them, then runs DDP's default ``allreduce_hook``)."""
    device = default_device()
    model = DDP(make_model().to(device), bucket_cap_mb=bucket_cap_mb)
    names = {id(p): n for n, p in model.module.named_parameters()}
    log = []

    def logging_allreduce(state, bucket):
        log.append([names[id(p)] for p in bucket.parameters()])
        return allreduce_hook(state, bucket)

    model.register_comm_hook(None, logging_allreduce)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    for x, y in make_batches(steps, batch):
        xs, ys = _shard(x, y, rank, world_size, device)
        opt.zero_grad()
        for j, (xm, ym) in enumerate(zip(xs.chunk(k), ys.chunk(k), strict=True)):
            quiet = no_sync and j < k - 1
            with model.no_sync() if quiet else contextlib.nullcontext():
                (nn.functional.cross_entropy(model(xm), ym) / k).backward()
        opt.step()
    return [p.detach() for p in model.module.parameters()], log


def _param_bytes() -> list[int]:
    return [p.numel() * p.element_size() for p in make_model().parameters()]


def _names(indices_per_bucket) -> list[list[str]]:
    names = [name for name, _ in make_model().named_parameters()]
    return [[names[i] for i in bucket] for bucket in indices_per_bucket]


def expected_buckets(bucket_cap_mb: float | None, arrival_order=None) -> list[list[str]]:
    """The rebuilt buckets :func:`scaleout.data_parallel.ddp_buckets` predicts for
    :func:`make_model` (gradients arriving in ``arrival_order``, default reverse
    registration order), as lists of parameter names."""
    buckets = ddp_buckets(_param_bytes(), bucket_cap_mb, arrival_order=arrival_order)
    return _names(buckets.params)


def expected_log(bucket_cap_mb: float | None, synced_backwards: int) -> list[list[str]]:
    """The bucket all-reduces DDP makes in ``synced_backwards`` synchronised backward passes:
    the first uses one bucket of every parameter in registration order; DDP then rebuilds
    its buckets in the order the gradients arrived (reverse registration order here), and
    every later pass all-reduces those, bucket 0 first."""
    first = _names(ddp_buckets(_param_bytes(), bucket_cap_mb, rebuilt=False).params)
    return first + expected_buckets(bucket_cap_mb) * (synced_backwards - 1)


def inspect_buckets(rank: int, world_size: int, bucket_cap_mb: float = 0.25, **ddp_options):
    """Two DDP steps under bf16 autocast: (buffer dtypes, bytes held by the gradients and
    the bucket buffers together, step 2's buckets, the order the gradients arrived)."""
    device = default_device()
    model = DDP(make_model().to(device), bucket_cap_mb=bucket_cap_mb, **ddp_options)
    names = {id(p): n for n, p in model.module.named_parameters()}
    buffers, order, arrival = {}, [], []

    def keep_buffer(state, bucket):
        buffers[bucket.index()] = bucket.buffer()
        order.append([names[id(p)] for p in bucket.parameters()])
        return allreduce_hook(state, bucket)

    model.register_comm_hook(None, keep_buffer)
    for p in model.parameters():
        p.register_post_accumulate_grad_hook(lambda p: arrival.append(names[id(p)]))
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    x, y = make_batches(1, 8 * world_size)[0]
    xs, ys = _shard(x, y, rank, world_size, device)
    for _ in range(2):
        opt.zero_grad()
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(model(xs), ys)
        loss.backward()
        opt.step()
    tensors = [p.grad for p in model.parameters()] + list(buffers.values())
    held = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}
    dtypes = sorted({str(b.dtype) for b in buffers.values()})
    return dtypes, sum(held.values()), order[-len(buffers) :], arrival[: len(names)]


def check_bucket_memory(rank: int, world_size: int, bucket_cap_mb: float = 0.25) -> dict:
    """``inspect_buckets`` with and without ``gradient_as_bucket_view``, against the library:
    per setting, (dtypes are float32, bytes held == gradient_memory, buckets == ddp_buckets
    in the observed arrival order)."""
    grads = sum(_param_bytes())
    names = [name for name, _ in make_model().named_parameters()]
    report = {}
    for view in (False, True):
        dtypes, held, buckets, arrival = inspect_buckets(
            rank, world_size, bucket_cap_mb, gradient_as_bucket_view=view
        )
        order = [names.index(n) for n in arrival]
        report[f"bucket_view={view}"] = (
            dtypes == ["torch.float32"],
            held == gradient_memory(grads, gradient_as_bucket_view=view).total_bytes,
            buckets == expected_buckets(bucket_cap_mb, order),
        )
    return report


def _max_error(got, want) -> float:
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b)  # raises, with a clear message, if they differ
    return max(float((a - b).abs().max()) for a, b in zip(got, want, strict=True))


def check_data_parallel(
    rank: int,
    world_size: int,
    steps: int = 3,
    batch: int = 64,
    k: int = 4,
    bucket_cap_mb: float = 0.25,
) -> dict:
    """Every check of the demo on this rank; returns a report dict (same on every rank).

    Needs an initialised default process group and ``batch`` divisible by
    ``world_size * k``. Keys ``handwritten``, ``ddp``, ``no_sync`` (k micro-steps, all but
    the last under ``no_sync``) and ``sync_every_micro_step``: the largest absolute
    difference between a parameter and the reference's, after ``assert_close`` passed.
    ``allreduces_<key>``: (bucket all-reduces made, expected by :func:`expected_log`,
    whether every all-reduced bucket is the predicted one). ``buckets``: the library's
    buckets, as parameter names.
    """
    if batch % (world_size * k):
        raise ValueError(f"batch must be divisible by world_size * k = {world_size * k}")
    reference = train_single(steps, batch, default_device())
    report = {
        "handwritten": _max_error(train_handwritten(rank, world_size, steps, batch), reference)
    }
    runs = {"ddp": (1, True), "no_sync": (k, True), "sync_every_micro_step": (k, False)}
    for key, (micro, no_sync) in runs.items():
        params, log = train_ddp(rank, world_size, steps, batch, micro, no_sync, bucket_cap_mb)
        report[key] = _max_error(params, reference)
        want = expected_log(bucket_cap_mb, steps if no_sync else steps * micro)
        report[f"allreduces_{key}"] = (len(log), len(want), log == want)
    report["buckets"] = expected_buckets(bucket_cap_mb)
    report["memory"] = check_bucket_memory(rank, world_size, bucket_cap_mb)
    return report


def report_lines(report: dict, world_size: int) -> list[str]:
    """One line per check, ending in ``ok`` or ``MISMATCH``."""
    lines = [f"buckets (library)      {report['buckets']}"]
    for key in ("handwritten", "ddp", "no_sync", "sync_every_micro_step"):
        line = f"{key:<22} world_size={world_size} max|param - reference|={report[key]:.1e}"
        if key != "handwritten":
            got, want, same = report[f"allreduces_{key}"]
            line += f" bucket all-reduces={got} (expected {want}, buckets as predicted: {same})"
            line += " ok" if same and got == want else " MISMATCH"
        else:
            line += " ok"
        lines.append(line)
    for key, (fp32, held, buckets) in report["memory"].items():
        ok = fp32 and held and buckets
        lines.append(
            f"autocast, {key:<18} fp32 buckets: {fp32}, bytes held as predicted: {held}, "
            f"rebuilt in arrival order as predicted: {buckets} {'ok' if ok else 'MISMATCH'}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    """Entry point under torchrun; returns the exit status (0: every check passed)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=BACKENDS, default="gloo")
    parser.add_argument("--steps", type=int, default=3, help="optimizer steps (>= 1)")
    parser.add_argument("--batch", type=int, default=64, help="global batch size")
    parser.add_argument("--accumulation", type=int, default=4, help="micro-steps per step")
    parser.add_argument("--bucket-cap-mb", type=float, default=0.25, help="DDP bucket cap, MiB")
    parser.add_argument("--timeout-s", type=float, default=60.0, help="per-collective limit")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.accumulation < 1 or args.bucket_cap_mb <= 0:
        parser.error("--steps and --accumulation must be >= 1, --bucket-cap-mb > 0")
    rank, world_size = init_from_env(args.backend, args.timeout_s)
    try:
        report = check_data_parallel(
            rank, world_size, args.steps, args.batch, args.accumulation, args.bucket_cap_mb
        )
    finally:
        dist.destroy_process_group()
    lines = report_lines(report, world_size)
    if rank == 0:
        print("\n".join(lines), flush=True)
    return 0 if not any(line.endswith("MISMATCH") for line in lines) else 1


if __name__ == "__main__":
    sys.exit(main())
