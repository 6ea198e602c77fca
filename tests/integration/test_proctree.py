"""scaleout.proctree: a launcher's workers in sessions of their own are found and killed."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from scaleout import proctree

# a launcher that starts a child in a new session (as torchrun does); the child holds the
# launcher's stdout and sleeps, printing its pid first
LAUNCHER = r"""
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c",
    "import os, time; print(os.getpid(), flush=True); time.sleep(600)"],
    start_new_session=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_a_timeout_kills_workers_in_other_sessions_and_says_what_they_were():
    t0 = time.monotonic()
    with pytest.raises(proctree.LauncherTimeout) as e:
        proctree.run([sys.executable, "-c", LAUNCHER], timeout_s=3)
    assert time.monotonic() - t0 < 40  # the pipes closed: communicate() did not wait for ever
    child = int(e.value.stdout.split()[0])
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the worker in its own session outlived the launcher"
    assert "time.sleep(600)" in e.value.processes and "state" in e.value.processes
    assert "did not finish in 3 s" in str(e.value) and "the 1 process(es)" in str(e.value)


def test_descendants_finds_children_and_grandchildren_in_any_session():
    proc = subprocess.Popen([sys.executable, "-c", LAUNCHER], stdout=subprocess.PIPE, text=True)
    try:
        grandchild = int(proc.stdout.readline())
        tree = proctree.descendants(os.getpid())
        assert proc.pid in tree and grandchild in tree
        assert tree.index(proc.pid) < tree.index(grandchild)  # parents first
        assert proctree.descendants(proc.pid) == [grandchild]
        assert set(proctree.kill_tree(proc.pid)) >= {proc.pid, grandchild}
        proc.wait(timeout=10)
        deadline = time.monotonic() + 5
        while _alive(grandchild) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(grandchild)
    finally:
        proc.kill()
        proc.wait()


def test_a_normal_run_returns_its_status_and_output():
    got = proctree.run([sys.executable, "-c", "import sys; print('hi'); sys.exit(3)"], timeout_s=60)
    assert (got.returncode, got.stdout) == (3, "hi\n")


@pytest.mark.parametrize("bad", [0, -1, True, "5", float("nan"), float("inf")])
def test_bad_timeouts_are_refused(bad):
    with pytest.raises(ValueError, match="timeout_s"):
        proctree.run([sys.executable, "-c", "pass"], timeout_s=bad)


def test_a_worker_that_outlives_its_launcher_neither_blocks_the_wait_nor_survives():
    # the launcher starts a worker in a session of its own, holding stdout, and exits
    quitter = LAUNCHER.replace("\ntime.sleep(600)\n", "\ntime.sleep(1)\n")
    assert quitter.count("time.sleep(600)") == 1
    t0 = time.monotonic()
    got = proctree.run([sys.executable, "-c", quitter], timeout_s=120)
    assert time.monotonic() - t0 < 60 and got.returncode == 0
    worker = int(got.stdout.split()[0])
    deadline = time.monotonic() + 5
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker), "a worker of the finished launcher was left running"


def test_the_commands_temporary_files_are_removed():
    code = "import tempfile; d = tempfile.mkdtemp(prefix='torchelastic_'); print(d)"
    got = proctree.run([sys.executable, "-c", code], timeout_s=60)
    made = got.stdout.strip()
    assert os.path.basename(os.path.dirname(made)).startswith("scaleout-run-")  # private TMPDIR
    assert not os.path.exists(os.path.dirname(made))  # removed with what the command left
