"""Fuzzing every public callable of the library with bad input, one argument at a time.

The contract (``scaleout.checks``): a public function or record, given any value for one
of its arguments, either raises ``ValueError`` with the library's message (``<name> must
...``) or returns a sane result (every number in it finite), within a time and memory
budget. Nothing hangs, nothing exhausts memory, no other exception escapes.

How it works:

* :func:`discover` lists every public callable (function or class) defined in every module
  of ``scaleout`` except the torchrun demos; new functions are covered automatically.
* ``tests/fuzz_baselines/<module>.py`` gives, for each callable, one valid call
  (``BASELINES = {"name": call(args..., kw=...)}``) or a reason to skip it
  (``SKIP = {"name": "why"}``). A callable with neither is a failure: coverage is checked.
  ``NONFINITE_OK = {"name": "why"}`` names callables whose documented result may hold NaN
  or inf (a sentinel such as "never crosses"); ``DOCUMENTED_ERRORS = {"name": (Error,)}``
  names exceptions other than ValueError that a callable documents for valid input (e.g.
  ``dist.run``'s ``DistributedTimeout`` when a legal, short timeout expires).
* :func:`cases` takes each baseline and replaces one argument at a time (positional,
  keyword, and every keyword parameter the baseline leaves at its default) with each value
  of :func:`bad_values` (wrong types, NaN, inf, subnormals, numpy scalars, subclasses of
  int/float/str whose comparisons or formatting lie).
* :func:`joint_cases` puts *several* arguments at large values at once -- every numeric
  argument together at each rung of a ladder (2**16 .. 2**31, 1e6 .. 1e300), every pair of
  them, and every float at the smallest subnormal -- since values legal alone may be absurd
  together (issue 31); ``EXTREMES = {"name": [call(...), ...]}`` in a baseline file adds
  calls with arguments at their documented maxima.
* A ``str`` subclass must never come back as a call's result (``leaked-subclass``): a figure
  id or label that the library checked must be a plain ``str``, or the subclass's own
  ``__format__`` could emit other markup than the one checked. (Records that store the
  string they were given are not checked yet.)
* :func:`run_cases` runs every case in worker processes forked from this one, each with a
  memory limit (``RLIMIT_AS``) and a per-case time budget; a worker that hangs or dies is
  replaced, and the case recorded as ``hang`` or ``crash``.

``python tests/fuzz.py [module ...]`` prints the count per outcome and the failures.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import itertools
import math
import multiprocessing as mp
import numbers
import pkgutil
import resource
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

import numpy as np

import scaleout

HERE = Path(__file__).resolve().parent
EXCLUDED_PACKAGES = ("scaleout.demos",)  # torchrun scripts: tested under torchrun
CASE_SECONDS = 10.0  # budget for one case, baseline included
# Budget for a case with several arguments at large values at once: a documented joint
# limit may cost seconds (collectives' log-p schedules at p = 2**16 build their documented
# 2**21 transfers in 15-22 s on a loaded 2-core machine), not minutes (issue 31's findings
# ran from 3 minutes to half an hour).
JOINT_CASE_SECONDS = 60.0
MEMORY_BYTES = 3 * 2**30  # address-space limit of a worker
OK_OUTCOMES = ("value-error", "finite")


class Call:
    """One valid call: positional ``args`` and keyword ``kwargs``."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = list(args), dict(kwargs)

    def __repr__(self):
        parts = [_short(a) for a in self.args] + [
            f"{k}={_short(v)}" for k, v in self.kwargs.items()
        ]
        return f"({', '.join(parts)})"


call = Call


def _short(value, limit=60) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def discover() -> dict[str, dict[str, object]]:
    """``{module: {name: callable}}`` for every public callable of every library module."""
    found = {}
    for info in pkgutil.walk_packages(scaleout.__path__, "scaleout."):
        if info.name.startswith(EXCLUDED_PACKAGES):
            continue
        module = importlib.import_module(info.name)
        names = {
            name: obj
            for name, obj in vars(module).items()
            if not name.startswith("_")
            and callable(obj)
            and getattr(obj, "__module__", None) == info.name
            and not (inspect.isclass(obj) and issubclass(obj, BaseException))
        }
        if names:
            found[info.name] = names
    return found


def baselines(module: str) -> tuple[dict, dict, dict, dict]:
    """``BASELINES``, ``SKIP``, ``NONFINITE_OK`` and ``DOCUMENTED_ERRORS`` of
    ``tests/fuzz_baselines/<module>.py``."""
    return _baseline_module(module)[:4]


def extremes(module: str) -> dict:
    """``EXTREMES`` of ``tests/fuzz_baselines/<module>.py``: name -> list of calls."""
    return _baseline_module(module)[4]


