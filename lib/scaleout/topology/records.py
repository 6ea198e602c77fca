"""The cluster model's records, validated on construction: a directed link, a flow, a
path, a timing and a traffic pattern (phases of concurrent flows); the package's limits.

Taught in chapter 11, "NVLink, NVSwitch and the cluster network"
(``chapters/11_nvlink_topology.ipynb``); see :mod:`scaleout.topology` for the model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from .. import checks

LINK_KINDS = ("nvlink-out", "nvlink-in", "nic-out", "nic-in", "leaf-up", "leaf-down")
TIERS = ("local", "nvlink", "leaf", "spine")
DP_ALGORITHMS = ("ring", "tree", "double-tree")
MAX_GPUS = 65_536
MAX_CHANNELS = 64  # NCCL's MAXCHANNELS in recent releases
MAX_FLOWS = 2**21
MAX_STEPS = 2**31  # message steps of one phase
MAX_ALPHA_S = 1.0  # a per-message latency above one second is not a network


# --- records: validated on construction --------------------------------------------------
class _LinkFields(NamedTuple):
    kind: str
    index: int


class Link(_LinkFields):
    """A directed link: ``kind`` (one of ``LINK_KINDS``) and the GPU, NIC or leaf index."""

    __slots__ = ()

    def __new__(cls, kind: str, index: int):
        kind = checks.choice("kind", kind, LINK_KINDS)
        return super().__new__(cls, kind, checks.integer("index", index, 0, MAX_GPUS - 1))


class _FlowFields(NamedTuple):
    src: int
    dst: int
    nbytes: float


class Flow(_FlowFields):
    """``nbytes`` from GPU ``src`` to GPU ``dst``, sent during one phase of a pattern."""

    __slots__ = ()

    def __new__(cls, src: int, dst: int, nbytes: float):
        src = checks.integer("src", src, 0, MAX_GPUS - 1)
        dst = checks.integer("dst", dst, 0, MAX_GPUS - 1)
        return super().__new__(cls, src, dst, checks.nonnegative("nbytes", nbytes))


class _PathFields(NamedTuple):
    src: int
    dst: int
    tier: str
    links: tuple[Link, ...]
    switches: tuple[str, ...]


class Path(_PathFields):
    """How bytes from GPU ``src`` reach GPU ``dst``: links and switches crossed, in order;
    ``tier`` is "local", "nvlink", "leaf" (one leaf switch) or "spine"."""

    __slots__ = ()

    def __new__(cls, src: int, dst: int, tier: str, links, switches):
        src = checks.integer("src", src, 0, MAX_GPUS - 1)
        dst = checks.integer("dst", dst, 0, MAX_GPUS - 1)
        links = _sequence("links", links, 4, lambda x: checks.instance("links", x, Link))
        switches = _sequence("switches", switches, 3, lambda x: checks.text("switches", x))
        return super().__new__(cls, src, dst, checks.choice("tier", tier, TIERS), links, switches)


class _TimingFields(NamedTuple):
    seconds: float
    latency_s: float
    bandwidth_s: float
    bottleneck: Link | None


class Timing(_TimingFields):
    """``seconds`` = ``latency_s`` (sum over phases of steps * alpha) + ``bandwidth_s``
    (sum over phases of the busiest link's bytes / bandwidth); ``bottleneck`` is the
    busiest link (relative to its bandwidth) of the slowest phase, None if nothing moves."""

    __slots__ = ()

    def __new__(cls, seconds: float, latency_s: float, bandwidth_s: float, bottleneck=None):
        if bottleneck is not None:
            checks.instance("bottleneck", bottleneck, Link, "a Link or None")
        return super().__new__(
            cls,
            checks.nonnegative("seconds", seconds),
            checks.nonnegative("latency_s", latency_s),
            checks.nonnegative("bandwidth_s", bandwidth_s),
            bottleneck,
        )


def _link(kind: str, index: int) -> Link:
    """A Link from the library's own (already valid) values: skips the checks."""
    return tuple.__new__(Link, (kind, index))


def _flow(src: int, dst: int, nbytes: float) -> Flow:
    return tuple.__new__(Flow, (src, dst, nbytes))


def _sequence(name: str, value, limit: int, check) -> tuple:
    """``value`` as a tuple of at most ``limit`` items, each passed through ``check``."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise checks.fail(name, f"a sequence of at most {limit} items", value)
    items = []
    for item in value:
        if len(items) == limit:
            raise checks.fail(name, f"a sequence of at most {limit} items", value)
        items.append(check(item))
    return tuple(items)


def _as_flow(flow) -> Flow:
    if type(flow) is Flow:
        return flow
    if isinstance(flow, str | bytes | Mapping) or not isinstance(flow, Iterable):
        raise checks.fail("flow", "a Flow or a (src, dst, nbytes) triple", flow)
    items = list(flow) if not hasattr(flow, "__len__") or len(flow) <= 3 else None
    if items is None or len(items) != 3:
        raise checks.fail("flow", "a Flow or a (src, dst, nbytes) triple", flow)
    return Flow(*items)


def _flows(flows, budget: int = MAX_FLOWS) -> tuple[Flow, ...]:
    """``flows`` (an iterable of Flow or triples) as a tuple of at most ``budget`` Flows."""
    if isinstance(flows, str | bytes | Mapping) or not isinstance(flows, Iterable):
        raise checks.fail("flows", "an iterable of Flow or (src, dst, nbytes) triples", flows)
    out = []
    for flow in flows:
        if len(out) >= budget:
            raise checks.fail("flows", f"at most {MAX_FLOWS} flows in one pattern", "more")
        out.append(_as_flow(flow))
    return tuple(out)


@dataclass(frozen=True)
class Traffic:
    """A traffic pattern: phases run one after another, the flows of a phase at once;
    ``steps`` gives each phase's message steps (its latency terms)."""

    name: str
    phases: tuple[tuple[Flow, ...], ...]
    steps: tuple[int, ...]

    def __post_init__(self):
        checks.text("name", self.name)
        if isinstance(self.phases, str | bytes | Mapping) or not isinstance(self.phases, Iterable):
            raise checks.fail("phases", "a sequence of phases (each a sequence of flows)", 0)
        phases, budget = [], MAX_FLOWS
        for phase in self.phases:
            flows = _flows(phase, budget)
            budget -= len(flows)
            phases.append(flows)
        steps = _sequence(
            "steps", self.steps, len(phases), lambda s: checks.integer("steps", s, 0, MAX_STEPS)
        )
        if len(steps) != len(phases):
            raise checks.fail("steps", f"one count per phase ({len(phases)})", self.steps)
        object.__setattr__(self, "phases", tuple(phases))
        object.__setattr__(self, "steps", steps)
