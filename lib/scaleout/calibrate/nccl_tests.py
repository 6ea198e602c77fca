"""Reading (and writing) the tables nccl-tests and RCCL's rccl-tests print.

Every layout these tools have printed, read from their sources:

* nccl-tests v1.0.0 (``src/all_reduce.cu``, ``print_header``): columns ``bytes N type op``,
  then ``time algbw busbw res`` twice, time in **milliseconds** (``%7.3f`` of seconds x 1e3),
  no units line; all-gather has no ``op`` column.
* v2.0.0 to v2.10 (``src/<collective>.cu``, ``print_header``): ``size count type`` plus the
  collective's own ``redop`` and/or ``root`` columns (all-gather neither, broadcast ``root``,
  reduce both), ``time algbw busbw error`` twice in microseconds, the error printed
  ``%5.0le`` (``0e+00``), ``N/A`` without ``-c 1``.
* v2.13 on (``src/common.cu``, then ``src/util.cu`` ``writeResultHeader``): every table has
  ``redop`` and ``root`` (``none`` and ``-1`` where they mean nothing) and ``#wrong``; the
  header may read ``cputime`` (``-C 1``), may end in a ``timestamp`` column, and with
  per-iteration timing each half carries ``i_min i_max i_p99 i_cv%`` too
  (``util.cu`` at NVIDIA/nccl-tests a0b82b2). Trace replay leaves the out-of-place half blank.
* rccl-tests (``src/common.cu`` at ROCm/rccl-tests ae3e635): the 2.13 layout, an
  ``in-place``-only table when out-of-place is off, an asterisk after an error above the
  threshold (``%5.0le*``), ``# nThread: 1 nGpus: ...`` and ``# Testing N cycle.`` lines.

Around the table: ``# Collective test starting: all_reduce_perf`` (newer), the command line
naming the binary (any), the device list (``#  Rank  0 Group  0 Pid 123 on host device  0
[0x1b] NVIDIA H100 80GB HBM3``; older without ``Group`` or ``Pid``), ``# Avg bus bandwidth
: 95.3``, ``NCCL INFO`` chatter from ``NCCL_DEBUG=INFO`` between any lines, and mpirun's
``[1,0]<stdout>:`` tags in front of every line. Markdown pastes often lose the leading
``#``; the parser does not need it.

Several tests in one text: :func:`parse_nccl_tests_all` returns every table, in order;
:func:`parse_nccl_tests` returns the only one, or the one of ``collective=``, and raises if
that choice is ambiguous. :func:`format_nccl_tests` writes a log in the current layout
(``util.cu``'s field widths and ``getFloatStr`` rounding); reading it back gives the same
log up to that rounding.
"""

# ruff: noqa: UP031 -- printf formats written as nccl-tests writes them (util.cu)
from __future__ import annotations

import dataclasses
import re

from .. import checks
from .records import (
    BINARIES,
    COLLECTIVES,
    MAX_CHARS,
    MAX_INFO,
    MAX_ROWS,
    Log,
    Result,
    Row,
    finite_or_none,
)

_TAG = re.compile(r"^\s*(?:\[\d+,\d+\]<std(?:out|err)>:|\d+:\s)")  # mpirun / srun -l
_STARTING = re.compile(r"Collective test starting:\s*(\S+)")
_CONCLUDED = re.compile(r"Collective test concluded:\s*(\S+)")
_BINARY = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(sorted(BINARIES, key=len, reverse=True))
                     + r")_perf(?:_mpi)?\b")  # fmt: skip
_DEVICE = re.compile(
    r"Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?(?:Pid\s+\d+\s+)?on\s+(\S+)\s+device\s+(\d+)\s+"
    r"\[([^\]]*)\]\s*(.*)$"
)
_AVG = re.compile(r"Avg bus bandwidth\s*:\s*(\S+)")
_NRANKS = re.compile(r"\bn[Rr]anks\s+(\d+)")
_INFO = re.compile(r"\bNCCL (?:INFO|WARN)\b")
_LEAD = {"size": "nbytes", "bytes": "nbytes", "count": "count", "n": "count", "type": "dtype",
         "redop": "redop", "op": "redop", "root": "root"}  # fmt: skip
