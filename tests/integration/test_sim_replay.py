"""The simulator against real runs on CPU processes (gloo, scaleout.dist.run), measured with
``torch.profiler`` (:mod:`scaleout.sim.profiled`): a 1F1B pipeline whose per-rank operation
order the replay reproduces exactly and whose step it predicts from the operation durations
in the profiler's Chrome trace, and a DistributedDataParallel step with one rank slowed by a
``time.sleep`` in its backward: every rank's backward then takes as long (the all-reduce
equalises them), and the replay names the slow rank."""

import statistics

import pytest

from scaleout import pipeline as P
from scaleout.dist import run
from scaleout.sim import profiled, replay

SLEEP_S, SLOW_RANK = 0.5, 2


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_replay_of_a_profiled_1f1b_pipeline():
    p, m = 4, 8
    res = run(profiled.pipeline_rank, p, kwargs={"name": "1f1b", "m": m, "width": 1024,
                                                 "batch": 512}, timeout=200)  # fmt: skip
    want = [[f"{k}{j}" for k, j, _ in ops] for ops in P.stage_order("1f1b", p, m)]
    # the profiler saw each rank run the schedule's order
    assert [[n for n, *_ in r["ops"]] for r in res] == want
    durations = [[b - a for _, a, b in r["ops"]] for r in res]
    t0 = min(a for r in res for _, a, _ in r["ops"])
    measured = max(b for r in res for *_, b in r["ops"]) - t0
    message_s, host_s = replay.observed_delays("1f1b", p, m, [r["ops"] for r in res])
    rp = replay.pipeline("1f1b", p, m, durations, t_comm=message_s, t_host=host_s)
    assert rp.order == want  # the replay runs the same order
    err = rp.step_s / measured - 1
    ping = replay.pipeline("1f1b", p, m, durations,
                           t_comm=statistics.median(r["message_s"] for r in res))  # fmt: skip
    print(f"1F1B p={p} m={m}: measured {measured * 1e3:.1f} ms, replay {rp.step_s * 1e3:.1f} ms "
          f"({err:+.1%}) with delays measured in the run (message {message_s * 1e3:.2f} ms, "
          f"host {host_s * 1e3:.2f} ms); with an idle ping-pong message only "
          f"{ping.step_s / measured - 1:+.1%}")  # fmt: skip
    # Four processes share this machine's cores; the delays between operations (a message's
    # and the host's, medians measured in the same run, no step time in them) carry that
    # load into the replay, which then predicts the step within the 15%.
    assert abs(err) < 0.15, (rp.step_s, measured, message_s, host_s)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_straggler_in_ddp_equalises_wall_times_and_the_replay_names_it():
    res = run(profiled.ddp_rank, 4, kwargs={"sleep_s": SLEEP_S, "slow_rank": SLOW_RANK},
              timeout=200)  # fmt: skip
    walls = [r["wall"] for r in res]
    backs = [r["backward"] for r in res]
    # every rank's step and backward take about as long: the all-reduce waits for rank 2
    assert max(walls) - min(walls) < 0.2 * max(walls)
    assert min(backs) > SLEEP_S * 0.9
    ops = [{n: b - a for n, a, b in r["ops"]} for r in res]
    # without the all-reduce only rank 2 is slow
    alone = [o["backward"] for o in ops]
    assert alone[SLOW_RANK] > SLEEP_S
    assert max(a for i, a in enumerate(alone) if i != SLOW_RANK) < SLEEP_S / 2
    compute = [[o["forward"], o["backward"]] for o in ops]
    rp = replay.collective(compute, min(o["allreduce"] for o in ops), [o["optimizer"] for o in ops])
    print(f"DDP walls {[round(w, 3) for w in walls]} s, backwards {[round(b, 3) for b in backs]}"
          f" s, alone {[round(a, 3) for a in alone]} s; replay {rp.step_s:.3f} s, blames "
          f"{rp.critical}")  # fmt: skip
    assert next(iter(rp.critical)) == SLOW_RANK
    assert abs(rp.step_s / max(walls) - 1) < 0.15, (rp.step_s, walls)
