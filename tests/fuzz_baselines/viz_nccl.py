from fuzz import call

from scaleout.nccl import published
from scaleout.nccl.shm import PingPong

ROWS = published.rows()[:3]
BASELINES = {
    "protocol_animation": call("LL128", 256),
    "rails_animation": call(8, 4),
    "busbw_figure": call("allreduce", sizes=[8.0, 2.0**20, 2.0**30], machine="dgx-a100"),
    "choice_map": call([1, 2], "allreduce", sizes=[8.0, 2.0**20], machine="dgx-h100"),
    "validation_figure": call(ROWS),
    "validation_table": call(ROWS),
    "gloo_figure": call([1e3, 1e6], [1e-4, 1e-3], 2, 1e-4, 1.0),
    "shm_figure": call(
        [
            PingPong("ll", 4, 10, 1e-6, 0.004, True, 0, 0),
            PingPong("simple", 4, 10, 2e-6, 0.002, True, 0, 0),
        ]
    ),
}