_TIMES = ("time", "cputime")
_NOT_NUMBERS = ("n/a", "nan", "-nan", "inf", "-inf", "+inf")


class _Table:
    """A table being read: its columns, and what came before it."""

    def __init__(self, header, title, pre):
        cols = [c.lower() for c in header]
        first = next(i for i, c in enumerate(cols) if c in _TIMES)
        self.lead = [_LEAD.get(c) for c in cols[:first]]
        if None in self.lead or self.lead[:1] != ["nbytes"]:
            raise ValueError(f"unknown nccl-tests columns {header[:first]}")
        starts = [i for i, c in enumerate(cols) if c in _TIMES]
        self.width = starts[1] - starts[0] if len(starts) > 1 else None
        if self.width is None:
            rest = cols[first:]
            self.width = next((i for i, c in enumerate(rest) if c == "timestamp"), len(rest))
        self.halves = len(starts)
        in_only = self.halves == 1 and "in-place" in title and "out-of-place" not in title
        self.names = ["in_place"] if in_only else ["out_of_place", "in_place"][: self.halves]
        self.ms = header[0].lower() == "bytes"  # v1.0.0: time in milliseconds
        self.columns = " ".join(header)
        self.pre = pre
        self.rows, self.skipped, self.avg = [], [], None

    def row(self, tokens, line: str = "") -> Row | None:
        tokens = _join_asterisks(tokens)
        n, w = len(self.lead), self.width
        body = tokens[n:]
        if len(body) >= w * self.halves:
            halves = [body[i * w : (i + 1) * w] for i in range(self.halves)]
            names = self.names
        elif self.halves == 2 and len(body) >= w:
            # one half: trace replay leaves the out-of-place half blank (32 spaces before the
            # in-place half, util.cu writeBenchMarkLineNullBody); otherwise the in-place half
            # is the one missing
            gap = re.search(r"\S\s{20,}\S", line or "")
            halves = [body[:w]]
            names = ["in_place"] if gap else ["out_of_place"]
        else:
            return None
        lead = dict(zip(self.lead, tokens[:n], strict=True))
        try:
            results = {name: self._result(h) for name, h in zip(names, halves, strict=True)}
            nbytes = int(lead["nbytes"])
            count = int(lead["count"]) if "count" in lead else None
            root = int(lead["root"]) if "root" in lead else None
        except ValueError:
            return None
        return Row(nbytes, count, lead.get("dtype"), lead.get("redop"), root,
                   results.get("out_of_place"), results.get("in_place"))  # fmt: skip

    def _result(self, half) -> Result:
        time, algbw, busbw, wrong = half[:4]
        flagged = wrong.endswith("*")
        t = _number(time)
        if t is not None and self.ms:
            t *= 1e3
        return Result(t, _number(algbw), _number(busbw), _number(wrong.rstrip("*")), flagged)


def _join_asterisks(tokens):
    out = []
    for tok in tokens:
        if tok == "*" and out:
            out[-1] += "*"
        else:
            out.append(tok)
    return out


def _number(token: str) -> float | None:
    if token.lower() in _NOT_NUMBERS:
        return None
    return finite_or_none(float(token))  # ValueError for a non-number: the row is skipped


def _collective(name: str) -> str | None:
    m = _BINARY.search(name + "_perf" if not name.endswith(("_perf", "_perf_mpi")) else name)
    return BINARIES[m.group(1)] if m else None


def _lines(text: str):
    for number, raw in enumerate(re.split(r"\r\n|\r|\n", text), start=1):
        yield number, _TAG.sub("", raw, count=1).rstrip()


def _header(stripped: str):
    tokens = stripped.lstrip("#").split()
    low = [t.lower() for t in tokens]
    if (low and low[0] in ("size", "bytes") and "algbw" in low and "busbw" in low
            and any(t in _TIMES for t in low)):  # fmt: skip
        return tokens
    return None