def _baseline_module(module: str):
    path = HERE / "fuzz_baselines" / (module.removeprefix("scaleout.").replace(".", "_") + ".py")
    if not path.is_file():
        return {}, {}, {}, {}, {}
    spec = importlib.util.spec_from_file_location(f"fuzz_baselines_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return (
        dict(getattr(mod, "BASELINES", {})),
        dict(getattr(mod, "SKIP", {})),
        dict(getattr(mod, "NONFINITE_OK", {})),
        dict(getattr(mod, "DOCUMENTED_ERRORS", {})),
        dict(getattr(mod, "EXTREMES", {})),
    )


class _Unhashable:
    __hash__ = None

    def __eq__(self, other):
        return False

    def __repr__(self):
        return "<unhashable>"


class _LyingFloat(float):
    """A float subclass whose comparisons lie (a check must convert, not compare)."""

    def __lt__(self, other):
        return False

    __gt__ = __le__ = __ge__ = __lt__

    def __eq__(self, other):
        return True

    __hash__ = float.__hash__


class _LyingInt(int):
    """An int subclass whose comparisons lie."""

    def __lt__(self, other):
        return False

    __gt__ = __le__ = __ge__ = __lt__

    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


class _SneakyStr(str):
    """A str subclass with its own formatting: must never come back out of the library."""

    def __format__(self, spec):
        return '"><script>alert(1)</script>'

    def __str__(self):
        return '"><img src=x onerror=alert(1)>'

    __hash__ = str.__hash__


def bad_values(baseline) -> list:
    """Values to put in place of an argument whose valid value is ``baseline``."""
    values = [
        None,
        True,
        "4",
        "no-such-option",
        object(),
        _Unhashable(),
        {},
        [],
        float("nan"),
        float("inf"),
        -float("inf"),
        -1,
        0,
        0.5,
        -1e-300,
        10**18,
        2**63,
        1e300,
        1e-300,
        5e-324,  # the smallest subnormal
        -5e-324,
        np.float64(1e308),
        np.bool_(True),
    ]
    if isinstance(baseline, str):
        values += [[baseline], baseline.upper(), "", _SneakyStr(baseline)]
    if isinstance(baseline, numbers.Integral) and not isinstance(baseline, bool):
        values += [float(baseline), baseline * 10**6, 2**31, -(2**31)]
        values += [np.int64(baseline), np.int32(baseline), np.uint64(2**64 - 1)]
        values += [_LyingInt(baseline), _LyingInt(-1)]
    if isinstance(baseline, numbers.Real) and not isinstance(baseline, bool | numbers.Integral):
        values += [baseline * 1e12, -baseline, np.float32(baseline)]
        values += [np.float64(baseline), np.longdouble(baseline), baseline * 5e-324]
        values += [_LyingFloat(baseline), _LyingFloat(-1.0)]
    if isinstance(baseline, list | tuple | np.ndarray):
        arr = np.asarray(baseline, dtype=object)
        values += [
            [[1.0], [1.0, 2.0]],  # ragged
            [float("nan")] * max(1, len(baseline)),
            [float("inf")] * max(1, len(baseline)),
            ["a"] * max(1, len(baseline)),
            np.zeros((0,)),
            np.zeros((2, 2, 2)),
        ]
        if arr.size:
            values += [list(baseline) * 2, list(baseline)[:1]]
    if dataclasses.is_dataclass(baseline) and not isinstance(baseline, type):
        values += [dataclasses.asdict(baseline)]
    return values


