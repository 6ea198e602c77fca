"""The launcher: :func:`run` forks the ranks, gives each a process group on a FileStore, waits
with a deadline and brings back results, output and errors in rank order. See
:mod:`scaleout.dist` for the contract.
"""

from __future__ import annotations

import ctypes
import faulthandler
import multiprocessing as mp
import multiprocessing.connection
import os
import pickle
import shutil
import signal
import sys
import threading
import time
import traceback
import warnings
from datetime import timedelta

from .. import checks
from .guard import (
    _HoldInterrupts,
    _kill_all,
    _kill_group,
    _make_private_dir,
    _private_dir_paths,
    _restore_interrupts_in_rank,
    _set_parent_death_signal,
    _Watcher,
)

#: The most ranks one call may fork.
MAX_NPROCS = 64
#: The longest deadline one call accepts, in seconds (one day).
MAX_TIMEOUT_S = 86_400.0
_POLL_S = 0.2  # re-check exit codes this often, even if no sentinel fired
_PG_GRACE_S = 5.0  # the launcher's deadline fires before gloo's own collective timeout
_OUTPUT_TAIL_LINES = 40  # lines of each rank's output quoted in an exception message


_RANK = None  # in a forked rank: its rank (a nested launch is refused)


class RankError(RuntimeError):
    """One or more ranks raised, died, or returned something unpicklable.

    Attributes: ``ranks`` (failing ranks, sorted), ``details`` (rank -> traceback or
    reason), ``outputs`` (list of each rank's printed output, in rank order).
    """

    def __init__(self, message, ranks=(), details=None, outputs=None):
        super().__init__(message)
        self.ranks = list(ranks)
        self.details = dict(details or {})
        self.outputs = list(outputs or [])


class DistributedTimeout(TimeoutError):
    """The launch did not finish within ``timeout`` seconds.

    Attributes: ``unfinished`` and ``finished`` (rank lists), ``outputs`` (per rank).
    """

    def __init__(self, message, unfinished=(), finished=(), outputs=None):
        super().__init__(message)
        self.unfinished = list(unfinished)
        self.finished = list(finished)
        self.outputs = list(outputs or [])


def _refuse_nested():
    if _RANK is not None:
        raise RuntimeError(
            f"scaleout.dist.run cannot be nested: this process is rank {_RANK} of a running "
            "scaleout.dist.run, and its default process group (torch allows one per process) "
            "would be inherited by the ranks a nested launch forks. Use the rank's own group, "
            "or dist.new_group(ranks) for a subgroup, inside the outer launch instead."
        )


