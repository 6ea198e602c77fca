"""Shared test helpers, for every tier: ``tests/unit`` (fast library tests, what
``make test-fast`` runs), ``tests/integration`` (processes: the launcher, torchrun, the demos,
the fuzzer) and ``tests/book`` (the chapters, the built site, JupyterLab).

This folder goes on ``sys.path``: tests import ``repo_paths`` (where the repository's parts
are) and ``fuzz`` (the fuzzer, whose baselines are ``tests/fuzz_baselines``) from here."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from scaleout import proctree

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Property tests draw the same examples on every run ("ci", the default), so `make test`
# passes or fails the same way on every machine; HYPOTHESIS_PROFILE=explore draws new ones
# (a failure it finds prints the example to pin with @example).
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

TORCHRUN = Path(sys.executable).with_name("torchrun")


@pytest.fixture
def torchrun():
    """``torchrun(module, *args, nproc=4, timeout=180) -> stdout``: runs a demo under the real
    ``torchrun --standalone`` launcher (gloo on CPU) and checks that it exits 0 and reports
    no mismatch. Fails, never skips, when torchrun is missing."""

    def run(module: str, *args: str, nproc: int = 4, timeout: float = 180) -> str:
        if not TORCHRUN.exists():
            pytest.fail(f"torchrun not found next to {sys.executable}: reinstall torch")
        cmd = [str(TORCHRUN), "--standalone", "--nproc-per-node", str(nproc), "-m", module]
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        # proctree, not subprocess.run: torchrun's workers live in sessions of their own,
        # and on a timeout they are killed too (and the failure says what each was doing)
        proc = proctree.run(cmd + list(args), timeout_s=timeout, env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "MISMATCH" not in proc.stdout, proc.stdout
        return proc.stdout

    return run
