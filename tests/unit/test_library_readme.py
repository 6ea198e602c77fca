"""lib/scaleout/README.md's table names files that exist, and names every data file."""

import re
from pathlib import Path

from scaleout import data

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "lib" / "scaleout" / "README.md").read_text(encoding="utf-8")
NAMES = re.findall(r"`([^`\s]+)`", README)


def test_every_test_file_it_names_exists():
    tests = [n for n in NAMES if re.match(r"(unit|integration|book)/test_\w+\.py$", n)]
    assert len(tests) > 30
    missing = [n for n in tests if not (ROOT / "tests" / n).is_file()]
    assert not missing, f"README names tests that do not exist: {missing}"


def test_every_data_file_it_names_exists_and_every_data_file_is_named():
    named = {n for n in NAMES if re.match(r"data/\w+\.csv$", n)}
    missing = [n for n in named if not (data.HERE / Path(n).name).is_file()]
    assert not missing, f"README names data files that do not exist: {missing}"
    unnamed = [f for f in data.FILES if f"data/{f}.csv" not in named]
    assert not unnamed, f"data files the README's table does not name: {unnamed}"
