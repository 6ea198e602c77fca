"""The display layer: stable, kernel-free figure output; animations; explorers."""

from __future__ import annotations

import json
import re

import ipywidgets as W
import numpy as np
import plotly.graph_objects as go
import pytest

from scaleout import collectives as C
from scaleout import viz
from scaleout.viz import collectives as VC
from scaleout.widgets import LIVE_NOTE, Explorer


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


@pytest.mark.parametrize("name", ["", "Upper", "1abc", "has space", "a" * 64, None, "x_y"])
def test_bad_figure_names_are_rejected(name):
    with pytest.raises(ValueError, match="name must match"):
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


def test_explorer_static_rendering_says_it_needs_a_kernel_and_follows_controls():
    slider = W.IntSlider(value=4, min=2, max=8, description="ranks p")
    explorer = Explorer("demo-explorer", {"p": slider}, lambda p: bar([p, p, p]))
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle  # live controls in a kernel
    html = bundle["text/html"]
    assert LIVE_NOTE in html and "ranks p = 4" in html
    assert 'id="demo-explorer"' in html and 'id="demo-explorer-explorer"' in html
    slider.value = 7  # a control change rebuilds the figure
    assert list(explorer.figure.data[0].y) == [7, 7, 7]
    assert "ranks p = 7" in explorer.static_html()


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
