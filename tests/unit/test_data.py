"""scaleout.data: every published number has a known unit, a references.bib source and one row."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scaleout import data, hardware

BIB = Path(__file__).resolve().parents[2] / "references.bib"


def bib_keys() -> set[str]:
    return set(re.findall(r"^@\w+\{([^,\s]+),", BIB.read_text(encoding="utf-8"), re.M))


@pytest.mark.parametrize("name", data.FILES)
def test_every_row_is_sourced_and_unique(name):
    keys = bib_keys()
    rows = data.load(name)
    assert rows
    seen = set()
    for v in rows:
        assert v.source in keys, f"{name}.csv: source {v.source!r} is not in references.bib"
        assert v.unit in data.UNITS and v.kind in data.KINDS
        assert v.locator.strip(), f"{name}.csv: a row without a locator: {v}"
        if v.kind in ("assumed", "read-off"):
            assert v.note.strip() or v.uncertainty is not None, f"say why or how well: {v}"
        key = (v.source, v.locator, v.setting)
        assert key not in seen, f"{name}.csv: {key} appears twice"
        seen.add(key)


def test_the_csv_is_in_the_package_data():
    text = (BIB.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert '"data/*.csv"' in text
    assert all((data.HERE / f"{name}.csv").is_file() for name in data.FILES)


def test_gpu_rows_are_built_from_the_csv_by_column_name():
    for name, row in hardware.GPUS.items():
        fields = data.gpu_fields(name)
        for field, value in fields.items():
            assert getattr(row, field) == value and type(getattr(row, field)) is type(value)
        sources = data.gpu_sources(name)
        assert set(sources) == set(fields)
    # a field the CSV has no row for is None in the table (the GPU has no such data type)
    assert hardware.gpu("V100-32GB").bf16_tflops is None
    assert "bf16_tflops" not in data.gpu_fields("V100-32GB")


def test_secondary_fields_are_not_primary_statements():
    for name, row in hardware.GPUS.items():
        sources = data.gpu_sources(name)
        for field in row.secondary:
            source, _, kind = sources[field]
            assert (
                kind in ("assumed", "measured")
                or source != "nvidiah100datasheet"
                or (name == "H100-PCIe")
            ), (name, field, sources[field])


def test_bad_names_raise():
    with pytest.raises(ValueError, match="name must be"):
        data.load("gpu")
    with pytest.raises(ValueError, match="gpu must be"):
        data.gpu_fields("Z100")


def test_the_bibliography_parses_whole():
    """Every entry of references.bib is read by the book's BibTeX parser (a merge that drops a
    closing brace fails the build, not only a look-up)."""
    from pybtex.database import parse_file

    path = Path(__file__).resolve().parents[2] / "references.bib"
    db = parse_file(str(path))
    declared = [line for line in path.read_text().splitlines() if line.startswith("@")]
    assert len(db.entries) == len(declared)
