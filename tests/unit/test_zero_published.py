"""Published ZeRO-3 runs (Narayanan et al. SC21, Table 2) beside chapter 6's step model."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaleout import memory as M
from scaleout import planner as PL
from scaleout import zero_published as Z

# Narayanan et al. SC21, Table 2, "ZeRO-3 without Model Parallelism":
# (parameters in billions, GPUs, batch, micro-batch, achieved teraFLOP/s per GPU)
PRINTED = [
    (174.6, 384, 1536, 4, 144), (174.6, 768, 1536, 2, 88), (174.6, 1536, 1536, 1, 44),
    (529.6, 640, 2560, 4, 138), (529.6, 1120, 2240, 2, 98), (529.6, 2240, 2240, 1, 48),
]  # fmt: skip


def test_rows_are_table2():
    got = [(round(r.params / 1e9, 1), r.gpus, r.batch, r.microbatch, r.tflops)
           for r in Z.SC21_ZERO3]  # fmt: skip
    assert got == PRINTED
    assert all(r.microbatches == 1 for r in Z.SC21_ZERO3)  # batch = GPUs x micro-batch


def test_eq3_is_the_planners_full_recompute_count():
    run = Z.SC21_ZERO3[0]
    assert Z.eq3_flops(run, 1536) == pytest.approx(PL.GPT3.flops(1536, "full"), rel=2e-3)
    assert Z.eq3_flops(run, 2) == pytest.approx(2 * Z.eq3_flops(run, 1))


def test_fits_and_held_out_errors():
    rows = Z.SC21_ZERO3
    rate = Z.fit_rate(rows[0])
    assert round(rate / 1e12, 1) == 144.1
    assert Z.predict(rows[0], rate).tflops == pytest.approx(144)
    flat = [Z.predict(r, rate).tflops for r in rows]
    # the rate-only model is flat: perfect overlap hides NCCL's 5.5 s behind compute
    assert max(flat) - min(flat) < 0.5 and flat[2] / rows[2].tflops > 3
    slow = Z.fit_comm_slowdown(rows[2], rate)
    assert round(slow, 1) == 12.1
    two = [Z.predict(r, rate, slow).tflops for r in rows]
    assert two[2] == pytest.approx(44)
    errors = [p / r.tflops - 1 for p, r in zip(two, rows, strict=True)]
    held_out = [errors[i] for i in (1, 3, 4, 5)]
    assert max(abs(e) for e in held_out) < 0.12
    with pytest.raises(ValueError, match="compute-bound"):
        Z.fit_rate(
            Z.Zero3Run(
                "comm-bound", 96, 12288, 96, gpus=1536, batch=1536, microbatch=1, tflops=1000
            )
        )
    with pytest.raises(ValueError, match="communication-bound"):
        Z.fit_comm_slowdown(rows[0], rate)


def test_comm_is_three_collectives_of_the_fp16_parameters():
    run = Z.SC21_ZERO3[0]
    c = Z.comm_seconds(run)
    assert round(c, 2) == 5.45
    assert [coll for coll, _, _ in M.COMM_PATTERN[3]] == ["allgather", "allgather",
                                                          "reducescatter"]  # fmt: skip


def test_bad_runs_raise():
    with pytest.raises(ValueError, match="gpus"):
        Z.Zero3Run("x", 96, 12288, 96, gpus=100, batch=1600, microbatch=1, tflops=1)
    with pytest.raises(ValueError, match="batch"):
        Z.Zero3Run("x", 96, 12288, 96, gpus=384, batch=1000, microbatch=4, tflops=1)
    with pytest.raises(ValueError, match="rate"):
        Z.predict(Z.SC21_ZERO3[0], float("nan"))
    with pytest.raises(ValueError, match="comm_slowdown"):
        Z.predict(Z.SC21_ZERO3[0], 1e14, comm_slowdown=0)


@settings(max_examples=60, deadline=None)
@given(rate=st.floats(1e12, 1e16), slow=st.floats(0.01, 1e3), i=st.integers(0, 5))
def test_prediction_never_beats_the_compute_rate(rate, slow, i):
    run = Z.SC21_ZERO3[i]
    p = Z.predict(run, rate, slow)
    assert np.isfinite(p.tflops) and 0 < p.tflops * 1e12 <= rate * (1 + 1e-9)
    assert p.exposed_s >= max(p.comm_s - p.compute_s, 0) - 1e-9 and p.step_s >= p.compute_s


def test_per_call_pricing_leaves_a_smaller_slowdown_and_ranks_right():
    rows = Z.SC21_ZERO3
    for run in rows:  # per call costs more than three whole-model calls, never less
        assert Z.comm_seconds(run, "per-call") > Z.comm_seconds(run, "whole")
    rate = Z.fit_rate(rows[0], "per-call")
    slow = Z.fit_comm_slowdown(rows[2], rate, "per-call")
    assert round(slow, 1) == 5.1
    pred = [Z.predict(r, rate, slow, "per-call").tflops for r in rows]
    assert pred[2] == pytest.approx(44)
    # the 529.6B runs above the 174.6B runs on 2x and 4x the GPUs, as measured
    assert pred[4] > pred[1] and pred[5] > pred[2]
    with pytest.raises(ValueError, match="pricing"):
        Z.comm_seconds(rows[0], "per-module")


# ZeRO (Rajbhandari et al., SC20, arXiv 1910.02054), Table 1 as printed, row N_d by row N_d:
# 7.5B, 128B, 1T, each P_os, P_os+g, P_os+g+p (GB per device); Figure 1: N_d = 64, 7.5B.
PRINTED_TABLE1 = {
    1: "120 120 120 2048 2048 2048 16000 16000 16000",
    4: "52.5 41.3 30 896 704 512 7000 5500 4000",
    16: "35.6 21.6 7.5 608 368 128 4750 2875 1000",
    64: "31.4 16.6 1.88 536 284 32 4187 2218 250",
    256: "30.4 15.4 0.47 518 263 8 4046 2054 62.5",
    1024: "30.1 15.1 0.12 513 257 2 4011 2013 15.6",
}
PRINTED_FIGURE1 = ["120", "31.4", "16.6", "1.9"]


def test_table1_records_are_the_csv_rows_as_printed():
    from scaleout import data

    rows = [v for v in data.load("zero") if v.key.startswith("table1-")]
    cells = [v for v in rows if v.get("quantity") == "per-device memory"]
    assert len(Z.TABLE1) == len(cells) == 54
    for e, v in zip(Z.TABLE1, cells, strict=True):
        assert (e.model, e.dp, e.gb, e.locator) == (v.get("model"), int(v.get("dp")), v.value,
                                                    v.locator)  # fmt: skip
        assert e.stage == Z.PAPER_STAGES[v.get("stage")] and v.kind == "stated"
        assert e.params == Z.TABLE1_MODELS[e.model]
    # the records print exactly what the paper prints (digits included: 30, 1.88, 0.47)
    assert [e.printed for e in Z.TABLE1] == " ".join(PRINTED_TABLE1.values()).split()
    assert [e.printed for e in Z.FIGURE1] == PRINTED_FIGURE1
    assert Z.TABLE1_DPS == tuple(PRINTED_TABLE1) and Z.TABLE1_GPU_GB == 32.0
    assert Z.TABLE1_MODELS == {"7.5B": 7.5e9, "128B": 128e9, "1T": 1e12}
    assert {(e.params, e.dp) for e in Z.FIGURE1} == {(7.5e9, 64)}
    assert [e.stage for e in Z.FIGURE1] == [0, 1, 2, 3]
    # the entries noted as truncated in the file are the ones printed as cut whole numbers
    noted = {v.key for v in cells if "truncated" in v.note}
    assert len(noted) == 8 and all(v.value == int(v.value) for v in cells if v.key in noted)


def test_the_formula_reproduces_table1_and_figure1():
    rules = {e: Z.printed_rule(e, M.model_state_bytes(e.params, e.stage, e.dp).total / 1e9)
             for e in Z.TABLE1 + Z.FIGURE1}  # fmt: skip
    assert "" not in rules.values()
    table = [rules[e] for e in Z.TABLE1]
    assert (table.count("exact"), table.count("rounded"), table.count("truncated")) == (33, 13, 8)
    # whole numbers are cut (4187 for 4187.5), values with decimals rounded half up (41.3)
    assert all(e.decimals == 0 for e in Z.TABLE1 if rules[e] == "truncated")
    assert all(e.decimals > 0 for e in Z.TABLE1 if rules[e] == "rounded")
    assert [rules[e] for e in Z.FIGURE1] == ["exact", "rounded", "rounded", "rounded"]


def test_printed_rule():
    e = Z.PrintedMemory("Table 1", "1T", 1e12, 64, 1, 4187.0, 0)
    assert Z.printed_rule(e, 4187.5) == "truncated" and Z.printed_rule(e, 4187.0) == "exact"
    assert Z.printed_rule(e, 4186.6) == "rounded" and Z.printed_rule(e, 4188.0) == ""
    half = Z.PrintedMemory("Table 1", "7.5B", 7.5e9, 4, 2, 41.3, 1)
    assert half.printed == "41.3" and Z.printed_rule(half, 41.25) == "rounded"  # half up
    assert Z.printed_rule(half, 41.25 + 1e-13) == "rounded"  # float noise is dropped
    assert Z.printed_rule(half, 41.2) == "" and Z.printed_rule(half, 41.39) == "truncated"
    with pytest.raises(ValueError, match="entry"):
        Z.printed_rule("41.3", 41.25)
    with pytest.raises(ValueError, match="gb"):
        Z.printed_rule(half, float("nan"))
    with pytest.raises(ValueError, match="stage"):
        Z.PrintedMemory("Table 1", "7.5B", 7.5e9, 4, 5, 41.3, 1)
    with pytest.raises(ValueError, match="decimals"):
        Z.PrintedMemory("Table 1", "7.5B", 7.5e9, 4, 2, 41.3, -1)
