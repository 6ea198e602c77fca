"""DeepSpeed's ZeRO-3 collectives call by call, as the release of Narayanan et al.'s runs
issued them, each priced with NCCL's model.

Taught in chapter 6, "ZeRO sharding" (``chapters/06_zero.ipynb``); used by
:mod:`scaleout.zero_published`. Units: elements, bytes, seconds.

The release: Narayanan et al. (SC21, arXiv 2104.04473, section 5.2) ran ZeRO-3 through
"the DeepSpeed Python library" without naming a release. ZeRO-3 first shipped in DeepSpeed
v0.3.12 (2021-03-12); the paper's first version appeared on 2021-04-09. The module pins
v0.3.13 (2021-03-16, commit 12a53b43833b7bea279a205e313f2bd3f0cdfd99). Every release from
v0.3.12 to v0.4.0 (2021-06-08) has the same defaults and the same one-call-per-parameter
structure (the lines quoted below move, the calls do not), so the choice among them does
not change the count. File:line references are to v0.3.13:

* ``deepspeed/runtime/zero/constants.py``: ``reduce_bucket_size`` 500,000,000 elements
  (line 62), ``allgather_bucket_size`` 500,000,000 (line 65; read by stages 1 and 2 only),
  ``stage3_prefetch_bucket_size`` 50,000,000 (line 94), ``stage3_param_persistence_threshold``
  100,000 (line 100).
* ``stage3.py`` ``persistent_parameters`` (line 1052): a parameter of fewer elements than the
  persistence threshold stays gathered; all of them are gathered again in one call after each
  optimizer step (``_post_step``, line 2344).
* ``stage3.py`` ``fetch_sub_module`` (lines 357-411): before a module's forward or backward
  its own parameters (``named_parameters(recurse=False)``) are gathered, through
  ``partition_parameters.py`` ``_all_gather`` (line 473), which issues one
  ``torch.distributed.all_gather`` per parameter (``_allgather_param``, line 629), each after
  a ``torch.cuda.synchronize()`` (line 611). Prefetching (``prefetch_next_sub_modules``, line
  319) gathers the next modules' parameters up to ``stage3_prefetch_bucket_size`` elements, one
  call per parameter, and only while nothing is in flight: it moves calls earlier, it does not
  merge them.
* ``stage3.py`` ``reduce_independent_p_g_buckets_and_remove_grads`` (line 1433): gradients
  collect in a bucket of ``reduce_bucket_size`` elements; a full bucket is reduced
  (``reduce_ipg_grads``, line 1689). With ``contiguous_gradients`` on, as DeepSpeed's own
  ZeRO-3 configurations for Megatron-LM set it (DeepSpeedExamples,
  ``Megatron-LM-v1.1.5-ZeRO3/examples/ds_zero_stage_3_config.json`` at commit 44be774), by
  ``partition_parameters.py`` ``_reduce_scatter_gradients`` (line 702): one
  ``torch.distributed.reduce_scatter`` per parameter (line 766); the bucket decides when the
  calls are issued, not how many there are. With the release's default (off, constants.py
  line 59) by ``buffered_reduce_fallback`` (line 1846): one all-reduce of the whole
  flattened bucket, twice the bytes of a reduce-scatter (``contiguous_gradients=False``
  here). Narayanan et al. do not give their configuration.

The parameters are Megatron-LM's GPT (the model Narayanan et al. trained): word and position
embeddings, per layer two layer norms (weight and bias), the fused QKV projection, the
attention output projection and the two MLP matrices (each with a bias), and a final layer
norm: V h + s h + L (12 h^2 + 13 h) + 2 h elements (2 h more than
:class:`scaleout.memory.Transformer` counts: it leaves out the final layer norm). Every
tensor is fp16 (2 bytes an element), parameters and gradients alike (DeepSpeed's fp16 mode
of the time).

What one micro-batch costs here: each parameter at or above the persistence threshold is
gathered once before the forward and once before the backward (the ZeRO paper's 2 psi;
recomputation may gather some again, which this does not price), and every parameter's
gradient is reduce-scattered once (or all-reduced in buckets, without
``contiguous_gradients``). Per step, one more all-gather of the persistent
parameters. Each call is priced by :func:`scaleout.nccl.model.predict` at its own size on the
run's machine, so each pays NCCL's latency, which for a ring of N ranks grows with N.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import checks, data, nccl

#: The DeepSpeed release pinned (see the module docstring) and its commit.
RELEASE = "v0.3.13"
RELEASE_COMMIT = "12a53b43833b7bea279a205e313f2bd3f0cdfd99"


def _defaults(release: str) -> dict:
    """The defaults ``data/deepspeed.csv`` holds for ``release``, by setting name."""
    return {v.get("name"): v.value for v in data.load("deepspeed") if v.get("release") == release}


#: v0.3.13 ``deepspeed/runtime/zero/constants.py`` defaults, in elements (lines 62, 65, 94,
#: 100), rows of ``data/deepspeed.csv``.
_V0313 = _defaults(RELEASE)
REDUCE_BUCKET_SIZE = _V0313["reduce_bucket_size"]
ALLGATHER_BUCKET_SIZE = _V0313["allgather_bucket_size"]
PREFETCH_BUCKET_SIZE = _V0313["stage3_prefetch_bucket_size"]
PARAM_PERSISTENCE_THRESHOLD = _V0313["stage3_param_persistence_threshold"]
#: The ZeRO-3 defaults of current DeepSpeed (``deepspeed/runtime/zero/config.py``, commit
#: 38327e0), in elements, by setting name: ``stage3_prefetch_bucket_size``,
#: ``stage3_param_persistence_threshold``, ``stage3_max_live_parameters`` and
#: ``stage3_max_reuse_distance`` (rows of ``data/deepspeed.csv``); chapter 6 quotes them.
ZERO3_CONFIG_DEFAULTS = _defaults("config.py")
#: Bytes per element (fp16 parameters and gradients).
ELEMENT_BYTES = 2
#: Most layers a call list is built for (the book's largest model has 126).
MAX_LAYERS = 1024
#: Largest hidden size, sequence and vocabulary accepted.
MAX_HIDDEN, MAX_SEQ, MAX_VOCAB = 2**17, 2**20, 2**22


def gpt_parameters(layers, hidden, seq, vocab) -> np.ndarray:
    """Elements of each parameter tensor of Megatron-LM's GPT, in the order the forward
    uses them (embeddings; per layer: layer norm, QKV, output projection, layer norm, MLP
    up, MLP down, each weight then bias; final layer norm). Length 2 + 12 L + 2."""
    n = checks.integer("layers", layers, 1, MAX_LAYERS)
    h = checks.integer("hidden", hidden, 1, MAX_HIDDEN)
    s = checks.integer("seq", seq, 1, MAX_SEQ)
    v = checks.integer("vocab", vocab, 1, MAX_VOCAB)
    layer = [h, h, 3 * h * h, 3 * h, h * h, h, h, h, 4 * h * h, 4 * h, 4 * h * h, h]
    return np.array([v * h, s * h, *(layer * n), h, h], dtype=np.int64)


@dataclass(frozen=True)
class Calls:
    """The collectives of one micro-batch: the element counts of its ``allgather`` calls
    (forward, then backward), of its ``reducescatter`` calls and of its ``allreduce`` calls
    (gradient buckets, without ``contiguous_gradients``), and the ``per_step`` all-gather of
    the persistent parameters (elements; 0 if none persist)."""

    allgather: np.ndarray
    reducescatter: np.ndarray
    per_step: int
    allreduce: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __post_init__(self):
        for key in ("allgather", "reducescatter", "allreduce"):
            value = getattr(self, key)
            if isinstance(value, list | tuple) and not value:
                value = np.zeros(0, dtype=np.int64)  # no calls of this kind
            sizes = checks.array(key, value, ndim=1, low=1, high=2**40,
                                 integer=True, empty=True,
                                 max_size=2 * (12 * MAX_LAYERS + 8))  # fmt: skip
            object.__setattr__(self, key, sizes)
        object.__setattr__(self, "per_step", checks.integer("per_step", self.per_step, 0, 2**50))

    @property
    def count(self) -> int:
        """Calls per micro-batch (the per-step gather not counted)."""
        return int(self.allgather.size + self.reducescatter.size + self.allreduce.size)


def calls(
    params,
    persistence_threshold=PARAM_PERSISTENCE_THRESHOLD,
    contiguous_gradients=True,
    reduce_bucket_size=REDUCE_BUCKET_SIZE,
) -> Calls:
    """The per-parameter calls DeepSpeed v0.3.13's ZeRO-3 issues for one micro-batch of a
    model whose parameter tensors have ``params`` elements (in forward order): a gather of
    every tensor of at least ``persistence_threshold`` elements before the forward and again
    (in reverse order) before the backward; then the gradients, in backward order: with
    ``contiguous_gradients`` a reduce-scatter of every tensor's gradient, without it one
    all-reduce per bucket of at most ``reduce_bucket_size`` elements (a bucket is flushed
    when the next gradient would overflow it, stage3.py line 1433; a larger gradient is a
    bucket of its own)."""
    p = checks.array("params", params, ndim=1, low=1, high=2**40, integer=True,
                     max_size=12 * MAX_LAYERS + 8)  # fmt: skip
    limit = checks.integer("persistence_threshold", persistence_threshold, 0, 2**40)
    contiguous = checks.boolean("contiguous_gradients", contiguous_gradients)
    cap = checks.integer("reduce_bucket_size", reduce_bucket_size, 1, 2**40)
    gathered = p[p >= limit]
    backward = p[::-1].copy()
    buckets, filled = [], 0
    if not contiguous:
        for n in backward:
            if filled and filled + n > cap:
                buckets.append(filled)
                filled = 0
            filled += int(n)
        buckets.append(filled)
    return Calls(
        allgather=np.concatenate([gathered, gathered[::-1]]),
        reducescatter=backward if contiguous else np.zeros(0, dtype=np.int64),
        per_step=int(p[p < limit].sum()),
        allreduce=np.array(buckets, dtype=np.int64),
    )


def seconds(call_list: Calls, *, machine) -> float:
    """NCCL's model's time for every call of ``call_list`` on ``machine`` (a topology, a
    :class:`scaleout.machine.Machine` or a preset name), each priced at its own size: the
    sum, in seconds, the per-step gather included."""
    checks.instance("call_list", call_list, Calls)
    total = 0.0
    for coll, sizes in (("allgather", call_list.allgather),
                        ("reducescatter", call_list.reducescatter),
                        ("allreduce", call_list.allreduce)):  # fmt: skip
        if sizes.size:
            total += float(
                np.sum(nccl.predict(coll, sizes * ELEMENT_BYTES, machine=machine).seconds)
            )
    if call_list.per_step:
        total += float(nccl.predict("allgather", call_list.per_step * ELEMENT_BYTES,
                                    machine=machine).seconds)  # fmt: skip
    return checks.finite_result("seconds", total)


def whole_model_seconds(call_list: Calls, *, machine) -> float:
    """Three whole-model calls, two all-gathers and one reduce-scatter of every parameter
    (the ZeRO paper's 3 psi) on ``machine`` (as in :func:`seconds`), the pricing without
    per-call latency."""
    checks.instance("call_list", call_list, Calls)
    total = int(call_list.reducescatter.sum() + call_list.allreduce.sum()) * ELEMENT_BYTES
    return checks.finite_result("seconds", float(
        2 * nccl.predict("allgather", total, machine=machine).seconds
        + nccl.predict("reducescatter", total, machine=machine).seconds))  # fmt: skip
