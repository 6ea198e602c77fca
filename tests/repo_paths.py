"""Where the repository's parts are, for the tests of every tier.

The tests live in three tiers, ``tests/unit`` (fast library tests), ``tests/integration``
(processes: ``scaleout.dist``, torchrun, the demos, the fuzzer) and ``tests/book``
(chapters, the built site, JupyterLab); ``tests/conftest.py`` puts this folder on
``sys.path`` so that any test imports these paths (``from repo_paths import ROOT``) instead
of counting parent folders.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
TOOLS = ROOT / "tools"
CHAPTERS = ROOT / "chapters"
FIXTURES = TESTS / "fixtures"
