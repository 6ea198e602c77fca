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
        if v.kind == "assumed":
            assert v.note.strip(), f"{name}.csv: say why the value is assumed: {v}"
        if v.kind == "read-off":
            assert v.note.strip() or v.uncertainty is not None, f"say how well: {v}"
        assert v.uncertainty is None or isinstance(v.uncertainty, float)
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


def test_interconnect_tables_are_built_from_the_csv():
    """Every number of the NVLink, NVSwitch, system, PCIe and NIC tables and of the link
    presets is a row of interconnect.csv: each record's numeric fields equal the rows'."""
    from scaleout.hardware import interconnect as I
    from scaleout.hardware import links as L

    rows = [v for v in data.load("interconnect")]
    by = {}
    for v in rows:
        by.setdefault((v.get("table"), v.get("row")), {})[v.get("field")] = v.value
    for r in I.NVLINK_GENERATIONS:
        for field, value in by[("nvlink", str(r.generation))].items():
            assert getattr(r, field) == value, (r, field)
    for r in I.NVSWITCH_GENERATIONS:
        for field, value in by[("nvswitch", str(r.generation))].items():
            assert getattr(r, field) == value, (r, field)
    for r in I.SYSTEMS:
        fields = by[("system", r.name)]
        for field in ("gpus_per_server", "nics_per_server", "nic_gbit_per_s",
                      "all_to_all_tb_per_s", "memory_tb"):  # fmt: skip
            assert getattr(r, field) == fields.get(field), (r.name, field)
    for r in I.PCIE_GENERATIONS:
        f = by[("pcie", str(r.generation))]
        assert (r.gt_per_s, r.encoding) == (
            f["gt_per_s"],
            (f["encoding_payload_bits"], f["encoding_line_bits"]),
        )
    for r in I.NIC_SPEEDS:
        assert r.gbit_per_s == by[("nic", r.adapter)]["gbit_per_s"]
    h100 = L.link("nvlink4-h100")
    nv4 = by[("nvlink", "4")]
    assert h100.gb_per_s == nv4["links"] * nv4["link_gb_per_s_bidirectional"] / 2
    assert L.link("pcie4-x16").gb_per_s == by[("link", "pcie4-x16")]["gb_per_s"]
    assert L.link("nic-400g").alpha_s == by[("link", "nic")]["alpha_s"]
    # every row is used: no number sits in the file that no record reads
    used = {(t, r) for t, r in by}
    assert used == {("nvlink", str(r.generation)) for r in I.NVLINK_GENERATIONS} | {
        ("nvswitch", str(r.generation)) for r in I.NVSWITCH_GENERATIONS
    } | {("system", r.name) for r in I.SYSTEMS} | {
        ("pcie", str(r.generation)) for r in I.PCIE_GENERATIONS
    } | {("nic", r.adapter) for r in I.NIC_SPEEDS} | {
        ("link", k) for k in ("pcie3-x16", "pcie4-x16", "pcie5-x16", "pcie", "nvlink", "nic")
    }


def test_the_model_registry_is_built_from_models_csv():
    """Every shape number of transformer.MODELS is a row of models.csv, and every row is read."""
    from scaleout import transformer as T

    seen = set()
    for v in data.load("models"):
        m = T.MODELS[v.get("model")]
        assert getattr(m, v.get("field")) == v.value, v
        seen.add(v.get("model"))
    assert seen == set(T.MODELS)
    for m in T.MODELS.values():  # the fields a model has no row for are the dataclass defaults
        rows = {v.get("field") for v in data.load("models") if v.get("model") == m.name}
        assert {"layers", "hidden", "heads", "seq", "vocab"} <= rows, m.name


def test_flash_rates_are_the_rows_of_attention_csv():
    from scaleout.compute import flash as F

    rows = {v.key: v for v in data.load("attention")}
    assert F.FA3_FORWARD_FLOPS_PER_S == rows["fa3-forward-causal-hd128-16k"].value * 1e12
    assert F.FA3_BACKWARD_FLOPS_PER_S == rows["fa3-backward-hd128-16k"].value * 1e12
    assert F.BACKWARD_FACTOR == rows["fa2-backward-factor"].value
    assert rows["fa3-forward-causal-hd128-16k"].get("mask") == "causal"
