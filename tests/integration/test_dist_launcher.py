"""scaleout.dist.run under interrupts and killed callers (issue 31): the launcher suite of
the fuzz (``tests/fuzz_launcher.py``), each scenario in a fresh caller process."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import fuzz_launcher  # noqa: E402

pytestmark = pytest.mark.timeout(300)


def test_sigint_at_every_offset_interrupts_promptly_and_leaves_nothing():
    # 0 to 60 ms after run() is called covers the forks of the four ranks (the window where
    # an interrupt used to vanish into an at-fork hook and the run went on to its timeout).
    offsets = [round(0.004 * i, 3) for i in range(16)] + [0.1, 0.3, 1.0]
    results = fuzz_launcher.interrupts(offsets, bound_s=20.0)
    assert [r for r in results if r[1] != "ok"] == []
    assert len(results) == len(offsets)


@pytest.mark.parametrize("delay", [0.0, 0.02, 0.1, None])
def test_a_sigkilled_caller_leaves_no_process_and_no_directory(delay):
    # None: killed once every rank has started a grandchild of its own ("sleep 120").
    assert fuzz_launcher.killed(signal.SIGKILL, delay)[1] == "ok"


def test_a_sigtermed_caller_leaves_no_process_and_no_directory():
    assert fuzz_launcher.killed(signal.SIGTERM, None)[1] == "ok"


@pytest.mark.parametrize("step", ["popen", "create"])
def test_a_caller_killed_as_the_launch_starts_leaves_nothing(step):
    # Deterministic versions of the race a delay of 0 hits now and then: killed as the
    # watcher is started, or right after the first thing is created in TMPDIR (once this was
    # the probe file of Python's first tempfile.gettempdir(), or the launch directory before
    # any watcher knew it).
    assert fuzz_launcher.killed_at(step)[1] == "ok"
