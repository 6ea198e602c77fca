"""The planner's published runs and chapter 9's Summit all-reduces are the rows of
``lib/scaleout/data`` (planner_runs.csv, planner_figures.csv, planner_models.csv, trees.csv):
every number of every record equals its CSV row, and every CSV row is used."""

from __future__ import annotations

import pytest

from scaleout import data
from scaleout.planner import published as P
from scaleout.trees import published as TP


def _by_run() -> dict:
    out = {}
    for v in data.load("planner_runs"):
        out.setdefault(v.get("run"), {})[v.get("field")] = v.value
    # Llama 3's runs are rows 1 and 2 of its Table 4, kept once, in context_parallel.csv
    t4 = {(v.get("row"), v.get("quantity")): v.value for v in data.load("context_parallel")
          if v.get("table") == "llama3"}  # fmt: skip
    for row, gpus in (("1", 8192), ("2", 16384)):
        fields = out[f"Llama 3 {gpus}"]
        assert not {"gpus", "t", "p", "d", "tflops", "batch"} & set(fields)  # not twice
        fields.update(gpus=t4[row, "gpus"], t=t4[row, "tp"], p=t4[row, "pp"],
                      d=t4[row, "printed_dp"], tflops=t4[row, "tflops_per_gpu"],
                      batch=t4[row, "batch_per_dp"] * t4[row, "printed_dp"])  # fmt: skip
        assert fields["gpus"] == gpus
    return out


def _records() -> dict:
    """Run name in the CSV -> the records built from it (K5 rows make two runs)."""
    out = {}
    for r in P.runs():
        if r.key.startswith("F"):
            continue
        name = r.key.rsplit(" ", 1)[0] if r.key.startswith("K5 ") else r.key
        out.setdefault(name, []).append(r)
    return out


def test_every_table_run_is_its_csv_rows_and_every_row_is_used():
    rows, records = _by_run(), _records()
    assert list(rows) == list(records)  # the same runs, in the same order
    used = set()
    for name, fields in rows.items():
        for r in records[name]:
            plan = r.plan
            mine = {
                "gpus": r.cluster.gpus,
                "batch": r.batch,
                "t": plan.t,
                "p": plan.p,
                "micro_batch": plan.b,
                "v": plan.v,
                "d": plan.d,
                "torch_ddp": int(plan.dp_overlap),
                "zero": plan.zero,
                "nics_per_node": r.cluster.nics_per_node,
                "nic_gbps": r.cluster.nic_gbps,
                "tflops": r.measured,
                "seconds": r.measured,
                f"seconds_{plan.recompute}": r.measured,  # Korthikanti's two columns
            }
            for field, value in fields.items():
                if field in mine:
                    assert mine[field] == value, (name, field, mine[field], value)
                    used.add((name, field))
            assert r.plan.t * r.plan.p * r.plan.d == r.cluster.gpus, name
    # every row of the file is read by some record
    assert used == {(n, f) for n, fs in rows.items() for f in fs}
    # measured throughputs stay int where the source prints whole TFLOP/s (the records'
    # types did not change when the literals moved to the CSV)
    assert all(type(r.measured) is int for r in P.runs() if r.convention != "seconds")
    assert all(type(r.measured) is float for r in P.runs() if r.convention == "seconds")


def test_figure_runs_are_the_csv_readings():
    readings = data.load("planner_figures")
    figs = [r for r in P.runs() if r.key.startswith("F")]
    assert len(figs) == len(readings) == 43
    for r, v in zip(figs, readings, strict=True):
        assert r.key.startswith(f"F{v.get('figure')} B={v.get('batch')} ")
        assert r.batch == int(v.get("batch")) and r.measured == v.value
        assert r.uncertainty == v.uncertainty == P.FIG_READING
        assert v.kind == "read-off" and v.unit == "TFLOP/s"
    what, xs, by_batch = P.FIG_SWEEPS[16]
    assert (what, xs, by_batch[512]) == ("b", (1, 2, 4, 8), (162, 171, 160, 154))


def test_model_shapes_are_the_csv_rows():
    models = {m.name: m for m in (P.BLOOM, P.NEMOTRON4_340B, *P.FIG_MODELS.values(),
                                  P.KORTHIKANTI_MODELS["22B"])}  # fmt: skip
    seen = set()
    for v in data.load("planner_models"):
        m = models[v.get("model")]
        assert getattr(m, v.get("field")) == v.value and type(getattr(m, v.get("field"))) is int
        seen.add(v.get("model"))
    assert seen == set(models)
    assert P.BLOOM.vocab == 250880 and P.NEMOTRON4_340B.kv_heads == 8


def test_summit_rows_are_the_csv_rows():
    rows = [v for v in data.load("trees") if v.get("quantity") == "allreduce_8B_latency"]
    assert len(rows) == 2 * len(TP.SUMMIT_ALLREDUCE_8B) == 18
    table = {(int(v.get("gpus")), v.get("algorithm")): v.value for v in rows}
    for n, tree, ring in TP.SUMMIT_ALLREDUCE_8B:
        assert type(n) is int and (tree, ring) == (
            table[n, "NCCL 2.4 two trees"],
            table[n, "NCCL 2.3 ring"],
        )
    assert all(v.kind == "read-off" and v.uncertainty > 0 for v in rows)
    assert TP.SUMMIT_GPUS_PER_NODE == 6 and type(TP.SUMMIT_GPUS_PER_NODE) is int


def test_a_fractional_count_in_the_data_is_refused():
    with pytest.raises(ValueError, match="whole number"):
        P._integral("T1 1.7B t", 1.5)
    assert P._integral("T1 1.7B t", 8.0) == 8
