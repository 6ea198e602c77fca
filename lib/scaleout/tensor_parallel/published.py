"""Tensor x pipeline parallelism on 64 A100s: Narayanan et al. (SC21), Figure 13, and the model.

Figure 13 of Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
Clusters Using Megatron-LM" (SC21, arXiv 2104.04473), measures the throughput per GPU of a
162.2B-parameter GPT on 64 A100 GPUs (8 DGX A100 servers of NVIDIA's Selene, 8 GPUs and
8 x 200 Gb/s HDR InfiniBand NICs each) for every (pipeline, tensor) split of the 64 GPUs,
at global batch sizes 32 and 128. The configuration comes from the paper's own script,
``examples/academic_paper_scripts/sc21/run_figure_13.sh`` and ``CONFIG.sh`` in
NVIDIA/Megatron-LM: 32 layers, hidden size 20480, 128 heads, sequence 2048, micro-batch 1,
fp16, full ("uniform") activation recomputation, no data parallelism (t p = 64).

The paper shows the measurements as bars and does not tabulate them; its text states two
findings, which are what this module records (:data:`MEASURED`): the peak is at t = 8, the
size of a server (Sec. 5.4.1), and sub-optimal combinations of tensor and pipeline
parallelism are "up to 2x" slower (Sec. 1).

:func:`iteration` is the book's model of one training iteration for a split (t, p): ideal
compute at the A100's dense fp16 peak, every tensor-parallel all-reduce on the critical
path (Megatron-LM of 2021 did not overlap them; with full recomputation the forward's two
all-reduces per layer run twice), priced by
:func:`scaleout.tensor_parallel.collective_seconds` on DGX A100 servers (NCCL's model, or
the one-NIC flat ring), and the 1F1B pipeline's (m + p - 1) micro-batch slots (Sec. 2.2).
It leaves out what the measurements also contain: GEMM efficiency below peak and its fall
as h/t shrinks, the pipeline's point-to-point sends (about 1 % here), the optimizer step,
and the network shared with other traffic. It is a communication model combined with an
ideal compute model, to be compared for ranking, not for absolute throughput.

The published numbers (Figure 13's run, what the paper states about it, the async-TP
benchmark) are rows of ``scaleout/data/tensor_parallel.csv``, loaded by
:mod:`scaleout.data`, each with its references.bib ``source``, ``locator`` and ``kind``; the
column ``record`` names the record a row builds. Korthikanti et al.'s Table 4 comes from
:mod:`scaleout.compute.published` (``compute.csv``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import checks, data, hardware
from ..compute import published as _compute_published
from ..transformer import MODELS, Transformer
from .overlap import layer_overlap
from .sizes import t_size
from .traffic import H100_SXM_BF16_DENSE_FLOPS, TOPOLOGIES, layer_comm_seconds, layer_flops

#: The A100 SXM's dense fp16/bf16 Tensor Core peak in FLOP/s (312 TFLOP/s), from hardware's
#: GPU table (NVIDIA A100 datasheet).
A100_DENSE_FLOPS = hardware.gpu("A100-80GB").bf16_tflops * 1e12


def _rows(record: str) -> list:
    """The rows of ``tensor_parallel.csv`` that build ``record``, in the file's order."""
    return [v for v in data.load("tensor_parallel") if v.get("record") == record]


def _whole(v) -> int:
    """The value of row ``v`` as an ``int`` (it must be a whole number)."""
    if not float(v.value).is_integer():
        raise ValueError(f"tensor_parallel.csv row {v.key!r}: value must be a whole number, "
                         f"got {v.value!r}")  # fmt: skip
    return int(v.value)


def _quantities(rows) -> dict:
    """quantity -> value of ``rows``; a quantity listed with an ``index`` (1, 2, ...) becomes
    the tuple of its values in index order."""
    single, lists = {}, {}
    for v in rows:
        if v.get("index"):
            lists.setdefault(v.get("quantity"), []).append((int(v.get("index")), v))
        else:
            single[v.get("quantity")] = v
    out = dict(single)
    for name, items in lists.items():
        out[name] = tuple(v for _, v in sorted(items, key=lambda item: item[0]))
    return out


def _figure_13() -> dict:
    q = _quantities(_rows("FIGURE_13"))
    # The model's shape has one home with SC21's other figure models: planner_models.csv.
    shape = {v.get("field"): _whole(v) for v in data.load("planner_models")
             if v.get("model") == "162.2B (Fig. 13)"}  # fmt: skip
    ints = {name: shape[name] for name in ("layers", "hidden", "heads")}
    ints |= {name: _whole(q[name]) for name in ("seq", "vocab", "micro_batch", "gpus")}
    return dict(**ints, batches=tuple(_whole(v) for v in q["batches"]),
                pipelines=tuple(_whole(v) for v in q["pipelines"]), intra="nvlink3-a100",
                inter="nic-200g", dtype_bytes=_whole(q["dtype_bytes"]))  # fmt: skip


