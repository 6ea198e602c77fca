"""The display layer: stable, kernel-free figure output; animations; explorers."""

from __future__ import annotations

import json
import re

import ipywidgets as W
import numpy as np
import plotly.graph_objects as go
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaleout import collectives as C
from scaleout import viz
from scaleout.viz import collectives as VC
from scaleout.viz import names as VL
from scaleout.viz import render
from scaleout.widgets import STATIC_NOTE, Explorer, pack, unpack


def bar(y):
    return go.Figure(go.Bar(x=[0, 1, 2], y=y))


def test_figure_output_is_byte_stable_and_has_both_renderings():
    a = viz.FigureOutput(bar([1, 2, 3]), "stable-fig")._repr_mimebundle_()
    b = viz.FigureOutput(bar([1, 2, 3]), "stable-fig")._repr_mimebundle_()
    assert a == b  # no random uids or ids: strict nbval can compare outputs
    assert set(a) == {viz.render.PLOTLY_MIME, "text/html", "text/plain"}
    html = a["text/html"]
    assert 'id="stable-fig"' in html and 'class="scaleout-figure"' in html
    assert "cdn" not in html.lower() and "<script src" not in html  # plotly.js is not embedded
    assert "uid" not in json.dumps(a[viz.render.PLOTLY_MIME])


def test_html_escapes_script_breakers_in_data():
    fig = go.Figure(go.Scatter(x=[1], y=[1], text=["</script><b>x</b>"]))
    html = viz.FigureOutput(fig, "escaped")._repr_mimebundle_()["text/html"]
    assert html.count("</script>") == 1  # only the real closing tag


@pytest.mark.parametrize("name", ["", "Upper", "1abc", "has space", "a" * 64, None, "x_y", "a\n"])
def test_bad_figure_names_are_rejected(name):
    with pytest.raises(ValueError, match="name must be a string matching"):
        viz.FigureOutput(bar([1, 2, 3]), name)


def test_not_a_figure_is_rejected():
    with pytest.raises(ValueError, match="plotly.graph_objects.Figure"):
        viz.FigureOutput({"data": []}, "dict-fig")


def test_animation_has_slider_frames_and_no_autoplay():
    frames = [[go.Bar(x=[0, 1], y=[k, 1])] for k in range(5)]
    fig = viz.animation(frames, [f"s{k}" for k in range(5)], frame_titles=list("abcde"))
    assert [f.name for f in fig.frames] == ["s0", "s1", "s2", "s3", "s4"]
    steps = fig.layout.sliders[0].steps
    assert [list(s.args[0]) for s in steps] == [["s0"], ["s1"], ["s2"], ["s3"], ["s4"]]
    assert fig.layout.title.text == "a" and fig.frames[3].layout.title.text == "d"
    spec = viz.figure_spec(fig)
    assert "autoplay" not in json.dumps(spec["layout"]).lower()


def test_animation_rejects_bad_input():
    one = [go.Bar(y=[1])]
    with pytest.raises(ValueError, match="1..60"):
        viz.animation([one] * 61, [str(k) for k in range(61)])
    with pytest.raises(ValueError, match="one entry per frame"):
        viz.animation([one, one], ["a"])
    with pytest.raises(ValueError, match="distinct"):
        viz.animation([one, one], ["a", "a"])
    with pytest.raises(ValueError, match="same number of traces"):
        viz.animation([one, one + one], ["a", "b"])


def test_choice_draws_default_and_stores_every_option():
    out = viz.ChoiceOutput({"2": bar([1, 2, 3]), "3": bar([3, 2, 1])}, "pick", "p", default="3")
    bundle = out._repr_mimebundle_()
    html = bundle["text/html"]
    assert 'id="pick-0"' in html and 'id="pick-1"' in html
    assert re.search(r'aria-checked="true" data-index="1"', html)
    assert bundle[viz.render.PLOTLY_MIME]["data"][0]["y"] == [3, 2, 1]
    with pytest.raises(ValueError, match="default must be one of"):
        viz.ChoiceOutput({"2": bar([1, 2, 3])}, "pick", "p", default="9")
    with pytest.raises(ValueError, match="non-empty"):
        viz.ChoiceOutput({}, "pick", "p")


