"""The one rank layout: which GPU holds which tensor-, context-, expert-, data- and
pipeline-parallel coordinate.

Megatron-Core's ``RankGenerator`` (``megatron/core/parallel_state.py``,
``generate_masked_orthogonal_rank_groups``, core_r0.9.0 and later): the axes of ``order``
(default ``"tp-cp-ep-dp-pp"``) are the digits of a mixed-radix rank, the first axis varying
fastest, so ``rank = tp + T (cp + C (dp + D pp))`` for the default order (T, C, D the sizes).
A group of an axis is every rank that agrees on all the other coordinates; the groups are
listed with the other coordinates counted first-axis-fastest, and the ranks inside a group
in increasing coordinate of the axis. Megatron's docstring example (16 GPUs, t = 2, p = 4,
so d = 2): TP groups [0, 1], [2, 3], ...; DP groups [0, 2], [1, 3], [4, 6], ...; PP groups
[0, 4, 8, 12], [1, 5, 9, 13], ...

**Expert parallelism (the EP rule).** Megatron builds two generators on the same GPUs
(``initialize_model_parallel``): the dense one with ``ep=1`` (attention and dense layers:
axes tp, cp, dp, pp), and the expert one with ``cp=1`` and ``dp = world / (etp ep pp)``
("MoE parallel folding"). Here the expert tensor-parallel size is the dense ``tp``
(Megatron's default ``expert_tensor_parallel_size = tp``), so ``ep`` is folded out of the
dense ``cp dp`` ranks: ``ep`` must divide ``cp * dp``, the world is ``tp cp dp pp`` (ep does
not multiply it), and the expert mesh has axes tp, ep, edp, pp with ``edp = cp dp / ep``
placed where ``order`` puts ep and dp (cp dropped). ``groups("ep")`` and ``groups("edp")``
come from the expert mesh; the other axes from the dense one. Both meshes must have the same
PP groups (Megatron asserts this) and, as the expert TP size is tp here, the same TP groups:
an ``order`` that breaks this raises (e.g. ``tp-cp-ep-pp-dp`` with cp = 2 and pp = 2:
Megatron allows pp before dp only when the expert and dense data-parallel sizes agree).

Limits: at most :data:`MAX_RANKS` ranks; each axis at most that size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import checks

AXES = ("tp", "cp", "ep", "dp", "pp")
#: The axes :meth:`Mesh.groups` knows: the five of ``order`` and the expert data-parallel one.
GROUP_AXES = (*AXES, "edp")
DEFAULT_ORDER = "tp-cp-ep-dp-pp"
#: Most ranks a mesh may have (and the largest size of one axis).
MAX_RANKS = 65536


def _mixed_radix_groups(sizes: dict, order: list, axis: str) -> list[list[int]]:
    """Every group of ``axis`` in the mixed-radix layout ``order`` (first fastest), as
    ``generate_masked_orthogonal_rank_groups`` lists them."""
    stride, s = {}, 1
    for name in order:
        stride[name] = s
        s *= sizes[name]
    world = np.arange(s).reshape([sizes[n] for n in reversed(order)])  # C order: last fastest
    # axes of `world` are reversed(order); move `axis` last, the others in order-fast-first
    rev = list(reversed(order))
    others = [n for n in order if n != axis]
    perm = [rev.index(n) for n in reversed(others)] + [rev.index(axis)]
    table = np.transpose(world, perm).reshape(-1, sizes[axis])
    return table.tolist()


@dataclass(frozen=True)
class Mesh:
    """The ranks of ``tp * cp * dp * pp`` GPUs laid out as Megatron-Core does (module
    docstring); ``ep`` is folded out of ``cp * dp`` for the expert layers."""

    tp: int = 1
    cp: int = 1
    ep: int = 1
    dp: int = 1
    pp: int = 1
    order: str = DEFAULT_ORDER

    def __post_init__(self):
        for axis in AXES:
            checks.integer(axis, getattr(self, axis), 1, MAX_RANKS)
        if not isinstance(self.order, str) or sorted(self.order.split("-")) != sorted(AXES):
            raise checks.fail("order", f"the five axes {AXES} joined by '-' in any order",
                              self.order)  # fmt: skip
        if self.size > MAX_RANKS:
            raise checks.fail("tp * cp * dp * pp", f"at most {MAX_RANKS} ranks", self.size)
        if (self.cp * self.dp) % self.ep:
            raise checks.fail("ep", f"a divisor of cp * dp = {self.cp * self.dp}", self.ep)
        if self.ep > 1 or self.cp > 1:
            for axis in ("tp", "pp"):
                sizes, order = self._layout("ep")
                if _mixed_radix_groups(sizes, order, axis) != self.groups(axis):
                    raise checks.fail("order", f"an order whose expert mesh keeps the {axis} "
                                      "groups (Megatron asserts it; e.g. one ending in pp)",
                                      self.order)  # fmt: skip

    @property
    def axes(self) -> tuple[str, ...]:
        """The axes of ``order``, fastest first."""
        return tuple(self.order.split("-"))

    @property
    def size(self) -> int:
        """The number of ranks, one GPU each, tp x cp x dp x pp."""
        return self.tp * self.cp * self.dp * self.pp

    @property
    def edp(self) -> int:
        """Expert data-parallel size, cp dp / ep."""
        return self.cp * self.dp // self.ep

    def _layout(self, axis: str) -> tuple[dict, list]:
        if axis in ("ep", "edp"):
            sizes = {"tp": self.tp, "ep": self.ep, "edp": self.edp, "pp": self.pp}
            order = [{"dp": "edp"}.get(n, n) for n in self.axes if n != "cp"]
        else:
            sizes = {"tp": self.tp, "cp": self.cp, "dp": self.dp, "pp": self.pp}
            order = [n for n in self.axes if n != "ep"]
        return sizes, order

    def groups(self, axis: str) -> list[list[int]]:
        """Every group of ``axis`` (one of :data:`GROUP_AXES`), each a list of ranks in
        increasing coordinate of the axis, in Megatron's order of groups."""
        axis = checks.choice("axis", axis, GROUP_AXES)
        sizes, order = self._layout(axis)
        return _mixed_radix_groups(sizes, order, axis)

    def coords(self, rank: int) -> dict[str, int]:
        """The coordinates of ``rank`` on every axis of :data:`GROUP_AXES`."""
        rank = checks.integer("rank", rank, 0, self.size - 1)
        out = {}
        for expert in (True, False):  # the dense coordinates last: tp and pp agree anyway
            sizes, order = self._layout("ep" if expert else "tp")
            r = rank
            for name in order:
                r, out[name] = divmod(r, sizes[name])
        return {axis: out[axis] for axis in GROUP_AXES}

    def rank(self, **coords) -> int:
        """The rank at the dense coordinates ``tp``, ``cp``, ``dp``, ``pp`` (missing: 0)."""
        unknown = set(coords) - {"tp", "cp", "dp", "pp"}
        if unknown:
            raise checks.fail("coords", "keywords among tp, cp, dp, pp", sorted(unknown))
        sizes, order = self._layout("tp")
        rank, stride = 0, 1
        for name in order:
            rank += checks.integer(name, coords.get(name, 0), 0, sizes[name] - 1) * stride
            stride *= sizes[name]
        return rank

    def group_shape(self, axis: str, gpus_per_server: int) -> tuple[int, int]:
        """(GPUs per server, servers) of a group of ``axis`` when servers hold
        ``gpus_per_server`` consecutive ranks: the group that spans the most servers (the
        first such), and the most of its GPUs that share one server."""
        g = checks.integer("gpus_per_server", gpus_per_server, 1, MAX_RANKS)
        table = np.asarray(self.groups(axis)) // g  # server of each member
        best = (0, 0)
        for row in table:
            _, counts = np.unique(row, return_counts=True)
            if counts.size > best[1]:
                best = (int(counts.max()), int(counts.size))
        return best
