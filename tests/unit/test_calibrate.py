"""scaleout.calibrate: the nccl-tests parser on every layout, the robust fit, the model
comparison, corrections, GEMM sweeps and the command line."""

# ruff: noqa: UP031 -- layouts written with the printf formats of each nccl-tests release
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaleout import calibrate as CAL
from scaleout.calibrate import published as P
from scaleout.calibrate.nccl_tests import float_text

ROOT = Path(__file__).resolve().parents[2]


# --- layouts, written with the printf formats of each release (nccl-tests sources) ---------


def v1_allreduce():  # v1.0.0 src/all_reduce.cu + common.cu: time in ms, "res" columns
    head = "# %10s  %12s  %6s  %6s        out-of-place                    in-place\n" % (
        "",
        "",
        "",
        "",
    )
    head += "# %10s  %12s  %6s  %6s  %7s  %5s  %5s  %7s  %7s  %5s  %5s  %7s\n" % (
        "bytes",
        "N",
        "type",
        "op",
        "time",
        "algbw",
        "busbw",
        "res",
        "time",
        "algbw",
        "busbw",
        "res",
    )
    row = "%12li  %12li  %6s  %6s" % (1048576, 262144, "float", "sum")
    row += "  %7.3f  %5.2f  %5.2f  %7.0le" % (0.125, 8.39, 14.68, 0.0)
    row += "  %7.3f  %5.2f  %5.2f  \tN/A" % (0.120, 8.74, 15.29)
    return "#   Rank  0 on host1 device  0 [0x00] Tesla V100\n" + head + row + "\n"


def v2_allgather():  # v2.0.0 src/all_gather.cu: no redop, no root, "error"
    head = "# %10s  %12s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n" % (
        "size",
        "count",
        "type",
        "time",
        "algbw",
        "busbw",
        "error",
        "time",
        "algbw",
        "busbw",
        "error",
    )
    row = "%12li  %12li  %6s" % (4096, 128, "float")
    row += "  %7s  %6.2f  %6.2f  %5.0le" % ("  12.50", 0.33, 0.29, 0.0)
    row += "  %7s  %6.2f  %6.2f  %5s" % ("  12.00", 0.34, 0.30, "N/A")
    return "./build/all_gather_perf -b 8 -e 4K\n" + head + row + "\n"


def v2_broadcast():  # v2.0.0 src/broadcast.cu: root, no redop
    head = "# %10s  %12s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n" % (
        "size",
        "count",
        "type",
        "root",
        "time",
        "algbw",
        "busbw",
        "error",
        "time",
        "algbw",
        "busbw",
        "error",
    )
    row = "%12li  %12li  %6s  %6i" % (8192, 2048, "float", 0)
    row += "  %7s  %6.2f  %6.2f  %5.0le" % ("  20.00", 0.41, 0.41, 0.0) * 2
    return "./build/broadcast_perf\n" + head + row + "\n"


def per_iteration():  # util.cu at a0b82b2 with per-iteration timing and a timestamp
    cols = ["size", "count", "type", "redop", "root"] + (
        ["time", "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%"] * 2
    )
    head = "# " + "  ".join(cols) + "  timestamp\n"
    row = "%12li  %12li  %8s  %6s  %6s" % (1024, 256, "float", "sum", "-1")
    row += (
        "  %7s  %6s  %6s  %6g  %7s  %7s  %7s  %7s"
        % ("10.00", "0.10", "0.18", 0, "9.80", "11.00", "10.90", "2.00")
    ) * 2
    row += "  2026-01-01 10:00:00"
    return "# Collective test starting: all_reduce_perf\n" + head + row + "\n"


def rccl_in_place_only():  # rccl-tests common.cu: in-place table, asterisk after an error
    head = "#       size   count   type   redop   root   in-place\n"
    head = "# %10s  %12s  %8s  %6s  %6s           in-place          \n" % ("", "", "", "", "")
    head += "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s\n" % (
        "size",
        "count",
        "type",
        "redop",
        "root",
        "time",
        "algbw",
        "busbw",
        "#wrong",
    )
    row = "%12li  %12li  %8s  %6s  %6s" % (2048, 512, "float", "sum", "    -1")
    row += "  %7s  %6.2f  %6.2f  %5.0le%s" % ("  30.00", 0.07, 0.12, 2e-7, "*")
    return "# nThread: 1 nGpus: 8\n" + head + row + "\n"