def test_rank_colors_are_stable_and_validated():
    assert viz.rank_color(0) == viz.RANK_COLORS[0]
    assert viz.rank_color(9) == viz.RANK_COLORS[1]
    assert viz.rank_color(np.int64(2)) == viz.RANK_COLORS[2]
    for bad in (-1, 1.5, True, "0"):
        with pytest.raises(ValueError, match="rank must be"):
            viz.rank_color(bad)


def test_explorer_static_rendering_holds_every_state_and_follows_controls():
    slider = W.IntSlider(value=4, min=2, max=8, description="ranks p")
    explorer = Explorer("demo-explorer", {"p": slider}, lambda p: bar([p, p, p]))
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle  # live controls in a kernel
    html = bundle["text/html"]
    assert STATIC_NOTE in html and "needs a live kernel" not in html
    assert 'id="demo-explorer"' in html and 'id="demo-explorer-explorer"' in html
    payload = explorer.static_payload()
    assert payload["controls"] == [
        {"key": "p", "label": "ranks p", "widget": "range", "options": list("2345678"),
         "initial": 2}
    ]  # fmt: skip
    states = [unpack(s, payload["pool"]) for s in payload["states"]]
    assert [st["data"][0]["y"] for st in states] == [[p, p, p] for p in range(2, 9)]
    slider.value = 7  # a control change rebuilds the live figure
    assert list(explorer.figure.data[0].y) == [7, 7, 7]


def test_explorer_grid_is_row_major_and_declared_values_are_checked():
    controls = {
        "a": W.Dropdown(options=[("one", 1), ("two", 2)], value=2, description="a"),
        "b": W.FloatSlider(value=0.5, min=0.0, max=1.0, step=0.25, description="b"),
    }
    explorer = Explorer("grid-explorer", controls, lambda a, b: bar([a, b, 0]))
    payload = explorer.static_payload()
    assert [c["options"] for c in payload["controls"]] == [
        ["one", "two"],
        ["0.00", "0.25", "0.50", "0.75", "1.00"],
    ]
    ys = [unpack(s, payload["pool"])["data"][0]["y"] for s in payload["states"]]
    assert ys == [[a, b, 0] for a in (1, 2) for b in (0, 0.25, 0.5, 0.75, 1)]
    assert [c["initial"] for c in payload["controls"]] == [1, 2]
    coarse = Explorer("coarse", controls, lambda a, b: bar([a, b, 0]), static={"b": [0, 0.5]})
    assert len(coarse.static_payload()["states"]) == 4
    assert coarse.available_text() == "every value of the other controls, and b: 0.00, 0.50"
    with pytest.raises(ValueError, match="cannot take"):
        Explorer("bad", controls, lambda a, b: bar([a, b, 0]), static={"b": [0.3]})
    with pytest.raises(ValueError, match="initial value"):
        Explorer("bad", controls, lambda a, b: bar([a, b, 0]), static={"b": [0.0]})
    with pytest.raises(ValueError, match="not in controls"):
        Explorer("bad", controls, lambda a, b: bar([a, b, 0]), static={"c": [1]})
    big = {"n": W.IntSlider(value=1, min=1, max=10_000)}
    with pytest.raises(ValueError, match="declare the values"):
        Explorer("big", big, lambda n: bar([n, n, n]))
    many = {k: W.IntSlider(value=1, min=1, max=10) for k in "xyz"}
    with pytest.raises(ValueError, match="at most 640"):
        Explorer("many", many, lambda x, y, z: bar([x, y, z]))


def test_pack_stores_repeated_values_once_and_unpacks_exactly():
    x = list(range(100))
    specs = [{"data": [{"x": x, "y": [k] * 100}], "layout": {"title": {"text": "same"}}}
             for k in range(5)]  # fmt: skip
    states, pool = pack(specs)
    assert [unpack(s, pool) for s in states] == specs
    assert sum(1 for v in pool if v == x) == 1  # the shared x values are stored once
    saved = len(json.dumps(specs)) - len(json.dumps([states, pool]))
    assert saved > 3.5 * len(json.dumps(x))  # four of the five copies of x are gone