def _validate(fn, nprocs, args, kwargs, backend, timeout, threads_per_rank, show_output):
    if not callable(fn):
        raise ValueError(f"fn must be callable fn(rank, world_size, ...), got {type(fn)!r}")
    nprocs = checks.integer("nprocs", nprocs, 1, MAX_NPROCS)
    if not isinstance(args, tuple | list):
        raise ValueError(f"args must be a tuple, got {type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise ValueError(f"kwargs must be a dict or None, got {type(kwargs).__name__}")
    timeout = checks.real("timeout", timeout, 0.0, MAX_TIMEOUT_S, low_open=True)
    checks.integer("threads_per_rank", threads_per_rank, 1, os.cpu_count() or 1024)
    checks.boolean("show_output", show_output)
    backend = checks.choice("backend", backend, ("gloo", "nccl"))
    if backend == "nccl":
        import torch

        if not torch.cuda.is_available():
            raise ValueError("backend='nccl' needs CUDA GPUs; this torch sees none (use 'gloo')")
        if torch.cuda.is_initialized():
            raise ValueError(
                "backend='nccl': CUDA is already initialised in this process and cannot be "
                "used in forked children; restart the kernel or use the torchrun demos"
            )
    if "fork" not in mp.get_all_start_methods():
        raise RuntimeError(
            "scaleout.dist.run needs the 'fork' start method, which this platform lacks. "
            "Run the same workers under torchrun instead, e.g.\n"
            "  torchrun --standalone --nproc-per-node 4 -m scaleout.demos.collectives"
        )
    return nprocs, timeout


def _child(rank, nprocs, fn, args, kwargs, backend, tmp, timeout, threads, parent_pid, wfd):
    """Body of one forked rank. Never returns: leaves with os._exit."""
    global _RANK
    code, own_streams, _RANK = 1, False, rank
    try:
        if wfd is not None:
            os.close(wfd)  # the watcher's pipe is the caller's alone
        _restore_interrupts_in_rank()
        # Own stdout/stderr before anything can print: fds 1 and 2 go to a per-rank file
        # (catches C++ warnings too), and fresh Python streams replace the inherited ones.
        fd = os.open(os.path.join(tmp, f"rank{rank}.log"), os.O_WRONLY | os.O_CREAT, 0o600)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
        opts = dict(buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
        sys.stdout, sys.stderr = open(1, "w", **opts), open(2, "w", **opts)
        own_streams = True
        faulthandler.enable(file=sys.stderr, all_threads=True)  # segfault -> stack in log
        os.setpgrp()  # own process group: the parent can kill anything this rank starts
        _set_parent_death_signal()
        if os.getppid() != parent_pid:  # parent died before prctl took effect
            os._exit(1)
        # A fresh thread, not this one: GNU OpenMP (libgomp, behind torch's CPU kernels and
        # MKL) keeps its worker pool in thread-local state. The forking thread's copy lists
        # workers that do not exist in the child, so its first multi-threaded op would wait
        # for them forever; a new thread starts a new pool.
        box = []
        args = (rank, nprocs, fn, args, kwargs, backend, tmp, timeout, threads, box)
        worker = threading.Thread(target=_rank_main, args=args, name="scaleout-rank")
        worker.start()
        worker.join()
        code = box[0] if box else 1
    finally:
        try:
            if own_streams:  # never touch the kernel's inherited streams
                sys.stdout.flush()
                sys.stderr.flush()
            ctypes.CDLL(None).fflush(None)  # C stdio buffers (std::cout, printf)
        except Exception:
            pass
        os._exit(code)  # never run the parent's atexit handlers or finalizers


def _user_traceback(e):
    """The traceback text of ``e`` without the launcher's own frames."""
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(e), e, tb or e.__traceback__))


def _rank_main(rank, nprocs, fn, args, kwargs, backend, tmp, timeout, threads, box):
    """Init, fn, report, then wait until every rank has reported; exit code into ``box``.

    The report is a pickled (status, value, t) written atomically, t the
    ``time.monotonic_ns()`` when fn ended (one clock for all processes on the machine).
    A rank that fails reports and leaves at once: its peers' errors come later. A rank that
    succeeds waits on the FileStore until all have reported (no sockets involved), so no
    rank closes its gloo connections while a peer may still be connecting or receiving.
    """
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    os.environ.update(
        RANK=str(rank), WORLD_SIZE=str(nprocs), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(nprocs)
    )
    import torch
    import torch.distributed as dist

    pg_timeout = timedelta(seconds=timeout + _PG_GRACE_S)
    try:
        torch.set_num_threads(threads)
        if backend == "nccl":
            torch.cuda.set_device(rank % torch.cuda.device_count())
        store = dist.FileStore(os.path.join(tmp, "rdzv"), nprocs)
        dist.init_process_group(
            backend, store=store, rank=rank, world_size=nprocs, timeout=pg_timeout
        )
        result = ("ok", fn(rank, nprocs, *args, **kwargs), time.monotonic_ns())
    except BaseException as e:
        result = ("error", _user_traceback(e), time.monotonic_ns())
    try:
        payload = pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:
        result = ("unpicklable", f"{type(e).__name__}: {e}", time.monotonic_ns())
        payload = pickle.dumps(result)
    part = os.path.join(tmp, f"rank{rank}.pkl.part")
    with open(part, "wb") as f:
        f.write(payload)
    os.replace(part, os.path.join(tmp, f"rank{rank}.pkl"))  # atomic: never seen half-written
    if result[0] != "ok":
        box.append(1)
        return
    store.set(f"scaleout/reported/{rank}", "1")
    store.wait([f"scaleout/reported/{r}" for r in range(nprocs)], pg_timeout)
    if dist.is_initialized():  # fn may have destroyed it itself, torchrun-style
        dist.destroy_process_group()
    box.append(0)


