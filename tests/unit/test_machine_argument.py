"""One name and one place for the machine a communication is priced on (issue 24).

The rule is :mod:`scaleout.machine`'s docstring: a public function or method that prices
communication on a machine takes it as ``machine=``, a keyword-only argument, last (before
``**kwargs`` only). This test walks every public function and method of every module of
``scaleout`` (the demos and viz included) and checks

(a) that no parameter is named ``topo``, ``net`` or ``network`` (the old names), but for
    :data:`OLD_NAME_EXEMPT`;
(b) that a parameter named ``machine`` is keyword-only and the last one, but for
    :data:`SUBJECT_FIRST`, the functions whose subject is the machine itself.

Records (dataclasses) are not walked: their fields are what they store (``Tuning.topo``,
``Correction.topology``), not an argument a price is computed on.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import scaleout

OLD_NAMES = ("topo", "net", "network")

#: Public callables that keep an old name, with the reason.
OLD_NAME_EXEMPT = {
    # NCCL-internal mirrors: each takes the system first, as the C function it replays
    # (ncclTopoCompute, ncclTopoSearchInit, ncclTopoTuneModel, ...) takes ``ncclTopoSystem*``
    # or ``ncclComm*``; they are the engine under scaleout.nccl.model, whose public
    # functions take machine=.
    "scaleout.nccl.search.speeds": "NCCL mirror (search.cc's speed arrays)",
    "scaleout.nccl.search.max_bw": "NCCL mirror (ncclTopoSearchInit's maxBw)",
    "scaleout.nccl.search.total_bw": "NCCL mirror (ncclTopoSearchInit's totalBw)",
    "scaleout.nccl.search.capacity": "NCCL mirror (search.cc's path capacities)",
    "scaleout.nccl.search.compute": "NCCL mirror (ncclTopoCompute(system, graph))",
    "scaleout.nccl.tuning.build_comm": "NCCL mirror (the communicator of a system)",
    "scaleout.nccl.tuning.pat_enabled": "NCCL mirror (ncclPatEnable(comm))",
    "scaleout.nccl.tuning.tune_model": "NCCL mirror (ncclTopoTuneModel(comm, ...))",
}

#: Public callables whose subject is the machine itself (they convert or describe it, or
#: build another record from it): they take it first, positionally, as ``machine``.
SUBJECT_FIRST = {
    "scaleout.machine.as_topology": "converter: the machine as an nccl.Topology",
    "scaleout.machine.as_machine": "converter: the machine as a Machine",
    "scaleout.congestion.collective.as_topology": "converter: the machine as an nccl.Topology",
    "scaleout.congestion.collective.cluster_of": "converter: the machine as chapter 11's Cluster",
    "scaleout.calibrate.judge.machine_topology": "converter: the topology a log ran on",
    "scaleout.moe.cost.nccl_network": "converter: the machine as a moe Network",
    "scaleout.moe.cost.as_network": "converter: the machine as a moe Network",
    "scaleout.moe.deepep.rdma_only": "converter: a moe Network with every GPU its own node",
}


def _modules():
    for info in pkgutil.walk_packages(scaleout.__path__, "scaleout."):
        yield info.name, importlib.import_module(info.name)


def _is_record(cls) -> bool:
    return "__dataclass_fields__" in vars(cls)


def public_callables() -> dict[str, object]:
    """``{qualified name: function}`` for every public function and method defined in a
    module of ``scaleout`` (the demos and viz included; records' constructors left out)."""
    found = {}
    for modname, module in _modules():
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != modname:
                continue
            if inspect.isfunction(obj):
                found[f"{modname}.{name}"] = obj
            elif inspect.isclass(obj):
                for attr, value in vars(obj).items():
                    if attr.startswith("_"):
                        continue
                    if isinstance(value, (staticmethod, classmethod)):
                        value = value.__func__
                    if isinstance(value, property):
                        continue
                    if inspect.isfunction(value):
                        found[f"{modname}.{name}.{attr}"] = value
                if not _is_record(obj) and "__init__" in vars(obj):
                    found[f"{modname}.{name}"] = obj.__init__
    return found


def _parameters(fn):
    ps = list(inspect.signature(fn).parameters.values())
    return [p for p in ps if p.kind is not p.VAR_KEYWORD]


def old_names() -> list[str]:
    bad = []
    for qual, fn in public_callables().items():
        if qual in OLD_NAME_EXEMPT:
            continue
        names = [p.name for p in _parameters(fn) if p.name in OLD_NAMES]
        if names:
            bad.append(f"{qual}({', '.join(names)})")
    return bad


def misplaced_machines() -> list[str]:
    bad = []
    for qual, fn in public_callables().items():
        if qual in SUBJECT_FIRST:
            continue
        ps = _parameters(fn)
        for i, p in enumerate(ps):
            if p.name != "machine":
                continue
            if p.kind is not p.KEYWORD_ONLY or i != len(ps) - 1:
                bad.append(f"{qual}: {p.kind.name.lower()}, {i + 1} of {len(ps)}")
    return bad


def test_the_walk_finds_the_pricing_functions():
    found = public_callables()
    for name in ("scaleout.nccl.model.predict", "scaleout.moe.cost.alltoall_seconds",
                 "scaleout.viz.nccl.busbw_figure", "scaleout.calibrate.correct.Correction.seconds",
                 "scaleout.context_parallel.costs.attention_seconds"):  # fmt: skip
        assert name in found, name


def test_no_public_callable_names_the_machine_topo_net_or_network():
    assert old_names() == []


def test_machine_is_keyword_only_and_last():
    assert misplaced_machines() == []


def test_the_exemptions_exist_and_are_needed():
    found = public_callables()
    for qual in OLD_NAME_EXEMPT:
        assert qual in found, f"stale exemption {qual}"
        assert any(p.name in OLD_NAMES for p in _parameters(found[qual])), qual
    for qual in SUBJECT_FIRST:
        assert qual in found, f"stale exemption {qual}"
        first = _parameters(found[qual])[0]
        assert first.name == "machine" and first.kind is first.POSITIONAL_OR_KEYWORD, qual


def test_a_machine_its_topology_and_its_preset_name_price_the_same():
    import numpy as np

    from scaleout import context_parallel, moe, nccl
    from scaleout.data_parallel import dp_network
    from scaleout.machine import preset

    one = preset("dgx-h100")
    forms = (one, one.topology, "dgx-h100")
    for f in (
        lambda m: nccl.predict("allreduce", 2.0**30, machine=m).seconds,
        lambda m: nccl.collective_seconds("allgather", 1e8, 8, 2, machine=m),
        lambda m: nccl.p2p.sendrecv_us(1e6, True, machine=m),
        lambda m: context_parallel.transfer_seconds("alltoall", 1e8, 8, machine=m),
        lambda m: moe.alltoall_seconds(np.full((16, 16), 1e6), machine=m).seconds,
        lambda m: dp_network(16, 8, machine=m).ranks,
    ):
        values = [f(m) for m in forms]
        assert values[0] == values[1] == values[2]
