"""Published MoE models, training setups and all-to-all measurements, each with its source.

Taught in chapter 7. Nothing here is fitted: the configurations are the ones their
authors published, and the chapter recomputes their parameter counts with
:func:`scaleout.moe.moe_parameters` and prices DeepEP's measured all-to-alls with
:mod:`scaleout.moe.deepep` (the transport each measured version used, the bytes DeepEP
counts).

Every number comes from ``scaleout/data/moe.csv`` (the book's long format, loaded by
:func:`scaleout.data.load`: one number a row with its unit, references.bib key, locator and
kind), by row ``key``; the model shapes and the DeepEP rows by their setting columns
(``subject``, ``quantity``, ``kernel``, ``phase``, ``ep``, ``version``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import checks, data, hardware
from .cost import Network
from .placement import MoEModel

_ROWS = data.load("moe")
_BY_KEY = {v.key: v for v in _ROWS}


def _value(key: str) -> float:
    """The value of row ``key`` of moe.csv."""
    return _BY_KEY[checks.choice("key", key, sorted(_BY_KEY))].value


def _int(key: str) -> int:
    """The value of row ``key``, an integer (a count, a size, a published integral figure)."""
    return _integral(_BY_KEY[checks.choice("key", key, sorted(_BY_KEY))])


def _integral(row: data.Value) -> int:
    if row.value != int(row.value):
        raise ValueError(f"moe.csv row {row.key!r} must hold an integer, got {row.value!r}")
    return int(row.value)


def _shape(prefix: str, fields: tuple[str, ...]) -> dict:
    """A model's stated sizes by field, from the rows ``<prefix>-<field>`` (with dashes)."""
    return {f: _int(f"{prefix}-{f.replace('_', '-')}") for f in fields}


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


_MOE_FIELDS = ("layers", "hidden", "experts", "k", "expert_ffn", "vocab", "matmuls")
_MLA_FIELDS = ("heads", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
               "v_head_dim", "dense_layers", "dense_ffn", "shared_experts")  # fmt: skip
_v3 = _shape("v3", _MOE_FIELDS + _MLA_FIELDS)
DEEPSEEK_V3 = MoEModel(
    "DeepSeek-V3", **{f: _v3[f] for f in _MOE_FIELDS},
    attention=mla_parameters(_v3["hidden"], _v3["heads"], _v3["q_lora_rank"],
                             _v3["kv_lora_rank"], _v3["qk_nope_head_dim"],
                             _v3["qk_rope_head_dim"], _v3["v_head_dim"]),
    dense_layers=_v3["dense_layers"], dense_ffn=_v3["dense_ffn"],
    shared_experts=_v3["shared_experts"],
    source=_V3_CONFIG + "; the multi-token-prediction module (14B) is not counted",
)  # fmt: skip
#: DeepSeek-V3's attention heads (config ``n_heads``), for a dense model of its width.
DEEPSEEK_V3_HEADS = _v3["heads"]
_mix = _shape("mixtral", _MOE_FIELDS + ("heads", "kv_heads", "head_dim"))
MIXTRAL_8X7B = MoEModel(
    "Mixtral 8x7B", **{f: _mix[f] for f in _MOE_FIELDS},
    attention=gqa_parameters(_mix["hidden"], _mix["heads"], _mix["kv_heads"], _mix["head_dim"]),
    source=_MIXTRAL,
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
    PublishedCount("DeepSeek-V3", _value("v3-total"), _value("v3-active"),
                   _V3_PAPER + ", abstract; README (685B with MTP)"),
    PublishedCount("Mixtral 8x7B", _value("mixtral-total"), _value("mixtral-active"),
                   "Jiang et al. 2024, Sec. 2: 47B parameters, 13B active per token"),
    PublishedCount("Switch-C", _value("switch-c-total"), None,
                   "Fedus et al. 2022 (JMLR), Table 9: 1571B parameters, 2048 experts, "
                   "top-1 routing; active parameters not stated"),
)  # fmt: skip


@dataclass(frozen=True)
class TrainingSetup:
    """How a published MoE model was trained: GPUs, parallel degrees, routing, and where
    the source states them, its sequence length ``seq`` and (final) global ``batch`` in
    sequences."""

    model: str
    gpus: int
    gpus_per_node: int
    pp: int
    ep: int
    tp: int
    max_nodes_per_token: int | None
    source: str
    seq: int | None = None
    batch: int | None = None

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
        if self.seq is not None:
            checks.integer("seq", self.seq, 1, 2**24)
        if self.batch is not None:
            checks.integer("batch", self.batch, 1, 2**30)

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
    "DeepSeek-V3", gpus=_int("v3-train-gpus"), gpus_per_node=_int("v3-train-gpus-per-node"),
    pp=_int("v3-train-pp"), ep=_int("v3-train-ep"), tp=_int("v3-train-tp"),
    max_nodes_per_token=_int("v3-train-max-nodes"),
    source=_V3_PAPER + ", Sec. 3.1 (2048 H800, 8 per node, NVLink/NVSwitch inside, "
    "InfiniBand across) and Sec. 3.2 (16-way PP, 64-way EP spanning 8 nodes, ZeRO-1 DP; "
    "no TP); Sec. 2.1.2 and 3.2.2 (each token sent to at most M = 4 nodes); Sec. 4.2 "
    "(sequences of 4K, the final batch of 15,360 sequences)",
    seq=_int("v3-train-seq"), batch=_int("v3-train-batch"),
)  # fmt: skip

