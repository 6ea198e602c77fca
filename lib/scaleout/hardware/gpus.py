"""GPUs: one row per GPU, the book's one place for GPU facts (chapter 14). The numbers are
read from ``scaleout/data/gpus.csv``; the sources and notes of each row are here.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import checks
from .. import data as _data
from .interconnect import nvlink_generation
from .links import _YEARS, _note, _source
from .units import Bandwidth

# Dense peaks, memory, SMs, L2 and NVLink per GPU. NVIDIA's datasheets quote the Tensor Core
# figures of Hopper and Blackwell "with sparsity" (2:4 structured sparsity doubles them);
# dense matrices run at half of those, and the table stores the dense figure only. Each row
# names its primary documents; ``secondary`` lists the fields that no primary document
# states (or that this book could only confirm in secondary copies), and ``note`` says
# where they come from. The NVLink figure is never stored twice: a GPU names its NVLink
# generation and link count, and the bandwidth comes from ``NVLINK_GENERATIONS``.
# The figures of the named documents were checked against copies quoted elsewhere (the ML
# Engineering Open Book's TFLOPS and cache tables; G. Lockwood's processor notes), not
# against the PDFs themselves, which could not be opened where this table was written.

GPU_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
GPU_FIELDS = (
    "fp32_tflops", "tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops", "memory_gb",
    "hbm_tb_per_s", "sms", "l2_mb", "nvlink_links", "tdp_w",
)  # fmt: skip
MAX_TFLOPS = 1e6  # dense TFLOP/s of one GPU; a million is a thousand times any GPU's
MAX_SMS = 4096


def _optional_tflops(name: str, value):
    return None if value is None else checks.positive(name, value, MAX_TFLOPS)


@dataclass(frozen=True)
class GPU:
    """One GPU: dense peak FLOP/s per data type, HBM, SMs, L2 and NVLink, with sources.

    Peaks are *dense* Tensor Core (or, for fp32, CUDA core) teraFLOP/s; ``None`` where the
    GPU has no such data type. ``memory_gb`` is the capacity as the vendor quotes it;
    ``hbm_tb_per_s`` the peak HBM bandwidth in TB/s (1e12 bytes/s). ``nvlink_generation``
    (a row of ``NVLINK_GENERATIONS``, or None) and ``nvlink_links`` give the NVLink
    bandwidth (:attr:`nvlink`). ``secondary`` names the fields not confirmed in a primary
    document (see ``note``).
    """

    name: str
    architecture: str
    year: int
    form_factor: str
    fp32_tflops: float
    tf32_tflops: float | None
    bf16_tflops: float | None
    fp16_tflops: float | None
    fp8_tflops: float | None
    memory_gb: float
    hbm_tb_per_s: float
    sms: int
    l2_mb: float | None  # None: not disclosed
    nvlink_generation: int | None
    nvlink_links: int
    tdp_w: float
    source: str
    secondary: tuple[str, ...] = ()
    note: str = ""

    def __post_init__(self):
        checks.text("name", self.name, 40)
        checks.text("architecture", self.architecture, 40)
        checks.integer("year", self.year, *_YEARS)
        checks.choice("form_factor", self.form_factor, ("SXM", "PCIe", "superchip"))
        checks.positive("fp32_tflops", self.fp32_tflops, MAX_TFLOPS)
        for key in ("tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops"):
            _optional_tflops(key, getattr(self, key))
        checks.positive("memory_gb", self.memory_gb, 1e6)
        checks.positive("hbm_tb_per_s", self.hbm_tb_per_s, 1e4)
        checks.integer("sms", self.sms, 1, MAX_SMS)
        if self.l2_mb is not None:
            checks.positive("l2_mb", self.l2_mb, 1e5)
        if self.nvlink_generation is None:
            checks.integer("nvlink_links", self.nvlink_links, 0, 0)
        else:
            row = nvlink_generation(self.nvlink_generation)
            checks.integer("nvlink_links", self.nvlink_links, 1, row.links)
        checks.positive("tdp_w", self.tdp_w, 1e5)
        _source("source", self.source)
        if not isinstance(self.secondary, tuple):
            what = f"a tuple of field names from {GPU_FIELDS}"
            raise checks.fail("secondary", what, self.secondary)
        for field in self.secondary:
            checks.choice("secondary", field, GPU_FIELDS)
        _note(self.note)

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The data types this GPU has a dense peak for, in ``GPU_DTYPES`` order."""
        return tuple(d for d in GPU_DTYPES if getattr(self, f"{d}_tflops") is not None)

    def peak_flops(self, dtype: str = "bf16") -> float:
        """Dense peak FLOP/s for ``dtype`` (one of :attr:`dtypes`)."""
        dtype = checks.choice("dtype", dtype, self.dtypes)
        return getattr(self, f"{dtype}_tflops") * 1e12

    @property
    def hbm_bytes_per_s(self) -> float:
        """Peak HBM bandwidth in bytes/s."""
        return self.hbm_tb_per_s * 1e12

    @property
    def memory_bytes(self) -> float:
        """HBM capacity in bytes (``memory_gb`` x 1e9)."""
        return self.memory_gb * 1e9

    def ridge_intensity(self, dtype: str = "bf16") -> float:
        """FLOPs per HBM byte where the roofline's two limits meet: peak / bandwidth."""
        return self.peak_flops(dtype) / self.hbm_bytes_per_s

    @property
    def nvlink(self) -> Bandwidth | None:
        """The GPU's NVLink bandwidth, its links times the per-link figure of its
        generation in ``NVLINK_GENERATIONS`` (None without NVLink)."""
        if self.nvlink_generation is None:
            return None
        return nvlink_generation(self.nvlink_generation).per_link * self.nvlink_links


