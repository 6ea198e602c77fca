"""Figures for the chapter "RDMA, RoCEv2 and lost packets" (chapters/12_rdma.ipynb).

Everything drawn comes from :mod:`scaleout.rdma` (state machine, sweeps, closed forms) and
from simulator timelines (:class:`scaleout.rdma.Timeline`); this module only lays it out.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .. import checks
from .. import rdma as R
from ..hardware import link
from ..rdma.config import FB_ACK, FB_NACK, RX_DISCARDED, RX_DUPLICATE
from ..rdma.results import SimResult
from .animate import MAX_FRAMES, animation
from .theme import NEUTRAL, new_figure, rank_color, template

STRATEGY_COLOR = {"go-back-n": rank_color(3), "selective-repeat": rank_color(0),
                  "ooo-bitmap": rank_color(2)}  # fmt: skip
STRATEGY_NAME = {"go-back-n": "go-back-N", "selective-repeat": "selective repeat (IRN)",
                 "ooo-bitmap": "out-of-order placement"}  # fmt: skip
STRATEGY_DASH = {"go-back-n": "solid", "selective-repeat": "solid", "ooo-bitmap": "dash"}
SHORT_NAME = {"go-back-n": "go-back-N", "selective-repeat": "selective repeat",
              "ooo-bitmap": "OOO placement"}  # fmt: skip
NACK_COLOR = rank_color(5)
BOTTOM_LEGEND = dict(orientation="h", x=0, y=-0.13, yanchor="top")
US = 1e6


def _box(fig, x0, y0, x1, y1, text, color):
    fig.add_shape(type="rect", x0=x0, y0=y0, x1=x1, y1=y1, line=dict(color=color, width=2),
                  fillcolor="white", layer="below")  # fmt: skip
    fig.add_annotation(x=(x0 + x1) / 2, y=(y0 + y1) / 2, text=text, showarrow=False,
                       font=dict(size=12))  # fmt: skip


def _arrow(fig, x0, y0, x1, y1, color, label=None, dash=False):
    fig.add_annotation(x=x1, y=y1, ax=x0, ay=y0, xref="x", yref="y", axref="x", ayref="y",
                       showarrow=True, arrowhead=3, arrowsize=1.2, arrowwidth=3,
                       arrowcolor=color, text="")  # fmt: skip
    if label:
        fig.add_annotation(
            x=(x0 + x1) / 2,
            y=(y0 + y1) / 2,
            text=label,
            showarrow=False,
            font=dict(size=11, color=color),
            bgcolor="rgba(255,255,255,0.85)",
        )


def data_path_figure(kind: str) -> go.Figure:
    """Two servers; the path of one GPU-to-GPU transfer: ``"gpudirect"`` or ``"staged"``."""
    kind = checks.choice("kind", kind, ("gpudirect", "staged"))
    pcie, nic = link("pcie5-x16"), link("nic-400g")
    fig = new_figure(height=400, margin=dict(l=10, r=10, t=50, b=10), showlegend=False)
    fig.update_xaxes(visible=False, range=[0, 10.2])
    fig.update_yaxes(visible=False, range=[0.2, 6.3])
    gray = "#555555"
    at = {}
    for side, x, mirror in (("A", 0.2, False), ("B", 6.0, True)):
        fig.add_shape(type="rect", x0=x, y0=0.3, x1=x + 4.0, y1=6.1,
                      line=dict(color=NEUTRAL, dash="dot"), layer="below")  # fmt: skip
        fig.add_annotation(x=x + 2.0, y=5.85, text=f"<b>server {side}</b>", showarrow=False)
        gx, nx = (x + 2.2, x + 0.2) if mirror else (x + 0.2, x + 2.2)
        _box(fig, gx, 4.2, gx + 1.6, 5.4, "GPU<br>(HBM)", rank_color(0))
        _box(fig, nx, 4.2, nx + 1.6, 5.4, f"NIC<br>{nic.gb_per_s * 8:g} Gb/s", rank_color(2))
        _box(fig, x + 1.0, 2.5, x + 3.0, 3.4, "PCIe switch", gray)
        _box(fig, x + 1.1, 0.5, x + 2.9, 1.6, "CPU +<br>host memory", gray)
        c = x + 2.0
        at[side] = dict(gpu=(gx + 0.8, 4.2), nic=(nx + 0.8, 4.2),
                        sw_gpu=(c + (0.4 if mirror else -0.4), 3.4),
                        sw_nic=(c + (-0.4 if mirror else 0.4), 3.4),
                        sw_l=(c - 0.3, 2.5), sw_r=(c + 0.3, 2.5),
                        host_l=(c - 0.3, 1.6), host_r=(c + 0.3, 1.6),
                        edge=(nx + (0.0 if mirror else 1.6), 4.8))  # fmt: skip
    a, b = at["A"], at["B"]
    color = rank_color(0) if kind == "gpudirect" else rank_color(3)
    wire = f"wire {nic.gb_per_s:g} GB/s"
    pcie_label = f"PCIe {pcie.gb_per_s:g} GB/s"
    if kind == "gpudirect":
        hops = [(a["gpu"], a["sw_gpu"], "1 " + pcie_label), (a["sw_nic"], a["nic"], "2"),
                (a["edge"], b["edge"], "3 " + wire), (b["nic"], b["sw_nic"], "4"),
                (b["sw_gpu"], b["gpu"], "5")]  # fmt: skip
        title = "GPUDirect RDMA: GPU → PCIe switch → NIC, no host memory"
    else:
        hops = [(a["gpu"], a["sw_gpu"], "1 " + pcie_label), (a["sw_l"], a["host_l"], "2 copy"),
                (a["host_r"], a["sw_r"], "3 NIC reads"), (a["sw_nic"], a["nic"], "4"),
                (a["edge"], b["edge"], "5 " + wire), (b["nic"], b["sw_nic"], "6"),
                (b["sw_l"], b["host_l"], "7 NIC writes"), (b["host_r"], b["sw_r"], "8 copy"),
                (b["sw_gpu"], b["gpu"], "9")]  # fmt: skip
        title = "Host-staged copy: through host memory on both sides"
    for p0, p1, label in hops:
        _arrow(fig, *p0, *p1, color, label)
    fig.update_layout(title_text=title)
    return fig


_QP_POS = {"RESET": (0.0, 1.0), "INIT": (1.0, 1.0), "RTR": (2.0, 1.0), "RTS": (3.0, 1.0),
           "SQD": (4.2, 1.55), "SQE": (4.2, 0.3), "ERR": (2.0, -0.25)}  # fmt: skip
_QP_NOTES = {
    "RESET": "created", "INIT": "port, P_Key,<br>access rights",
    "RTR": "knows its peer:<br>ready to receive", "RTS": "ready to send",
    "SQD": "send queue drained<br>(to change a path)",
    "SQE": "send queue error:<br>UD/UC only",
    "ERR": "error: work requests<br>flushed",
}  # fmt: skip


def _qp_arrow(fig, fr, to, color, width, bend=0.0):
    """An arrow between two state circles, ``bend`` to the side (two arrows of a pair)."""
    (x0, y0), (x1, y1) = _QP_POS[fr], _QP_POS[to]
    dx, dy = x1 - x0, y1 - y0
    length = (dx * dx + dy * dy) ** 0.5
    ux, uy = dx / length, dy / length
    ox, oy = -uy * bend, ux * bend
    fig.add_annotation(x=x1 - 0.26 * ux + ox, y=y1 - 0.26 * uy + oy, ax=x0 + 0.26 * ux + ox,
                       ay=y0 + 0.26 * uy + oy, xref="x", yref="y", axref="x", ayref="y",
                       showarrow=True, arrowhead=3, arrowwidth=width, arrowcolor=color, text="",
                       name=f"{fr}->{to}")  # fmt: skip


def qp_state_figure(qp: R.QueuePair | None = None) -> go.Figure:
    """Every RC queue-pair state of the kernel's table (``TRANSITIONS``):
    blue arrows carry the attributes a transition requires, grey ones need none; the red
    arrow is the NIC's own move to ERR when a work request fails. The transitions ``qp``
    took are drawn thick. There is no RESET -> ERR, and no transition into SQE."""
    if qp is not None:
        checks.instance("qp", qp, R.QueuePair)
    history = qp.history if qp else []
    taken = {(fr, to) for fr, to, what in history if isinstance(what, tuple)}  # by modify
    by_nic = any(isinstance(what, str) for _, _, what in history)
    fig = new_figure(height=500, margin=dict(l=10, r=10, t=50, b=10), showlegend=False)
    fig.update_xaxes(visible=False, range=[-0.5, 4.75])
    fig.update_yaxes(visible=False, range=[-1.0, 2.15])
    blue, grey, red = rank_color(0), "#888888", rank_color(3)
    for (fr, to), (req, _) in R.TRANSITIONS.items():
        if fr == to or to == "RESET":
            continue
        forward = to not in ("ERR",)
        color = blue if forward else grey
        width = 5 if (fr, to) in taken else (2 if forward else 1)
        bend = 0.07 if {fr, to} == {"RTS", "SQD"} else 0.0
        _qp_arrow(fig, fr, to, color, width, bend=bend)
        if req:
            (x0, y0), (x1, _) = _QP_POS[fr], _QP_POS[to]
            fig.add_annotation(x=(x0 + x1) / 2, y=y0 + 0.12, yanchor="bottom", showarrow=False,
                               text="<br>".join(req), font=dict(size=10, color=blue))  # fmt: skip
    _qp_arrow(fig, "RTS", "ERR", red, 5 if by_nic else 2, bend=-0.12)
    fig.add_annotation(x=2.75, y=0.28, text="NIC: retries exhausted<br>IBV_WC_RETRY_EXC_ERR",
                       showarrow=False, font=dict(size=10, color=red), xanchor="left")  # fmt: skip
    for name, text in _QP_NOTES.items():
        x, y = _QP_POS[name]
        above = name == "SQD"
        fig.add_annotation(x=x, y=y + 0.2 if above else y - 0.2, text=text, showarrow=False,
                           yanchor="bottom" if above else "top",
                           font=dict(size=10, color="#444444"))  # fmt: skip
    fig.add_annotation(x=-0.45, y=-0.72, xanchor="left", yanchor="top", showarrow=False,
                       align="left", font=dict(size=10),
                       text="Every state → RESET (not drawn); every state except RESET → ERR "
                            "(grey): there is no RESET → ERR, and no transition into SQE.<br>"
                            "INIT → RTR: AV (the peer's GID), DEST_QPN and RQ_PSN are the "
                            "peer's, exchanged out of band.")  # fmt: skip
    current = qp.state if qp else None
    fig.add_trace(go.Scatter(
        x=[p[0] for p in _QP_POS.values()], y=[p[1] for p in _QP_POS.values()],
        mode="markers+text", text=list(_QP_POS), textfont=dict(color="white", size=13),
        marker=dict(size=58, symbol="circle",
                    color=[red if s == current else "#333333" for s in _QP_POS]),
        hovertext=[f"{s}: {_QP_NOTES[s].replace('<br>', ' ')}" for s in _QP_POS],
        hoverinfo="text"))  # fmt: skip
    extra = f" (this QP: {current})" if qp else ""
    fig.update_layout(title_text="RC queue-pair states" + extra)
    return fig


def _ladder_segments(res: SimResult):
    """Line segments (sender x=0 -> receiver x=1, time in us down) by category."""
    cfg, tl = res.config, res.timeline
    fwd_s = cfg.rtt_ps // 2 * 1e-12
    tx_s = np.where(tl.psn == cfg.n_packets - 1, cfg.tx_last_ps, cfg.tx_ps) * 1e-12
    send = tl.send_s
    nominal = send + tx_s + fwd_s + np.where(tl.delayed, cfg.reorder_delay_s, 0.0)
    arrive = np.where(np.isnan(tl.arrive_s), nominal, tl.arrive_s)
    wasted = np.isin(tl.rx, (RX_DISCARDED, RX_DUPLICATE))
    cats = {
        "lost in the network": tl.lost,
        "discarded by the receiver": ~tl.lost & wasted,
        "late (took a longer path)": ~tl.lost & ~wasted & tl.delayed,
        "retransmission": ~tl.lost & ~wasted & ~tl.delayed & tl.retransmission,
        "first transmission": ~tl.lost & ~wasted & ~tl.delayed & ~tl.retransmission,
    }
    out = {}
    for name, mask in cats.items():
        idx = np.flatnonzero(mask)
        if name == "lost in the network":
            x1, y1 = 0.55, send[idx] + 0.55 * (arrive[idx] - send[idx])
        else:
            x1, y1 = 1.0, arrive[idx]
        out[name] = (idx, np.broadcast_to(x1, idx.shape), y1)
    return out, send, arrive


_CAT_STYLE = {
    "first transmission": dict(color=rank_color(0), width=1.6),
    "retransmission": dict(color=rank_color(3), width=2.4),
    "late (took a longer path)": dict(color=rank_color(1), width=2.0, dash="dash"),
    "discarded by the receiver": dict(color="#999999", width=1.4),
    "lost in the network": dict(color="#333333", width=1.4, dash="dot"),
}


def _lines(x0, y0, x1, y1):
    xs = np.column_stack([x0, x1, np.full(len(x0), np.nan)]).ravel()
    ys = np.column_stack([y0, y1, np.full(len(y0), np.nan)]).ravel()
    return np.round(xs, 3), np.round(ys * US, 4)


MEMORY_SCALE = [[0.0, "#EEEEEE"], [0.5, rank_color(2)], [1.0, rank_color(0)]]
MAX_ANIMATED_PACKETS = 200


def transfer_animation(results: dict, label: str, frames: int = 36) -> go.Figure:
    """The same transfer under each strategy, side by side, as a sequence diagram that the
    slider reveals over time, with the receiver's memory (and bitmap window) below.

    The diagrams are drawn once; each frame moves a white curtain (a layout shape) down to
    its time and recolours the memory strips, so the page stays small.
    """
    if not isinstance(results, dict) or not 1 <= len(results) <= len(R.STRATEGIES):
        raise checks.fail("results", "a dict of strategy -> SimResult (1 to 3 entries)", results)
    for key, res in results.items():
        checks.choice("results", key, R.STRATEGIES)
        _check_timeline(f"results[{key!r}]", res)
        if res.packets > MAX_ANIMATED_PACKETS:
            raise checks.fail("results", f"writes of at most {MAX_ANIMATED_PACKETS} packets "
                              "(one marker per PSN)", res.packets)  # fmt: skip
    label = checks.text("label", label)
    frames = checks.integer("frames", frames, 2, MAX_FRAMES)
    strategies = list(results)
    k = len(strategies)
    t_end = max(r.completion_s for r in results.values()) * 1.02
    times = np.linspace(0.0, t_end, frames)
    gap = 0.035
    width = (1 - gap * (k - 1)) / k
    layout = dict(height=840, margin=dict(l=60, r=20, t=170, b=40), showlegend=True,
                  title=dict(y=0.985, yanchor="top", yref="container"),
                  legend=dict(orientation="h", x=0, y=1.085, yanchor="bottom",
                              font=dict(size=11)),
                  annotations=[dict(x=1, y=0.135, xref="paper", yref="paper",
                                    xanchor="right", yanchor="bottom", showarrow=False,
                                    font=dict(size=11),
                                    text="memory: blue = in place and in order, green = "
                                         "placed out of order; box = bitmap window "
                                         "(go-back-N: the expected PSN)")])  # fmt: skip
    statics = []
    dyn_frames = [[] for _ in times]
    for i, s in enumerate(strategies):
        res, cfg = results[s], results[s].config
        n, W = cfg.n_packets, cfg.window
        dom = [i * (width + gap), i * (width + gap) + width]
        xa, ya, xb, yb = f"x{2 * i + 1}", f"y{2 * i + 1}", f"x{2 * i + 2}", f"y{2 * i + 2}"
        layout[f"xaxis{2 * i + 1}"] = dict(domain=dom, anchor=ya, range=[-0.12, 1.12],
                                           tickvals=[0, 1], ticktext=["sender", "receiver"],
                                           showgrid=False)  # fmt: skip
        layout[f"yaxis{2 * i + 1}"] = dict(
            domain=[0.2, 1.0],
            anchor=xa,
            autorange=False,
            range=[t_end * US, 0],
            title_text="time (µs)" if i == 0 else None,
        )
        layout[f"xaxis{2 * i + 2}"] = dict(
            domain=dom,
            anchor=yb,
            range=[-0.7, n - 0.3],
            title_text="PSN (receiver memory)",
            showgrid=False,
        )
        layout[f"yaxis{2 * i + 2}"] = dict(domain=[0.05, 0.12], anchor=xb, visible=False,
                                           range=[-0.8, 0.8])  # fmt: skip
        segs, send, arrive = _ladder_segments(res)
        tl = res.timeline
        for name, (idx, x1, y1) in segs.items():
            xs, ys = _lines(np.zeros(len(idx)), send[idx], x1, y1)
            hover = [f"PSN {tl.psn[j]}" for j in idx for _ in range(3)]
            statics.append(go.Scatter(x=xs, y=ys, mode="lines", xaxis=xa, yaxis=ya,
                                      line=_CAT_STYLE[name], name=name, legendgroup=name,
                                      showlegend=i == 0, hovertext=hover,
                                      hoverinfo="text+name"))  # fmt: skip
        lost = segs["lost in the network"]
        statics.append(
            go.Scatter(
                x=lost[1],
                y=np.round(lost[2] * US, 4),
                mode="markers",
                marker=dict(symbol="x", size=9, color="#333333"),
                xaxis=xa,
                yaxis=ya,
                showlegend=False,
                hoverinfo="skip",
            )
        )
        for kind, color, name in ((FB_NACK, NACK_COLOR, "NAK / NACK (gap reported)"),
                                  (FB_ACK, "#BBBBBB", "ACK")):  # fmt: skip
            idx = np.flatnonzero((tl.fb == kind) & ~np.isnan(tl.fb_s))
            xs, ys = _lines(np.ones(len(idx)), tl.arrive_s[idx], np.zeros(len(idx)), tl.fb_s[idx])
            lw = 1.4 if kind == FB_NACK else 0.8
            statics.append(
                go.Scatter(
                    x=xs,
                    y=ys,
                    mode="lines",
                    xaxis=xa,
                    yaxis=ya,
                    name=name,
                    legendgroup=name,
                    showlegend=i == 0,
                    hoverinfo="skip",
                    line=dict(color=color, width=lw),
                )
            )
        ev = [(t, kd, p) for t, kd, p in tl.events if kd in ("rewind", "timeout")]
        if ev:
            statics.append(go.Scatter(
                x=[-0.06] * len(ev), y=[round(t * US, 4) for t, _, _ in ev], mode="markers",
                marker=dict(symbol="triangle-left", size=11, color=rank_color(3)),
                xaxis=xa, yaxis=ya, name="go back / timeout", legendgroup="ev",
                showlegend=i == 0, hoverinfo="text",
                hovertext=[f"{kd} to PSN {p} at {t * US:.2f} µs" for t, kd, p in ev]))  # fmt: skip
        title = (
            f"<b>{SHORT_NAME[s]}</b><br>{res.completion_s * US:.1f} µs<br>"
            f"{res.retransmitted} resent, {res.timeouts} timeouts"
        )
        layout["annotations"].append(dict(
            x=sum(dom) / 2, y=1.0, xref="paper", yref="paper", yanchor="bottom",
            text=title, showarrow=False, font=dict(size=12)))  # fmt: skip
        placed = np.nan_to_num(tl.placed_s, nan=np.inf)
        for f, t in enumerate(times):
            have = placed <= t
            epsn = int(np.argmin(np.append(have, False)))
            state = np.where(np.arange(n) < epsn, 2, np.where(have, 1, 0)).tolist()
            hi = min(n, epsn + (1 if s == "go-back-n" else W)) - 0.5
            box = [epsn - 0.5, hi, hi, epsn - 0.5, epsn - 0.5] if epsn < n else [None] * 5
            if f == 0:  # full traces; later frames carry only what changes
                strip = go.Scatter(
                    x=list(range(n)), y=[0] * n, mode="markers", xaxis=xb, yaxis=yb,
                    marker=dict(symbol="square", size=9, color=state, cmin=0, cmax=2,
                                colorscale=MEMORY_SCALE, line=dict(color="#999999", width=0.5)),
                    showlegend=False, hoverinfo="skip")  # fmt: skip
                frame = go.Scatter(x=box, y=[-0.6, -0.6, 0.6, 0.6, -0.6], mode="lines",
                                   xaxis=xb, yaxis=yb, line=dict(color="#222222", width=2),
                                   showlegend=False, hoverinfo="skip")  # fmt: skip
            else:
                strip, frame = go.Scatter(marker=dict(color=state)), go.Scatter(x=box)
            dyn_frames[f] += [strip, frame]
    curtain = [[dict(type="rect", xref=f"x{2 * i + 1}", yref=f"y{2 * i + 1}", x0=-0.12, x1=1.12,
                     y0=t * US, y1=t_end * US, fillcolor="white", opacity=0.93, layer="above",
                     line=dict(color="#222222", width=1, dash="dot")) for i in range(k)]
               for t in times]  # fmt: skip
    labels = [f"{t * US:.1f}" for t in times]
    titles = [f"{label}, t = {t * US:.1f} µs" for t in times]
    fig = animation(dyn_frames, labels, frame_titles=titles, slider_prefix="t (µs) = ",
                    duration_ms=400, **layout)  # fmt: skip
    fig.add_traces(statics)
    fig.update_layout(shapes=curtain[0], title_font_size=14)
    for f, frm in enumerate(fig.frames):
        frm.layout.shapes = curtain[f]
    return fig


def goodput_vs_loss_figure(sweeps: dict, closed_form: dict | None = None) -> go.Figure:
    """Goodput (top) and retransmissions per packet (bottom) against loss rate, one column
    per scenario in ``sweeps`` (title -> Sweep over ``loss``)."""
    if not isinstance(sweeps, dict) or not 1 <= len(sweeps) <= 4:
        raise checks.fail("sweeps", "a dict of 1 to 4 titles -> Sweep over 'loss'", sweeps)
    for title, sw in sweeps.items():
        checks.text("sweeps", title)
        if not isinstance(sw, R.Sweep) or sw.name != "loss":
            raise checks.fail(f"sweeps[{title!r}]", "a Sweep over 'loss'", sw)
    if closed_form is not None:
        if not isinstance(closed_form, dict):
            raise checks.fail("closed_form", "None or a dict of title -> (loss, goodput)",
                              closed_form)  # fmt: skip
        for title, pair in closed_form.items():
            checks.choice("closed_form", title, tuple(sweeps))
            if not isinstance(pair, tuple | list) or len(pair) != 2:
                raise checks.fail(f"closed_form[{title!r}]", "a pair (loss, goodput)", pair)
            x = checks.array("closed_form loss", pair[0], ndim=1, low=0.0, high=1.0)
            y = checks.array("closed_form goodput", pair[1], ndim=1, low=0.0, high=1.0)
            if len(x) != len(y):
                raise checks.fail("closed_form", "pairs of arrays of equal length", pair)
    titles = list(sweeps)
    fig = make_subplots(rows=2, cols=len(titles), shared_xaxes=True, vertical_spacing=0.08,
                        horizontal_spacing=0.08, subplot_titles=titles)  # fmt: skip
    for c, title in enumerate(titles, start=1):
        sw = sweeps[title]
        for i, s in enumerate(sw.strategies):
            style = dict(color=STRATEGY_COLOR[s], width=2.5, dash=STRATEGY_DASH[s])
            common = dict(x=sw.values, mode="lines+markers", legendgroup=s, line=style,
                          marker=dict(size=6))  # fmt: skip
            fig.add_trace(go.Scatter(y=sw.goodput_fraction[i], name=STRATEGY_NAME[s],
                                     showlegend=c == 1, **common), 1, c)  # fmt: skip
            resent = np.where(
                sw.retransmitted_per_packet[i] > 0, sw.retransmitted_per_packet[i], np.nan
            )  # none resent: no point on the log axis
            fig.add_trace(
                go.Scatter(y=resent, name=STRATEGY_NAME[s], showlegend=False, **common), 2, c
            )
        if closed_form and title in closed_form:
            x, y = closed_form[title]
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=y,
                    mode="lines",
                    name="go-back-N closed form",
                    legendgroup="cf",
                    showlegend=c == 1,
                    line=dict(color="black", dash="dot", width=1.5),
                ),
                1,
                c,
            )
    fig.update_xaxes(type="log", exponentformat="power")
    fig.update_xaxes(title_text="packet loss rate", row=2)
    fig.update_yaxes(range=[0, 1.05], row=1)
    fig.update_yaxes(title_text="goodput / link bandwidth", row=1, col=1)
    fig.update_yaxes(type="log", range=[-4.2, 1.7], exponentformat="power", row=2)
    fig.update_yaxes(title_text="retransmissions per packet", row=2, col=1)
    fig.update_layout(
        template=template(),
        height=680,
        legend=BOTTOM_LEGEND,
        margin=dict(b=110),
        title_text="One RDMA write under random loss",
    )
    return fig


def reorder_figure(by_prob: R.Sweep, by_delay: R.Sweep, reorder_window_s: float) -> go.Figure:
    """No loss, only reordering: goodput and needless retransmissions against the reordering
    probability (left) and the extra delay of a late packet (right)."""
    for name, sw, swept in (("by_prob", by_prob, "reorder"), ("by_delay", by_delay,
                                                            "reorder_delay_s")):  # fmt: skip
        if not isinstance(sw, R.Sweep) or sw.name != swept:
            raise checks.fail(name, f"a Sweep over {swept!r}", sw)
    reorder_window_s = checks.real("reorder_window_s", reorder_window_s, 0.0, 1.0)
    fig = make_subplots(rows=2, cols=2, shared_xaxes="columns", vertical_spacing=0.08,
                        horizontal_spacing=0.1,
                        subplot_titles=("against reordering probability",
                                        "against extra delay of a late packet"))  # fmt: skip
    for c, sw in ((1, by_prob), (2, by_delay)):
        x = sw.values * (US if sw.name == "reorder_delay_s" else 1)
        for i, s in enumerate(sw.strategies):
            common = dict(
                x=x,
                mode="lines+markers",
                legendgroup=s,
                line=dict(color=STRATEGY_COLOR[s], width=2.5, dash=STRATEGY_DASH[s]),
            )
            fig.add_trace(
                go.Scatter(
                    y=sw.goodput_fraction[i], name=STRATEGY_NAME[s], showlegend=c == 1, **common
                ),
                1,
                c,
            )
            resent = sw.retransmitted_per_packet[i]
            fig.add_trace(
                go.Scatter(
                    y=np.where(resent > 0, resent, np.nan),
                    showlegend=False,
                    name=STRATEGY_NAME[s],
                    **common,
                ),
                2,
                c,
            )
    fig.add_vline(x=reorder_window_s * US, line=dict(color="#555555", dash="dot"), row=2, col=2)
    fig.add_annotation(
        x=reorder_window_s * US,
        y=0.02,
        yref="y4 domain",
        xref="x4",
        text=" reorder window",
        showarrow=False,
        xanchor="left",
        yanchor="bottom",
    )
    fig.update_xaxes(type="log", exponentformat="power", col=1)
    fig.update_xaxes(title_text="probability a packet is late", row=2, col=1)
    fig.update_xaxes(title_text="extra delay of a late packet (µs)", row=2, col=2)
    fig.update_yaxes(range=[0, 1.05], row=1)
    fig.update_yaxes(title_text="goodput / link bandwidth", row=1, col=1)
    fig.update_yaxes(title_text="retransmissions per packet", row=2, col=1)
    fig.update_yaxes(type="log", range=[-4.3, 1.7], exponentformat="power", row=2)
    fig.add_annotation(x=0.01, y=0.02, xref="x3 domain", yref="y3 domain", showarrow=False,
                       xanchor="left", yanchor="bottom", font=dict(size=10),
                       text="no marker: nothing resent")  # fmt: skip
    fig.update_layout(
        template=template(),
        height=660,
        legend=BOTTOM_LEGEND,
        margin=dict(b=110),
        title_text="No packet lost, some late",
    )
    return fig


def _check_timeline(name: str, res) -> SimResult:
    checks.instance(name, res, SimResult)
    if res.timeline is None:
        raise checks.fail(name, "a SimResult simulated with timeline=True", res)
    return res


def _size_text(nbytes: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= size:
            return f"{nbytes / size:.3g} {unit}"
    return f"{nbytes} B"


def time_sequence_figure(res: SimResult, max_markers: int = 300) -> go.Figure:
    """PSN of every transmission against its send time (a time-sequence graph).

    Back-to-back runs (consecutive PSNs one serialisation time apart) are drawn as one line
    segment each, so the figure stays small however long the transfer: a healthy transfer
    is one straight line, go-back-N draws saw teeth, timeouts are gaps. Lost packets are
    crosses (at most ``max_markers`` of them, evenly thinned beyond). The title states the
    configuration and the outcome.
    """
    res = _check_timeline("res", res)
    max_markers = checks.integer("max_markers", max_markers, 1, 100_000)
    tl, cfg = res.timeline, res.config
    fig = new_figure(height=470, legend=dict(x=0.99, y=0.02, xanchor="right", yanchor="bottom"),
                     xaxis=dict(title_text="send time (µs)"),
                     yaxis=dict(title_text="packet sequence number (PSN)"))  # fmt: skip
    send_ps = np.rint(tl.send_s * 1e12).astype(np.int64)
    wasted = np.isin(tl.rx, (RX_DISCARDED, RX_DUPLICATE)) & ~tl.lost
    cat = np.where(tl.lost, 3, np.where(wasted, 2, np.where(tl.retransmission, 1, 0)))
    start = np.ones(len(cat), bool)
    start[1:] = (np.diff(tl.psn) != 1) | (np.diff(send_ps) != cfg.tx_ps) | (cat[1:] != cat[:-1])
    first = np.flatnonzero(start)
    last = np.append(first[1:] - 1, len(cat) - 1)
    groups = (("first transmission, kept", rank_color(0)), ("retransmission, kept", rank_color(3)),
              ("discarded by the receiver", "#999999"))  # fmt: skip
    for c, (name, color) in enumerate(groups):
        sel = cat[first] == c
        a, b = first[sel], last[sel]
        x = np.column_stack([send_ps[a], send_ps[b], np.zeros(len(a))]).astype(float) * 1e-6
        y = np.column_stack([tl.psn[a], tl.psn[b], np.zeros(len(a))]).astype(float)
        x[:, 2], y[:, 2] = np.nan, np.nan
        count = int(np.sum(b - a + 1))
        fig.add_trace(go.Scatter(x=np.round(x.ravel(), 3), y=y.ravel(), mode="lines+markers",
                                 name=f"{name} ({count})", line=dict(color=color, width=2),
                                 marker=dict(size=4, color=color)))  # fmt: skip
    lost = np.flatnonzero(tl.lost)
    shown = lost[:: -(-len(lost) // max_markers)] if len(lost) else lost
    thinned = f", 1 in {-(-len(lost) // max_markers)} shown" if len(shown) < len(lost) else ""
    fig.add_trace(go.Scatter(x=np.round(send_ps[shown] * 1e-6, 3), y=tl.psn[shown],
                             mode="markers", name=f"lost in the network ({len(lost)}{thinned})",
                             marker=dict(size=7, color="#222222", symbol="x")))  # fmt: skip
    setup = (
        f"{cfg.bandwidth_gbps:g} Gb/s, RTT {cfg.rtt_s * US:g} µs, MTU {cfg.mtu_bytes} B, "
        f"{_size_text(cfg.message_bytes)}, loss {cfg.loss:g}, late {cfg.reorder:g}"
    )
    if res.ok:
        outcome = (
            f"{res.goodput_gbps:.0f} Gb/s ({100 * res.goodput_fraction:.0f}%), "
            f"{res.sent} sent for {res.packets}, {res.timeouts} timeouts"
        )
    else:
        outcome = (
            f"failed: {res.status} after {res.timeouts} timeouts, {res.sent} sent for {res.packets}"
        )
    fig.update_layout(margin=dict(t=80, b=60), title_text=(
        f"{STRATEGY_NAME[cfg.strategy]}: {outcome}<br><sup>{setup}</sup>"))  # fmt: skip
    return fig
