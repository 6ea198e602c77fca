"""Published MoE models, training setups and all-to-all measurements, each with its source.

Taught in chapter 7. Nothing here is fitted: the configurations are the ones their
authors published, and the chapter recomputes their parameter counts with
:func:`scaleout.moe.moe_parameters` and prices DeepEP's measured all-to-alls with
:mod:`scaleout.moe.deepep` (the transport each measured version used, the bytes DeepEP
counts).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import checks
from .cost import Network
from .placement import MoEModel

_V3_PAPER = "DeepSeek-AI, DeepSeek-V3 Technical Report (arXiv 2412.19437)"
_V3_CONFIG = (
    "deepseek-ai/DeepSeek-V3 inference/configs/config_671B.json and inference/model.py "
    "(MLA, Gate, MoE, Transformer), commit 9b4e978"
)
_MIXTRAL = "Jiang et al., Mixtral of Experts (arXiv 2401.04088), Table 1"
_DEEPEP = "deepseek-ai/DeepEP docs/legacy.md, Performance (V1 kernels), commit dd758ca"


def mla_parameters(hidden, heads, q_lora_rank, kv_lora_rank, qk_nope_head_dim,
                   qk_rope_head_dim, v_head_dim) -> int:  # fmt: skip
    """Parameters of one multi-head latent attention block, as DeepSeek-V3's ``MLA``
    builds it: ``wq_a``, ``q_norm``, ``wq_b``, ``wkv_a``, ``kv_norm``, ``wkv_b``, ``wo``."""
    h = checks.integer("hidden", hidden, 1, 2**20)
    n = checks.integer("heads", heads, 1, 4096)
    q = checks.integer("q_lora_rank", q_lora_rank, 1, 2**20)
    kv = checks.integer("kv_lora_rank", kv_lora_rank, 1, 2**20)
    nope = checks.integer("qk_nope_head_dim", qk_nope_head_dim, 1, 4096)
    rope = checks.integer("qk_rope_head_dim", qk_rope_head_dim, 0, 4096)
    v = checks.integer("v_head_dim", v_head_dim, 1, 4096)
    return (h * q + q + q * n * (nope + rope) + h * (kv + rope) + kv
            + kv * n * (nope + v) + n * v * h)  # fmt: skip


def gqa_parameters(hidden, heads, kv_heads, head_dim) -> int:
    """Parameters of grouped-query attention without biases: q and o of ``heads x
    head_dim``, k and v of ``kv_heads x head_dim`` (Mixtral's, Llama's)."""
    h = checks.integer("hidden", hidden, 1, 2**20)
    n = checks.integer("heads", heads, 1, 4096)
    kv = checks.integer("kv_heads", kv_heads, 1, n)
    d = checks.integer("head_dim", head_dim, 1, 4096)
    return 2 * h * n * d + 2 * h * kv * d


DEEPSEEK_V3 = MoEModel(
    "DeepSeek-V3", layers=61, hidden=7168, experts=256, k=8, expert_ffn=2048,
    attention=mla_parameters(7168, 128, 1536, 512, 128, 64, 128), vocab=129280,
    dense_layers=3, dense_ffn=18432, shared_experts=1, matmuls=3,
    source=_V3_CONFIG + "; the multi-token-prediction module (14B) is not counted",
)  # fmt: skip
MIXTRAL_8X7B = MoEModel(
    "Mixtral 8x7B", layers=32, hidden=4096, experts=8, k=2, expert_ffn=14336,
    attention=gqa_parameters(4096, 32, 8, 128), vocab=32000, matmuls=3, source=_MIXTRAL,
)  # fmt: skip
MODELS = {m.name: m for m in (DEEPSEEK_V3, MIXTRAL_8X7B)}


@dataclass(frozen=True)
class PublishedCount:
    """A model's total and active parameters as its authors state them (``active``
    None where they do not)."""

    model: str
    total: float
    active: float | None
    source: str

    def __post_init__(self):
        checks.text("model", self.model, 80)
        checks.positive("total", self.total)
        if self.active is not None:
            checks.real("active", self.active, 0.0, self.total, low_open=True)
        checks.text("source", self.source, 1000)


PUBLISHED_COUNTS = (
    PublishedCount("DeepSeek-V3", 671e9, 37e9, _V3_PAPER + ", abstract; README (685B with MTP)"),
    PublishedCount("Mixtral 8x7B", 47e9, 13e9,
                   "Jiang et al. 2024, Sec. 2: 47B parameters, 13B active per token"),
    PublishedCount("Switch-C", 1571e9, None,
                   "Fedus et al. 2022 (JMLR), Table 9: 1571B parameters, 2048 experts, "
                   "top-1 routing; active parameters not stated"),
)  # fmt: skip


@dataclass(frozen=True)
class TrainingSetup:
    """How a published MoE model was trained: GPUs, parallel degrees, routing."""

    model: str
    gpus: int
    gpus_per_node: int
    pp: int
    ep: int
    tp: int
    max_nodes_per_token: int | None
    source: str

    def __post_init__(self):
        checks.text("model", self.model, 80)
        g = checks.integer("gpus", self.gpus, 1, 1_000_000)
        checks.integer("gpus_per_node", self.gpus_per_node, 1, 1024)
        for name in ("pp", "ep", "tp"):
            checks.integer(name, getattr(self, name), 1, g)
        if g % (self.pp * self.ep * self.tp):
            raise checks.fail("pp x ep x tp", f"a divisor of gpus = {g}", self.pp * self.ep)
        if self.max_nodes_per_token is not None:
            checks.integer("max_nodes_per_token", self.max_nodes_per_token, 1, g)
        checks.text("source", self.source, 1000)

    @property
    def dp(self) -> int:
        """The dense layers' data-parallel degree, GPUs per pipeline stage over tp."""
        return self.gpus // (self.pp * self.tp)

    @property
    def expert_dp(self) -> int:
        """How many GPUs hold each expert, GPUs per pipeline stage over ep x tp."""
        return self.gpus // (self.pp * self.ep * self.tp)

    @property
    def nodes_per_ep_group(self) -> int:
        return max(1, self.ep * self.tp // self.gpus_per_node)


DEEPSEEK_V3_TRAINING = TrainingSetup(
    "DeepSeek-V3", gpus=2048, gpus_per_node=8, pp=16, ep=64, tp=1, max_nodes_per_token=4,
    source=_V3_PAPER + ", Sec. 3.1 (2048 H800, 8 per node, NVLink/NVSwitch inside, "
    "InfiniBand across) and Sec. 3.2 (16-way PP, 64-way EP spanning 8 nodes, ZeRO-1 DP; "
    "no TP); Sec. 2.1.2 and 3.2.2 (each token sent to at most M = 4 nodes)",
)  # fmt: skip

#: DeepSeek's H800 nodes as DeepEP and the V3 report describe them, NVLink about 160 GB/s
#: and a 400 Gb/s ConnectX-7 InfiniBand NIC per GPU at about 50 GB/s (per direction), with
#: the latencies the book's NVLink and NIC presets assume (scaleout.hardware).
H800_NETWORK = Network(
    8, 160.0, 50.0, 1e-6, 3e-6,
    _DEEPEP + ": 'H800 (~160 GB/s NVLink maximum bandwidth), each connected to a CX7 "
    "InfiniBand 400 Gb/s RDMA network card (~50 GB/s maximum bandwidth)'; "
    + _V3_PAPER + ", Sec. 3.2.2 (IB 50 GB/s, NVLink 160 GB/s)",
)  # fmt: skip


#: The kernels' transports (DeepEP docs/legacy.md and the code of each measured version):
#: ``"two-hop"``: the normal kernels, a token once per node over RDMA to its rail peer,
#: forwarded over NVLink (intranode: NVLink only); ``"nvlink+rdma"``: the low-latency
#: kernels since PR #173 (2025-05-23, on by default: ``allow_nvlink_for_low_latency_mode``),
#: every copy to a GPU of the same node over NVLink, to other nodes over RDMA;
#: ``"rdma"``: the low-latency kernels before it, every copy to another GPU over RDMA
#: (``deep_ep/buffer.py`` set ``NVSHMEM_DISABLE_P2P=1``), the node's own GPUs included.
TRANSPORTS = ("two-hop", "nvlink+rdma", "rdma")


@dataclass(frozen=True)
class AllToAllMeasurement:
    """One row of DeepEP's published performance tables: the bandwidth DeepEP reports
    (``gb_per_s``, for ``link``) and, for the low-latency kernels, the measured time; the
    ``transport`` the measured version used (one of ``TRANSPORTS``);
    ``table``, the commit whose README or docs published it."""

    kernel: str  # "normal" or "low-latency"
    phase: str  # "dispatch" or "combine"
    ep: int
    tokens_per_rank: int
    hidden: int
    k: int
    bytes_per_element: float  # 1 (FP8 dispatch) or 2 (BF16 combine)
    gb_per_s: float  # the bandwidth DeepEP reports
    microseconds: float | None  # measured latency (low-latency kernels only)
    transport: str
    link: str  # the link DeepEP names its bandwidth for: "NVLink" or "RDMA"
    table: str  # the commit of the published table
    source: str

    def __post_init__(self):
        checks.choice("kernel", self.kernel, ("normal", "low-latency"))
        checks.choice("phase", self.phase, ("dispatch", "combine"))
        checks.integer("ep", self.ep, 1, 4096)
        checks.integer("tokens_per_rank", self.tokens_per_rank, 1, 2**20)
        checks.integer("hidden", self.hidden, 1, 2**20)
        checks.integer("k", self.k, 1, 64)
        checks.positive("bytes_per_element", self.bytes_per_element, 8)
        checks.positive("gb_per_s", self.gb_per_s, 1e5)
        if self.microseconds is not None:
            checks.positive("microseconds", self.microseconds, 1e9)
        checks.choice("transport", self.transport, TRANSPORTS)
        if (self.kernel == "normal") != (self.transport == "two-hop"):
            raise checks.fail("transport", "'two-hop' exactly for the normal kernels",
                              (self.kernel, self.transport))  # fmt: skip
        checks.choice("link", self.link, ("NVLink", "RDMA"))
        checks.text("table", self.table, 40)
        checks.text("source", self.source, 1000)


_FIRST = "deepseek-ai/DeepEP README.md, Performance, commit ebfe47e (first release, 2025-02-24)"
_NORMAL_SRC = (_DEEPEP + ": normal kernels with NVLink and RDMA forwarding, H800, 4096 "
               "tokens per batch, 7168 hidden, top-4 groups, top-8 experts, FP8 dispatch, "
               "BF16 combine; bottleneck bandwidth")  # fmt: skip
_LL_SRC = ("low-latency kernels, H800 with a CX7 400 Gb/s NIC each, 128 tokens per batch, "
           "7168 hidden, top-8 experts, FP8 dispatch, BF16 combine")  # fmt: skip
_NORMAL = ((8, 153, 158), (16, 43, 43), (32, 58, 57), (64, 51, 50))
# (ep, dispatch us, dispatch GB/s, combine us, combine GB/s): docs/legacy.md at dd758ca,
# the EP 8-64 rows as re-measured with NVLink (README news of 2025-06-05, commit de8cfca,
# PR #173), EP 128 and 256 unchanged since the first release (so measured with pure RDMA).
_LOW = ((8, 77, 98, 114, 127), (16, 118, 63, 195, 74), (32, 155, 48, 273, 53),
        (64, 173, 43, 314, 46), (128, 192, 39, 369, 39), (256, 194, 39, 360, 40))  # fmt: skip
# The first release's EP 8-64 rows, pure RDMA (README at ebfe47e, replaced at de8cfca).
_LOW_FIRST = ((8, 163, 46, 318, 46), (16, 173, 43, 329, 44), (32, 182, 41, 350, 41),
              (64, 186, 40, 353, 41))  # fmt: skip


def _low(rows, table, source, transport_of):
    phases = lambda du, dbw, cu, cbw: (("dispatch", 1, du, dbw), ("combine", 2, cu, cbw))  # noqa: E731
    return [AllToAllMeasurement("low-latency", phase, ep, 128, 7168, 8, b, bw, us,
                                transport_of(ep), "RDMA", table, source)
            for ep, *row in rows for phase, b, us, bw in phases(*row)]  # fmt: skip


DEEPEP_MEASUREMENTS = tuple(
    [AllToAllMeasurement("normal", phase, ep, 4096, 7168, 8, b, bw, None, "two-hop",
                         "NVLink" if ep == 8 else "RDMA", "dd758ca", _NORMAL_SRC)
     for ep, d, c in _NORMAL for phase, b, bw in (("dispatch", 1, d), ("combine", 2, c))]
    + _low(_LOW, "dd758ca",
           _DEEPEP + ": " + _LL_SRC + "; EP 8-64 re-measured with NVLink to the node's GPUs "
           "(README news 2025-06-05, commit de8cfca, PR #173), EP 128 and 256 as first "
           "published (pure RDMA)",
           lambda ep: "nvlink+rdma" if ep <= 64 else "rdma")
    + _low(_LOW_FIRST, "ebfe47e", _FIRST + ": " + _LL_SRC + ", pure RDMA", lambda ep: "rdma")
)  # fmt: skip

#: FP8 activations carry one fp32 scale per 1 x 128 tile (DeepSeek-V3 report, Sec. 3.3.2):
#: 4 bytes per 128 elements on top of the 1-byte values.
FP8_SCALE_BYTES_PER_ELEMENT = 4 / 128
