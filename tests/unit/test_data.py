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
                      "all_to_all_tb_per_s", "memory_tb", "quoted_nvlink_tb_per_s"):  # fmt: skip
            assert getattr(r, field) == fields.get(field), (r.name, field)
    nvl72 = hardware.system("GB200 NVL72")  # the quoted 130 TB/s: 72 x 1.8 TB/s, rounded
    assert nvl72.quoted_nvlink_tb_per_s == by[("system", "GB200 NVL72")]["quoted_nvlink_tb_per_s"]
    total = nvl72.nvlink_per_gpu.to("TB/s", "bidirectional") * nvl72.gpus_per_nvlink_domain
    assert round(total) == nvl72.quoted_nvlink_tb_per_s == 130.0 and total != 130.0
    assert "quoted" not in repr(nvl72)  # the records' repr and equality are unchanged
    gen4 = I.NVSWITCH_GENERATIONS[-1]  # the tray: 2 chips, 144 ports, 14.4 TB/s
    assert gen4.chips_per_tray == by[("nvswitch", "4")]["chips_per_tray"] == 2
    assert gen4.chips_per_tray * gen4.ports == 144 and "chips_per_tray" not in repr(gen4)
    assert gen4.chips_per_tray * gen4.chip_gb_per_s_bidirectional == 14_400
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
        if v.get("field") == "stated_params":  # the size the source states, not a shape field
            # the stated size is rounded (1.7B for 1.65B counted): within 3.5% of the count
            assert T.stated_params(m.name) == v.value and 0.965 < m.params / v.value < 1.035, v
        else:
            assert getattr(m, v.get("field")) == v.value, v
        seen.add(v.get("model"))
    assert seen == set(T.MODELS)
    for m in T.MODELS.values():  # the fields a model has no row for are the dataclass defaults
        rows = {v.get("field") for v in data.load("models") if v.get("model") == m.name}
        assert {"layers", "hidden", "heads", "seq", "vocab", "stated_params"} <= rows, m.name


def test_flash_rates_are_the_rows_of_attention_csv():
    from scaleout.compute import flash as F

    rows = {v.key: v for v in data.load("attention")}
    assert F.FA3_FORWARD_FLOPS_PER_S == rows["fa3-forward-causal-hd128-16k"].value * 1e12
    assert F.FA3_BACKWARD_FLOPS_PER_S == rows["fa3-backward-hd128-16k"].value * 1e12
    assert F.BACKWARD_FACTOR == rows["fa2-backward-factor"].value
    assert rows["fa3-forward-causal-hd128-16k"].get("mask") == "causal"
    assert F.FA2_A100_PEAK_FRACTION == (
        rows["fa2-a100-peak-fraction-low"].value,
        rows["fa2-a100-peak-fraction-high"].value,
    )
    assert all(rows[f"fa2-a100-peak-fraction-{e}"].source == "dao2023flashattention2"
               for e in ("low", "high"))  # fmt: skip


def _by_record(name: str, record: str) -> list:
    return [v for v in data.load(name) if v.get("record") == record]


def test_compute_records_are_the_rows_of_compute_csv():
    from scaleout.compute import published as P

    for records, record, scale in (
        (P.MAMF, "MAMF", 1.0),
        (P.SWIGLU_SWEEP, "SWIGLU_SWEEP", 1.0),
        (P.XLA_H100_SHAPES, "XLA_H100_SHAPES", 1e12),  # the file stores FLOP/s
    ):
        rows = _by_record("compute", record)
        assert len(records) == len(rows) > 0
        for r, v in zip(records, rows, strict=True):
            assert r.tflops == v.value / scale and v.kind == "measured"
            shape = tuple(int(v.get(c)) for c in ("m", "n", "k", "batch"))
            assert (r.m, r.n, r.k, r.batch) == shape
            assert (r.accelerator, r.dtype) == (v.get("accelerator"), v.get("dtype"))
    assert (len(P.MAMF), len(P.SWIGLU_SWEEP), len(P.XLA_H100_SHAPES)) == (13, 6, 27)
    assert [m.note for m in P.MAMF] == [v.note for v in _by_record("compute", "MAMF")]
    layer = {v.get("quantity"): v.value for v in _by_record("compute", "KORTHIKANTI_LAYER")}
    # Table 3's 22B row has one home (the planner's files); compute.csv adds the sequence
    shape = {
        v.get("field"): v.value for v in data.load("planner_models") if v.get("model") == "22B"
    }
    run = {v.get("field"): v.value for v in data.load("planner_runs") if v.get("run") == "K5 22B"}
    layer |= {"hidden": shape["hidden"], "heads": shape["heads"], "b": run["micro_batch"],
              "t": run["t"]}  # fmt: skip
    assert [v.get("quantity") for v in _by_record("compute", "KORTHIKANTI_LAYER")] == ["seq"]
    assert {k: v for k, v in P.KORTHIKANTI_LAYER.items() if k != "gpu"} == layer
    assert all(type(v) is int for k, v in P.KORTHIKANTI_LAYER.items() if k != "gpu")
    # Table 4: forward and backward build the records; the table's Combined column, kept as
    # rows of its own, is their sum as printed (one decimal), a check of the transcription
    table4 = _by_record("compute", "KORTHIKANTI_TABLE4")
    assert len(table4) == 3 * len(P.KORTHIKANTI_TABLE4) == 15
    for r in P.KORTHIKANTI_TABLE4:
        ms = {v.get("quantity"): v.value for v in table4 if v.get("experiment") == r.experiment}
        assert (r.forward_ms, r.backward_ms) == (ms["forward_ms"], ms["backward_ms"])
        assert round(r.combined_ms, 1) == ms["combined_ms"]
    sec51 = _by_record("compute", "NARAYANAN_SEC51")
    built: dict = {}
    for v in sec51:
        built.setdefault(v.get("experiment"), {})[v.get("quantity")] = v.value
    assert P.NARAYANAN_SEC51 == built and list(built) == ["GPT-3 175B", "1T"] and len(sec51) == 4
    assert all(type(x) is int for d in P.NARAYANAN_SEC51.values() for x in d.values())
    assert all(v.source == "narayanan2021megatron" and "Sec. 5.1" in v.locator for v in sec51)
    sec56 = _by_record("compute", "NARAYANAN_SEC56")
    assert P.NARAYANAN_SEC56 == {v.get("quantity"): v.value for v in sec56} and len(sec56) == 2
    assert P.NARAYANAN_SEC56 == {"throughput_loss": 0.33, "throughput_gain": 2.0}


