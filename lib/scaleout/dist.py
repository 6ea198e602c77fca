"""Run torch.distributed code on N CPU processes, straight from a notebook cell.

    def hello(rank, world_size):        # defined in a notebook cell
        t = torch.tensor([float(rank)])
        dist.all_reduce(t)
        return t.item()

    run(hello, nprocs=4)                # -> [6.0, 6.0, 6.0, 6.0], in rank order

Why fork, and not ``torch.multiprocessing.spawn``: the book promises that the code a reader
sees in a cell is the code that runs. ``spawn`` starts fresh interpreters and has to pickle
the function by reference (module + name); a function defined in a notebook cell lives in
``__main__`` of the kernel and cannot be found that way, nor can closures or lambdas. A
``fork``ed child is a copy of the kernel: the function object, the helpers it calls and the
variables it closes over are all already there, nothing is pickled on the way in. The price
of fork is that a child inherits a multi-threaded parent (the Jupyter kernel runs IO and
heartbeat threads): any lock another thread held at fork time stays locked in the child.
Each child therefore touches nothing it inherited that another thread may hold -- it
replaces ``sys.stdout``/``sys.stderr`` first (the kernel's ZMQ-backed ``OutStream`` must not
be used after fork), builds its own process group and talks to the parent only through
files. Results (the one thing that crosses back) must be picklable. Platforms without fork
(Windows; macOS defaults to spawn and is fork-fragile) should use the ``torchrun`` scripts
in :mod:`scaleout.demos` instead, which run the same worker functions.

Rendezvous uses a ``FileStore`` in a fresh temporary directory per launch, so there are no
fixed ports, no stale files from an earlier run, and two launches at once never collide.
A rank that has returned waits on that store until every rank has returned before it
leaves: a rank that exits early closes its sockets under peers still connecting or reading.
Gloo is pinned to the loopback interface (``GLOO_SOCKET_IFNAME=lo`` unless already set).

Every launch is bounded: the parent waits with a deadline (at most :data:`MAX_TIMEOUT_S`),
kills all ranks as soon as one fails (the others would block in a collective forever), and
in every outcome -- success, error, timeout, KeyboardInterrupt -- SIGKILLs and reaps every
child and removes the temporary directory before returning.

Interrupts are honoured at every moment. Python runs a signal's handler in the main thread
between bytecodes, so a Ctrl-C (or a Jupyter "interrupt kernel") that lands while a rank is
being forked would raise ``KeyboardInterrupt`` inside one of the interpreter's at-fork hooks,
where it is printed and discarded -- and the launch would go on until its timeout. While it
forks, and while it cleans up, the launcher therefore blocks SIGINT
(``signal.pthread_sigmask``) and holds back any that another thread receives; it delivers
the interrupt right after, where it ends the launch like any other.

A killed caller (a kernel restart, the OOM killer, SIGKILL, SIGTERM) leaves nothing behind
either. The ranks ask the kernel for SIGKILL when their parent dies (``PR_SET_PDEATHSIG``),
and each launch starts a small watcher process (a fresh interpreter in its own session,
told each rank's pid) that notices the caller's death within a tenth of a second, SIGKILLs
every rank's process group (so what the ranks started dies too) and removes the temporary
directory. On a normal return the caller has done all that itself and stops the watcher.

A nested launch -- ``run`` called inside a rank -- is rejected up front with a
``RuntimeError``: the rank already holds torch's default process group, which a forked
child would inherit and could not initialise again.

Processes a rank starts die with the call too. Each rank leads its own process group, and
the parent SIGKILLs that group when the rank exits (a rank's children are orphans from then
on) and again when the call ends, for every rank, whether it exited early or not (Linux
keeps a group's id out of reuse while any member lives). What escapes: a descendant that
leaves the rank's group on purpose (``setsid()``, ``setpgrp()``, ``subprocess.Popen(...,
start_new_session=True)``, a daemon that double-forks into a new session); such a process
is the caller's to stop.
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
import tempfile
import threading
import time
import traceback
import warnings
from datetime import timedelta

from . import checks

__all__ = ["run", "RankError", "DistributedTimeout", "MAX_NPROCS", "MAX_TIMEOUT_S"]

#: The most ranks one call may fork.
MAX_NPROCS = 64
#: The longest deadline one call accepts, in seconds (one day).
MAX_TIMEOUT_S = 86_400.0
_POLL_S = 0.2  # re-check exit codes this often, even if no sentinel fired
_PG_GRACE_S = 5.0  # the launcher's deadline fires before gloo's own collective timeout
_OUTPUT_TAIL_LINES = 40  # lines of each rank's output quoted in an exception message
_WATCH_POLL_S = 0.05  # how often the watcher checks that the caller lives
_RANK = None  # in a forked rank: its rank (a nested launch is refused)
_SAVED_SIGINT = None  # the caller's SIGINT handler while the launcher holds SIGINT back

# The watcher: a fresh interpreter (no inherited locks or threads) in its own session. Reads
# rank pids, one a line, from stdin; "done" means the caller cleaned up itself. If instead
# the caller dies (its parent pid changes) or stdin closes first, it SIGKILLs every rank and
# every rank's process group a few times over (a process forking at that moment), then
# removes the launch's temporary directory.
_WATCHER_SOURCE = r"""
import os, select, shutil, signal, sys, time
for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
    signal.signal(sig, signal.SIG_IGN)
