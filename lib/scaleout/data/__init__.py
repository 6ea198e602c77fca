"""Published numbers as data: CSV files in long format, one number a row, and their one loader.

Every file ``lib/scaleout/data/<name>.csv`` has the columns of :data:`COLUMNS` (the value, its
unit, ``source``: a key of the book's ``references.bib``, ``locator``: the table, figure,
page, column or line in that source, ``kind``: one of :data:`KINDS`, ``uncertainty``: a number
in the value's unit or empty, and a ``note``), an optional ``key`` (the row's name, unique in
its file) and the columns of its setting (whatever tells its rows apart; the file's header
names them). The files, and what reads them:

* ``gpus.csv`` (``gpu``, ``field``): :data:`scaleout.hardware.GPUS`;
* ``interconnect.csv`` (``table``, ``row``, ``field``): the NVLink, NVSwitch, system, PCIe
  and NIC tables and the link presets of :mod:`scaleout.hardware`;
* ``models.csv`` (``model``, ``field``): :data:`scaleout.transformer.MODELS` and
  :func:`scaleout.transformer.stated_params`;
* ``attention.csv``: FlashAttention's rates in :mod:`scaleout.compute.flash`;
* ``nccl_constants.csv`` (``name``, ``i``, ``j``, ``k``, ``literal``): NCCL's cost-model
  constants and its InfiniBand transport's defaults, :data:`scaleout.nccl.constants.CONSTANTS`;
* ``compute.csv``, ``tensor_parallel.csv``, ``pipeline.csv``, ``zero.csv``, ``moe.csv``,
  ``context_parallel.csv``, ``nccl.csv``, ``rdma.csv``, ``congestion.csv``, ``failures.csv``:
  the ``published`` module of the chapter's package (``scaleout.<name>.published``, or
  ``scaleout.pipeline_published`` and ``scaleout.zero_published``);
* ``trees.csv``: the Summit measurements of :mod:`scaleout.trees`;
* ``planner_runs.csv``, ``planner_figures.csv``, ``planner_models.csv``:
  :mod:`scaleout.planner.published`;
* ``deepspeed.csv``: DeepSpeed's ZeRO defaults in :mod:`scaleout.deepspeed_zero3`.

``kind`` says how the number was obtained: ``measured`` (a measurement the source
reports), ``read-off`` (read from a figure, with its reading uncertainty), ``stated`` (a
specification or a value the source states, or simple arithmetic on stated values, said in
the note) and ``assumed`` (not in a primary source: the note says why it is used, and
``source`` names the document the assumption leans on). Words about a value ("up to",
"about", "a lower bound") go in the note, never in ``uncertainty``.

:func:`load` returns a file's rows as :class:`Value` records; :func:`gpu_fields` one GPU's
fields by column name (what :data:`scaleout.hardware.GPUS` is built from). The unit test
``tests/unit/test_data.py`` checks every source key against ``references.bib``, every unit
against :data:`UNITS` and that no (source, locator, setting) appears twice; each reader's
tests check that its records are the rows.

Files: :data:`FILES`. Limits: at most :data:`MAX_ROWS` rows a file.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

from .. import checks

HERE = Path(__file__).resolve().parent
#: The columns every file has, besides its setting and the optional ``key``.
COLUMNS = ("value", "unit", "source", "locator", "kind", "uncertainty", "note")
#: The optional column that names a row (unique in its file); not part of the setting.
KEY = "key"
#: How a number was obtained (the module docstring says what each means).
KINDS = ("measured", "read-off", "stated", "assumed")
#: The units a value may have; the integral ones are read as ``int``.
UNITS = (
    "TFLOP/s", "GB", "TB/s", "MB", "W", "count", "year", "generation",  # gpus.csv
    "fraction", "%", "1", "probability", "GPUs", "Gb/s", "GB/s", "bytes", "s", "h", "days",
    "steps", "QPs", "parameters", "interruptions", "restarts", "hosts",
    "ms", "us", "samples/s", "tokens/s", "tokens", "layers", "heads", "ratio", "x", "TB",
    "GT/s", "bits",  # interconnect.csv
    "FLOP/s", "sequences",  # compute.csv, tensor_parallel.csv
    "iter/s",  # context_parallel.csv
    "ranks",  # nccl_logs/logs.csv (calibrate.published)
    "100 Mb/s",  # nccl_constants.csv (NCCL's unit of PCIe lane speed)
)  # fmt: skip
INTEGRAL_UNITS = ("count", "year", "generation", "bits")
#: The files of this package, every ``*.csv`` beside this module (names without ``.csv``).
FILES = tuple(sorted(p.stem for p in HERE.glob("*.csv")))
#: The most rows a file may have.
MAX_ROWS = 100_000


@dataclass(frozen=True)
class Value:
    """One published number (see the module docstring); ``setting`` holds the file's setting
    columns as (column, value) pairs; ``key`` the row's name ("" in a file without keys). An
    assumed value needs a note that says why it is assumed."""

    value: float
    unit: str
    source: str
    locator: str
    kind: str
    uncertainty: float | None
    note: str
    setting: tuple
    key: str = ""

    def __post_init__(self):
        checks.real("value", self.value)
        checks.choice("unit", self.unit, UNITS)
        checks.text("source", self.source, 80)
        checks.text("locator", self.locator, 200)
        checks.choice("kind", self.kind, KINDS)
        if self.uncertainty is not None:
            checks.nonnegative("uncertainty", self.uncertainty)
        if not isinstance(self.note, str):
            raise checks.fail("note", "a string", self.note)
        if self.kind == "assumed" and not self.note.strip():
            raise checks.fail("note", "a reason why the value is assumed", self.note)
        if not isinstance(self.key, str) or len(self.key) > 80:
            raise checks.fail("key", "a string of at most 80 characters", self.key)
        if not isinstance(self.setting, tuple):
            raise checks.fail("setting", "a tuple of (column, value) pairs", self.setting)

    def get(self, column: str) -> str:
        """The setting's value in ``column``."""
        return dict(self.setting)[checks.choice("column", column, [k for k, _ in self.setting])]


