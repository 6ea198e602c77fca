"""What is trained and on what: the model's shape and the cluster.

* :class:`Model` - a decoder-only transformer described as real ones are: layers,
  hidden size, attention heads and KV heads (GQA, Ainslie et al. 2023), FFN size, gated
  MLP (SwiGLU: three matrices), vocabulary, sequence length, tied embeddings; ``experts``
  and ``top_k`` are fields for mixture-of-experts models (dense now: 1 and 1).
* Parameter count and FLOPs: :class:`scaleout.transformer.Transformer` (``Model.shape``),
  the one place they are counted: for a GPT Narayanan et al.'s parameter count and, with
  ``recompute="full"``, their eq. 3, ``96 B s l h^2 (1 + s/(6h) + V/(16 l h))``.
* :class:`Cluster` - GPUs of one kind in servers of one NCCL topology
  (:func:`scaleout.nccl.topo.topology`): GPU memory, dense BF16 peak and HBM bandwidth
  from :func:`scaleout.hardware.gpu` (the datasheets).

Limits: dimensions up to 2**20, layers up to 4096, sequences up to 2**20 tokens, batches
up to 2**24 sequences, clusters up to 65,536 GPUs (``nccl.topo.MAX_RANKS``).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

from .. import checks, nccl
from .. import hardware as H
from .. import machine as MA
from .. import memory as MEM
from .. import transformer as TF

MAX_DIM = 2**20
MAX_LAYERS = 4096
MAX_SEQ = 2**20
MAX_BATCH = 2**24
MAX_GPUS = nccl.topo.MAX_RANKS
MAX_EXPERTS = 4096
RECOMPUTE = MEM.RECOMPUTE

#: The GPU generation of each GPU a cluster may have (one calibration per generation).
GENERATION = {"A100-80GB": "A100", "A100-40GB": "A100", "H100-SXM": "H100", "H200": "H100"}
#: The GPUs a cluster may have, names of rows of :data:`scaleout.hardware.GPUS`.
GPUS = tuple(GENERATION)


def _dim(name, value, high=MAX_DIM):
    return checks.integer(name, value, 1, high)


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer (see the module docstring). ``kv_heads`` defaults to
    ``heads`` (multi-head attention), ``ffn`` to ``4 hidden``; ``positions``: learned
    position embeddings (GPT) instead of rotary (Llama)."""

    name: str
    layers: int
    hidden: int
    heads: int
    seq: int = 2048
    vocab: int = 51200
    kv_heads: int | None = None
    ffn: int | None = None
    swiglu: bool = False
    tied_embeddings: bool = True
    positions: bool = True
    experts: int = 1
    top_k: int = 1

    def __post_init__(self):
        checks.text("name", self.name, 80)
        _dim("layers", self.layers, MAX_LAYERS)
        h = _dim("hidden", self.hidden)
        a = checks.integer("heads", self.heads, 1, h)
        _dim("seq", self.seq, MAX_SEQ)
        _dim("vocab", self.vocab)
        if h % a:
            raise checks.fail("heads", f"a divisor of hidden = {h} (integer head size)", a)
        g = checks.integer("kv_heads", self.g, 1, a)
        if a % g:
            raise checks.fail("kv_heads", f"a divisor of heads = {a}", g)
        _dim("ffn", self.f)
        for key in ("swiglu", "tied_embeddings", "positions"):
            checks.boolean(key, getattr(self, key))
        checks.integer("experts", self.experts, 1, MAX_EXPERTS)
        checks.integer("top_k", self.top_k, 1, self.experts)
        if self.experts > 1:
            raise checks.fail("experts", "1 (dense; the fields are ready for experts)",
                              self.experts)  # fmt: skip

    @functools.cached_property
    def shape(self) -> TF.Transformer:
        """The model as a :class:`scaleout.transformer.Transformer`: the one place its
        parameters and FLOPs are counted."""
        return TF.Transformer(self.layers, self.hidden, self.heads, kv_heads=self.kv_heads,
                              ffn=self.ffn, swiglu=self.swiglu, seq=self.seq, vocab=self.vocab,
                              tied=self.tied_embeddings, positions=self.positions,
                              experts=self.experts, top_k=self.top_k, name=self.name)  # fmt: skip

    @property
    def g(self) -> int:
        """KV heads."""
        return self.shape.g

    @property
    def f(self) -> int:
        """FFN size."""
        return self.shape.f

    @property
    def head_dim(self) -> int:
        return self.shape.head_dim

    @property
    def mlp_matrices(self) -> int:
        return self.shape.mlp_matrices

    @property
    def layer_params(self) -> float:
        """The parameters of one layer (:attr:`scaleout.transformer.Transformer.layer_params`)."""
        return self.shape.layer_params

    @property
    def embedding_params(self) -> float:
        """Input embedding, learned positions, the output layer unless tied."""
        return self.shape.embedding_params

    @property
    def params(self) -> float:
        """All parameters (Narayanan et al.'s formula for a GPT)."""
        return self.shape.params

    def layer_forward_flops(self, tokens) -> float:
        """Model FLOPs of one layer's forward pass over ``tokens`` tokens (whole layer)."""
        return self.shape.layer_forward_flops(tokens)

    def flops(self, batch, recompute: str = "none") -> float:
        """FLOPs of one iteration on ``batch`` sequences
        (:meth:`scaleout.transformer.Transformer.step_flops`; note the default here is
        model FLOPs, ``"none"``). Vectorised over ``batch``."""
        return self.shape.step_flops(batch, recompute)


