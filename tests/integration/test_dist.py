"""scaleout.dist.run: results, output, errors, timeouts and cleanup, on real gloo processes."""

import _thread
import ctypes
import math
import multiprocessing as mp
import os
import signal
import tempfile
import threading
import time

import numpy as np
import pytest
import torch
import torch.distributed as dist

from scaleout import dist as sdist
from scaleout.demos.collectives import CHECKS, check_collectives, report, ring_allreduce_p2p
from scaleout.dist import DistributedTimeout, RankError, launcher, run

pytestmark = pytest.mark.timeout(60)


def _child_pids():
    """Pids whose parent is this process (zombies included): must be empty between runs."""
    me, pids = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == me:
            pids.append(int(entry))
    return pids


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(autouse=True)
def no_leftover_children():
    yield
    assert mp.active_children() == []
    assert _child_pids() == []


def _pids_from(outputs):
    return [int(line.split("=")[1]) for text in outputs for line in text.split() if "pid=" in line]


# ---- results and output -------------------------------------------------------------------


def test_results_come_back_in_rank_order():
    def fn(rank, world_size):
        time.sleep(0.05 * (world_size - rank))  # later ranks finish first
        return {"rank": rank, "world_size": world_size, "pid": os.getpid()}

    results = run(fn, 4)
    assert [r["rank"] for r in results] == [0, 1, 2, 3]
    assert {r["world_size"] for r in results} == {4}
    pids = [r["pid"] for r in results]
    assert len(set(pids)) == 4 and os.getpid() not in pids
    assert not any(_alive(pid) for pid in pids)


def test_output_is_grouped_in_rank_order_with_prefixes(capsys):
    def fn(rank, world_size):
        time.sleep(0.05 * (world_size - rank))  # rank 3 prints first in time
        if rank == 2:
            return None  # a silent rank is left out
        print(f"hello from {rank}")
        os.write(1, f"raw fd write {rank}\n".encode())  # C-level output is captured too
        print(f"bye from {rank}")

    run(fn, 4)
    expected = "".join(
        f"[rank {r}] hello from {r}\n[rank {r}] raw fd write {r}\n[rank {r}] bye from {r}\n"
        for r in (0, 1, 3)
    )
    assert capsys.readouterr().out == expected


def test_show_output_false_prints_nothing(capsys):
    assert run(lambda rank, world_size: print("noise") or rank, 2, show_output=False) == [0, 1]
    assert capsys.readouterr().out == ""


def test_args_kwargs_and_closures_reach_every_rank():
    offset = 100  # a closure variable of a cell-defined function: fork needs no pickling

    def fn(rank, world_size, a, b, *, scale=1):
        return (a + b + rank + offset) * scale

    assert run(fn, 3, args=(1, 2), kwargs={"scale": 10}) == [1030, 1040, 1050]


def test_all_reduce_of_rank_dependent_tensors():
    def fn(rank, world_size):
        x = torch.arange(5, dtype=torch.float64) * (rank + 1)  # (5,)
        dist.all_reduce(x)
        return x

    expected = torch.arange(5, dtype=torch.float64) * sum(range(1, 5))
    for x in run(fn, 4):
        torch.testing.assert_close(x, expected, rtol=0, atol=0)


def test_each_rank_gets_its_env_threads_and_loopback(monkeypatch):
    monkeypatch.delenv("GLOO_SOCKET_IFNAME", raising=False)

    def fn(rank, world_size):
        env = {k: os.environ[k] for k in ("GLOO_SOCKET_IFNAME", "RANK", "WORLD_SIZE")}
        return env, torch.get_num_threads(), dist.get_backend()

    results = run(fn, 2, threads_per_rank=2)
    for rank, (env, threads, backend) in enumerate(results):
        assert env == {"GLOO_SOCKET_IFNAME": "lo", "RANK": str(rank), "WORLD_SIZE": "2"}
        assert threads == 2 and backend == "gloo"