def cases(fn, base: Call):
    """``(label, args, kwargs)`` for every single-argument replacement of ``base``."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None
    params = list(sig.parameters.values()) if sig else []
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    yield "baseline", base.args, base.kwargs
    for i, value in enumerate(base.args):
        name = positional[i].name if i < len(positional) else f"arg{i}"
        for bad in bad_values(value):
            args = list(base.args)
            args[i] = bad
            yield f"{name}={_short(bad)}", args, base.kwargs
    covered = {p.name for p in positional[: len(base.args)]} | set(base.kwargs)
    for key, value in base.kwargs.items():
        for bad in bad_values(value):
            yield f"{key}={_short(bad)}", base.args, dict(base.kwargs, **{key: bad})
    for p in params:
        if p.name in covered or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is inspect.Parameter.empty:
            continue
        for bad in bad_values(p.default):
            yield f"{p.name}={_short(bad)}", base.args, dict(base.kwargs, **{p.name: bad})


#: Ladders of large values for :func:`joint_cases`: (integers, reals), one rung at a time.
JOINT_RUNGS = ((2**16, 1e6), (2**24, 1e15), (2**31, 1e300))


def _numeric(value) -> str | None:
    if isinstance(value, bool | np.bool_):
        return None
    if isinstance(value, numbers.Integral):
        return "int"
    if isinstance(value, numbers.Real):
        return "real"
    return None


def joint_cases(fn, base: Call):
    """``(label, args, kwargs)`` with several numeric arguments of ``base`` large at once."""
    slots = [("arg", i, v) for i, v in enumerate(base.args)]
    slots += [("kw", k, v) for k, v in base.kwargs.items()]
    slots = [(where, key, _numeric(v)) for where, key, v in slots if _numeric(v)]
    if len(slots) < 2:
        return

    def build(chosen, rung):
        args, kwargs = list(base.args), dict(base.kwargs)
        for where, key, kind in chosen:
            value = rung if not isinstance(rung, tuple) else rung[kind == "real"]
            if where == "arg":
                args[key] = value
            else:
                kwargs[key] = value
        return args, kwargs

    def name(chosen):
        return ",".join(str(key) for _, key, _ in chosen)

    for i, rung in enumerate(JOINT_RUNGS):
        yield (f"joint-all@{i}", *build(slots, rung))
    reals = [s for s in slots if s[2] == "real"]
    if reals:
        yield ("joint-subnormal", *build(reals, 5e-324))
    if len(slots) <= 6:
        for pair in itertools.combinations(slots, 2):
            for i in (1, 2):
                yield (f"joint-pair({name(pair)})@{i}", *build(pair, JOINT_RUNGS[i]))


def _leaks_subclass(value) -> bool:
    """True if a :class:`_SneakyStr` comes back as the result or an item of a returned
    tuple/list (a checked name handed back). Records that keep the string they were given
    are not flagged yet (issue 31's remainder: 117 cases over about 60 record types)."""
    if isinstance(value, _SneakyStr):
        return True
    if isinstance(value, list | tuple):
        return any(isinstance(v, _SneakyStr) for v in value[:200])
    return False


def _all_finite(value, depth=0, seen=None) -> bool:
    """True if every number reachable from ``value`` is finite (arrays, containers,
    dataclasses, namedtuples; bounded depth)."""
    if depth > 6:
        return True
    if seen is None:
        seen = set()
    if id(value) in seen:
        return True
    seen.add(id(value))
    if isinstance(value, bool | str | bytes | type(None)):
        return True
    if isinstance(value, numbers.Number):
        try:
            return math.isfinite(complex(value).real) and math.isfinite(complex(value).imag)
        except (OverflowError, TypeError):
            return False
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "fc":
            return bool(np.all(np.isfinite(value)))
        if value.dtype.kind == "O":
            return all(_all_finite(v, depth + 1, seen) for v in value.ravel()[:1000])
        return True
    if isinstance(value, dict):
        return all(_all_finite(v, depth + 1, seen) for v in list(value.values())[:1000])
    if isinstance(value, list | tuple | set | frozenset):
        return all(_all_finite(v, depth + 1, seen) for v in list(value)[:1000])
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return all(
            _all_finite(getattr(value, f.name), depth + 1, seen) for f in dataclasses.fields(value)
        )
    return True


def _classify(fn, args, kwargs, documented=()) -> tuple[str, str]:
    try:
        result = fn(*args, **kwargs)
    except tuple(documented) as e:
        return "value-error", f"documented {type(e).__name__}"
    except ValueError as e:
        message = str(e)
        if " must " in message:
            return "value-error", ""
        return "foreign-message", f"ValueError: {message[:200]}"
    except MemoryError:
        return "memory", "MemoryError"
    except RecursionError:
        return "recursion", "RecursionError"
    except Exception as e:  # noqa: BLE001 - the point is to classify every escape
        tb = traceback.extract_tb(e.__traceback__)[-1]
        where = f"{Path(tb.filename).name}:{tb.lineno}"
        return "wrong-type", f"{type(e).__name__} at {where}: {str(e)[:160]}"
    if not _all_finite(result):
        return "not-finite", f"returned {_short(result, 160)}"
    if _leaks_subclass(result):
        return "leaked-subclass", f"a str subclass came back in {_short(result, 120)}"
    return "finite", ""


_JOBS: list = []  # (fn, args, kwargs) of every case; workers are forked after it is full
#: Outcomes per module of the last :func:`run_cases` (``{module: Counter}``).
BY_MODULE: dict = {}


def _worker(conn, memory_bytes):
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    while True:
        index = conn.recv()
        if index is None:
            return
        fn, args, kwargs, documented = _JOBS[index]
        conn.send(_classify(fn, args, kwargs, documented))


class _Pool:
    """One worker process at a time, forked from this one (so it holds every case and no
    argument needs pickling); replaced when a case hangs or kills it."""

    def __init__(self, budget_s: float, memory_bytes: int):
        self.budget_s, self.memory_bytes = budget_s, memory_bytes
        self.ctx = mp.get_context("fork")
        self._start()

    def _start(self):
        self.conn, child = self.ctx.Pipe()
        # Not a daemon: a callable under test may start processes of its own (dist.run).
        self.proc = self.ctx.Process(target=_worker, args=(child, self.memory_bytes))
        self.proc.start()

    def run(self, index: int, budget_s: float | None = None) -> tuple[str, str]:
        budget_s = self.budget_s if budget_s is None else budget_s
        self.conn.send(index)
        if self.conn.poll(budget_s):
            try:
                return self.conn.recv()
            except EOFError:
                pass
            outcome = ("crash", f"worker died (exit code {self.proc.exitcode})")
        else:
            outcome = ("hang", f"no answer within {budget_s:g} s")
        self.proc.kill()
        self.proc.join()
        self._start()
        return outcome

    def close(self):
        try:
            self.conn.send(None)
        except (BrokenPipeError, OSError):
            pass
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()


def run_cases(modules=None, budget_s=CASE_SECONDS, memory_bytes=MEMORY_BYTES):
    """Run every case of ``modules`` (all by default): ``(counts, problems)``, where
    ``problems`` lists ``(callable, case, outcome, detail)`` for every case not ok and for
    every callable without a baseline."""
    found = discover()
    counts, problems, labels = Counter(), [], []
    _JOBS.clear()
    for module, names in sorted(found.items()):
        if modules and module not in modules:
            continue
        base, skip, nonfinite, documented, extreme = _baseline_module(module)
        for unknown in sorted((set(base) | set(skip) | set(extreme)) - set(names)):
            problems.append((f"{module}.{unknown}", "-", "stale", "no such callable"))
        for name, fn in sorted(names.items()):
            qual = f"{module}.{name}"
            if name in skip:
                counts["skipped"] += 1
            elif name not in base:
                problems.append((qual, "-", "no-baseline", "add one to tests/fuzz_baselines"))
                counts["no-baseline"] += 1
            else:
                joint = list(joint_cases(fn, base[name]))
                joint += [(f"extreme-{i}", c.args, c.kwargs) for i, c in
                          enumerate(extreme.get(name, ()))]  # fmt: skip
                for label, args, kwargs in [*cases(fn, base[name]), *joint]:
                    _JOBS.append((fn, args, kwargs, documented.get(name, ())))
                    labels.append((qual, label, name in nonfinite))
    pool = _Pool(budget_s, memory_bytes)
    BY_MODULE.clear()
    try:
        for index, (qual, label, nonfinite_ok) in enumerate(labels):
            joint = label.startswith(("joint", "extreme"))
            outcome, detail = pool.run(index, max(budget_s, JOINT_CASE_SECONDS) if joint else None)
            if outcome == "not-finite" and nonfinite_ok:
                outcome = "finite"
            if label == "baseline" and outcome != "finite":
                outcome = "bad-baseline"
            counts[outcome] += 1
            module = qual.rsplit(".", 1)[0]
            BY_MODULE.setdefault(module, Counter())[outcome] += 1
            if joint:
                BY_MODULE[module]["of which joint"] += 1
            if outcome not in OK_OUTCOMES:
                problems.append((qual, label, outcome, detail))
    finally:
        pool.close()
    return counts, problems


def main(argv):
    table = "--table" in argv
    argv = [a for a in argv if a != "--table"]
    modules = [m if m.startswith("scaleout") else f"scaleout.{m}" for m in argv] or None
    start = time.perf_counter()
    counts, problems = run_cases(modules)
    total = sum(v for k, v in counts.items() if k != "skipped")
    print(f"{total} cases in {time.perf_counter() - start:.0f} s")
    for outcome, n in counts.most_common():
        print(f"  {outcome:16s} {n:6d}")
    by = Counter((q.rsplit(".", 1)[0], o) for q, _, o, _ in problems)
    for (module, outcome), n in sorted(by.items()):
        print(f"  {module:32s} {outcome:16s} {n:5d}")
    if table:  # cases tried and outcomes per module
        for module, c in sorted(BY_MODULE.items()):
            tried = sum(v for k, v in c.items() if k != "of which joint")
            rest = ", ".join(f"{k} {v}" for k, v in sorted(c.items()) if k != "of which joint")
            print(f"TABLE {module} | {tried} | {c['of which joint']} | {rest}")
    for qual, label, outcome, detail in problems[:400]:
        print(f"{outcome:14s} {qual}{'' if label == '-' else ' ' + label}: {detail}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main(sys.argv[1:]))