def _number(text: str, unit: str):
    return int(text) if unit in INTEGRAL_UNITS else float(text)


def load(name: str) -> tuple[Value, ...]:
    """Every row of ``<name>.csv`` (a name of :data:`FILES`) as a :class:`Value`."""
    return _load(checks.choice("name", name, FILES))


def _uncertainty(name: str, line: int, text: str):
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        raise ValueError(
            f"{name}.csv line {line}: uncertainty must be a number in the value's unit or "
            f"empty (words such as 'up to' belong in the note), got {text!r}"
        ) from None


@functools.lru_cache(maxsize=16)
def _load(name: str) -> tuple[Value, ...]:
    with open(HERE / f"{name}.csv", newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        setting = [c for c in reader.fieldnames if c not in COLUMNS and c != KEY]
        missing = [c for c in COLUMNS if c not in reader.fieldnames]
        if missing:
            raise ValueError(f"{name}.csv must have the columns {COLUMNS}, missing {missing}")
        out, keys = [], set()
        for line, row in enumerate(reader, start=2):
            if len(out) >= MAX_ROWS:
                raise ValueError(f"{name}.csv must have at most {MAX_ROWS} rows")
            unit = row["unit"]
            checks.choice("unit", unit, UNITS)
            key = row.get(KEY) or ""
            if KEY in reader.fieldnames and (not key or key in keys):
                raise ValueError(f"{name}.csv line {line}: key must be unique, got {key!r}")
            keys.add(key)
            out.append(Value(_number(row["value"], unit), unit, row["source"], row["locator"],
                             row["kind"], _uncertainty(name, line, row["uncertainty"]),
                             row["note"], tuple((c, row[c]) for c in setting), key))  # fmt: skip
    return tuple(out)


def gpu_fields(gpu: str) -> dict:
    """The numeric fields of GPU row ``gpu`` from ``gpus.csv``, by column name (fields the
    GPU does not have are absent)."""
    rows = [v for v in load("gpus") if v.get("gpu") == gpu]
    if not rows:
        names = sorted({v.get("gpu") for v in load("gpus")})
        raise checks.fail("gpu", f"one of {names}", gpu)
    return {v.get("field"): v.value for v in rows}


def gpu_sources(gpu: str) -> dict:
    """Where each field of GPU row ``gpu`` comes from: field -> (source key, locator, kind)."""
    gpu_fields(gpu)  # checks the name
    return {v.get("field"): (v.source, v.locator, v.kind)
            for v in load("gpus") if v.get("gpu") == gpu}  # fmt: skip
