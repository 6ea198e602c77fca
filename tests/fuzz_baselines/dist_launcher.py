from fuzz import call

from scaleout.dist import DistributedTimeout


def _rank(rank, world_size, *args, **kwargs):
    return rank


BASELINES = {"run": call(_rank, 1, timeout=30.0, show_output=False)}
DOCUMENTED_ERRORS = {"run": (DistributedTimeout,)}  # a legal but short timeout expires