_SPARSE = "datasheet Tensor Core figures are with sparsity; the table stores half (dense)"
_V100_DOC = (
    "NVIDIA Tesla V100 datasheet (2018), V100 SXM2 column: FP32 15.7, Tensor 125 TFLOPS, "
    "32 GB HBM2, 900 GB/s, NVLink 300 GB/s, 300 W; NVIDIA Tesla V100 GPU Architecture "
    "whitepaper (2017), Table 1: 80 SMs, 6144 KB L2"
)
_A100_DOC = (
    "NVIDIA A100 Tensor Core GPU datasheet (2021), A100 {gb}GB SXM column: FP32 19.5, TF32 "
    "156, BF16/FP16 312 TFLOPS dense (312/624 with sparsity), {mem}, {bw} GB/s, NVLink "
    "600 GB/s, 400 W; NVIDIA A100 Tensor Core GPU Architecture whitepaper (2020), Table 1: "
    "108 SMs, 40 MB L2"
)
_H100_DOC = (
    "NVIDIA H100 Tensor Core GPU datasheet (2023), H100 {ff} column: FP32 {fp32}, TF32 "
    "{tf32}*, BF16/FP16 {bf16}*, FP8 {fp8}* TFLOPS (* with sparsity), 80 GB, {bw} TB/s, "
    "NVLink {nv} GB/s; NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), Table 3: "
    "{sms} SMs, 50 MB L2"
)
_H200_DOC = (
    "NVIDIA H200 Tensor Core GPU datasheet (2024), H200 SXM column: FP32 67, TF32 989*, "
    "BF16/FP16 1,979*, FP8 3,958* TFLOPS (* with sparsity), 141 GB HBM3e, 4.8 TB/s, NVLink "
    "900 GB/s, up to 700 W"
)
_B200_DOC = (
    "NVIDIA HGX B200 datasheet (2024), per 8 GPUs: FP32 600 TFLOPS, TF32 18, BF16/FP16 36, "
    "FP8 72 PFLOPS (Tensor Core, with sparsity); NVIDIA DGX B200 datasheet (2024): 8 GPUs, "
    "1,440 GB HBM3e, 64 TB/s, NVLink 5 at 1.8 TB/s per GPU; Blackwell Architecture Technical "
    "Brief (2024): up to 1,000 W"
)
_GB200_DOC = (
    "NVIDIA GB200 NVL72 specifications (2024), per 72 GPUs: TF32 180, BF16/FP16 360, FP8 "
    "720 PFLOPS (Tensor Core, with sparsity), up to 13.4 TB HBM3e, 576 TB/s, NVLink 5 at "
    "1.8 TB/s per GPU"
)
_MLE = (
    "ML Engineering Open Book (Bekman), compute/accelerator/README.md and "
    "training/performance/README.md at commit 744d01e"
)

