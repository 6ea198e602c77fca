"""The launcher suite of the fuzz: ``scaleout.dist.run`` interrupted and killed at many moments.

Each scenario runs a *caller* -- a fresh Python process that calls ``dist.run`` -- and
disturbs it: SIGINT at a range of offsets (the fork of the ranks included), SIGKILL /
SIGTERM of the caller while its ranks (and processes they started) run, or a SIGKILL the
caller sends itself at a fixed step of the launch's start (``killed_at``). Every process of a
scenario carries a marker in its environment, so what it leaves behind is found by reading
``/proc/*/environ``; the caller's ``TMPDIR`` is a fresh directory, so a temporary directory
left behind is seen too.

The contract checked for every scenario: an interrupted caller raises ``KeyboardInterrupt``
promptly (not at the run's timeout), and within a few seconds of the caller's end no process
of the scenario is left and its temporary directory is gone.

``python tests/fuzz_launcher.py`` runs the suite and prints the count per outcome.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "lib"
SETTLE_S = 10.0  # a killed caller's leftovers must be gone this long after its end

# SIGINTs from a timer thread of the caller itself (a real, process-directed signal that any
# thread may receive), one launch per offset; prints one line per launch.
INTERRUPTS = r"""
import os, signal, sys, threading, time
import torch.distributed  # as run() does first: the offsets then fall on the forks
from scaleout.dist import run

def sleeper(rank, world_size):
    time.sleep(120)

for offset in map(float, sys.argv[1:]):
    timer = threading.Timer(offset, os.kill, (os.getpid(), signal.SIGINT))
    start = time.monotonic()
    try:
        timer.start()
        run(sleeper, 4, timeout=60, show_output=False)
        outcome = "returned"
    except KeyboardInterrupt:
        outcome = "interrupted"
    timer.join()
    print(f"{offset} {outcome} {time.monotonic() - start:.2f}", flush=True)
"""

# A caller whose ranks each start a grandchild, then wait; prints "ready" once all have.
KILLED = r"""
import os, subprocess, sys, time
import torch.distributed
from scaleout.dist import run

def rank_fn(rank, world_size, marker_dir):
    child = subprocess.Popen(["sleep", "120"])
    open(os.path.join(marker_dir, f"rank{rank}"), "w").write(str(child.pid))
    time.sleep(120)

marker_dir, delay = sys.argv[1], float(sys.argv[2])
print("start", flush=True)
run(rank_fn, 3, args=(marker_dir,), timeout=120, show_output=False)
"""

# A caller that SIGKILLs itself at one step of run()'s start: "popen", as it starts its first
# subprocess (the watcher); "create", right after it first creates anything in its TMPDIR
# (a directory or a file; Python's first tempfile.gettempdir() writes and deletes a probe
# file there). Forked ranks inherit the hooks but only the caller's pid fires them.
KILLED_AT = r"""
import os, signal, subprocess, sys
import torch.distributed
from scaleout.dist import run

step, me, tmp = sys.argv[1], os.getpid(), os.path.realpath(os.environ["TMPDIR"])

def die():
    if os.getpid() == me:
        os.kill(me, signal.SIGKILL)

def creating(real):
    def hooked(path, *args, **kwargs):
        made = real(path, *args, **kwargs)
        if os.path.dirname(os.path.realpath(os.fsdecode(path))) == tmp:
            die()
        return made
    return hooked

if step == "popen":
    real_init = subprocess.Popen.__init__
    def popen(self, *args, **kwargs):
        die()
        real_init(self, *args, **kwargs)
    subprocess.Popen.__init__ = popen
else:
    os.open, os.mkdir = creating(os.open), creating(os.mkdir)
print("start", flush=True)
run(lambda rank, world_size: None, 2, timeout=60, show_output=False)
print("not killed", flush=True)
"""


def _env(marker: str, tmpdir: str) -> dict:
    env = dict(os.environ, SCALEOUT_LAUNCHER_MARK=marker, TMPDIR=tmpdir, OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(LIB), env.get("PYTHONPATH")]))
    return env


def marked_processes(marker: str) -> list[int]:
    """Live (not zombie) pids whose environment holds ``SCALEOUT_LAUNCHER_MARK=marker``."""
    needle = f"SCALEOUT_LAUNCHER_MARK={marker}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle not in f.read().split(b"\0"):
                    continue
            with open(f"/proc/{entry}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    continue
        except OSError:
            continue
        found.append(int(entry))
    return found


def _settled(marker: str, tmpdir: str) -> tuple[list[int], list[str]]:
    """Wait up to SETTLE_S for the scenario's processes and files to go; what is left."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        procs, files = marked_processes(marker), os.listdir(tmpdir)
        if (not procs and not files) or time.monotonic() > deadline:
            return procs, files
        time.sleep(0.05)