def test_figure_data_is_portable_across_cpus():
    y = np.array([1 / 3, 2.0, np.exp(1.0) * 1e-9, 12345678.9])
    spec = viz.figure_spec(go.Figure(go.Scatter(x=np.arange(4), y=y)))
    assert spec["data"][0]["y"] == [0.333333, 2, 2.71828e-09, 12345700]
    assert spec["data"][0]["x"] == [0, 1, 2, 3]  # typed arrays written as plain lists
    # One ulp of difference (another CPU's SIMD path) leaves the bytes unchanged.
    bumped = np.nextafter(y, np.inf)
    assert viz.figure_spec(go.Figure(go.Scatter(x=np.arange(4), y=bumped))) == spec
    assert render.portable({"a": [float("nan"), float("inf")]}) == {"a": [None, None]}


def test_figure_html_checks_ids_and_heights():
    spec = viz.figure_spec(bar([1, 2, 3]))
    with pytest.raises(ValueError, match="div_id must be"):
        render.figure_html(spec, '"><img src=x onerror=alert(1)>')
    with pytest.raises(ValueError, match="layout.height must be"):
        render.figure_html(dict(spec, layout={"height": 10**9}), "tall")


def test_explorer_rejects_bad_input():
    with pytest.raises(ValueError, match="non-empty mapping"):
        Explorer("e-x", {}, lambda: bar([1, 2, 3]))
    with pytest.raises(ValueError, match="value widget"):
        Explorer("e-x", {"p": W.Button()}, lambda p: bar([1, 2, 3]))
    with pytest.raises(ValueError, match="plotly Figure"):
        Explorer("e-x", {"p": W.IntSlider(1)}, lambda p: None)


@pytest.mark.parametrize("collective", sorted(VC._SHAPES))
def test_holdings_follow_the_reference_definitions(collective):
    p = 4
    before, after = VC.holdings(collective, p)
    everyone = frozenset(range(p))
    if collective == "allreduce":
        assert all(after[r, j] == (j, everyone) for r in range(p) for j in range(p))
    if collective == "reducescatter":
        assert [after[r, r] for r in range(p)] == [(r, everyone) for r in range(p)]
        assert sum(cell is not None for cell in after.flat) == p
    if collective == "alltoall":  # rank r ends with chunk r of every rank, in rank order
        assert all(after[r, j] == (r, frozenset({j})) for r in range(p) for j in range(p))
    if collective in ("broadcast", "scatter"):  # only the root holds data before
        assert all(cell is None for cell in before[1:].flat)


def test_ring_animation_replays_the_library_schedule():
    for p in (2, 5, 8):
        fig = VC.ring_allreduce_animation(p)
        assert len(fig.frames) == 2 * (p - 1) + 1
        final = np.array(fig.frames[-1].data[0].z)
        assert (final == p).all()  # every chunk on every rank sums all p ranks
        moved = fig.frames[1].data[1]
        first = C.ring_allreduce_schedule(p, p)[0].transfers
        assert list(moved.x) == [t.chunk for t in first]
        assert list(moved.y) == [t.dst for t in first]


def test_measured_vs_model_marks_the_held_out_sizes():
    from scaleout import costmodel as M

    n = [2.0**k for k in range(10, 27, 2)]
    t = M.collective_time("allreduce", "ring", np.array(n), 4, 1e-3, 1e-9) * 1.05
    fit = M.fit_alpha_beta(n, t, 4, fit_rows="alternate")
    fig = VC.measured_vs_model(n, t, fit, p=4)
    used, held, line = fig.data
    assert used.marker.symbol == "circle" and held.marker.symbol == "circle-open"
    assert list(used.x) == n[0::2] and list(held.x) == n[1::2]
    assert line.mode == "lines"
    everything = VC.measured_vs_model(n, t, M.fit_alpha_beta(n, t, 4), p=4)
    assert [d.name for d in everything.data] == ["measured, used by the fit", "fitted ring model"]
    with pytest.raises(ValueError, match="fit must be a fit of the same 3 sizes"):
        VC.measured_vs_model(n[:3], t[:3], fit, p=4)


