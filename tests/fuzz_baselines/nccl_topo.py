from fuzz import call

BASELINES = {
    "Topology": call("t", 8, 2, "H100", 18, 5, 8, 400.0, True, False, "intel", 1, "src"),
    "topology": call("dgx-a100", nodes=3, nics_per_node=4, nic_gbps=200),
}
BASELINES["check_topology"] = call("topo", __import__("scaleout").nccl.topology("pcie"))