def test_every_layout_parses():
    g = CAL.parse_nccl_tests(v1_allreduce())
    r = g.rows[0]
    assert (r.nbytes, r.count, r.redop, r.root) == (1048576, 262144, "sum", None)
    assert r.out_of_place.time_us == pytest.approx(125.0)  # ms -> us
    assert r.in_place.wrong is None and g.ranks == 1
    g = CAL.parse_nccl_tests(v2_allgather())
    assert g.collective == "allgather" and g.rows[0].redop is None and g.rows[0].root is None
    assert g.rows[0].in_place.wrong is None and g.rows[0].out_of_place.wrong == 0.0
    g = CAL.parse_nccl_tests(v2_broadcast())
    assert g.collective == "broadcast" and g.rows[0].root == 0 and g.rows[0].redop is None
    g = CAL.parse_nccl_tests(per_iteration())
    assert g.collective == "allreduce" and g.rows[0].in_place.busbw_gb_per_s == 0.18
    g = CAL.parse_nccl_tests(rccl_in_place_only())
    r = g.rows[0]
    assert r.out_of_place is None and r.in_place.flagged and r.in_place.wrong == 2e-7


def test_several_tests_and_chatter():
    text = per_iteration() + "host:1:2 [0] NCCL INFO Using network Socket\n" + v2_broadcast()
    logs = CAL.parse_nccl_tests_all(text)
    assert [g.collective for g in logs] == ["allreduce", "broadcast"]
    assert any("Using network Socket" in line for line in logs[1].info + logs[0].info)
    with pytest.raises(ValueError, match="one nccl-tests table"):
        CAL.parse_nccl_tests(text)
    assert CAL.parse_nccl_tests(text, collective="broadcast").collective == "broadcast"


@pytest.mark.parametrize("text", ["", "hello\nworld", "# size count\n1 2 3", "size,time\n1,2"])
def test_not_nccl_tests_raises(text):
    with pytest.raises(ValueError, match="must be nccl-tests output"):
        CAL.parse_nccl_tests(text)


@pytest.mark.parametrize("name", P.log_files())
def test_public_logs_parse_with_their_source(name):
    text = P.log_text(name)
    assert re.match(r"# source: https://github\.com/\S+/(issues|pull)/\d+", text)
    logs = CAL.parse_nccl_tests_all(text)
    assert logs and all(g.rows for g in logs)
    for g in logs:
        for r in g.rows:
            res = r.result
            if res.time_us and res.algbw_gb_per_s and res.algbw_gb_per_s >= 1:
                # the printed algbw is size / time, to the printed precision
                assert r.nbytes / res.time_us / 1e3 == pytest.approx(
                    res.algbw_gb_per_s, rel=0.01, abs=0.01
                )
    assert P.setting(name).source in (ROOT / "references.bib").read_text()


def test_public_log_details():
    g = CAL.parse_nccl_tests(P.log_text("gb200_nvl72_coreweave_nccl_tests_43.txt"))
    assert g.avg_busbw_gb_per_s == 745.53 and len(g.rows) == 5
    g = CAL.parse_nccl_tests(P.log_text("h20_2x8_nvlstree_nccl_1244.txt"))
    assert g.rows[0].in_place.wrong == 4e-7 and g.skipped and g.rows[0].root is None
    g = CAL.parse_nccl_tests(P.log_text("p5_h100_efa_aws_k8s_tester_503.txt"))
    assert len(g.rows) == 3 and g.rows[2].out_of_place.time_us == 22.25
    g = CAL.parse_nccl_tests(P.log_text("strix_halo_broadcast_rccl_2075.txt"))
    assert g.collective == "broadcast" and g.rows[0].root == 0
    g = CAL.parse_nccl_tests(P.log_text("dgx_h100_a100_100gbe_nccl_1184.txt"))
    assert g.rows[2].out_of_place.wrong == 237858
    g = CAL.parse_nccl_tests(P.log_text("h100_pcie_nvlink_nccl_tests_194.txt"))
    assert g.collective == "allreduce" and any("via P2P" in x for x in g.info)


