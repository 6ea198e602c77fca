from fuzz import call

from scaleout import hardware, nccl

BASELINES = {
    "Machine": call(hardware.gpu("H100-SXM"), nccl.topology("dgx-h100"), 2),
    "preset": call("dgx-a100", servers=2, gpu="A100-40GB", nic_gbps=100.0),
    "from_links": call(8, "nvlink3-a100", "nic-200g", servers=2, gpu="A100-80GB"),
    "as_topology": call("dgx-h100", name="net"),
    "as_machine": call("gb200-nvl72", name="net"),
}
