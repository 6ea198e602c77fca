import numpy as np
from fuzz import call

from scaleout import collectives as C

X = np.arange(12.0).reshape(3, 4)  # 3 ranks, 4 elements each
STEPS = C.ring_allreduce_schedule(3, 4)
T0 = C.Transfer(0, 1, 0, 0, 2, True)

BASELINES = {
    "Transfer": call(0, 1, 0, 0, 2, True),
    "Step": call("ring", (T0,)),
    "CollectiveRun": call(X, STEPS),
    "chunk_bounds": call(10, 4),
    "ring_reduce_scatter_schedule": call(3, 4),
    "ring_allgather_schedule": call(3, 4),
    "ring_allreduce_schedule": call(3, 4),
    "recursive_doubling_allreduce_schedule": call(3, 4),
    "rabenseifner_allreduce_schedule": call(3, 4),
    "binomial_broadcast_schedule": call(3, 4, root=1),
    "binomial_reduce_schedule": call(3, 4, root=1),
    "parameter_server_allreduce_schedule": call(3, 4, server=1),
    "replay": call(X, STEPS, trajectory=True),
    "ring_reduce_scatter": call(X),
    "ring_allgather": call(X),
    "ring_allreduce": call(X),
    "recursive_doubling_allreduce": call(X),
    "rabenseifner_allreduce": call(X),
    "binomial_broadcast": call(X, root=1),
    "binomial_reduce": call(X, root=1),
    "parameter_server_allreduce": call(X, server=1),
    "bytes_sent_per_rank": call(STEPS, 3, itemsize=4),
    "reference": call("allreduce", X, root=0),
}