#: The text of each GPU row (architecture, form factor, source text, fields not confirmed in a
#: primary document, note); its numbers are in ``lib/scaleout/data/gpus.csv``, one a row with
#: its references.bib key (:func:`scaleout.data.gpu_fields`).
_GPU_TEXT = {
    "V100-32GB": ("Volta", "SXM", _V100_DOC, ("nvlink_links",),
                  "fp16 is the Tensor Core peak; no bf16, tf32 or fp8. The NVLink 2 row is "
                  "marked secondary in NVLINK_GENERATIONS."),
    "A100-40GB": ("Ampere", "SXM", _A100_DOC.format(gb=40, mem="40 GB HBM2", bw="1,555"), (), ""),
    "A100-80GB": ("Ampere", "SXM", _A100_DOC.format(gb=80, mem="80 GB HBM2e", bw="2,039"), (),
                  ""),
    "H100-SXM": ("Hopper", "SXM",
                 _H100_DOC.format(ff="SXM", fp32=67, tf32=989, bf16="1,979", fp8="3,958",
                                  bw=3.35, nv=900, sms=132), (), _SPARSE),
    "H100-PCIe": ("Hopper", "PCIe",
                  _H100_DOC.format(ff="PCIe", fp32=51, tf32=756, bf16="1,513", fp8="3,026",
                                   bw=2.0, nv=600, sms=114), ("nvlink_links",),
                  _SPARSE + ". NVLink 600 GB/s through the NVLink bridge: 12 NVLink 4 links "
                  "(600 / 50 GB/s per link) is derived, not quoted."),
    "H200": ("Hopper", "SXM", _H200_DOC, ("sms", "l2_mb"),
             _SPARSE + ". The datasheet gives no SM count or L2; 132 SMs and 50 MiB L2 are the "
             f"H100 SXM's, as the cache table of the {_MLE} lists for H200 SXM."),
    "B200": ("Blackwell", "SXM", _B200_DOC, ("sms",),
             _SPARSE + "; per-GPU values are the 8-GPU totals / 8. No datasheet gives the SM "
             f"count: 148 is a measured multi_processor_count quoted in the {_MLE}. L2 is not "
             "disclosed (Blackwell tuning guide)."),
    "GB200": ("Blackwell", "superchip", _GB200_DOC, ("fp32_tflops", "sms", "tdp_w"),
              _SPARSE + "; per-GPU values are the 72-GPU totals / 72 (two GPUs per superchip). "
              f"FP32 80 TFLOPS is from the TFLOPS table of the {_MLE}; the SM count is assumed "
              "equal to the B200's (same silicon, not published); 1,200 W is from secondary "
              "reports of the GB200 configuration."),
}  # fmt: skip
_OPTIONAL = ("tf32_tflops", "bf16_tflops", "fp16_tflops", "fp8_tflops", "l2_mb",
             "nvlink_generation")  # fmt: skip


def _gpu_row(name: str) -> GPU:
    architecture, form_factor, source, secondary, note = _GPU_TEXT[name]
    fields = {key: None for key in _OPTIONAL} | _data.gpu_fields(name)
    return GPU(name=name, architecture=architecture, form_factor=form_factor, source=source,
               secondary=secondary, note=note, **fields)  # fmt: skip


#: Every GPU row, by name (read one with :func:`gpu`).
GPUS: dict[str, GPU] = {name: _gpu_row(name) for name in _GPU_TEXT}


def gpu(name) -> GPU:
    """The row of ``GPUS`` called ``name`` ("A100-40GB", "A100-80GB", "H100-SXM",
    "H100-PCIe", "H200", "B200", "GB200", "V100-32GB"), or ``name`` itself if it is
    already a :class:`GPU` row."""
    if isinstance(name, GPU):
        return name
    return GPUS[checks.choice("name", name, tuple(GPUS))]


#: The H100 SXM's dense BF16 peak in FLOP/s, from its row of ``GPUS`` (NVIDIA's H100 datasheet
#: quotes 1,979 TFLOPS *with sparsity*; dense matrices run at half of that): the default peak
#: of the tensor-parallel, expert-parallel and context-parallel cost models.
H100_SXM_BF16_DENSE_FLOPS = GPUS["H100-SXM"].bf16_tflops * 1e12
