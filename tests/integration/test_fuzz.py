"""Every public callable of every library module, fuzzed with bad input (``tests/fuzz.py``).

One test per module: each argument of each callable's baseline call is replaced in turn by
wrong types, NaN, inf, negative, zero, huge and malformed values; every case must raise the
library's ``ValueError`` or return a finite result, within a time and memory budget.
"""

from __future__ import annotations

import fuzz  # tests/fuzz.py (tests/ is on sys.path: tests/conftest.py)
import pytest

MODULES = sorted(fuzz.discover())


def test_every_module_is_fuzzed():
    assert "scaleout.collectives" in MODULES and "scaleout.viz.render" in MODULES
    assert not any(m.startswith("scaleout.demos") for m in MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_bad_input_raises_value_error_or_gives_a_finite_result(module):
    counts, problems = fuzz.run_cases([module])
    assert counts["value-error"] + counts["finite"] + counts["skipped"] > 0
    report = "\n".join(
        f"{outcome}: {qual}{'' if label == '-' else ' ' + label}: {detail}"
        for qual, label, outcome, detail in problems[:40]
    )
    assert not problems, f"{len(problems)} failing cases in {module}:\n{report}"