def _finish(table: _Table, out: list, default_collective):
    if not table.rows:
        return
    pre = table.pre
    devices, ranks = pre["devices"], None
    if devices:
        ranks = len({rank for rank, _ in devices})
    elif pre["nranks"]:
        ranks = max(pre["nranks"])
    info = tuple(pre["info"][:MAX_INFO])
    out.append(Log(
        collective=pre["collective"] or default_collective,
        ranks=ranks,
        devices=tuple(line for _, line in devices),
        avg_busbw_gb_per_s=table.avg,
        rows=tuple(table.rows),
        layout=table.columns,
        info=info,
        skipped=tuple(table.skipped),
    ))  # fmt: skip


def _fresh():
    return {"collective": None, "binary": None, "devices": [], "nranks": [], "info": []}


def parse_nccl_tests_all(text: str) -> tuple[Log, ...]:
    """Every nccl-tests table in ``text``, in order (see the module docstring). Raises
    ``ValueError`` if ``text`` holds no nccl-tests table (no ``size ... time algbw busbw``
    header followed by a row)."""
    if not isinstance(text, str):
        raise checks.fail("text", "a string (the output of nccl-tests)", text)
    if len(text) > MAX_CHARS:
        raise ValueError(f"text must be at most {MAX_CHARS} characters, got {len(text)}")
    logs: list[Log] = []
    pre, table, title, rows = _fresh(), None, "", 0
    binary = None
    for number, line in _lines(text):
        stripped = line.strip()
        if not stripped:
            continue
        if _INFO.search(stripped):
            target = pre if table is None else table.pre
            if len(target["info"]) < MAX_INFO:
                target["info"].append(stripped)
            m = _NRANKS.search(stripped)
            if m:
                target["nranks"].append(int(m.group(1)))
            continue
        m = _STARTING.search(stripped)
        if m:
            if table is not None:
                _finish(table, logs, binary)
                table, binary = None, None
                pre = _fresh()
            pre = {**_fresh(), "info": pre["info"], "nranks": pre["nranks"]}  # chatter before it
            pre["collective"] = _collective(m.group(1).rsplit("/", 1)[-1])
            continue
        m = _CONCLUDED.search(stripped)
        if m:
            if table is not None:
                _finish(table, logs, binary or _collective(m.group(1).rsplit("/", 1)[-1]))
                table, binary, pre = None, None, _fresh()
            continue
        header = _header(stripped)
        if header is not None:
            if table is not None:
                _finish(table, logs, binary)
                pre = {**_fresh(), "collective": table.pre["collective"]}
            table = _Table(header, title, pre)
            continue
        if "out-of-place" in stripped or stripped.lstrip("#").strip().startswith("in-place"):
            title = stripped
            continue
        m = _DEVICE.search(stripped)
        if (m or "nThread" in stripped) and table is not None and table.rows:
            _finish(table, logs, binary)  # the next test's preamble: this table is complete
            table, pre, binary = None, _fresh(), None
        if m and table is None:
            desc = stripped.lstrip("#").strip()
            if (m.group(1), desc) not in pre["devices"]:
                pre["devices"].append((m.group(1), desc))
            continue
        m = _BINARY.search(stripped)
        if m and not stripped.startswith("#"):
            if table is not None and table.rows:
                _finish(table, logs, binary)
                table, pre = None, _fresh()
            binary = BINARIES[m.group(1)]
            continue
        if table is None:
            continue
        m = _AVG.search(stripped)
        if m:
            try:
                table.avg = finite_or_none(float(m.group(1)))
            except ValueError:
                table.avg = None
            continue
        tokens = stripped.split()
        if stripped.startswith("#") or not tokens[0].isdigit():
            continue
        row = table.row(tokens, stripped)
        if row is None:
            table.skipped.append((number, stripped[:200]))
            continue
        rows += 1
        if rows > MAX_ROWS:
            raise ValueError(f"text must hold at most {MAX_ROWS} nccl-tests rows, got more")
        table.rows.append(row)
    if table is not None:
        _finish(table, logs, binary)
    if not logs:
        raise ValueError(
            "text must be nccl-tests output: found no table with a 'size count type ... time "
            "algbw busbw' header followed by result rows"
        )
    return tuple(logs)