#: The model and run of Figure 13, from run_figure_13.sh and CONFIG.sh (the vocabulary from
#: the paper's Sec. 5.1), rows of ``tensor_parallel.csv``; ``intra`` and ``inter`` name the
#: book's link presets of a DGX A100 (NVLink 3, one 200 Gb/s HDR NIC per GPU).
FIGURE_13 = _figure_13()
#: GPUs per server of Selene, whose nodes are DGX A100s (Narayanan et al., Sec. 5), where
#: Figure 13 and Korthikanti et al.'s Table 4 were measured: hardware's DGX A100 row.
DGX_A100_GPUS_PER_SERVER = hardware.system("DGX A100").gpus_per_server


def _measured() -> dict:
    q = _quantities(_rows("MEASURED"))
    return {"best_t": _whole(q["best_t"]), "worst_over_best": q["worst_over_best"].value,
            "source": "Narayanan et al., SC21: Figure 13, Sec. 1 and Sec. 5.4.1"}  # fmt: skip


#: What the paper says about the measurements of Figure 13, which it does not tabulate:
#: ``best_t``, Sec. 5.4.1: "peak performance when the tensor-parallel size is equal to the
#: number of GPUs in a single node (8 with DGX A100 nodes)"; ``worst_over_best``, Sec. 1:
#: "sub-optimal combinations of tensor and pipeline model parallelism can lead to up to 2x
#: lower throughput".
MEASURED = _measured()


