"""scaleout.data: every published number has a known unit, a references.bib source and one row."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scaleout import data, hardware

BIB = Path(__file__).resolve().parents[2] / "references.bib"


def bib_keys() -> set[str]:
    return set(re.findall(r"^@\w+\{([^,\s]+),", BIB.read_text(encoding="utf-8"), re.M))


def check_rows(name, rows, setting=lambda v: v.setting):
    """The rules every published row obeys: a references.bib source, a known unit and kind,
    a locator, a reason for an assumption, a reading accuracy for a read-off value, a numeric
    uncertainty, and no (source, locator, setting) twice."""
    keys = bib_keys()
    assert rows
    seen = set()
    for v in rows:
        assert v.source in keys, f"{name}.csv: source {v.source!r} is not in references.bib"
        assert v.unit in data.UNITS and v.kind in data.KINDS
        assert v.locator.strip(), f"{name}.csv: a row without a locator: {v}"
        if v.kind == "assumed":
            assert v.note.strip(), f"{name}.csv: say why the value is assumed: {v}"
        if v.kind == "read-off":
            assert v.note.strip() or v.uncertainty is not None, f"say how well: {v}"
        assert v.uncertainty is None or isinstance(v.uncertainty, float)
        key = (v.source, v.locator, setting(v))
        assert key not in seen, f"{name}.csv: {key} appears twice"
        seen.add(key)


@pytest.mark.parametrize("name", data.FILES)
def test_every_row_is_sourced_and_unique(name):
    check_rows(name, data.load(name))


def test_the_nccl_logs_rows_obey_the_same_rules():
    """calibrate.published reads data/nccl_logs/logs.csv itself (a row may lack a value);
    its rows follow the one loader's conventions: the same columns, units, kinds and rules."""
    from scaleout.calibrate import published as logs

    header = (logs.DATA / "logs.csv").read_text(encoding="utf-8").splitlines()[0]
    assert tuple(header.split(",")) == logs.COLUMNS
    assert set(data.COLUMNS) <= set(logs.COLUMNS) and logs.UNITS is data.UNITS
    assert logs.KINDS is data.KINDS
    rows = logs.entries()
    check_rows("nccl_logs/logs", rows, lambda e: tuple(getattr(e, c) for c in logs.SETTING))
    # a log's quoted numbers are rows of it; a row without a value only describes a machine
    assert sum(e.value is None for e in rows) == 1
    assert all(e.value is not None for e in rows if e.unit != "ranks")


def test_the_nccl_logs_loader_refuses_words_as_uncertainty(tmp_path, monkeypatch):
    import csv

    from scaleout.calibrate import published as logs

    with open(logs.DATA / "logs.csv", newline="", encoding="utf-8") as fh:
        head, row, *_ = list(csv.reader(fh))
    monkeypatch.setattr(logs, "DATA", tmp_path)

    def write(**fields):
        changed = [fields.get(c, x) for c, x in zip(head, row, strict=True)]
        with open(tmp_path / "logs.csv", "w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows([head, changed])

    write()
    assert len(logs.entries()) == 1
    write(uncertainty="approximate")
    with pytest.raises(ValueError, match="uncertainty must be a number"):
        logs.entries()
    write(unit="furlongs")
    with pytest.raises(ValueError, match="unit must be"):
        logs.entries()
    write(kind="assumed", note="")
    with pytest.raises(ValueError, match="note must be a reason"):
        logs.entries()


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


def test_every_file_is_in_the_one_long_format():
    for name in data.FILES:
        header = (data.HERE / f"{name}.csv").read_text(encoding="utf-8").splitlines()[0]
        columns = header.split(",")
        assert set(data.COLUMNS) <= set(columns), name
        assert len(set(columns)) == len(columns), name


def test_congestion_and_failures_records_come_from_the_one_loader():
    from scaleout.congestion import published as congestion
    from scaleout.failures import published as failures

    for records, name in ((congestion.rows(), "congestion"), (failures.rows(), "failures")):
        values = data.load(name)
        assert len(records) == len(values)
        for r, v in zip(records, values, strict=True):
            assert (r.key, r.value, r.unit, r.source, r.locator, r.kind, r.note) == (
                v.key,
                v.value,
                v.unit,
                v.source,
                v.locator,
                v.kind,
                v.note,
            )
            assert r.uncertainty == v.uncertainty
            # the record has every setting column but congestion's range_end (low or high
            # end of a stated range, which the row's key names too)
            assert all(getattr(r, c) == x for c, x in v.setting if c != "range_end")
    assert congestion.value("dcqcn-Kmax") == 200_000.0
    assert failures.row("opt-175b", "period").uncertainty == 7.0
    # an assumed value's range is two rows of its own, in its unit, around the value
    low, high = failures.assumed_range("restart time")
    assert (low, high) == (120.0, 1800.0) and low <= failures.value("assumed", "restart time")


def _write(tmp_path, monkeypatch, name, text):
    (tmp_path / f"{name}.csv").write_text(text, encoding="utf-8")
    monkeypatch.setattr(data, "HERE", tmp_path)
    data._load.cache_clear()


def test_the_loader_refuses_words_as_uncertainty_and_unexplained_assumptions(tmp_path, monkeypatch):
    head = "key,quantity,value,unit,source,locator,kind,uncertainty,note\n"
    _write(tmp_path, monkeypatch, "t1", head + "a,x,1.0,s,src,p. 1,stated,up to,\n")
    with pytest.raises(ValueError, match="uncertainty must be a number"):
        data._load("t1")
    _write(tmp_path, monkeypatch, "t2", head + "a,x,1.0,s,src,p. 1,assumed,,\n")
    with pytest.raises(ValueError, match="note must be a reason"):
        data._load("t2")
    _write(
        tmp_path,
        monkeypatch,
        "t3",
        head + "a,x,1.0,s,src,p. 1,stated,,\na,y,2.0,s,src,p. 2,stated,,\n",
    )
    with pytest.raises(ValueError, match="key must be unique"):
        data._load("t3")
    _write(tmp_path, monkeypatch, "t4", head + "a,x,1.0,furlongs,src,p. 1,stated,,\n")
    with pytest.raises(ValueError, match="unit must be"):
        data._load("t4")
    _write(tmp_path, monkeypatch, "t5", head + "a,x,1.0,s,src,p. 1,stated,0.5,\n")
    (row,) = data._load("t5")
    assert row.key == "a" and row.uncertainty == 0.5 and row.setting == (("quantity", "x"),)
    monkeypatch.undo()
    data._load.cache_clear()