def test_summit_figure_draws_measured_points_and_model_lines():
    from scaleout import trees as T
    from scaleout.viz import trees as VT

    c = T.summit_comparison(3e-6, 2e-11)
    fig = VT.summit_figure(c)
    modes = [d.mode for d in fig.data]
    assert modes == ["markers", "lines", "markers", "lines"]
    assert list(fig.data[0].y) == list(c.measured_tree_us)
    assert list(fig.data[3].y) == list(c.model_ring_us)
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.title.text.endswith("(µs)")
    with pytest.raises(ValueError, match="comparison must be"):
        VT.summit_figure("Summit")


def test_caps_table_figure_shades_the_fastest_step_and_rejects_bad_input():
    from scaleout import data_parallel as D
    from scaleout.viz import data_parallel as VD

    net = D.dp_network(64)
    pairs = [D.uniform_model_timelines(350e6, 96, 64, machine=net, bucket_cap_mb=c)
             for c in (1, 25, 400)]  # fmt: skip
    fig = VD.caps_table_figure(["1", "25", "400"], pairs[0][0], [p[1] for p in pairs])
    heat = fig.data[0]
    assert list(heat.y) == ["naive (one, after backward)", "1", "25", "400"]
    steps = [pairs[0][0].step_s] + [p[1].step_s for p in pairs]
    fastest = int(np.argmin(steps))
    assert [row[0] for row in heat.z] == [int(i == fastest) for i in range(4)]
    assert heat.text[fastest][3] == f"{steps[fastest] * 1e3:.1f} ms"
    with pytest.raises(ValueError, match="one timeline per label"):
        VD.caps_table_figure(["1", "25"], pairs[0][0], [p[1] for p in pairs])
    with pytest.raises(ValueError, match="labels"):
        VD.caps_table_figure([], pairs[0][0], [])


def test_accumulation_table_figure_shades_rows_where_no_sync_wins():
    from scaleout import data_parallel as D
    from scaleout.viz import data_parallel as VD

    _, ddp = D.uniform_model_timelines(350e6, 96, 64, machine=D.dp_network(64, nic_gbps=100))
    rows = {f"k = {k}": (D.accumulation(ddp, k), D.accumulation(ddp, k, no_sync=False))
            for k in (1, 4)}  # fmt: skip
    heat = VD.accumulation_table_figure(rows).data[0]
    assert list(heat.y) == ["k = 1", "k = 4"]
    assert [row[0] for row in heat.z] == [0, 1]  # k = 1: the same step
    assert heat.text[1][1] == "25" and heat.text[1][3] == "100"
    with pytest.raises(ValueError, match="pair"):
        VD.accumulation_table_figure({"k = 1": rows["k = 1"][0]})
    with pytest.raises(ValueError, match="rows"):
        VD.accumulation_table_figure({})


# --- the reader's names (viz.labels) -------------------------------------------------------

_WORD = re.compile(r"(?<![\w./-])(" + "|".join(map(re.escape, VL.HUMAN)) + r")(?![\w/-])")


def shown_texts(spec):
    """Every string a figure shows: trace names and text, titles, tick labels, annotations,
    slider and button labels, hover templates."""
    keys = {"name", "text", "ticktext", "label", "prefix", "suffix", "hovertemplate"}
    out = []

    def walk(node, key):
        if isinstance(node, dict):
            for k, v in node.items():
                if k not in ("template", "args", "args2"):
                    walk(v, k if k in keys else key)
        elif isinstance(node, list):
            for v in node:
                walk(v, key)
        elif isinstance(node, str) and key in keys:
            out.append(node)

    walk({"data": spec.get("data"), "layout": spec.get("layout")}, None)
    for frame in spec.get("frames", []):
        walk({"data": frame.get("data"), "layout": frame.get("layout")}, None)
    return out


def test_labels_names_every_known_identifier_and_is_idempotent():
    for key, name in VL.HUMAN.items():
        assert viz.label(key) == name
        assert viz.labels(f"{key} on 8 ranks") == f"{name} on 8 ranks"
        assert not _WORD.search(viz.labels(key))
    assert viz.labels("E_p = 4, t_f") == "E<sub>p</sub> = 4, t<sub>f</sub>"
    assert viz.labels("E_p", subscripts=False) == "E_p"
    assert viz.label("ring") == "ring"
    # Identifiers inside longer names, paths and file names are left alone.
    for text in ("zb-h1x", "my_file.py", "data/dgx-h100.csv", "xallreduce", "llama3-405b"):
        assert viz.labels(text) == text
    with pytest.raises(ValueError, match="text"):
        viz.labels(None)
    with pytest.raises(ValueError, match="text"):
        viz.labels("x" * (VL.MAX_TEXT + 1))