def _read_output(tmp, rank):
    try:
        with open(os.path.join(tmp, f"rank{rank}.log"), encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def _read_result(tmp, rank):
    """(status, value, time ended in ns) that a rank wrote, or None if it wrote nothing."""
    try:
        with open(os.path.join(tmp, f"rank{rank}.pkl"), "rb") as f:
            return pickle.load(f)
    except FileNotFoundError:
        return None
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # SystemExit from a __reduce__ that calls sys.exit, too
        return "unpicklable", f"it could not be unpickled in the parent: {e!r}", 0


def _reported_ok(tmp, rank):
    """Has the rank written an "ok" result? (It may still wait for its peers, or hang in
    teardown after all have reported: its result counts.)"""
    outcome = _read_result(tmp, rank)
    return outcome is not None and outcome[0] == "ok"


def _format_output(outputs, tail=None):
    """Lines prefixed ``[rank r]``, grouped in rank order, silent ranks skipped; ``tail``
    keeps only the last lines of each rank."""
    lines = []
    for rank, text in enumerate(outputs):
        rank_lines = text.splitlines()
        if tail is not None and len(rank_lines) > tail:
            lines.append(f"[rank {rank}] ... ({len(rank_lines) - tail} earlier lines)")
            rank_lines = rank_lines[-tail:]
        lines.extend(f"[rank {rank}] {line}" for line in rank_lines)
    return "\n".join(lines)


def _describe_failure(rank, outcome, exitcode):
    if outcome is None:
        if exitcode is not None and exitcode < 0:
            try:
                how = f"was killed by signal {signal.Signals(-exitcode).name}"
            except ValueError:
                how = f"was killed by signal {-exitcode}"
        else:
            how = f"exited with exit code {exitcode}"
        return f"rank {rank} {how} without returning a result"
    status, value, _ = outcome
    if status == "unpicklable":
        return f"rank {rank} returned a value that cannot be pickled back: {value}"
    return f"rank {rank} raised:\n{value.rstrip()}"


def _rank_error(failed, outcomes, procs, outputs):
    """RankError: the full story of the first failure, one line for each later one (often
    only a peer noticing that the first one left). First: a rank that died (its peers raise,
    they do not die), else the earliest exception by the ranks' shared monotonic clock."""
    failed = sorted(failed, key=lambda r: (outcomes[r] is not None, (outcomes[r] or [0] * 3)[2], r))
    details = {r: _describe_failure(r, outcomes[r], procs[r].exitcode) for r in failed}
    names = ", ".join(map(str, sorted(failed)))
    msg = f"rank {failed[0]} failed"
    if len(failed) > 1:
        msg += f" first ({len(failed)} of {len(procs)} ranks failed: {names})"
    msg += ":\n\n" + details[failed[0]]
    for r in failed[1:]:
        msg += f"\n\nthen {details[r].strip().splitlines()[-1]} (rank {r})"
    printed = _format_output(outputs, tail=_OUTPUT_TAIL_LINES)
    if printed:
        msg += "\n\nOutput of the ranks:\n" + printed
    return RankError(msg, ranks=sorted(failed), details=details, outputs=outputs)


def run(
    fn,
    nprocs=4,
    *,
    args=(),
    kwargs=None,
    backend="gloo",
    timeout=60.0,
    threads_per_rank=1,
    show_output=True,
) -> list:
    """Run ``fn(rank, world_size, *args, **kwargs)`` on ``nprocs`` forked processes.

    Each rank has an initialised default process group (``backend``, FileStore rendezvous)
    when ``fn`` starts, and ``torch.set_num_threads(threads_per_rank)``. Returns the ranks'
    return values as a list in rank order. What each rank printed (including C++ output on
    fds 1/2) is shown afterwards, grouped in rank order with ``[rank r]`` prefixes, unless
    ``show_output=False``.

    Raises ``RankError`` when a rank raises, dies, or returns something unpicklable (the
    other ranks are killed at once), ``DistributedTimeout`` after ``timeout`` seconds, and
    ``ValueError`` for bad arguments (``timeout`` at most :data:`MAX_TIMEOUT_S`,
    ``nprocs`` at most :data:`MAX_NPROCS`). No child outlives the call, nor anything a
    child starts, unless it leaves the child's process group (see the module docstring).
    """
    _refuse_nested()
    nprocs, timeout = _validate(
        fn, nprocs, args, kwargs, backend, timeout, threads_per_rank, show_output
    )
    child_args = (nprocs, fn, tuple(args), dict(kwargs or {}), backend)
    import torch.distributed  # noqa: F401  -- once here, not once in every forked rank

    tmp, watcher, procs = None, None, []
    try:
        with _HoldInterrupts():  # a Ctrl-C during a fork would be lost in an at-fork hook
            paths = _private_dir_paths()
            watcher = _Watcher.start(paths)  # before the directory exists: see guard
            tmp = _make_private_dir(paths)
            ctx = mp.get_context("fork")
            for rank in range(nprocs):
                wfd = watcher.fd if watcher else None
                info = (tmp, float(timeout), threads_per_rank, os.getpid(), wfd)
                p = ctx.Process(target=_child, args=(rank, *child_args, *info), name=f"rank{rank}")
                with warnings.catch_warnings():  # Python >= 3.12 warns on fork with threads
                    warnings.filterwarnings("ignore", ".*fork", DeprecationWarning)
                    p.start()
                procs.append(p)
                if watcher is not None:
                    watcher.watch(p.pid)

        deadline = time.monotonic() + timeout
        pending, outcomes, failed = set(range(nprocs)), [None] * nprocs, []
        while pending and not failed and time.monotonic() < deadline:
            wait_s = max(0.0, min(deadline - time.monotonic(), _POLL_S))
            multiprocessing.connection.wait([procs[r].sentinel for r in pending], wait_s)
            for rank in sorted(pending):  # exitcode polls waitpid: no sentinel trusted alone
                if procs[rank].exitcode is not None:
                    pending.discard(rank)
                    _kill_group(procs[rank].pid)  # what it started dies with it
                    outcomes[rank] = _read_result(tmp, rank)
                    if outcomes[rank] is None or outcomes[rank][0] != "ok":
                        failed.append(rank)

        _kill_all(procs)  # a failing rank's peers would block in a collective forever
        outputs = [_read_output(tmp, r) for r in range(nprocs)]
        if failed:
            for rank in pending:  # killed just now, but may have written an error first
                outcomes[rank] = _read_result(tmp, rank)
                if outcomes[rank] is not None and outcomes[rank][0] != "ok":
                    failed.append(rank)
            raise _rank_error(failed, outcomes, procs, outputs)
        unfinished = [r for r in sorted(pending) if not _reported_ok(tmp, r)]
        if unfinished:  # a rank that reported and waits for the others counts as finished
            finished = sorted(set(range(nprocs)) - set(unfinished))
            msg = f"scaleout.dist.run timed out after {timeout:g} s: rank(s) "
            msg += ", ".join(map(str, unfinished)) + " did not finish"
            if finished:
                msg += "; rank(s) " + ", ".join(map(str, finished)) + " finished"
            msg += (
                ". All ranks were killed. The usual cause: a rank waits in a collective "
                "that another rank never enters."
            )
            printed = _format_output(outputs, tail=_OUTPUT_TAIL_LINES)
            if printed:
                msg += "\n\nOutput of the ranks:\n" + printed
            raise DistributedTimeout(msg, unfinished, finished, outputs)
        results = [outcomes[r] or _read_result(tmp, r) for r in range(nprocs)]
        failed = [r for r in range(nprocs) if results[r] is None or results[r][0] != "ok"]
        if failed:  # a result that unpickles in the rank's check but not here
            raise _rank_error(failed, results, procs, outputs)
        if show_output and any(outputs):
            print(_format_output(outputs), flush=True)
        return [results[r][1] for r in range(nprocs)]
    finally:
        with _HoldInterrupts():  # a second Ctrl-C must not cut the cleanup short
            _kill_all(procs)
            for p in procs:
                p.close()  # release the sentinel pipes now, not at garbage collection
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            if watcher is not None:
                watcher.finish()
