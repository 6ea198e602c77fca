"""The simulator against real runs on CPU processes (gloo, scaleout.dist.run): a 1F1B
pipeline whose per-rank order it reproduces and whose step it predicts from the measured
operation durations, and a DistributedDataParallel step with one rank slowed by a
``time.sleep`` in its backward: every rank's backward then takes as long (the all-reduce
equalises them), and the replay names the slow rank. Times are measured with
``time.monotonic`` around each operation (the same clock on every process of one machine)."""

import contextlib
import time

import pytest
import torch
import torch.distributed as dist

from scaleout import pipeline as P
from scaleout.dist import run
from scaleout.sim import replay

SLEEP_S, SLOW_RANK = 0.5, 2


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_replay_of_a_real_1f1b_pipeline():
    from scaleout.demos.pipeline import check_pipeline

    p, m = 4, 8
    results = run(check_pipeline, p, kwargs={"name": "1f1b", "m": m, "width": 768,
                                             "batch": 256}, timeout=200)  # fmt: skip
    orders = P.stage_order("1f1b", p, m)
    durations, t0, t1 = [], [], []
    for r, res in enumerate(results):
        assert res["log"] == orders[r]  # the real run's order is the schedule's
        secs = {(ph, j): b - a for _, ph, j, a, b in res["intervals"]}
        durations.append([secs[k, j] for k, j, _ in orders[r]])
        t0 += [a for *_, a, _ in res["intervals"]]
        t1 += [b for *_, b in res["intervals"]]
    measured = max(t1) - min(t0)
    rp = replay.pipeline("1f1b", p, m, durations)
    assert rp.order == [[f"{k}{j}" for k, j, _ in ops] for ops in orders]
    print(f"1F1B p={p} m={m}: measured {measured * 1e3:.1f} ms, replay {rp.step_s * 1e3:.1f} ms")
    # Four processes share this machine's cores and wait for one between operations, which
    # the replay (measured durations, dependencies only) leaves out: it can come out well below
    # the measured step under load (no wall-time bound downwards), never well above it.
    assert rp.step_s < 1.15 * measured, (rp.step_s, measured)


def ddp_step(rank, world_size, width=256, layers=2, batch=16):
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(layers)])
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    if rank == SLOW_RANK:  # a slow GPU: its backward takes SLEEP_S longer
        model[0].weight.register_hook(lambda g: (time.sleep(SLEEP_S), g)[1])
    x = torch.randn(batch, width, generator=torch.Generator().manual_seed(rank))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step(sync):
        dist.barrier()
        with contextlib.nullcontext() if sync else ddp.no_sync():  # no_sync: no all-reduce
            t0 = time.monotonic()
            loss = ddp(x).square().mean()
            t1 = time.monotonic()
            loss.backward()
            t2 = time.monotonic()
        opt.step()
        opt.zero_grad()
        return t1 - t0, t2 - t1, time.monotonic() - t2, time.monotonic() - t0

    step(True)  # warm-up
    f, b, o, wall = step(True)  # the real step: backward with DDP's all-reduce
    f_ns, b_ns, _, _ = step(False)  # the same compute, no all-reduce
    flat = torch.cat([q.detach().reshape(-1) for q in model.parameters()])
    dist.barrier()
    t = time.monotonic()
    dist.all_reduce(flat)
    ar = time.monotonic() - t
    return {
        "forward": f,
        "backward": b,
        "opt": o,
        "wall": wall,
        "forward_alone": f_ns,
        "backward_alone": b_ns,
        "allreduce": ar,
    }


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_straggler_in_ddp_equalises_wall_times_and_the_replay_names_it():
    res = run(ddp_step, 4, timeout=200)
    walls = [r["wall"] for r in res]
    backs = [r["backward"] for r in res]
    # every rank's step and backward take about as long: the all-reduce waits for rank 2
    assert max(walls) - min(walls) < 0.2 * max(walls)
    assert min(backs) > SLEEP_S * 0.9
    # without the all-reduce only rank 2 is slow
    alone = [r["backward_alone"] for r in res]
    assert (
        alone[SLOW_RANK] > SLEEP_S
        and max(a for i, a in enumerate(alone) if i != SLOW_RANK) < SLEEP_S / 2
    )
    rp = replay.collective([[r["forward_alone"], r["backward_alone"]] for r in res],
                           min(r["allreduce"] for r in res), [r["opt"] for r in res])  # fmt: skip
    print(
        f"DDP walls {[round(w, 3) for w in walls]} s, backwards {[round(b, 3) for b in backs]} s, "
        f"alone {[round(a, 3) for a in alone]} s; replay {rp.step_s:.3f} s, blames {rp.critical}"
    )
    assert next(iter(rp.critical)) == SLOW_RANK
    assert abs(rp.step_s / max(walls) - 1) < 0.15, (rp.step_s, walls)