@given(st.lists(st.sampled_from([*VL.HUMAN, "ring", "on", "E_p", "p = 8", ",", "(", ")"])))
def test_labels_leaves_no_identifier_in_any_text(words):
    text = " ".join(words)
    once = viz.labels(text)
    assert not _WORD.search(once)
    assert viz.labels(once) == once


def _identifier_figures():
    """Figures of the viz builders fed the library's identifiers (systems, links, schedules,
    collectives, algorithms), as the chapters feed them."""
    from scaleout import nccl, pipeline
    from scaleout.viz import nccl as VN
    from scaleout.viz import pipeline as VP
    from scaleout.viz import trees as VT

    yield "collective_figure", VC.collective_figure("allreduce", 4)
    yield "cost_curves", VC.cost_curves(8, 5e-6, 1e-10)
    yield "cost_vs_ranks", VC.cost_vs_ranks(1e6, 5e-6, 1e-10)
    for name in ("dgx-h100", "pcie"):
        yield f"choice_map {name}", VN.choice_map([1, 2], "allgather", machine=name)
    yield "busbw_figure", VN.busbw_figure("reducescatter", machine=nccl.PRESETS["hgx-h100-4nic"])
    yield "trees cost_vs_ranks", VT.cost_vs_ranks(3e-6, 2e-11, "nic-400g")
    yield "trees time_vs_size", VT.time_vs_size(64, 1e-6, 1e-12, "nvlink4-h100")
    for name in ("gpipe", "1f1b", "zb-h1"):
        s = pipeline.schedule(name, 4, 8, 1, t_f=1.0, t_b=2.0)
        yield f"gantt {name}", VP.gantt(s, title=f"{name}, p = 4, m = 8", time_title="t_f")


def test_no_figure_of_the_viz_builders_shows_a_raw_identifier():
    for what, fig in _identifier_figures():
        texts = shown_texts(viz.figure_spec(fig))
        raw = sorted({m.group(1) for t in texts for m in _WORD.finditer(t)})
        assert not raw, f"{what} shows identifiers {raw}"
    # The check can fail: the builders' own figures (before figure_spec) do carry them.
    before = shown_texts(json.loads(VC.cost_curves(8, 5e-6, 1e-10).to_json()))
    assert any(_WORD.search(t) for t in before)


def test_relabel_keeps_frame_names_and_slider_args():
    frames = [[go.Bar(x=[0], y=[i], name="zb-h1")] for i in range(3)]
    fig = viz.animation(frames, ["gpipe", "1f1b", "zb-h1"], title_text="zb-h1 steps")
    spec = viz.figure_spec(fig)
    names = [f["name"] for f in spec["frames"]]
    assert names == [f["name"] for f in json.loads(fig.to_json())["frames"]]
    steps = spec["layout"]["sliders"][0]["steps"]
    assert [s["args"][0][0] for s in steps] == names  # the slider still finds its frames
    assert [s["label"] for s in steps] == ["GPipe", "1F1B", "ZB-H1"]
    assert spec["layout"]["title"]["text"] == "ZB-H1 steps"
    assert {t["name"] for f in spec["frames"] for t in f["data"]} == {"ZB-H1"}


def test_explorer_shows_readable_options_and_passes_identifiers():
    seen = []

    def make(link):
        seen.append(link)
        return viz.new_figure(title_text=link)

    e = Explorer(
        "labels-explorer",
        {"link": W.Dropdown(options=["nvlink4-h100", "nic-400g"], value="nic-400g")},
        make,
    )
    assert seen[-1] == "nic-400g"
    assert e.controls["link"].label == "400 Gb/s NIC"
    payload = e.static_payload()
    assert payload["controls"][0]["options"] == ["NVLink 4 (H100)", "400 Gb/s NIC"]
    assert set(seen) == {"nvlink4-h100", "nic-400g"}