caller, tmp, poll = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
pids, buf = set(), b""
while os.getppid() == caller:
    if not select.select([0], [], [], poll)[0]:
        continue
    chunk = os.read(0, 4096)
    if not chunk:
        break
    *lines, buf = (buf + chunk).split(b"\n")
    for line in lines:
        if line == b"done":
            sys.exit(0)
        if line.strip():
            pids.add(int(line))
for _ in range(4):
    for pid in pids:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
    time.sleep(poll)
shutil.rmtree(tmp, ignore_errors=True)
"""


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


class _HoldInterrupts:
    """Hold SIGINT back for the ``with`` block, deliver it after.

    In the main thread (the only one where Python runs signal handlers), SIGINT is blocked
    for this thread and the Python handler swapped for one that only records the signal
    (another thread may still receive a process-directed SIGINT: its handler then runs in
    this thread, anywhere, at-fork hooks included). On exit the caller's handler is put back,
    SIGINT unblocked (a pending one is delivered now) and a recorded one replayed: the
    caller's handler is called, which raises ``KeyboardInterrupt`` for Python's default one.
    Elsewhere (``run`` called from another thread) nothing is needed: a KeyboardInterrupt is
    raised in the main thread, never in this thread's fork.
    """

    def __enter__(self):
        global _SAVED_SIGINT
        self.active = threading.current_thread() is threading.main_thread()
        self.caught = []
        if self.active:
            self.mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            self.old = signal.signal(signal.SIGINT, lambda signum, frame: self.caught.append(1))
            _SAVED_SIGINT = self.old
        return self

    def __exit__(self, *exc):
        global _SAVED_SIGINT
        if not self.active:
            return False
        signal.signal(signal.SIGINT, self.old)
        _SAVED_SIGINT = None
        signal.pthread_sigmask(signal.SIG_SETMASK, self.mask)  # a pending SIGINT: delivered
        if self.caught:
            if callable(self.old):
                self.old(signal.SIGINT, None)  # default_int_handler: raises KeyboardInterrupt
            elif self.old == signal.SIG_DFL:
                signal.raise_signal(signal.SIGINT)
        return False


def _restore_interrupts_in_rank():
    """A forked rank starts with the launcher's SIGINT mask and handler: put back the
    caller's (and so its children's, which inherit the mask through exec)."""
    if _SAVED_SIGINT is not None:
        try:
            signal.signal(signal.SIGINT, _SAVED_SIGINT)
        except (ValueError, TypeError):
            pass
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


class _Watcher:
    """The process that cleans up after a caller that was killed (see the module docstring)."""

    def __init__(self, tmp):
        import subprocess

        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-S",
                "-c",
                _WATCHER_SOURCE,
                str(os.getpid()),
                tmp,
                str(_WATCH_POLL_S),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a signal to the caller's process group spares it
        )
        self.fd = self.proc.stdin.fileno()

    @classmethod
    def start(cls, tmp):
        """A watcher, or None where no interpreter can be started (an embedded Python
        without ``sys.executable``): the ranks' PR_SET_PDEATHSIG still applies."""
        if not sys.executable:
            return None
        try:
            return cls(tmp)
        except OSError:
            return None

    def _send(self, text):
        try:
            os.write(self.fd, text.encode())
        except OSError:  # the watcher died: nothing to tell it
            pass

    def watch(self, pid):
        self._send(f"{pid}\n")

    def finish(self):
        """The caller has cleaned up: stop the watcher (SIGKILL: it may still be starting,
        and waiting for it to read "done" would cost the call its start-up time) and reap it."""
        try:
            self.proc.kill()
        except OSError:
            pass
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait()


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


def _set_parent_death_signal():
    """Linux: if the parent dies (kernel killed), the kernel SIGKILLs this child too."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


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


def _kill_group(pid):
    """SIGKILL the process group a rank leads (the rank and whatever it started)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # empty group, or never made
        pass


def _kill_all(procs):
    """SIGKILL every rank's process group (exited ranks too: what they started is an
    orphan) and every unreaped rank, then reap them all."""
    for p in procs:
        if p.pid is None:
            continue
        _kill_group(p.pid)
        if p.exitcode is None:  # a reaped rank's pid may belong to someone else now
            try:
                os.kill(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    for p in procs:
        if p.pid is not None:
            p.join()


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
            tmp = tempfile.mkdtemp(prefix="scaleout-run-")
            watcher = _Watcher.start(tmp)
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
