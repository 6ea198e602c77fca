"""Model states and ZeRO sharding: bytes per parameter for each optimizer and precision
(ZeRO Sec. 3.1; Megatron's accountings), per-rank model states at each stage (ZeRO Sec. 5),
per-device bytes and ZeRO-3's peak with prefetch.

Taught in chapter 6, "ZeRO sharding" (``chapters/06_zero.ipynb``); sources and units in
:mod:`scaleout.memory`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .. import checks
from .limits import (
    _QUIET,
    KINDS,
    MAX_LAYERS,
    OPTIMIZERS,
    PRECISIONS,
    SHARDED_FROM,
    _counts,
    _out,
    _reals,
    _stage,
)


@dataclass(frozen=True)
class State:
    """One kind of tensor kept per parameter: its name, kind (a member of ``KINDS``) and
    bytes per parameter."""

    name: str
    kind: str
    bytes_per_param: float

    def __post_init__(self):
        checks.text("name", self.name)
        checks.choice("kind", self.kind, KINDS)
        checks.nonnegative("bytes_per_param", self.bytes_per_param)


def states_per_param(optimizer: str = "adam", precision: str = "mixed", k=None):
    """The tensors kept for every parameter, as a tuple of :class:`State`.

    Four accountings (``precision``), each state classified by the ZeRO stage that shards it
    (``kind``: parameters from stage 3, gradients from 2, optimizer states from 1):

    * ``"mixed"``, the ZeRO paper's (section 3.1): fp16/bf16 parameters and gradients
      (2 bytes each) and an fp32 master copy (4 bytes) for the optimizer, plus fp32 momentum
      (Adam and SGD with momentum) and variance (Adam): K = 12, 8, 4 bytes for adam,
      sgd_momentum, sgd; 16 bytes per parameter with Adam.
    * ``"megatron-bf16"``, Megatron-LM's bf16 training: bf16 parameters (2) and an fp32
      gradient buffer (4; ``main_grad``, it replaces the bf16 gradient), then the fp32 master
      copy and the moments as above: 18 bytes per parameter with Adam; the distributed
      optimizer (= ZeRO-1) shards master and moments: 6 + 12/d.
    * ``"megatron-fp16"``, Megatron-LM's fp16 training: fp16 parameters and gradients (2 + 2)
      and, inside the optimizer, an fp32 copy of the gradient (4) beside the fp32 master
      copy and the moments: 20 bytes per parameter with Adam, 4 + 16/d distributed.
    * ``"fp32"``: 4-byte parameters and gradients, no master copy: K = 8, 4, 0 (Megatron's
      third row: 16 bytes with Adam, 8 + 8/d distributed).

    ``k`` (bytes >= 0) replaces the optimizer states by one entry of k bytes, the paper's K.
    """
    checks.choice("optimizer", optimizer, OPTIMIZERS)
    checks.choice("precision", precision, PRECISIONS)
    optim = [State("fp32 master parameters", "optimizer states", 4)]
    if precision == "mixed":
        states = [
            State("fp16 parameters", "parameters", 2),
            State("fp16 gradients", "gradients", 2),
        ]
    elif precision == "megatron-bf16":
        states = [
            State("bf16 parameters", "parameters", 2),
            State("fp32 gradient buffer (main_grad)", "gradients", 4),
        ]
    elif precision == "megatron-fp16":
        states = [
            State("fp16 parameters", "parameters", 2),
            State("fp16 gradients", "gradients", 2),
        ]
        optim.insert(0, State("fp32 gradient copy (optimizer)", "optimizer states", 4))
    else:
        states = [
            State("fp32 parameters", "parameters", 4),
            State("fp32 gradients", "gradients", 4),
        ]
        optim = []
    if optimizer in ("adam", "sgd_momentum"):
        optim.append(State("fp32 momentum", "optimizer states", 4))
    if optimizer == "adam":
        optim.append(State("fp32 variance", "optimizer states", 4))
    if k is not None:
        k = checks.nonnegative("k", k, high=1e6)
        optim = [State(f"optimizer states (K = {k:g})", "optimizer states", k)]
    return tuple(states + optim)


def bytes_per_param(optimizer: str = "adam", precision: str = "mixed", k=None) -> float:
    """Model-state bytes per parameter without sharding, the sum of :func:`states_per_param`:
    16 for Adam in the ZeRO paper's accounting, 18 and 20 for Megatron's bf16 and fp16."""
    return float(sum(s.bytes_per_param for s in states_per_param(optimizer, precision, k)))


@dataclass(frozen=True)
class ModelStates:
    """Bytes of model states held by one device. ``breakdown`` maps each state's name to its
    bytes per device; ``parameters``, ``gradients`` and ``optimizer_states`` add them up by
    kind. Arrays when the inputs were arrays."""

    params: object
    stage: int
    dp: object
    breakdown: dict
    parameters: object
    gradients: object
    optimizer_states: object

    def __post_init__(self):
        _reals("params", self.params)
        _stage(self.stage)
        checks.array("dp", self.dp, low=1.0)
        if not isinstance(self.breakdown, Mapping):
            raise checks.fail("breakdown", "a mapping of state name -> bytes", self.breakdown)
        for name, b in self.breakdown.items():
            checks.text("breakdown key", name)
            checks.array(f"breakdown[{name!r}]", b, low=0.0)
        for kind in ("parameters", "gradients", "optimizer_states"):
            checks.array(kind, getattr(self, kind), low=0.0)

    @property
    def total(self):
        """All model-state bytes on one device."""
        return _out("total", np.asarray(self.parameters) + self.gradients + self.optimizer_states)


def _split(optimizer, k, precision):
    """{kind: bytes per parameter} of :func:`states_per_param`."""
    by_kind = dict.fromkeys(KINDS, 0.0)
    for s in states_per_param(optimizer, precision, k):
        by_kind[s.kind] += s.bytes_per_param
    return by_kind


@_QUIET
def model_state_bytes(params, stage: int, dp=1, optimizer="adam", k=None, precision="mixed"):
    """Model-state bytes per device for ZeRO ``stage`` (0 = plain DP) over ``dp`` ranks.

    ZeRO section 5 (Table 1, Figure 1), with K from :func:`states_per_param`:
    stage 0: (2 + 2 + K) psi; stage 1: 4 psi + K psi / N_d; stage 2: 2 psi + (2 + K) psi / N_d;
    stage 3: (2 + 2 + K) psi / N_d. With ``precision="megatron-bf16"`` stage 1 is Megatron's
    distributed optimizer, 6 psi + 12 psi / d. Vectorised over ``params`` and ``dp``.
    """
    psi, n = _reals("params", params), _counts("dp", dp)
    stage = _stage(stage)
    breakdown, by_kind = {}, dict.fromkeys(KINDS, 0.0)
    for s in states_per_param(optimizer, precision, k):
        sharded = stage >= SHARDED_FROM[s.kind]
        b = s.bytes_per_param * psi / (n if sharded else 1.0) + 0.0 * n
        breakdown[s.name] = _out(s.name, b)
        by_kind[s.kind] = by_kind[s.kind] + b
    return ModelStates(
        _out("params", psi), stage, _out("dp", n), breakdown,
        *(_out(kind, by_kind[kind]) for kind in KINDS),
    )  # fmt: skip


@_QUIET
def device_bytes(params, stage, dp=1, activation_bytes=0.0, optimizer="adam", k=None,
                 precision="mixed"):  # fmt: skip
    """Memory per device: the model states of :func:`model_state_bytes` plus
    ``activation_bytes`` (ZeRO-DP does not shard activations). Vectorised like it."""
    act = checks.array("activation_bytes", activation_bytes, low=0.0)
    states = model_state_bytes(params, stage, dp, optimizer, k, precision).total
    return _out("device bytes", states + act)


@_QUIET
def zero3_peak_bytes(params, layers, dp, prefetch=1, optimizer="adam", k=None,
                     precision="mixed"):  # fmt: skip
    """Peak model-state bytes per device under ZeRO-3 with ``layers`` equal layers: the
    sharded states (:func:`model_state_bytes`, stage 3) plus what is materialised in full
    during the backward pass, at least ``1 + prefetch`` gathered layers of parameters (the
    layer computing and the ``prefetch`` layers already being all-gathered; FSDP's default
    prefetches one) and the layer's unreduced gradient, before its reduce-scatter:
    states / N_d + (1 + prefetch) p psi / L + g psi / L, with p and g the parameter and
    gradient bytes of ``precision``. At most all ``layers`` can be gathered at once.
    """
    psi, nl = _reals("params", params), _counts("layers", layers, MAX_LAYERS)
    pre = checks.array("prefetch", prefetch, integer=True, low=0, high=MAX_LAYERS)
    by_kind = _split(optimizer, k, precision)
    states = model_state_bytes(params, 3, dp, optimizer, k, precision).total
    gathered = np.minimum(1.0 + pre, nl)
    layer = psi / nl
    return _out("peak bytes", states + layer * (gathered * by_kind["parameters"]
                                                + by_kind["gradients"]))  # fmt: skip