#: DeepSeek's H800 nodes as DeepEP and the V3 report describe them, NVLink about 160 GB/s
#: and a 400 Gb/s ConnectX-7 InfiniBand NIC per GPU at about 50 GB/s (per direction), with
#: the latencies the book's NVLink and NIC presets assume (scaleout.hardware).
H800_NETWORK = Network(
    DEEPSEEK_V3_TRAINING.gpus_per_node, _value("h800-nvlink"), _value("h800-rdma"),
    hardware.LINKS["nvlink4-h100"].alpha_s, hardware.LINKS["nic-400g"].alpha_s,
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
#: Bytes per element of each phase: FP8 dispatch, BF16 combine (the dtypes' sizes).
_BYTES = {"dispatch": 1, "combine": 2}
_LL_SOURCES = {
    "dd758ca": (_DEEPEP + ": " + _LL_SRC + "; EP 8-64 re-measured with NVLink to the node's GPUs "
                "(README news 2025-06-05, commit de8cfca, PR #173), EP 128 and 256 as first "
                "published (pure RDMA)"),
    "ebfe47e": _FIRST + ": " + _LL_SRC + ", pure RDMA",
}  # fmt: skip


def _transport(kernel: str, version: str, ep: int) -> str:
    if kernel == "normal":
        return "two-hop"
    return "nvlink+rdma" if version == "dd758ca" and ep <= 64 else "rdma"


def _measurements() -> tuple[AllToAllMeasurement, ...]:
    """DeepEP's tables from moe.csv, in the file's order: one record per bandwidth row, with
    the latency row of the same setting (low-latency kernels) and its table's setup rows."""
    out = []
    for v in _ROWS:
        if v.get("subject") != "DeepEP" or v.get("quantity") != "bandwidth":
            continue
        kernel, phase, ver, ep = v.get("kernel"), v.get("phase"), v.get("version"), int(v.get("ep"))
        tag = f"deepep-{'normal' if kernel == 'normal' else 'll'}-{ver}"
        us = None if kernel == "normal" else _int(f"deepep-ll-{ver}-{phase}-ep{ep}-us")
        intranode = ep <= H800_NETWORK.gpus_per_node  # the normal table's "Intranode" row
        link = "NVLink" if kernel == "normal" and intranode else "RDMA"
        source = _NORMAL_SRC if kernel == "normal" else _LL_SOURCES[ver]
        out.append(AllToAllMeasurement(
            kernel, phase, ep, _int(f"{tag}-tokens"), _int(f"{tag}-hidden"), _int(f"{tag}-k"),
            _BYTES[phase], _integral(v), us,
            _transport(kernel, ver, ep), link, ver, source))  # fmt: skip
    return tuple(out)


DEEPEP_MEASUREMENTS = _measurements()

#: FP8 activations carry one fp32 scale per 1 x 128 tile (DeepSeek-V3 report, Sec. 3.3.2):
#: 4 bytes per 128 elements on top of the 1-byte values.
FP8_SCALE_BYTES_PER_ELEMENT = 4 / _int("v3-fp8-tile")

#: DeepSeek-V3's ``route_scale`` (config_671B.json): the normalised sigmoid gate weights are
#: multiplied by it; and its expert groups (one per node) of which at most
#: ``V3_LIMITED_GROUPS`` are eligible per token (``n_expert_groups``, ``n_limited_groups``).
V3_ROUTE_SCALE = _value("v3-route-scale")
V3_EXPERT_GROUPS = _int("v3-expert-groups")
V3_LIMITED_GROUPS = _int("v3-limited-groups")

#: Switch Transformer's multiplier alpha of the load-balancing loss (Sec. 2.2: 10^-2), and
#: Switch-C's experts per layer (Table 9).
SWITCH_AUX_LOSS_COEF = _value("switch-aux-loss-coef")
SWITCH_C_EXPERTS = _int("switch-c-experts")

#: DeepEP V2's README results on SM90 GPUs with CX7 NICs (8K tokens per batch, V3's shape),
#: "logical" RDMA bandwidths in GB/s that include local-rank traffic, by (phase, EP size):
#: not priced by the book (the README gives neither the GPU, the routing nor the mode).
DEEPEP_V2_GB_PER_S = {
    (v.get("phase"), int(v.get("ep"))): v.value
    for v in _ROWS
    if v.get("subject") == "DeepEP V2" and v.get("quantity") == "bandwidth"
}

#: DeepEP's low-latency test (``tests/test_low_latency.py``): the 16-byte header of each
#: FP8 message it counts (``hidden + hidden / 128 * 4 + 16``), and the random selections it
#: masks per rank before counting (``for i in range(10)``).
LL_HEADER_BYTES = _int("deepep-ll-header-bytes")
LL_MASKED_DRAWS = _int("deepep-ll-masked-draws")
