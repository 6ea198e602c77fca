from fuzz import call

from scaleout import deepspeed_zero3 as DS
from scaleout import nccl

_CALLS = DS.calls(DS.gpt_parameters(2, 256, 128, 1000))
_TOPO = nccl.topology("dgx-a100", nodes=2)

BASELINES = {
    "gpt_parameters": call(2, 256, 128, 1000),
    "Calls": call(_CALLS.allgather, _CALLS.reducescatter, _CALLS.per_step),
    "calls": call(
        DS.gpt_parameters(2, 256, 128, 1000),
        persistence_threshold=1000,
        contiguous_gradients=False,
        reduce_bucket_size=10**5,
    ),
    "seconds": call(_CALLS, machine=_TOPO),
    "whole_model_seconds": call(_CALLS, machine=_TOPO),
}