def _cleanup(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def interrupts(offsets, bound_s: float = 20.0) -> list[tuple[str, str]]:
    """One caller, one launch per offset, SIGINT after ``offset`` seconds: outcomes."""
    marker = uuid.uuid4().hex
    with tempfile.TemporaryDirectory() as tmpdir:
        proc = subprocess.Popen(
            [sys.executable, "-c", INTERRUPTS, *map(str, offsets)],
            env=_env(marker, tmpdir),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            out, err = proc.communicate(timeout=60 + bound_s * len(offsets))
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        results = []
        lines = {float(line.split()[0]): line.split()[1:] for line in out.splitlines()}
        for offset in offsets:
            got = lines.get(float(offset))
            if got is None:
                results.append((f"sigint@{offset}", f"no result (caller rc {proc.returncode})"))
            elif got[0] != "interrupted":
                results.append((f"sigint@{offset}", got[0]))
            elif float(got[1]) > bound_s:
                results.append((f"sigint@{offset}", f"late: {got[1]} s"))
            else:
                results.append((f"sigint@{offset}", "ok"))
        procs, files = _settled(marker, tmpdir)
        _cleanup(procs)
        if procs or files:
            results.append(("sigint-leftovers", f"{len(procs)} processes, files {files}"))
    return results


def killed(sig: int, delay: float | None) -> tuple[str, str]:
    """A caller killed with ``sig``: ``delay`` seconds after it starts its launch, or (None)
    once every rank has started its grandchild. Outcome: what was left behind."""
    marker = uuid.uuid4().hex
    name = f"{signal.Signals(sig).name}@{'ready' if delay is None else delay}"
    with tempfile.TemporaryDirectory() as tmpdir, tempfile.TemporaryDirectory() as marks:
        proc = subprocess.Popen(
            [sys.executable, "-c", KILLED, marks, str(delay or 0)],
            env=_env(marker, tmpdir),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            proc.stdout.readline()  # "start": torch imported, run() about to be called
            if delay is None:
                deadline = time.monotonic() + 60
                while len(os.listdir(marks)) < 3 and time.monotonic() < deadline:
                    time.sleep(0.02)
            else:
                time.sleep(delay)
            proc.send_signal(sig)
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
        procs, files = _settled(marker, tmpdir)
        _cleanup(procs)
        if procs or files:
            return name, f"left {len(procs)} processes and files {files}"
        return name, "ok"


def killed_at(step: str) -> tuple[str, str]:
    """A caller that SIGKILLs itself at ``step`` of the launch's start (see ``KILLED_AT``).
    Outcome: what was left behind, or that the step never came."""
    marker = uuid.uuid4().hex
    with tempfile.TemporaryDirectory() as tmpdir:
        proc = subprocess.run(
            [sys.executable, "-c", KILLED_AT, step],
            env=_env(marker, tmpdir),
            capture_output=True,
            text=True,
            timeout=120,
        )
        procs, files = _settled(marker, tmpdir)
        _cleanup(procs)
        if proc.returncode != -signal.SIGKILL:
            return f"sigkill@{step}", f"not killed (rc {proc.returncode}): {proc.stderr[-300:]}"
        if procs or files:
            return f"sigkill@{step}", f"left {len(procs)} processes and files {files}"
        return f"sigkill@{step}", "ok"


def suite(quick: bool = False) -> Counter:
    """Every scenario; ``Counter`` of outcomes (``ok`` or what went wrong)."""
    offsets = [round(0.004 * i, 3) for i in range(16)] + [0.1, 0.3, 1.0]
    if quick:
        offsets = offsets[::2]
    results = interrupts(offsets)
    delays = [0.0, 0.01, 0.03, 0.1, None]
    for sig in (signal.SIGKILL, signal.SIGTERM):
        for delay in delays if sig == signal.SIGKILL or not quick else [None]:
            results.append(killed(sig, delay))
    results += [killed_at(step) for step in ("popen", "create")]
    return results


if __name__ == "__main__":
    results = suite(quick="--quick" in sys.argv)
    print(f"{len(results)} launcher cases")
    for outcome, n in Counter(o if o == "ok" else "failed" for _, o in results).items():
        print(f"  {outcome:10s} {n}")
    for name, outcome in results:
        if outcome != "ok":
            print(f"  {name}: {outcome}")
