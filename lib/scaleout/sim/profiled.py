"""Real runs under ``torch.profiler``, for the replay (:mod:`scaleout.sim.replay`).

* :func:`pipeline_rank` - one rank of a gloo pipeline step (:mod:`scaleout.demos.pipeline`,
  any of its schedules), each operation's compute inside ``torch.profiler.record_function``
  ('F3', 'B3', 'W3'; 'F3c1' for chunk 1), profiled on the CPU; returns the operations read
  back from the profiler's Chrome trace, in the order they ran.
* :func:`ddp_rank` - one rank of a DistributedDataParallel step, optionally with one rank's
  backward slowed by a ``time.sleep``: its forward, backward and all-reduce under the
  profiler, and the wall time of the same step with DDP's all-reduce in the backward.
* :func:`operations` - the named operations of a Chrome trace (what
  ``torch.profiler.profile.export_chrome_trace`` writes), as (name, start_s, end_s) on the
  wall clock (the trace's ``baseTimeNanoseconds`` plus each event's ``ts``), so the traces
  of the processes of one machine line up.

Run the rank functions with :func:`scaleout.dist.run` (forked processes, gloo), after
:func:`warm_up` in the parent: the profiler's first start imports much of torch (its compiler
stack), seconds per process, which the forked ranks then inherit instead of each repeating.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import time

from .. import checks

#: The operation names the pipeline ranks record (kind, micro-batch, optional chunk).
OP_NAME = re.compile(r"^(F|B|W|BW)(\d+)(c\d+)?$")
DDP_NAMES = ("forward", "backward", "allreduce", "optimizer")
MAX_EVENTS = 1 << 20


def operations(trace, names=None) -> list[tuple[str, float, float]]:
    """The complete events (``ph: "X"``) of Chrome ``trace`` (a dict with ``traceEvents``)
    whose name is in ``names`` (default: pipeline operation names, :data:`OP_NAME`), as
    (name, start_s, end_s) sorted by start, in seconds on the trace's clock plus its
    ``baseTimeNanoseconds``."""
    if not isinstance(trace, dict) or not isinstance(trace.get("traceEvents"), list):
        raise checks.fail("trace", "a Chrome trace dict with a 'traceEvents' list", type(trace))
    events = trace["traceEvents"]
    if len(events) > MAX_EVENTS:
        raise checks.fail("trace", f"at most {MAX_EVENTS} events", len(events))
    if names is not None and (not isinstance(names, list | tuple | set | frozenset)
                              or not all(isinstance(n, str) for n in names)):  # fmt: skip
        raise checks.fail("names", "None or a collection of strings", names)
    base = trace.get("baseTimeNanoseconds", 0)
    base = checks.nonnegative("trace baseTimeNanoseconds", base, 1e20) * 1e-9
    out = []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X" or not isinstance(e.get("name"), str):
            continue
        name = e["name"]
        if (name not in names) if names is not None else not OP_NAME.match(name):
            continue
        ts = checks.real("an event's ts", e.get("ts"), -1e18, 1e18) * 1e-6
        dur = checks.nonnegative("an event's dur", e.get("dur"), 1e15) * 1e-6
        out.append((name, base + ts, base + ts + dur))
    out.sort(key=lambda x: (x[1], x[0]))
    return out


@contextlib.contextmanager
def _quiet_stderr():
    """File descriptor 2 to /dev/null inside the block: the profiler's C++ side logs each
    start and stop there, with a timestamp."""
    import sys

    sys.stderr.flush()
    saved, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)


def warm_up() -> None:
    """Start and stop a CPU profiler once in this process (see the module docstring),
    quietly."""
    from torch.profiler import ProfilerActivity, profile

    with _quiet_stderr(), profile(activities=[ProfilerActivity.CPU]):
        pass


@contextlib.contextmanager
def _profiled():
    """A CPU ``torch.profiler`` session; yields a list that holds the Chrome trace (a dict)
    once the block ends."""
    from torch.profiler import ProfilerActivity, profile

    box: list = []
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        yield box
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            box.append(json.load(f))
    finally:
        os.unlink(path)


def pipeline_rank(rank, world_size, name="1f1b", m=8, width=256, batch=64, seed=0) -> dict:
    """One profiled step of schedule ``name`` on this rank (after an unprofiled warm-up
    step): ``ops`` (name, start_s, end_s) in the order they ran, from the profiler's trace,
    and ``log``, the demo's own record of its order."""
    import torch.distributed as dist
    from torch.profiler import record_function

    from ..demos import pipeline as D

    v = 2 if name in ("interleaved", "zb-v", "dualpipe-v") else 1
    blocks = D.build_blocks(world_size * v, width, seed)
    x, y = D.make_batch(batch, width, seed + 1)
    D.run_schedule(D.Stage(rank, world_size, m, v, blocks, x, y), name)  # warm-up
    dist.barrier()
    stage = D.Stage(rank, world_size, m, v, blocks, x, y)
    stage.span = record_function
    with _profiled() as box:
        dist.barrier()  # every rank's profiler is running before the step starts
        D.run_schedule(stage, name)
    return {
        "ops": operations(box[0]),
        "log": stage.log,
        "message_s": _message_seconds(rank, world_size, (batch // m, width)),
    }


def _message_seconds(rank, world_size, shape, reps=9) -> float:
    """Median one-way seconds of a message of ``shape`` floats between neighbouring ranks
    (ping-pong, half the round trip), as the pipeline's messages travel."""
    import torch
    import torch.distributed as dist

    buf, out = torch.zeros(shape), []
    peer = rank ^ 1
    if peer >= world_size:
        return 0.0
    for _ in range(reps):
        t = time.perf_counter()
        if rank % 2 == 0:
            dist.send(buf, peer)
            dist.recv(buf, peer)
        else:
            dist.recv(buf, peer)
            dist.send(buf, peer)
        out.append((time.perf_counter() - t) / 2)
    return float(sorted(out)[reps // 2])


def ddp_rank(rank, world_size, sleep_s=0.0, slow_rank=-1, width=256, layers=2,
             batch=16) -> dict:  # fmt: skip
    """One DistributedDataParallel step on this rank, ``slow_rank``'s backward slowed by
    ``sleep_s``. Returns ``ops``: (name, start_s, end_s) of forward and backward without
    the all-reduce (``no_sync``), the all-reduce of all gradients, and the optimizer step,
    read from the profiler's trace; and ``wall``, ``forward``, ``backward``: seconds of the
    real step (DDP's all-reduce inside the backward), timed by the profiler too."""
    import torch
    import torch.distributed as dist
    from torch.profiler import record_function

    sleep_s = checks.nonnegative("sleep_s", sleep_s, 10.0)
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(layers)])
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    if rank == slow_rank and sleep_s > 0:  # a slow GPU: its backward takes sleep_s longer
        model[0].weight.register_hook(lambda g: (time.sleep(sleep_s), g)[1])
    x = torch.randn(batch, width, generator=torch.Generator().manual_seed(rank))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step(sync, tag=""):
        dist.barrier()
        with record_function("step" + tag):
            with contextlib.ExitStack() as stack:
                if not sync:
                    stack.enter_context(ddp.no_sync())  # no all-reduce in the backward
                with record_function("forward" + tag):
                    loss = ddp(x).square().mean()
                with record_function("backward" + tag):
                    loss.backward()
            if not sync:  # the gradients' all-reduce alone, every rank there at its start
                flat = torch.cat([q.grad.reshape(-1) for q in model.parameters()])
                dist.barrier()
                with record_function("allreduce"):
                    dist.all_reduce(flat)
            with record_function("optimizer" + tag):
                opt.step()
            opt.zero_grad()

    step(True, " warm-up")
    with _profiled() as box:
        dist.barrier()
        step(True, " synced")
        step(False)
    synced = {n: (a, b) for n, a, b in operations(box[0], ("step synced", "forward synced",
                                                        "backward synced"))}  # fmt: skip
    ops = operations(box[0], DDP_NAMES)
    return {
        "ops": ops,
        "wall": synced["step synced"][1] - synced["step synced"][0],
        "forward": synced["forward synced"][1] - synced["forward synced"][0],
        "backward": synced["backward synced"][1] - synced["backward synced"][0],
    }
