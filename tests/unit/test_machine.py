"""scaleout.machine: one way to name a machine, the same topologies as before."""

from __future__ import annotations

import pytest

from scaleout import hardware, nccl
from scaleout import machine as M


def test_preset_with_overrides():
    m = M.preset("dgx-a100", servers=4, nics_per_node=4, nic_gbps=200.0)
    assert m.gpus == 32 and m.servers == 4 and m.gpus_per_server == 8
    assert m.topology == nccl.topology("dgx-a100", nodes=4, nics_per_node=4, nic_gbps=200.0)
    assert m.gpu == hardware.gpu("A100-80GB")
    assert M.preset("dgx-h100", gpu="H200").gpu.name == "H200"
    assert m.with_(servers=2).topology.nodes == 2
    assert m.topo(8).nodes == 8 and m.topo() is m.topology


@pytest.mark.parametrize("name", sorted(nccl.PRESETS))
def test_every_preset_has_a_gpu_row(name):
    m = M.preset(name)
    assert m.gpu.name == M.GPU_ROWS[m.topology.gpu]
    assert M.as_topology(name) == nccl.PRESETS[name]
    assert M.as_topology(m) is m.topology
    assert M.as_machine(name).topology == nccl.PRESETS[name]


def test_as_topology_passes_topologies_through():
    topo = nccl.topology("dgx-h100", nodes=3)
    assert M.as_topology(topo) is topo
    assert M.as_machine(topo).servers == 3


@pytest.mark.parametrize(
    ("g", "intra", "gpu", "links", "nvls"),
    [
        (8, "nvlink4-h100", "H100", 18, True),
        (8, "nvlink3-a100", "A100", 12, False),
        (4, "nvlink2-v100", "V100", 6, False),
        (72, "nvlink5-b200", "GB200", 18, True),
    ],
)
def test_from_links(g, intra, gpu, links, nvls):
    m = M.from_links(g, intra, "nic-400g")
    assert m.topology.gpus_per_node == g and m.topology.gpu == gpu
    assert m.topology.nvlink_links == links and m.topology.nvls == nvls
    assert m.topology.nics_per_node == g and m.topology.nic_gbps == 400.0


def test_pcie_server():
    t = M.from_links(4, "pcie4-x16", "nic-200g").topology
    assert t.gpu == nccl.PRESETS["pcie"].gpu and t.nvlink_links == nccl.PRESETS["pcie"].nvlink_links
    assert t.pcie_gen == 4 and t.nic_gbps == 200.0 and t.gpus_per_node == 4


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: M.as_topology("dgx-z100"), "machine must be"),
        (lambda: M.as_topology(3, name="net"), "net must be"),
        (lambda: M.preset("dgx-h100", servers=0), "servers must be"),
        (lambda: M.preset("dgx-h100", gpu="Z9"), "gpu must be"),
        (lambda: M.from_links(8, "nic-400g"), "intra must be"),
        (lambda: M.from_links(8, "nvlink1-p100"), "intra must be"),
        (lambda: M.preset("gb200-nvl72", servers=1000), "servers must be"),
    ],
)
def test_bad_input_raises(call, match):
    with pytest.raises(ValueError, match=match):
        call()