@dataclass(frozen=True)
class Cluster:
    """``gpus`` GPUs of kind ``gpu`` (a key of :data:`~scaleout.planner.model.GPUS`) in
    servers described by the NCCL topology preset ``topology`` (with ``nics_per_node`` /
    ``nic_gbps`` overrides, e.g. BLOOM's four 100 Gb/s Omni-Path links per node);
    ``gpu_bytes``, ``peak_flops_override`` and ``hbm_override`` replace the datasheet's
    memory, dense BF16 peak and HBM bandwidth."""

    name: str
    gpus: int
    gpu: str = "A100-80GB"
    topology: str = "dgx-a100"
    nics_per_node: int | None = None
    nic_gbps: float | None = None
    gpu_bytes: float | None = None
    peak_flops_override: float | None = None
    hbm_override: float | None = None

    def __post_init__(self):
        checks.text("name", self.name, 80)
        checks.integer("gpus", self.gpus, 1, MAX_GPUS)
        checks.choice("gpu", self.gpu, GPUS)
        checks.choice("topology", self.topology, tuple(nccl.PRESETS))
        if self.nics_per_node is not None:
            checks.integer("nics_per_node", self.nics_per_node, 1, 64)
        if self.nic_gbps is not None:
            checks.real("nic_gbps", self.nic_gbps, 1.0, 3200.0)
        if self.gpu_bytes is not None:
            checks.real("gpu_bytes", self.gpu_bytes, 1e6, 1e13)
        if self.peak_flops_override is not None:
            checks.real("peak_flops_override", self.peak_flops_override, 1e9, 1e17)
        if self.hbm_override is not None:
            checks.real("hbm_override", self.hbm_override, 1e9, 1e15)
        g = self.gpus_per_node
        if self.gpus > g and self.gpus % g:
            raise checks.fail("gpus", f"a multiple of {g} GPUs per server (or at most {g})",
                              self.gpus)  # fmt: skip
        self.topo(1)  # the overrides must make a valid topology

    @property
    def gpus_per_node(self) -> int:
        return nccl.PRESETS[self.topology].gpus_per_node

    @property
    def nodes(self) -> int:
        return max(1, self.gpus // self.gpus_per_node)

    @property
    def gpu_row(self) -> H.GPU:
        """The GPU's row of :data:`scaleout.hardware.GPUS`, with the overrides applied."""
        row = H.gpu(self.gpu)
        over = {}
        if self.peak_flops_override is not None:
            over["bf16_tflops"] = self.peak_flops_override / 1e12
        if self.hbm_override is not None:
            over["hbm_tb_per_s"] = self.hbm_override / 1e12
        return dataclasses.replace(row, **over) if over else row

    @property
    def memory_bytes(self) -> float:
        """Memory of one GPU in bytes (the datasheet's GB, or ``gpu_bytes``)."""
        return float(H.gpu(self.gpu).memory_gb * 1e9 if self.gpu_bytes is None else self.gpu_bytes)

    @property
    def peak_flops(self) -> float:
        """Dense BF16 FLOP/s of one GPU (datasheet, or ``peak_flops_override``)."""
        return float(self.gpu_row.peak_flops("bf16"))

    @property
    def hbm_bytes_per_s(self) -> float:
        """HBM bytes/s of one GPU (datasheet, or ``hbm_override``)."""
        return float(self.gpu_row.hbm_bytes_per_s)

    @property
    def generation(self) -> str:
        return GENERATION[self.gpu]

    @functools.cached_property
    def machine(self) -> MA.Machine:
        """The cluster as a :class:`scaleout.machine.Machine`: its GPU row (with the
        overrides), the preset server with the NIC overrides, and its servers."""
        over = {}
        if self.nics_per_node is not None:
            over["nics_per_node"] = self.nics_per_node
        if self.nic_gbps is not None:
            over["nic_gbps"] = float(self.nic_gbps)
        return MA.preset(self.topology, servers=self.nodes, gpu=self.gpu_row, **over)

    def topo(self, nodes: int) -> nccl.Topology:
        """The NCCL topology of ``nodes`` of these servers."""
        return self.machine.topo(nodes)


def a100_cluster(gpus: int) -> Cluster:
    """DGX A100 servers (8 A100 80 GB, NVLink 3, eight 200 Gb/s HDR NICs), as Selene."""
    return Cluster(f"{checks.integer('gpus', gpus, 1, MAX_GPUS)} A100", gpus)


def h100_cluster(gpus: int) -> Cluster:
    """DGX H100 servers (8 H100 SXM, NVLink 4, eight 400 Gb/s NICs)."""
    n = checks.integer("gpus", gpus, 1, MAX_GPUS)
    return Cluster(f"{n} H100", n, gpu="H100-SXM", topology="dgx-h100")


def model_from_table(name: str) -> Model:
    """The ``memory.TRANSFORMERS`` configuration ``name`` (Narayanan et al. Table 1)."""
    checks.choice("name", name, tuple(TF.NARAYANAN_TABLE1))
    return from_transformer(TF.NARAYANAN_TABLE1[name])


def from_transformer(m: TF.Transformer, name: str | None = None) -> Model:
    """The planner's :class:`Model` of a :class:`scaleout.transformer.Transformer` (dense)."""
    checks.instance("m", m, TF.Transformer)
    return Model(m.name if name is None else name, m.layers, m.hidden, m.heads, m.seq, m.vocab,
                 m.kv_heads, m.ffn, m.swiglu, m.tied, m.positions, m.experts,
                 m.top_k)  # fmt: skip


GPT3 = from_transformer(TF.MODELS["GPT-3 175B"])  # Brown et al. 2020, Table 2.1
ONE_T = model_from_table("1T")
#: Llama-2-70B and Llama 3 405B from :data:`scaleout.transformer.MODELS` (sources there).
LLAMA2_70B = from_transformer(TF.MODELS["Llama 2 70B"], "Llama-2-70B")
LLAMA3_405B = from_transformer(TF.MODELS["Llama 3 405B"], "Llama-3-405B")


def training_days(tokens: float, params: float, gpus: int, flops_per_gpu: float) -> float:
    """End-to-end training time ``8 T P / (n X)`` in days (Narayanan et al. 2021, Section
    5.1: T tokens, P parameters, n GPUs, X achieved FLOP/s per GPU counted with full
    recomputation). X is at most 1e17 FLOP/s (no GPU is faster); T and P at most 1e16."""
    t = checks.positive("tokens", tokens, 1e16)
    p = checks.positive("params", params, 1e16)
    n = checks.integer("gpus", gpus, 1, MAX_GPUS)
    x = checks.real("flops_per_gpu", flops_per_gpu, 1e9, 1e17)
    return checks.finite_result("training days", 8.0 * t * p / (n * x) / 86400.0)
