"""Where the bytes go and how long a pattern takes: per-link loads, bytes per tier, and the
fluid bound (per phase ``steps * alpha`` plus the busiest link's bytes over its bandwidth).

Taught in chapter 11, "NVLink, NVSwitch and the cluster network"
(``chapters/11_nvlink_topology.ipynb``); see :mod:`scaleout.topology` for the model.
"""

from __future__ import annotations

import math
from collections import defaultdict

from .. import checks
from .cluster import Cluster, _cluster, _traffic
from .records import TIERS, Flow, Link, Timing, Traffic, _flows


def _loads(cluster: Cluster, flows: tuple[Flow, ...]) -> tuple[dict[Link, float], set[str]]:
    loads: dict[Link, float] = defaultdict(float)
    tiers = set()
    n = cluster.num_gpus
    for src, dst, nbytes in flows:
        if src >= n or dst >= n:  # flows are validated records; only the range is left
            cluster._gpu(src, "src"), cluster._gpu(dst, "dst")
        tier, links = cluster._route(src, dst)
        tiers.add(tier)
        for link in links:
            loads[link] += nbytes
    return dict(loads), tiers


def link_loads(cluster: Cluster, flows) -> dict[Link, float]:
    """Bytes each directed link carries for ``flows`` (Flow or (src, dst, nbytes) tuples),
    or for every phase of a :class:`Traffic` added up."""
    cluster = _cluster(cluster)
    if isinstance(flows, Traffic):
        flows = [f for phase in flows.phases for f in phase]
    return _finite_loads(_loads(cluster, _flows(flows))[0])


def _finite_loads(loads: dict[Link, float]) -> dict[Link, float]:
    if not all(math.isfinite(v) for v in loads.values()):
        raise ValueError("link loads must stay finite, but they overflow float64")
    return loads


def tier_bytes(cluster: Cluster, traffic: Traffic) -> dict[str, float]:
    """Bytes of ``traffic`` by the highest tier each flow reaches (local..spine)."""
    cluster, traffic = _cluster(cluster), _traffic(traffic)
    out = dict.fromkeys(TIERS, 0.0)
    n = cluster.num_gpus
    for phase in traffic.phases:
        for src, dst, nbytes in phase:
            if src >= n or dst >= n:
                cluster._gpu(src, "src"), cluster._gpu(dst, "dst")
            out[cluster._route(src, dst)[0]] += nbytes
    return _finite_loads(out)


def traffic_time(cluster: Cluster, traffic: Traffic) -> Timing:
    """Fluid-model time: per phase, steps * alpha + max over links of bytes / bandwidth."""
    cluster, traffic = _cluster(cluster), _traffic(traffic)
    latency = bandwidth = 0.0
    worst, worst_s = None, -1.0
    for flows, steps in zip(traffic.phases, traffic.steps, strict=True):
        loads, tiers = _loads(cluster, flows)
        latency += steps * max((cluster.alpha_s(t) for t in tiers), default=0.0)
        times = {x: b / (cluster.link_gb_per_s(x) * 1e9) for x, b in loads.items()}
        link, seconds = max(times.items(), key=lambda kv: kv[1], default=(None, 0.0))
        bandwidth += seconds
        if seconds > worst_s:
            worst, worst_s = link, seconds
    checks.finite_result("traffic time", latency + bandwidth)
    return Timing(latency + bandwidth, latency, bandwidth, worst)
