from fuzz import call

from scaleout import congestion as C
from scaleout import nccl
from scaleout.congestion import dcqcn as D
from scaleout.congestion import fabrics as F
from scaleout.congestion import pfc as P

_RUN = C.collective_under_ecmp(
    1e8, seeds=3, fabric=C.Fabric("top-of-rack", 2), machine=nccl.topology("dgx-h100", nodes=4)
)

BASELINES = {
    "ecmp_figure": call([1, 2, 4], 4, [1.0, 1.2, 1.6], [1.0, 1.2, 1.6]),
    "busbw_figure": call({"ECMP": _RUN}, 400.0),
    "dcqcn_figure": call(D.dcqcn(2, 40.0, 0.002), "DCQCN"),
    "pfc_animation": call(P.pfc(3, 100.0, 40e-6, incast_start_s=10e-6, incast_stop_s=30e-6), 10),
    "fabric_figure": call({1024: F.compare(1024, 64), 4096: F.compare(4096, 64)}),
}