@dataclass(frozen=True)
class Iteration:
    """One iteration of a (t, p) split at global batch ``batch``: per micro-batch and stage
    the ideal ``compute_s`` and the tensor-parallel ``comm_s``; the iteration's seconds
    over (m + p - 1) slots; ``tflops_per_gpu`` in the paper's count (eq. 3, recomputation
    included)."""

    t: int
    p: int
    batch: int
    topology: str
    compute_s: float
    comm_s: float
    seconds: float
    tflops_per_gpu: float

    def __post_init__(self):
        t_size(self.t)
        checks.integer("p", self.p, 1, 4096)
        checks.integer("batch", self.batch, 1, 2**20)
        checks.choice("topology", self.topology, TOPOLOGIES)
        for name in ("compute_s", "comm_s", "seconds", "tflops_per_gpu"):
            checks.nonnegative(name, getattr(self, name))

    @property
    def comm_over_compute(self) -> float:
        return self.comm_s / self.compute_s

    @property
    def bubble(self) -> float:
        """(p - 1) / m, the 1F1B bubble over the ideal time (Sec. 2.2.1)."""
        return (self.p - 1) / (self.batch // FIGURE_13["micro_batch"])


def iteration(p: int, batch: int, topology: str = "nccl") -> Iteration:
    """The model of Figure 13's run with p pipeline stages and t = 64 / p (see the module
    docstring), its collectives priced with ``topology`` (NCCL's model by default)."""
    f = FIGURE_13
    p = checks.choice("p", p, f["pipelines"])
    batch = checks.choice("batch", batch, f["batches"])
    topology = checks.choice("topology", topology, TOPOLOGIES)
    t = f["gpus"] // p
    b, s, h, layers = f["micro_batch"], f["seq"], f["hidden"], f["layers"]
    forward = layer_flops(b, s, h)
    compute = (layers // p) * 4 * forward / t / A100_DENSE_FLOPS  # fwd, recompute, 2x bwd
    comm = layer_comm_seconds(b, s, h, t, f["dtype_bytes"], topology=topology,
                              gpus_per_server=DGX_A100_GPUS_PER_SERVER, intra=f["intra"],
                              inter=f["inter"])  # fmt: skip
    comm = (layers // p) * (2 * comm.forward + comm.backward)  # the forward runs twice
    m = batch // b
    seconds = (m + p - 1) * (compute + comm)
    v = f["vocab"]
    # Narayanan et al.'s eq. 3, 96 B s l h^2 (1 + s/(6h) + V/(16 l h)), counted by transformer
    gpt = Transformer(layers, h, f["heads"], seq=s, vocab=v)
    flops = gpt.step_flops(batch, "full")
    tflops = checks.finite_result("the throughput", flops / seconds / f["gpus"] / 1e12)
    return Iteration(t, p, batch, topology, compute, comm, seconds, tflops)


def figure13(topology: str = "nccl") -> list[Iteration]:
    """:func:`iteration` for every bar of Figure 13 (both batch sizes, p = 2 to 32)."""
    return [iteration(p, batch, topology) for batch in FIGURE_13["batches"]
            for p in FIGURE_13["pipelines"]]  # fmt: skip


def stated_pairs() -> list[tuple[int, int, int]]:
    """(batch, better t, worse t) for every ordered pair of splits the paper's text fixes:
    the peak t = 8 above each other t, at both batch sizes (8 pairs). The bars are not
    tabulated, so the order of no other pair is known."""
    ts = [FIGURE_13["gpus"] // p for p in FIGURE_13["pipelines"]]
    best = MEASURED["best_t"]
    return [(batch, best, t) for batch in FIGURE_13["batches"] for t in ts if t != best]


#: Trivial rankings to measure the model's skill against, a score per t (higher ranks
#: first): by t alone either way, and the rule of thumb "t = the 8 GPUs of a DGX A100".
BASELINES = {
    "larger t first": lambda t: float(t),
    "smaller t first": lambda t: -float(t),
    "t = GPUs per server first": lambda t: -abs(float(t) - float(DGX_A100_GPUS_PER_SERVER)),
}


def pair_agreement(score) -> dict:
    """How a ranking agrees with the pairs of :func:`stated_pairs`. ``score(batch, t)`` ->
    a number, higher meaning faster. Returns the concordant, discordant and tied counts and
    Kendall's tau over those pairs, (concordant - discordant) / pairs: 1 when every stated
    pair is in the right order, 0 for no better than chance, -1 for all reversed."""
    score = checks.function("score", score)
    counts = {"concordant": 0, "discordant": 0, "tied": 0}
    pairs = stated_pairs()
    for batch, better, worse in pairs:
        hi = checks.real("score(batch, t)", score(batch, better))
        lo = checks.real("score(batch, t)", score(batch, worse))
        counts["concordant" if hi > lo else "discordant" if hi < lo else "tied"] += 1
    counts["pairs"] = len(pairs)
    counts["tau"] = (counts["concordant"] - counts["discordant"]) / len(pairs)
    return counts


#: The measured forward and backward milliseconds of one transformer layer of the 22B model
#: of Korthikanti et al. (MLSys 2023) in their Table 4, per (recomputation, sequence
#: parallelism); the layer is their Table 3's, h = 6144, 64 heads, s = 2048, micro-batch 4,
#: t = 8 on one DGX A100 of Selene. One copy of the table: chapter 14's
#: :data:`scaleout.compute.published.KORTHIKANTI_TABLE4`.
TABLE_4 = {(row.recompute, row.sp): (row.forward_ms, row.backward_ms)
           for row in _compute_published.KORTHIKANTI_TABLE4}  # fmt: skip
_K = _compute_published.KORTHIKANTI_LAYER
#: The layer of :data:`TABLE_4` (chapter 14's :data:`scaleout.compute.published.KORTHIKANTI_LAYER`)
#: on a DGX A100's links.
TABLE_4_LAYER = dict(b=_K["b"], s=_K["seq"], h=_K["hidden"], heads=_K["heads"], t=_K["t"],
                     intra="nvlink3-a100", inter="nic-200g")  # fmt: skip


def table4_layer(recompute: str, sequence_parallel: bool) -> dict:
    """The model of one row of :data:`TABLE_4`: forward and backward seconds of the 22B
    layer at t = 8 on a DGX A100, Megatron-LM's overlap
    (:func:`~scaleout.tensor_parallel.layer_overlap`, ``"megatron"``), GEMMs at the A100's
    dense peak, collectives in NCCL's model.
    Recomputation adds to the backward pass: ``"full"`` the whole forward (its collectives
    included), ``"selective"`` the attention core's two batched GEMMs (Q K^T and the
    scores times V, 4 b s^2 h / t FLOPs; the softmax and dropout, memory-bound, left out).
    Not modelled: GEMM efficiency below peak, the layer norms, dropouts, GeLU and softmax
    (elementwise kernels that sequence parallelism runs on s/t tokens), kernel launches.
    Returns forward_s, backward_s, measured_forward_s, measured_backward_s."""
    key = (checks.choice("recompute", recompute, ("none", "full", "selective")),
           checks.boolean("sequence_parallel", sequence_parallel))  # fmt: skip
    if key not in TABLE_4:
        raise checks.fail("recompute", "a (recompute, sequence_parallel) pair of Table 4 "
                          f"{tuple(TABLE_4)}", key)  # fmt: skip
    c = TABLE_4_LAYER
    b, s, h, t = c["b"], c["s"], c["h"], c["t"]
    run = layer_overlap(b, s, h, t, "megatron", key[1], peak_flops=A100_DENSE_FLOPS,
                        gpus_per_server=DGX_A100_GPUS_PER_SERVER, intra=c["intra"],
                        inter=c["inter"])  # fmt: skip
    forward = run.compute.forward + run.exposed.forward
    backward = run.compute.backward + run.exposed.backward
    if key[0] == "full":
        backward += forward
    elif key[0] == "selective":
        backward += 4.0 * b * s * s * h / t / A100_DENSE_FLOPS
    fwd_ms, bwd_ms = TABLE_4[key]
    return {"forward_s": forward, "backward_s": backward,
            "measured_forward_s": fwd_ms / 1e3, "measured_backward_s": bwd_ms / 1e3}  # fmt: skip


def _async_tp() -> tuple[dict, ...]:
    models: dict = {}
    for v in _rows("ASYNC_TP"):
        models.setdefault((v.get("model"), v.get("recompute")), []).append(v)
    out = []
    for (model, recompute), rows in models.items():
        q = _quantities(rows)
        gpus, fsdp, t, s, b = (_whole(q[name]) for name in ("gpus", "fsdp", "t", "s", "b"))
        h = MODELS[checks.choice("model", model, tuple(MODELS))].hidden
        out.append(dict(model=model, gpus=gpus, fsdp=fsdp, t=t, h=h, s=s, b=b,
                        recompute=recompute, vanilla=q["vanilla"].value,
                        async_tp=q["async_tp"].value, power_w=_whole(q["power_w"])))  # fmt: skip
    return tuple(out)


#: Async tensor parallelism against the same job without it, measured by the PyTorch team
#: (TorchTitan, benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md, June 2025): tokens/s
#: per GPU, bf16, H100s of Meta's Grand Teton (96 GB HBM2e), 8 per host, 400 Gb/s RDMA per
#: GPU, at "the default 500W power limit" rather than the 700 W TDP (``power_w``; the
#: benchmark's Hardware section, line 13 at torchtitan commit c720cb8).
#: Baseline: "vanilla TP" (tensor + sequence parallelism, its all-gathers and
#: reduce-scatters in program order), both compiled. h is Llama 3's (the model registry,
#: :data:`scaleout.transformer.MODELS`); s = 8192 is an assumption (TorchTitan's configs'
#: default; the benchmark does not state it). The rest are rows of ``tensor_parallel.csv``,
#: one model after the other.
ASYNC_TP = _async_tp()
#: What the announcement of async tensor parallelism reported (Wang et al. 2024, its TL;DR),
#: in per cent: ``forward_speedup`` (up to, the forward pass) and ``step_speedup`` (about,
#: whole steps), rows of ``tensor_parallel.csv`` (record ``ASYNC_TP_ANNOUNCED``).
ANNOUNCED_ASYNC_TP = {v.get("quantity"): _whole(v) for v in _rows("ASYNC_TP_ANNOUNCED")}
#: The benchmark's hosts (record ``ASYNC_TP_HOST`` of ``tensor_parallel.csv``): ``hbm_gb``, the
#: memory of each of their H100s, 96 GB (its Hardware section).
ASYNC_TP_HOST = {v.get("quantity"): _whole(v) for v in _rows("ASYNC_TP_HOST")}


def async_tp_rows() -> list[dict]:
    """Each :data:`ASYNC_TP` row with the model's speedup: one GPT-shaped layer (h -> 4h MLP,
    full multi-head attention; Llama's GQA and SwiGLU are not modelled) of the row's h, s
    and micro-batch b at its t, forward and backward, the ``"none"`` schedule over the
    ``"pipelined"`` one, both with sequence parallelism
    (:func:`~scaleout.tensor_parallel.layer_overlap`; NCCL's model on one DGX H100, GEMMs
    at the H100's dense peak)."""
    out = []
    for row in ASYNC_TP:
        args = (row["b"], row["s"], row["h"], row["t"])
        plain = layer_overlap(*args, "none", True, peak_flops=H100_SXM_BF16_DENSE_FLOPS)
        piped = layer_overlap(*args, "pipelined", True, peak_flops=H100_SXM_BF16_DENSE_FLOPS)
        measured = row["async_tp"] / row["vanilla"]
        model = plain.seconds / piped.seconds
        out.append({**row, "measured": measured, "predicted": model,
                    "error": model / measured - 1})  # fmt: skip
    return out