def test_multithreaded_ops_after_parent_used_openmp():
    # A forked child inherits libgomp's thread-pool bookkeeping without its threads; the
    # launcher runs fn on a fresh thread so this does not hang.
    torch.set_num_threads(2)
    a = torch.randn(512, 512)
    (a @ a).sum()

    def fn(rank, world_size):
        b = torch.randn(512, 512)
        return float((b @ b).sum()) != 0.0 and torch.get_num_threads() == 2

    assert run(fn, 2, threads_per_rank=2, timeout=30) == [True, True]


def test_fn_may_destroy_the_process_group_itself():
    def fn(rank, world_size):  # torchrun-style code cleans up after itself
        dist.barrier()
        dist.destroy_process_group()
        return rank

    assert run(fn, 2) == [0, 1]


def test_temp_dir_is_removed():
    def fn(rank, world_size):
        return os.path.dirname(os.readlink("/proc/self/fd/1"))  # the per-rank log's folder

    tmp = run(fn, 2)
    assert tmp[0] == tmp[1] and os.path.basename(tmp[0]).startswith("scaleout-run-")
    assert not os.path.exists(tmp[0])


# ---- failures -----------------------------------------------------------------------------


def test_rank_that_raises_gives_rank_error_fast():
    def fn(rank, world_size):
        print(f"pid={os.getpid()}")
        if rank == 2:
            raise ValueError("boom on rank two")
        x = torch.ones(3)
        dist.all_reduce(x)  # the others wait here for rank 2: they must be killed
        return x

    start = time.monotonic()
    with pytest.raises(RankError) as info:
        run(fn, 4, timeout=30)
    assert time.monotonic() - start < 10
    err = info.value
    msg = str(err)
    assert msg.startswith("rank 2 failed")
    assert 2 in err.ranks
    assert "Traceback (most recent call last)" in msg
    assert "ValueError: boom on rank two" in msg
    assert 'raise ValueError("boom on rank two")' in msg  # the user's source line
    assert "[rank 2] pid=" in msg  # what the ranks printed comes with the error
    assert not any(_alive(pid) for pid in _pids_from(err.outputs))


@pytest.mark.parametrize(
    "how, expected",
    [("exit", "exited with exit code 3"), ("segfault", "was killed by signal SIGSEGV")],
)
def test_rank_that_dies_gives_rank_error_with_exit_code(how, expected):
    def fn(rank, world_size):
        if rank == 1:
            if how == "exit":
                os._exit(3)
            ctypes.string_at(0)  # SIGSEGV
        dist.barrier()

    start = time.monotonic()
    with pytest.raises(RankError) as info:
        run(fn, 3, timeout=30)
    assert time.monotonic() - start < 10
    assert str(info.value).startswith("rank 1 failed")
    assert f"rank 1 {expected} without returning a result" in str(info.value)
    if how == "segfault":  # faulthandler wrote the Python stack into the rank's output
        assert "Segmentation fault" in info.value.outputs[1]


def test_unpicklable_result_is_a_rank_error():
    with pytest.raises(RankError, match="cannot be pickled"):
        run(lambda rank, world_size: threading.Lock(), 2)


def test_hanging_rank_gives_timeout_naming_it():
    def fn(rank, world_size):
        print(f"pid={os.getpid()}")
        if rank == 1:
            time.sleep(120)

    start = time.monotonic()
    with pytest.raises(DistributedTimeout) as info:
        run(fn, 4, timeout=3)
    assert time.monotonic() - start < 8
    err = info.value
    assert err.unfinished == [1] and err.finished == [0, 2, 3]
    assert "rank(s) 1 did not finish; rank(s) 0, 2, 3 finished" in str(err)
    assert isinstance(err, TimeoutError)
    assert not any(_alive(pid) for pid in _pids_from(err.outputs))


def test_barrier_that_one_rank_never_reaches_times_out():
    def fn(rank, world_size):
        if rank == 1:
            time.sleep(120)
        dist.barrier()

    start = time.monotonic()
    with pytest.raises(DistributedTimeout, match="rank.s. 0, 1, 2 did not finish"):
        run(fn, 3, timeout=2)
    assert time.monotonic() - start < 7


