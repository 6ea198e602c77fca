"""What is trained and on what: the model's shape and the cluster.

* :class:`Model` - a decoder-only transformer described as real ones are: layers,
  hidden size, attention heads and KV heads (GQA, Ainslie et al. 2023), FFN size, gated
  MLP (SwiGLU: three matrices), vocabulary, sequence length, tied embeddings; ``experts``
  and ``top_k`` are fields for mixture-of-experts models (dense now: 1 and 1).
* Parameter count: the layers' matrices and norms plus the embeddings (input, and the
  output layer unless tied) and learned positions when the model has them. For a GPT of
  Narayanan et al. (SC21, Section 5.1; a = g, f = 4h, learned positions, tied) this is
  their ``12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h))``.
* FLOPs: model FLOPs (Chowdhery et al. 2022, Appendix B; Korthikanti et al. 2022,
  Appendix A) = 3 x the forward GEMMs and attention core, 2 FLOPs per multiply-add; per
  token forward ``2 h (a + 2g) d + 2 h^2 + 2 h f (2 or 3) + 4 s h`` per layer plus the
  logits ``2 h V``. :meth:`Model.flops` with ``recompute="full"`` adds the forward of the
  layers again: for a GPT that is Narayanan et al.'s eq. 3, ``96 B s l h^2 (1 + s/(6h) +
  V/(16 l h))``, the count behind their TFLOP/s.
* :class:`Cluster` - GPUs of one kind in servers of one NCCL topology
  (:func:`scaleout.nccl.topo.topology`): GPU memory, dense BF16 peak and HBM bandwidth
  from :func:`scaleout.hardware.gpu` (the datasheets).

Limits: dimensions up to 2**20, layers up to 4096, sequences up to 2**20 tokens, batches
up to 2**24 sequences, clusters up to 65,536 GPUs (``nccl.topo.MAX_RANKS``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .. import checks, nccl
from .. import hardware as H
from .. import memory as MEM

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

    @property
    def g(self) -> int:
        """KV heads."""
        return self.heads if self.kv_heads is None else self.kv_heads

    @property
    def f(self) -> int:
        """FFN size."""
        return 4 * self.hidden if self.ffn is None else self.ffn

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def mlp_matrices(self) -> int:
        return 3 if self.swiglu else 2

    @property
    def layer_params(self) -> float:
        """The parameters of one layer (Q, K, V and output projections with biases for a
        GPT, without for the rotary models, the MLP, two norms with scale and bias)."""
        h, d = self.hidden, self.head_dim
        attn = h * (self.heads + 2 * self.g) * d + h * h
        mlp = self.mlp_matrices * h * self.f
        biases = (self.heads + 2 * self.g) * d + h + self.f + h if self.positions else 0
        return float(attn + mlp + biases + 4 * h)

    @property
    def embedding_params(self) -> float:
        """Input embedding, learned positions, the output layer unless tied (the final
        norm's 2h, left out of Narayanan et al.'s count, is left out here too)."""
        h = self.hidden
        out = 0 if self.tied_embeddings else self.vocab * h
        return float(self.vocab * h + (self.seq * h if self.positions else 0) + out)

    @property
    def params(self) -> float:
        """All parameters (Narayanan et al.'s formula for a GPT)."""
        return self.layers * self.layer_params + self.embedding_params

    def layer_forward_flops(self, tokens) -> float:
        """Model FLOPs of one layer's forward pass over ``tokens`` tokens (whole layer)."""
        h, s, d = self.hidden, self.seq, self.head_dim
        per_token = 2 * h * (self.heads + 2 * self.g) * d + 2 * h * h
        per_token += 2 * h * self.f * self.mlp_matrices + 4 * s * h
        return float(tokens) * per_token

    def flops(self, batch, recompute: str = "none") -> float:
        """FLOPs of one iteration on ``batch`` sequences: model FLOPs (``"none"``), plus
        the attention core again (``"selective"``), plus the layers' forward again
        (``"full"``: Narayanan et al.'s eq. 3 for a GPT). Vectorised over ``batch``."""
        b = checks.array("batch", batch, low=1.0, high=float(MAX_BATCH))
        checks.choice("recompute", recompute, RECOMPUTE)
        tokens = b * self.seq
        layer = self.layers * self.layer_forward_flops(1.0) * tokens
        logits = 2.0 * self.hidden * self.vocab * tokens
        total = 3.0 * (layer + logits)
        if recompute == "full":
            total = total + layer
        elif recompute == "selective":
            total = total + self.layers * 4.0 * self.seq * self.hidden * tokens
        return float(total) if np.ndim(total) == 0 else total


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

    def topo(self, nodes: int) -> nccl.Topology:
        """The NCCL topology of ``nodes`` of these servers."""
        over = {}
        if self.nics_per_node is not None:
            over["nics_per_node"] = self.nics_per_node
        if self.nic_gbps is not None:
            over["nic_gbps"] = float(self.nic_gbps)
        return nccl.topology(self.topology, nodes=nodes, **over)


def a100_cluster(gpus: int) -> Cluster:
    """DGX A100 servers (8 A100 80 GB, NVLink 3, eight 200 Gb/s HDR NICs), as Selene."""
    return Cluster(f"{checks.integer('gpus', gpus, 1, MAX_GPUS)} A100", gpus)


def h100_cluster(gpus: int) -> Cluster:
    """DGX H100 servers (8 H100 SXM, NVLink 4, eight 400 Gb/s NICs)."""
    n = checks.integer("gpus", gpus, 1, MAX_GPUS)
    return Cluster(f"{n} H100", n, gpu="H100-SXM", topology="dgx-h100")


def model_from_table(name: str) -> Model:
    """The ``memory.TRANSFORMERS`` configuration ``name`` (Narayanan et al. Table 1)."""
    checks.choice("name", name, tuple(MEM.TRANSFORMERS))
    c = MEM.TRANSFORMERS[name]
    return Model(c.name, c.layers, c.hidden, c.heads, c.seq, c.vocab)


GPT3 = Model("GPT-3 175B", 96, 12288, 96)  # Brown et al. 2020, Table 2.1
ONE_T = model_from_table("1T")
#: Llama-2-70B as released (Touvron et al. 2023, Table 1, and the released config), with
#: 80 layers, h = 8192, 64 heads, 8 KV heads, SwiGLU FFN 28,672, V = 32,000, s = 4,096.
LLAMA2_70B = Model("Llama-2-70B", 80, 8192, 64, seq=4096, vocab=32000, kv_heads=8,
                   ffn=28672, swiglu=True, tied_embeddings=False, positions=False)  # fmt: skip
#: Llama 3 405B (Llama team 2024, Table 3), with 126 layers, h = 16,384, 128 heads, 8 KV
#: heads, FFN 53,248 (SwiGLU), V = 128,256, s = 8,192 in the main pre-training stage.
LLAMA3_405B = Model("Llama-3-405B", 126, 16384, 128, seq=8192, vocab=128256, kv_heads=8,
                    ffn=53248, swiglu=True, tied_embeddings=False, positions=False)  # fmt: skip


def training_days(tokens: float, params: float, gpus: int, flops_per_gpu: float) -> float:
    """End-to-end training time ``8 T P / (n X)`` in days (Narayanan et al. 2021, Section
    5.1: T tokens, P parameters, n GPUs, X achieved FLOP/s per GPU counted with full
    recomputation). X is at most 1e17 FLOP/s (no GPU is faster); T and P at most 1e16."""
    t = checks.positive("tokens", tokens, 1e16)
    p = checks.positive("params", params, 1e16)
    n = checks.integer("gpus", gpus, 1, MAX_GPUS)
    x = checks.real("flops_per_gpu", flops_per_gpu, 1e9, 1e17)
    return checks.finite_result("training days", 8.0 * t * p / (n * x) / 86400.0)
