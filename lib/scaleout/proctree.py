"""Run a launcher (``torchrun``) as a subprocess and leave nothing behind.

``torchrun`` starts every worker in a session of its own (torch's
``SubprocessHandler`` passes ``start_new_session=True``), so killing the launcher's process
group does not reach the workers: a hung worker keeps running after the launcher is gone,
and if it holds the pipes the caller reads, ``communicate()`` waits for ever. :func:`run`
writes the output to files, watches the process tree (``/proc`` on Linux) while the command
runs, kills whatever of it is left when the command ends or times out, and on a timeout
raises :class:`LauncherTimeout` with what each process was doing when it was killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

_TAIL_CHARS = 3000


def _ppids() -> dict[int, int]:
    """pid -> parent pid of every process visible in ``/proc`` (empty where there is none)."""
    out = {}
    for d in Path("/proc").glob("[0-9]*"):
        try:
            stat = (d / "stat").read_text()
        except OSError:  # gone, or not ours to read
            continue
        # the command name (field 2) is in parentheses and may itself hold spaces or ')'
        fields = stat[stat.rfind(")") + 2 :].split()
        out[int(d.name)] = int(fields[1])
    return out


def _check_pid(pid) -> int:
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        # 0 and negative numbers mean "my process group" and "every process" to kill(2)
        raise ValueError(f"pid must be a positive integer, got {pid!r}")
    return pid


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, ...), parents first."""
    _check_pid(pid)
    children: dict[int, list[int]] = {}
    for p, pp in _ppids().items():
        children.setdefault(pp, []).append(p)
    found, todo = [], [pid]
    while todo:
        for c in sorted(children.get(todo.pop(0), [])):
            found.append(c)
            todo.append(c)
    return found


def describe(pids: list[int]) -> str:
    """One line per process: pid, state, kernel wait channel and command line (processes
    already gone are left out)."""
    if not isinstance(pids, list | tuple):
        raise ValueError(f"pids must be a list of process ids, got {pids!r}")
    lines = []
    for pid in pids:
        _check_pid(pid)
        d = Path("/proc") / str(pid)
        try:
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (d / "stat").read_text()
            state = stat[stat.rfind(")") + 2 :].split()[0]
            wchan = (d / "wchan").read_text().strip() or "-"
        except OSError:
            continue
        lines.append(f"  pid {pid} state {state} wchan {wchan}: {cmd.strip()[:200]}")
    return "\n".join(lines)


def kill_tree(pid: int, rounds: int = 4, pause_s: float = 0.05) -> list[int]:
    """SIGKILL ``pid``, its process group and every descendant, a few rounds over (a process
    forking meanwhile); returns the pids it signalled. Refuses the calling process itself."""
    _check_pid(pid)
    if pid == os.getpid() or pid == os.getpgrp():
        raise ValueError(f"kill_tree({pid}) would kill the calling process")
    signalled: set[int] = set()
    for _ in range(rounds):
        targets = descendants(pid) + [pid]
        for p in targets:
            for kill in (os.killpg, os.kill):
                try:
                    kill(p, signal.SIGKILL)
                    signalled.add(p)
                except OSError:
                    pass
        time.sleep(pause_s)
    return sorted(signalled)


class LauncherTimeout(TimeoutError):
    """The launched command ran past its limit; everything it started was killed.

    Attributes: ``stdout`` and ``stderr`` (what it printed before), ``processes`` (what
    each process was doing when it was killed)."""

    def __init__(self, message: str, stdout: str, stderr: str, processes: str):
        super().__init__(message)
        self.stdout, self.stderr, self.processes = stdout, stderr, processes


@dataclass(frozen=True)
class Finished:
    """What :func:`run` got back."""

    returncode: int
    stdout: str
    stderr: str

    def __post_init__(self):
        if isinstance(self.returncode, bool) or not isinstance(self.returncode, int):
            raise ValueError(f"returncode must be an integer, got {self.returncode!r}")
        for name in ("stdout", "stderr"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a string, got {getattr(self, name)!r}")


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of ``/proc/PID/stat``):
    with the pid, it names one process even after the pid is reused."""
    try:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rfind(")") + 2 :].split()[19])


def _kill_seen(seen: dict[int, int | None]) -> None:
    """SIGKILL each process in ``seen`` (pid -> start time) that still is that process."""
    for pid, started in seen.items():
        if started is not None and _start_time(pid) == started:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def run(cmd: list[str], *, timeout_s: float, env: dict | None = None, poll_s: float = 0.2):
    """Run ``cmd`` in a new session and return a :class:`Finished` with its exit status and
    output. Output goes to temporary files, not pipes, so a process that outlives ``cmd``
    cannot make the wait hang. Every ``poll_s`` the processes below ``cmd`` are noted (with
    their start times, so a reused pid is never hit): when ``cmd`` ends, any of them still
    running is killed; on ``timeout_s`` all of them and ``cmd`` are killed and
    :class:`LauncherTimeout` raised, saying what each was doing. ``TMPDIR`` points at a
    private folder removed afterwards (torchrun leaves ``torchelastic_*`` folders there).
    ``env`` replaces the environment (default: this process's)."""
    if (
        isinstance(timeout_s, bool)
        or not isinstance(timeout_s, int | float)
        or not 0 < timeout_s < float("inf")
    ):
        raise ValueError(f"timeout_s must be a positive finite number, got {timeout_s!r}")
    if (
        isinstance(cmd, str | bytes)
        or not isinstance(cmd, list | tuple)
        or not cmd
        or not all(isinstance(a, str | os.PathLike) for a in cmd)
    ):
        raise ValueError(f"cmd must be a non-empty list of strings, got {cmd!r}")
    with (
        tempfile.TemporaryFile("w+") as out_f,
        tempfile.TemporaryFile("w+") as err_f,
        tempfile.TemporaryDirectory(prefix="scaleout-run-") as private_tmp,
    ):
        env = {**(os.environ if env is None else env), "TMPDIR": private_tmp}
        proc = subprocess.Popen(
            cmd, stdout=out_f, stderr=err_f, text=True, env=env, start_new_session=True
        )
        seen: dict[int, int | None] = {}
        deadline = time.monotonic() + timeout_s
        try:
            while True:
                for pid in descendants(proc.pid):
                    seen.setdefault(pid, _start_time(pid))
                try:
                    proc.wait(timeout=min(poll_s, max(0.0, deadline - time.monotonic())))
                    break
                except subprocess.TimeoutExpired:
                    if time.monotonic() >= deadline:
                        tree = descendants(proc.pid)
                        processes = describe([proc.pid, *tree])
                        kill_tree(proc.pid)
                        _kill_seen(seen)
                        proc.wait()
                        out, err = _read(out_f), _read(err_f)
                        raise LauncherTimeout(
                            f"{Path(cmd[0]).name} did not finish in {timeout_s} s; killed "
                            f"it and the {len(tree)} process(es) it started. They were:\n"
                            f"{processes}\n"
                            f"--- stdout (tail) ---\n{out[-_TAIL_CHARS:]}\n"
                            f"--- stderr (tail) ---\n{err[-_TAIL_CHARS:]}",
                            out,
                            err,
                            processes,
                        ) from None
        except BaseException:  # KeyboardInterrupt included: leave nothing running
            if proc.poll() is None:
                kill_tree(proc.pid)
                proc.wait()
            _kill_seen(seen)
            raise
        # it ended: what its process group or its tree left behind goes too
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        _kill_seen(seen)
        return Finished(proc.returncode, _read(out_f), _read(err_f))


def _read(f) -> str:
    f.flush()
    f.seek(0)
    return f.read()