def test_results_count_when_only_teardown_hangs(monkeypatch):
    # every rank returned and reported, then hung in destroy_process_group: keep the results
    monkeypatch.setattr(dist, "destroy_process_group", lambda *a, **k: time.sleep(120))
    start = time.monotonic()
    assert run(_noop, 2, timeout=1.5) == [0, 1]
    assert time.monotonic() - start < 5


def test_keyboard_interrupt_in_parent_kills_all_ranks():
    def fn(rank, world_size):
        time.sleep(120)

    threading.Timer(1.0, _thread.interrupt_main).start()
    start = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run(fn, 3, timeout=30)
    assert time.monotonic() - start < 6


def test_two_launches_at_once_do_not_collide():
    def fn(rank, world_size, base):
        x = torch.full((4,), float(base + rank))
        dist.all_reduce(x)
        return x[0].item()

    results, errors = {}, []

    def launch(base):
        try:
            results[base] = run(fn, 3, args=(base,), show_output=False, timeout=30)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=launch, args=(base,)) for base in (0, 100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=40)
    assert errors == []
    assert results == {0: [3.0] * 3, 100: [303.0] * 3}


# ---- arguments ----------------------------------------------------------------------------


def _noop(rank, world_size):
    return rank


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"nprocs": 0}, "nprocs"),
        ({"nprocs": 65}, "nprocs"),
        ({"nprocs": 2.0}, "nprocs"),
        ({"nprocs": "4"}, "nprocs"),
        ({"nprocs": True}, "nprocs"),
        ({"timeout": 0}, "timeout"),
        ({"timeout": -1.0}, "timeout"),
        ({"timeout": math.inf}, "timeout"),
        ({"timeout": "10"}, "timeout"),
        ({"backend": "mpi"}, "backend"),
        ({"threads_per_rank": 0}, "threads_per_rank"),
        ({"args": 3}, "args"),
        ({"kwargs": [1]}, "kwargs"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, name):
    with pytest.raises(ValueError, match=name):
        run(_noop, **{"nprocs": 2, **kwargs})


def test_fn_must_be_callable():
    with pytest.raises(ValueError, match="fn must be callable"):
        run("not a function", 2)


def test_numpy_integer_nprocs_is_accepted():
    assert run(_noop, np.int64(2), show_output=False) == [0, 1]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only message")
def test_nccl_without_cuda_is_a_value_error():
    with pytest.raises(ValueError, match="backend='nccl' needs CUDA"):
        run(_noop, 2, backend="nccl")


def test_platform_without_fork_points_at_torchrun(monkeypatch):
    monkeypatch.setattr(launcher.mp, "get_all_start_methods", lambda: ["spawn"])
    with pytest.raises(RuntimeError, match="torchrun"):
        run(_noop, 2)


# ---- the demo workers through the launcher --------------------------------------------------


@pytest.mark.parametrize("numel", [1, 3, 10, 1001])  # 4 does not divide 1, 3, 10, 1001
def test_check_collectives_under_run(numel):
    results = run(check_collectives, 4, kwargs={"numel": numel})
    for errors in results:
        assert list(errors) == list(CHECKS)
        assert errors == dict.fromkeys(CHECKS, 0.0)


@pytest.mark.parametrize("shape, dtype", [((5, 7), torch.float32), ((2,), torch.float64)])
def test_ring_allreduce_p2p_equals_dist_all_reduce(shape, dtype):
    def fn(rank, world_size):
        g = torch.Generator().manual_seed(rank)
        x = torch.randn(shape, generator=g, dtype=dtype)
        ring, ref = x.clone(), x.clone()
        out = ring_allreduce_p2p(ring, rank, world_size)
        dist.all_reduce(ref)
        return x, out is ring, ring, ref

    results = run(fn, 4)
    total = sum(x for x, *_ in results)
    for _, same_object, ring, ref in results:
        assert same_object  # in place
        torch.testing.assert_close(ring, ref)
        torch.testing.assert_close(ring, total)


