"""A training step, simulated: every rank's operations on its streams, from the book's models.

Taught in chapter 16, "A training step, simulated" (``chapters/16_simulator.ipynb``).

* :mod:`scaleout.sim.engine` - streams that run their operations in order; an operation
  starts when its stream is free and its inputs are ready; a collective when its last
  member arrives.
* ``step`` - :func:`simulate`: one configuration of the planner (model, cluster, global
  batch, plan) as operations, priced with the planner's parts.
* ``trace`` - :class:`StepTrace`: step time, breakdown, memory, events, critical path,
  Chrome trace.
* ``stragglers`` - slow GPUs: {rank: factor} or :class:`Lognormal` jitter per step.
* :mod:`scaleout.sim.experts` - :class:`MoE`: expert parallelism's all-to-alls on an ``ep``
  stream, DualPipe-V's overlapped pairs.
* :mod:`scaleout.sim.context` - :class:`CP`: ring attention's KV passes on a ``cp`` stream.
* :mod:`scaleout.sim.tensor` - ``tp_ops="op"``: each layer's GEMMs and tensor-parallel
  collectives as operations on the compute and ``tp`` streams, overlap from dependencies.
* :mod:`scaleout.sim.replay` - the engine fed with a real run's measured durations.
* :mod:`scaleout.sim.validation` - the simulator beside the planner and the published runs.
"""

from .context import CP
from .experts import MoE
from .step import MAX_STEPS, W_SHARE, simulate
from .stragglers import Lognormal
from .trace import BREAKDOWN, STREAMS, Event, StepTrace

__all__ = [
    "BREAKDOWN", "CP", "MAX_STEPS", "STREAMS", "W_SHARE", "Event", "Lognormal", "MoE",
    "StepTrace", "simulate",
]  # fmt: skip