def test_tensor_parallel_records_are_the_rows_of_tensor_parallel_csv():
    from scaleout.tensor_parallel import published as P
    from scaleout.transformer import MODELS

    figure = _by_record("tensor_parallel", "FIGURE_13")
    for v in figure:
        value = P.FIGURE_13[v.get("quantity")]
        if v.get("index"):
            assert value[int(v.get("index")) - 1] == v.value
        else:
            assert value == v.value and type(value) is int
    assert P.FIGURE_13["batches"] == (32, 128) and P.FIGURE_13["pipelines"] == (2, 4, 8, 16, 32)
    measured = {v.get("quantity"): v.value for v in _by_record("tensor_parallel", "MEASURED")}
    assert {k: P.MEASURED[k] for k in measured} == measured
    rows = _by_record("tensor_parallel", "ASYNC_TP")
    assert len(rows) == 8 * len(P.ASYNC_TP)
    # the hidden size is the model registry's (one home for Llama 3's shape)
    assert [r["h"] for r in P.ASYNC_TP] == [MODELS[r["model"]].hidden for r in P.ASYNC_TP]
    for v in rows:
        (row,) = [r for r in P.ASYNC_TP if r["model"] == v.get("model")]
        assert row[v.get("quantity")] == v.value and row["recompute"] == v.get("recompute")
    # the sequence length is the one assumption: the benchmark does not state it
    assumed = [v for v in rows if v.kind == "assumed"]
    assert {v.get("quantity") for v in assumed} == {"s"} and len(assumed) == len(P.ASYNC_TP)
    announced = _by_record("tensor_parallel", "ASYNC_TP_ANNOUNCED")
    assert len(announced) == len(P.ANNOUNCED_ASYNC_TP) == 2
    for v in announced:
        speedup = P.ANNOUNCED_ASYNC_TP[v.get("quantity")]
        assert speedup == v.value and type(speedup) is int and v.source == "wang2024asynctp"
    (host,) = _by_record("tensor_parallel", "ASYNC_TP_HOST")
    assert P.ASYNC_TP_HOST == {"hbm_gb": host.value} and type(P.ASYNC_TP_HOST["hbm_gb"]) is int
    # the servers of Figure 13 (Selene's DGX A100s): hardware's row, not a copy
    assert P.DGX_A100_GPUS_PER_SERVER == hardware.system("DGX A100").gpus_per_server == 8
    assert P.BASELINES["t = GPUs per server first"](8) == 0.0


def _edited(tmp_path, name: str, edits: dict) -> None:
    """Writes ``<name>.csv`` into tmp_path with the values of the rows ``edits`` names replaced."""
    import csv

    with open(data.HERE / f"{name}.csv", newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        columns, rows = reader.fieldnames, list(reader)
    for row in rows:
        row["value"] = edits.get(row["key"], row["value"])
    with open(tmp_path / f"{name}.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def test_compute_and_tensor_parallel_builders_read_the_file(tmp_path, monkeypatch):
    from scaleout.compute import published as CP
    from scaleout.tensor_parallel import published as TP

    _edited(tmp_path, "compute", {"k22b-table4-baseline-no-recompute-forward": "7.9",
                                  "xla-sm90-bf16-4096x4096x4096": "700000000000000"})  # fmt: skip
    _edited(tmp_path, "tensor_parallel", {"asynctp-llama-3-8b-vanilla": "4000",
                                          "fig13-micro_batch": "1.5"})  # fmt: skip
    import shutil

    for name in ("planner_models", "planner_runs"):  # read unchanged
        shutil.copy(data.HERE / f"{name}.csv", tmp_path / f"{name}.csv")
    monkeypatch.setattr(data, "HERE", tmp_path)
    data._load.cache_clear()
    try:
        assert CP._table4()[0].forward_ms == 7.9
        xla = [CP._measurement(v, "s", scale=1e12) for v in CP._rows("XLA_H100_SHAPES")]
        assert xla[-1].tflops == 700.0
        assert TP._async_tp()[0]["vanilla"] == 4000.0
        with pytest.raises(ValueError, match="fig13-micro_batch.*whole number"):
            TP._figure_13()
    finally:
        monkeypatch.undo()
        data._load.cache_clear()
    assert CP._table4()[0].forward_ms == 7.7 and CP.KORTHIKANTI_TABLE4[0].forward_ms == 7.7


def test_the_loaders_docstring_names_every_file():
    """The package docstring says what reads each file: every file is named there."""
    missing = [name for name in data.FILES if f"``{name}.csv``" not in data.__doc__]
    assert not missing, f"name these files in scaleout.data's docstring: {missing}"