def test_ring_allreduce_p2p_on_non_contiguous_tensor():
    def fn(rank, world_size):
        x = torch.arange(12.0).view(3, 4).t() * (rank + 1)  # (4, 3), non-contiguous
        return ring_allreduce_p2p(x, rank, world_size)

    for out in run(fn, 3):
        torch.testing.assert_close(out, torch.arange(12.0).view(3, 4).t() * 6)


def test_report_flags_mismatches():
    lines = report({"all_reduce": 0.0, "broadcast": 0.5}, 4, 10)
    assert lines[0].startswith("all_reduce") and lines[0].endswith(" ok")
    assert lines[1].startswith("broadcast") and lines[1].endswith(" MISMATCH")


def test_ring_allreduce_p2p_sends_what_the_library_schedule_says():
    from scaleout import collectives
    from scaleout.demos import collectives as demo

    numel = 10  # 4 does not divide 10: chunks of 3, 3, 2, 2

    def fn(rank, world_size):
        sent, exchange = [], demo._exchange

        def recording(send, dst, recv, src):  # (step, offset, count, dst) of each send
            if send.numel():
                sent.append((len(sent), send.storage_offset(), send.numel(), dst))
            exchange(send, dst, recv, src)

        demo._exchange = recording  # only in this forked rank
        ring_allreduce_p2p(torch.ones(numel), rank, world_size)
        return sent

    steps = collectives.ring_allreduce_schedule(4, numel)
    for rank, sent in enumerate(run(fn, 4)):
        expected = [
            (i, t.offset, t.count, t.dst)
            for i, step in enumerate(steps)
            for t in step.transfers
            if t.src == rank
        ]
        assert sent == expected


# ---- processes a rank starts die with the call (issue: orphans of an exited rank) ----------


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"  # a zombie is dead, waiting for its reaper
    except FileNotFoundError:
        return False


def _start_sleeper(rank, world_size, new_session):
    import subprocess

    child = subprocess.Popen(["sleep", "120"], start_new_session=new_session)
    return child.pid


def test_children_of_a_rank_that_returned_die_with_the_call():
    pids = run(_start_sleeper, 2, args=(False,), show_output=False)
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids), "a process started by a rank outlived run()"


def test_children_of_a_failing_rank_die_too():
    def start_then_fail(rank, world_size):
        import subprocess

        pid = subprocess.Popen(["sleep", "120"]).pid
        with open(os.path.join(os.environ["SCALEOUT_TEST_DIR"], f"pid{rank}"), "w") as f:
            f.write(str(pid))
        if rank == 1:
            raise RuntimeError("boom")
        time.sleep(120)

    with tempfile.TemporaryDirectory() as d:
        os.environ["SCALEOUT_TEST_DIR"] = d
        try:
            with pytest.raises(RankError, match="boom"):
                run(start_then_fail, 2, show_output=False, timeout=30)
        finally:
            del os.environ["SCALEOUT_TEST_DIR"]
        pids = [int(open(os.path.join(d, f)).read()) for f in os.listdir(d)]
    assert pids
    time.sleep(0.2)
    assert not any(_alive(p) for p in pids)


def test_a_new_session_escapes_as_documented():
    pids = run(_start_sleeper, 1, args=(True,), show_output=False)
    try:
        assert _alive(pids[0])  # documented: start_new_session leaves the rank's group
    finally:
        os.kill(pids[0], signal.SIGKILL)


@pytest.mark.parametrize("timeout", [1e300, sdist.MAX_TIMEOUT_S * 2, float("nan"), True])
def test_timeout_is_bounded(timeout):
    with pytest.raises(ValueError, match="timeout must be"):
        run(_noop, 2, timeout=timeout)


@pytest.mark.parametrize("kwargs", [{"show_output": "yes"}, {"threads_per_rank": 10**6}])
def test_other_options_are_checked(kwargs):
    with pytest.raises(ValueError, match="must be"):
        run(_noop, 2, **kwargs)