values = st.floats(0.01, 9e5, allow_nan=False)


@st.composite
def logs(draw):
    n = draw(st.integers(1, 12))
    rows = []
    for i in range(n):
        res = [
            CAL.Result(draw(values), draw(values), draw(values), float(draw(st.integers(0, 9))))
            for _ in range(2)
        ]
        rows.append(CAL.Row(2**i * 8, 2**i * 2, "float", "sum", -1, res[0], res[1]))
    ranks = draw(st.integers(1, 16))
    devices = tuple(
        f"Rank {r:2d} Group  0 Pid {100 + r:6d} on   host{r // 8} device {r % 8:2d} "
        f"[0x{r:02x}] NVIDIA H100"
        for r in range(ranks)
    )
    return CAL.Log("allreduce", ranks, devices, draw(st.none() | values), tuple(rows))


@settings(max_examples=60, deadline=None)
@given(logs())
def test_round_trip(log):
    text = CAL.format_nccl_tests(log)
    back = CAL.parse_nccl_tests(text)
    assert back.collective == log.collective and back.ranks == log.ranks
    assert len(back.rows) == len(log.rows)
    for a, b in zip(log.rows, back.rows, strict=True):
        assert a.nbytes == b.nbytes and a.count == b.count
        for x, y in ((a.out_of_place, b.out_of_place), (a.in_place, b.in_place)):
            for f, w in (("time_us", 7), ("algbw_gb_per_s", 6), ("busbw_gb_per_s", 6)):
                assert float(float_text(getattr(x, f), w)) == getattr(y, f)
            assert x.wrong == y.wrong
    assert CAL.format_nccl_tests(back) == text  # printing what was read changes nothing


@pytest.mark.parametrize("latency_us, gbps", [(5.0, 20.0), (50.0, 400.0), (800.0, 1.2)])
def test_fit_recovers_known_line(latency_us, gbps):
    rng = np.random.default_rng(3)
    n = 2.0 ** np.arange(8, 34)
    t = latency_us * 1e-6 + n / (gbps * 1e9)
    t = t * (1 + 0.01 * rng.standard_normal(n.size))
    t[4] *= 2.5  # one disturbed size: the robust loss shrugs it off
    fit = CAL.fit_latency_bandwidth(np.stack([n, t], axis=1))
    assert fit.latency_s == pytest.approx(latency_us * 1e-6, rel=0.05)
    assert fit.bandwidth_bytes_per_s == pytest.approx(gbps * 1e9, rel=0.03)
    assert fit.held_out_median_abs < 0.03


def test_fit_from_a_generated_log():
    n = 2 ** np.arange(10, 30)
    t_us = 10.0 + n / 100e9 * 1e6
    rows = tuple(
        CAL.Row(
            int(s),
            int(s) // 4,
            "float",
            "sum",
            -1,
            CAL.Result(float(round(x, 2)), 0.0, 0.0, 0.0),
            None,
        )
        for s, x in zip(n, t_us, strict=True)
    )
    log = CAL.parse_nccl_tests(CAL.format_nccl_tests(CAL.Log("allreduce", 8, (), None, rows)))
    fit = CAL.fit_latency_bandwidth(log)
    assert fit.latency_s == pytest.approx(10e-6, rel=0.02)
    assert fit.bandwidth_bytes_per_s == pytest.approx(100e9, rel=0.02)


