"""The published records of chapters 5 and 6 are built from data/pipeline.csv and data/zero.csv."""

from __future__ import annotations

import pytest

from scaleout import data
from scaleout import pipeline_published as PP
from scaleout import zero_published as Z


def rows(name, study=None, quantity=None):
    return [
        v
        for v in data.load(name)
        if (study is None or v.get("study") == study)
        and (quantity is None or v.get("quantity") == quantity)
    ]


def test_qi_records_are_the_csv_rows_in_order():
    table4 = rows("pipeline", "qi2024", "throughput")
    records = PP.qi2024_rows()
    assert len(table4) == len(records) == 48
    for r, v in zip(records, table4, strict=True):
        assert r.measured == v.value and r.schedule == v.get("schedule")
        assert r.setting == f"{v.get('model')}, p = {v.get('p')}, m = {v.get('m')}"
        assert v.kind == "measured" and v.source == "qi2024zerobubble"
    for model, (p, b, layers, ms) in PP.QI_SETUP.items():
        for q, x in (("pipeline stages", p), ("micro-batch size", b), ("layers", layers)):
            (row,) = [v for v in rows("pipeline", "qi2024", q) if v.get("model") == model]
            assert x == row.value and type(x) is int
        for i, m in enumerate(ms):
            profile = [
                v.value
                for q in ("T_F", "T_B", "T_W", "T_comm")
                for v in rows("pipeline", "qi2024", q)
                if (v.get("model"), v.get("m")) == (model, str(m))
            ]
            assert list(PP.QI_PROFILE[model][i]) == profile


def test_qi_claimed_gains_are_the_abstract_rows():
    claimed = rows("pipeline", "qi2024-abstract", "throughput gain over 1F1B")
    assert len(claimed) == len(PP.QI_CLAIMED_GAIN) == 2
    for v in claimed:
        gain = PP.QI_CLAIMED_GAIN[v.get("schedule")]
        assert gain == v.value and type(gain) is int and v.source == "qi2024zerobubble"
    assert PP.QI_CLAIMED_GAIN == {"ZB-1p": 23, "ZB-2p": 31}


def test_figure_and_table_records_match_the_csv():
    # Figure 16 has one home, the planner's figure readings (not a second copy in pipeline.csv)
    fig16 = {
        (int(v.get("batch")), int(v.get("x"))): v.value
        for v in data.load("planner_figures")
        if v.get("figure") == "16"
    }
    assert fig16 == {(B, b): x for B, d in PP.FIG16_MEASURED.items() for b, x in d.items()}
    assert not [
        v
        for v in data.load("pipeline")
        if v.get("study") == "sc21-fig16" and v.get("quantity") == "throughput"
    ]
    assert all(type(x) is int for d in PP.FIG16_MEASURED.values() for x in d.values())
    fig7 = {int(v.get("b")): v.value for v in rows("pipeline", "sc21-fig7", "throughput")}
    assert fig7 == PP.FIG7_MEASURED and len(fig7) == 5
    # the reference point of each relative comparison is left out of its rows
    assert len(rows("pipeline", "sc21-fig12", "throughput")) == 10
    assert len(PP.sc21_interleaving_rows()) == 9
    gpipe = rows("pipeline", "gpipe", "normalised throughput")
    assert len(gpipe) == 18 and len(PP.gpipe_rows()) == 16
    assert {(v.get("model"), int(v.get("p")), int(v.get("m"))): v.value for v in gpipe} == {
        (model, k, m): x for model, t in PP._GPIPE.items() for (k, m), x in t.items()
    }
    # the setups the sources state
    assert (PP.FIG16_LAYER.hidden, PP.FIG16_LAYER.heads, PP.FIG16_SETUP["p"]) == (15360, 128, 8)
    assert (PP.FIG12_SETUP["p"], PP.FIG12_SETUP["v"], PP.FIG12_SETUP["b"]) == (12, 4, 1)
    (t_row,) = rows("pipeline", "sc21-fig12", "tensor-parallel size")
    assert PP.FIG12_SETUP["t"] == t_row.value == 8 and type(PP.FIG12_SETUP["t"]) is int
    assert PP.FIG12_SETUP["batches"] == tuple(PP._FIG12) == (12, 24, 36, 48, 60)
    (layers,) = rows("pipeline", "sc21-fig7", "layers")
    assert PP.FIG7_LAYERS == layers.value == 4 and type(PP.FIG7_LAYERS) is int


def test_zero3_runs_are_the_csv_rows_in_order():
    measured = rows("zero", quantity="throughput")
    assert len(measured) == len(Z.SC21_ZERO3) == 6
    for run, v in zip(Z.SC21_ZERO3, measured, strict=True):
        assert run.tflops == v.value and type(run.tflops) is int
        assert run.name == f"{v.get('model')}, {v.get('gpus')} GPUs"
        assert v.kind == "measured" and v.locator.startswith("Table 2")
        # the shape is the registry's (models.csv), not a second copy in zero.csv
        shape = [x for x in data.load("models") if x.get("model") == Z.MODELS[v.get("model")]]
        assert run.layers == next(x.value for x in shape if x.get("field") == "layers")
        assert run.hidden == next(x.value for x in shape if x.get("field") == "hidden")
        assert not rows("zero", quantity="layers")
        for q, field in (("global batch", "batch"), ("micro-batch size", "microbatch")):
            (x,) = [
                x
                for x in rows("zero", quantity=q)
                if (x.get("model"), x.get("gpus")) == (v.get("model"), v.get("gpus"))
            ]
            assert getattr(run, field) == x.value
    assert Z.Zero3Run.__dataclass_fields__["vocab"].default == 51200


def test_a_fractional_whole_number_in_the_csv_is_refused():
    (row,) = [v for v in data.load("pipeline") if v.key == "fig16-p"]
    bad = data.Value(8.5, row.unit, row.source, row.locator, row.kind, None, "", row.setting, "x")
    with pytest.raises(ValueError, match="whole number"):
        PP._whole(bad)
