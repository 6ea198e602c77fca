"""The kill-and-resume demo under real torchrun (2 gloo processes, --max-restarts 1)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from scaleout import proctree
from scaleout.demos import failures as D


def _leftovers() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("scaleout-failures-*")}


def _demo_processes() -> set[int]:
    """Processes of this user running the demo's ranks or its torchrun."""
    found = set()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if b"scaleout.demos.failures" in cmd and proc.stat().st_uid == os.getuid():
            found.add(int(proc.name))
    return found


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_a_killed_rank_restarts_resumes_and_ends_bitwise_equal():
    before, running = _leftovers(), _demo_processes()
    out = D.launch(steps=10, checkpoint_every=3, kill_rank=1, kill_step=8, timeout_s=300)
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    lines = out.ok_lines
    assert not [ln for ln in lines if ln.startswith("MISMATCH")], lines
    assert "ok attempt 2 of 2: rank 1 was killed (SIGKILL) at step 8 in attempt 1" in lines
    assert "ok resumed from step 6 (lost 2 steps)" in lines
    assert "ok checkpoints on disk after steps [3, 6, 9] (every 3 steps)" in lines
    assert "ok weights bitwise identical to an uninterrupted run (10 steps)" in lines
    assert "ok Adam states bitwise identical to an uninterrupted run" in lines
    assert re.search(r"exitcode\s*:\s*-9", out.stderr), "torchrun saw the SIGKILL"
    assert _leftovers() <= before  # the temporary checkpoint folder is gone
    assert _demo_processes() <= running  # and no rank or launcher outlived the run


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_rank_zero_can_die_before_any_checkpoint():
    out = D.launch(steps=4, checkpoint_every=4, kill_rank=0, kill_step=1, timeout_s=300)
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    assert "ok resumed from step 0 (lost 1 steps)" in out.ok_lines
    assert "ok weights bitwise identical to an uninterrupted run (4 steps)" in out.ok_lines


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--steps", "1"], "--steps must be in"),
        (["--kill-step", "12"], "--kill-step must be in"),
        (["--kill-step", "0"], "--kill-step must be in"),
        (["--kill-rank", "2"], "--kill-rank must be in"),
        (["--checkpoint-every", "0"], "--checkpoint-every must be in"),
        (["--steps", "x"], "invalid int value"),
    ],
)
def test_bad_flags_stop_with_a_clear_message_and_status_2(argv, message):
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    proc = subprocess.run([sys.executable, "-m", "scaleout.demos.failures", *argv],
                          capture_output=True, text=True, timeout=120, env=env)  # fmt: skip
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr


def test_launch_checks_its_arguments_first():
    with pytest.raises(ValueError, match="kill_step"):
        D.launch(kill_step=True)
    with pytest.raises(ValueError, match="bad demo flags"):
        D.launch(steps=4, kill_step=9)
    with pytest.raises(ValueError, match="timeout_s"):
        D.launch(timeout_s=0)


@pytest.mark.timeout(200)
def test_a_rank_past_its_limit_prints_where_it_is_and_exits():
    """Under torchrun, --timeout-s is each rank's own limit (faulthandler): a run far longer
    than it fails, with the ranks' stacks, instead of hanging."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               "--nproc-per-node", "2", "--max-restarts", "0", "-m", "scaleout.demos.failures",
               "--steps", "1000", "--kill-step", "999", "--timeout-s", "1",
               "--checkpoint-dir", str(Path(tmp) / "ckpt")]  # fmt: skip
        env = {**os.environ, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo"}
        got = proctree.run(cmd, timeout_s=150, env=env)
    assert got.returncode != 0
    assert "Timeout (0:00:01)!" in got.stderr and "most recent call first" in got.stderr