def test_compare_and_corrections_on_the_model_itself():
    # a log generated from the model is "as expected" everywhere, with factors 1
    from scaleout import nccl

    topo = nccl.topology("dgx-a100", nodes=2)
    n = 2.0 ** np.arange(10, 34)
    sec = nccl.predict("allreduce", n, machine=topo).seconds
    rows = tuple(
        CAL.Row(
            int(s), int(s) // 4, "float", "sum", -1, CAL.Result(float(x * 1e6), 0.0, 0.0, 0.0), None
        )
        for s, x in zip(n, sec, strict=True)
    )
    log = CAL.Log("allreduce", 16, (), None, rows)
    c = CAL.compare(log, nodes=2, machine="dgx-a100")
    assert np.allclose(c.ratio, 1.0, rtol=1e-6)
    assert {v[1] for v in c.verdicts().values()} == {"as expected"}
    corr = CAL.fit_corrections(c)
    assert all(abs(f - 1) < 1e-6 for f in corr.factors.values())
    # half the speed: "low", factors 0.5, corrected held-out error 0
    slow = CAL.Log(
        "allreduce",
        16,
        (),
        None,
        tuple(
            CAL.Row(
                r.nbytes,
                r.count,
                "float",
                "sum",
                -1,
                CAL.Result(r.out_of_place.time_us * 2, 0.0, 0.0, 0.0),
                None,
            )
            for r in rows
        ),
    )
    c = CAL.compare(slow, nodes=2, machine="dgx-a100")
    assert {v[1] for v in c.verdicts().values()} == {"low"}
    corr = CAL.fit_corrections(c)
    assert np.allclose(list(corr.factors.values()), 0.5)
    assert np.allclose(corr.corrected_err, 0.0, atol=1e-9)
    assert np.allclose(corr.seconds(n[:3]), 2 * sec[:3])


def test_evidence_from_info_lines():
    text = (
        "h:1:1 [0] NCCL INFO Using network Socket\n"
        "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n"
        + per_iteration()
    )
    ev = CAL.evidence(CAL.parse_nccl_tests(text))
    assert any("TCP" in e for e in ev) and any("GPUDirect RDMA is off" in e for e in ev)


def test_gemm_readers_and_ceiling():
    lines = [
        "** Dtype: torch.bfloat16",
        "",
        "** Platform/Device info:",
        "- Linux x",
        "- _CudaDeviceProperties(name='NVIDIA H100 80GB HBM3')",
    ]
    shapes = [(1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 4096, 4096)]
    from scaleout import compute

    for i, (m, n, k) in enumerate(shapes):
        tf = 0.9 * compute.gemm_time(m, n, k, "H100-SXM").achieved_flops / 1e12
        lines.append(
            f"{i + 1:>6} | {tf:6.1f}(mean) {tf:6.1f}(median) {tf:6.1f}(max) @ "
            f"{m}x{n}x{k:<20} | best: 1(mean) 1(median) 1(max) TFLOPS"
        )
    sw = CAL.read_mamf("\r".join(lines))
    assert sw.dtype == "bf16" and sw.m.size == 4 and "H100" in sw.device
    fit = CAL.calibrate_ceiling(sw, "H100-SXM")
    assert fit.factor == pytest.approx(0.9, rel=0.01) and fit.held_out_median_abs < 0.01
    csv = "m,n,k,dtype,seconds\n" + "".join(
        f"{m},{n},{k},fp32,{1e-4 + 2 * m * n * k / 1e11:.6e}\n" for m, n, k in shapes
    )
    line = CAL.calibrate_ceiling(CAL.read_gemm_csv(csv))
    assert line.ceiling_flops == pytest.approx(1e11, rel=0.01)
    with pytest.raises(ValueError, match="mamf-finder"):
        CAL.read_mamf("nothing here")
    with pytest.raises(ValueError, match="columns"):
        CAL.read_gemm_csv("a,b\n1,2\n")


def test_cpu_sweep_writes_a_readable_csv():
    sw = CAL.read_gemm_csv(CAL.sweep([(32, 32, 32), (64, 64, 64), (128, 64, 64)], repeats=1))
    assert sw.m.tolist() == [32, 64, 128] and np.all(sw.tflops > 0)


