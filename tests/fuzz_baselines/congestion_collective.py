from fuzz import call

from scaleout import nccl
from scaleout.congestion import Fabric

MACHINE = nccl.topology("dgx-h100", nodes=4)

BASELINES = {
    "Fabric": call("top-of-rack", 2, 1.0),
    "as_topology": call("dgx-h100"),
    "cluster_of": call(MACHINE, Fabric("top-of-rack", 2)),
    "spines_of": call(__import__("scaleout.congestion", fromlist=["x"]).cluster_of(MACHINE)),
    "collective_under_ecmp": call(
        1e8,
        collective="allreduce",
        qps_per_connection=2,
        routing="ecmp",
        seeds=3,
        fabric=Fabric("top-of-rack", 2),
        flowlets=2,
        machine=MACHINE,
    ),
}
SKIP = {
    "CollectiveResult": "a result record built by collective_under_ecmp, not an input",
}