def parse_nccl_tests(text: str, collective: str | None = None) -> Log:
    """The one nccl-tests table in ``text``; where it holds several, the one of
        ``collective`` (a name of ``COLLECTIVES``; a table that
    names no collective is taken to be that one). Raises
        ``ValueError`` for text that is no nccl-tests output, and when the choice is ambiguous
        (use :func:`parse_nccl_tests_all` for every table)."""
    if collective is not None:
        checks.choice("collective", collective, COLLECTIVES)
    logs = parse_nccl_tests_all(text)
    if collective is not None:
        named = tuple(g for g in logs if g.collective == collective)
        # a table that names no collective is taken to be the one asked for
        logs = named or tuple(dataclasses.replace(g, collective=collective)
                              for g in logs if g.collective is None)  # fmt: skip
        if not logs:
            raise ValueError(f"collective must name a table of the text, got {collective!r}")
    if len(logs) > 1:
        names = [g.collective for g in logs]
        raise ValueError(
            f"text must hold one nccl-tests table (or name one with collective=), got "
            f"{len(logs)}: {names}; parse_nccl_tests_all returns them all"
        )
    return logs[0]


def float_text(value: float | None, width: int) -> str:
    """nccl-tests' ``getFloatStr`` (``util.cu``): ``%.2f``, else ``%.1f``, ``%.0f``, then
    exponent form, whichever fits ``width``; ``N/A`` for ``None``."""
    width = checks.integer("width", width, 1, 40)
    if value is None:
        return f"{'N/A':>{width}}"
    value = checks.real("value", value)
    for fmt in (f"{{:{width}.2f}}", f"{{:{width}.1f}}", f"{{:{width}.0f}}"):
        s = fmt.format(value)
        if len(s) <= width:
            return s
    return f"{{:{width}.{1 if width >= 7 else 0}e}}".format(value)


def _wrong_text(x: float | None) -> str:
    return "   N/A" if x is None else f"{x:6g}"


def format_nccl_tests(log: Log, binary: str | None = None) -> str:
    """``log`` as nccl-tests (``util.cu`` at a0b82b2) prints it: the ``Collective test
    starting`` line, the device list, the table with ``redop`` and ``root`` columns
    (``none``/``-1`` where the log has none) and the average bus bandwidth."""
    checks.instance("log", log, Log)
    if binary is None and log.collective is not None:
        binary = {v: k for k, v in BINARIES.items()}[log.collective] + "_perf"
    lines = []
    if binary is not None:
        lines.append(f"# Collective test starting: {checks.text('binary', binary, 80)}")
    lines += ["#", "# Using devices"]
    lines += [f"#  {d}" for d in log.devices]
    lines.append("#")
    e = ("", "", "", "", "")
    lines.append("# %10s  %12s  %8s  %6s  %6s           out-of-place                       "
                 "in-place          " % e)  # fmt: skip
    lines.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s" % (
        "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
        "algbw", "busbw", "#wrong"))  # fmt: skip
    lines.append("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s" % (
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
        "(GB/s)", ""))  # fmt: skip
    for r in log.rows:
        head = "%12d  %12d  %8s  %6s  %6s" % (
            r.nbytes, r.count if r.count is not None else 0, r.dtype or "float",
            r.redop or "none", f"{r.root if r.root is not None else -1:6d}")  # fmt: skip
        parts = []
        for res in (r.out_of_place, r.in_place):
            if res is None:
                parts.append(" " * 32)
                continue
            parts.append("  %7s  %6s  %6s  %6s" % (
                float_text(res.time_us, 7), float_text(res.algbw_gb_per_s, 6),
                float_text(res.busbw_gb_per_s, 6), _wrong_text(res.wrong)))  # fmt: skip
        lines.append(head + "".join(parts))
    lines.append(f"# {'Out of bounds values':<20} : 0 OK")
    if log.avg_busbw_gb_per_s is not None:
        lines.append(f"# {'Avg bus bandwidth':<20} : {log.avg_busbw_gb_per_s:g} ")
    lines.append("#")
    return "\n".join(lines) + "\n"