def _cli(*args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "scaleout.calibrate", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_cli_exit_codes(tmp_path):
    log = str(P.DATA / "gb200_nvl72_coreweave_nccl_tests_43.txt")
    ok = _cli(log, "--machine", "gb200-nvl72", "--ranks", "72", "--collective", "allreduce")
    assert ok.returncode == 0 and "bandwidth: median ratio" in ok.stdout
    for bad in (str(tmp_path / "missing.txt"), "/etc/hostname"):
        r = _cli(bad)
        assert r.returncode == 2 and "Traceback" not in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00garbage")
    r = _cli(str(tmp_path / "bin"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    r = _cli(log, "--collective", "allreduce")  # no ranks known
    assert r.returncode == 2 and "ranks" in r.stderr


def test_published_csv_is_long_format():
    rows = P.entries()
    keys = set(re.findall(r"@\w+\{([^,]+),", (ROOT / "references.bib").read_text()))
    assert all(e.source in keys for e in rows)
    seen = {(e.source, e.locator, e.log, e.quantity) for e in rows}
    assert len(seen) == len(rows)
    assert {e.log for e in rows if e.log.endswith(".txt")} == set(P.log_files())


def test_one_half_rows():
    # trace replay (util.cu writeBenchMarkLineNullBody): 32 blanks, then the in-place half
    head = "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n" % (
        "size",
        "count",
        "type",
        "redop",
        "root",
        "time",
        "algbw",
        "busbw",
        "#wrong",
        "time",
        "algbw",
        "busbw",
        "#wrong",
    )
    lead = "%12li  %12li  %8s  %6s  %6s" % (64, 16, "float", "sum", "-1")
    half = "  %7s  %6s  %6s  %6g" % ("5.00", "0.01", "0.02", 0)
    r = CAL.parse_nccl_tests(head + lead + " " * 32 + half + "\n").rows[0]
    assert r.out_of_place is None and r.in_place.time_us == 5.0
    r = CAL.parse_nccl_tests(head + lead + half + "\n").rows[0]  # a log without in-place
    assert r.in_place is None and r.out_of_place.time_us == 5.0
    log = CAL.gloo_log("allreduce", [1024, 4096], [1e-4, 2e-4], ranks=4)
    back = CAL.parse_nccl_tests(CAL.format_nccl_tests(log))
    assert [x.out_of_place.time_us for x in back.rows] == [100.0, 200.0]


def test_mamf_outputs_as_published():
    # stas00/ml-engineering pull request 60: the header and the final line only
    text = (P.DATA.parent / "gemm_logs" / "gh200_mamf_ml_engineering_60.txt").read_text()
    assert "github.com/stas00/ml-engineering/pull/60" in text.splitlines()[0]
    sw = CAL.read_mamf(text)
    assert (sw.m.tolist(), sw.n.tolist(), sw.k.tolist()) == ([11264], [19712], [1536])
    assert sw.tflops.tolist() == [821.0] and sw.dtype == "bf16" and "GH200" in sw.device
    # stas00/ml-engineering issue 58 (frankschae's run, as quoted there): the one-number layout
    line = "493039 |  807.5 TFLOPS @ 12288x14336x15872    | best:  831.7 TFLOPS @ 12288x14336x15872"
    sw = CAL.read_mamf("** Dtype: torch.bfloat16\n" + line + "\n")
    assert sw.tflops.tolist() == [807.5] and sw.k.tolist() == [15872]


def test_chatter_between_rows_and_tags():
    lines = per_iteration().splitlines()
    text = "\n".join(
        [f"[1,0]<stdout>:{x}" for x in lines[:2]]
        + ["node1:77:88 [3] NCCL INFO comm 0x1 rank 3 nRanks 16 nNodes 2 - Init COMPLETE"]
        + [f"[1,0]<stdout>:{x}" for x in lines[2:]]
    )
    log = CAL.parse_nccl_tests(text)
    assert len(log.rows) == 1 and log.ranks == 16  # no device list: NCCL's nRanks
    assert any("Init COMPLETE" in x for x in log.info)


def test_simulated_ranks_the_planners_plans_with_the_step_simulator():
    from scaleout import planner

    model = planner.Model("small", 8, 1024, 16, seq=1024)
    cluster = planner.a100_cluster(16)
    preds = planner.search(model, cluster, 64, calibration=1.5)[:4]
    out = CAL.simulated(model, cluster, 64, list(preds), calibration=1.5)
    times = [s.simulated_s for s in out]
    assert times == sorted(times) and len(out) == 4
    for s in out:  # the simulator agrees with the closed form within a few per cent here
        assert abs(s.simulated_s / s.prediction.step_s - 1) < 0.05
    slower = CAL.simulated(model, cluster, 64, list(preds[:1]), calibration=3.0)[0]
    assert slower.simulated_s > out[0].simulated_s or slower.plan != out[0].plan
    with pytest.raises(ValueError, match="predictions"):
        CAL.simulated(model, cluster, 64, [])
