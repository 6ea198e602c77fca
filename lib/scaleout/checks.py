"""Input checks shared by the whole library: one rule set, one message style.

Every public function and record of the library validates its inputs through these
helpers, so a bad input always raises :class:`ValueError` with a message of the form::

    <name> must be <what is allowed>, got <the value>

for example ``p must be an integer in [1, 65536], got 0`` or
``collective must be one of ('allreduce', 'allgather'), got ['allreduce']``.

The rules, the same everywhere:

* Numbers are real numbers (``int``, ``float``, numpy scalars). ``bool`` is not a number
  here, and neither is a numeric string such as ``'4'``: it is rejected, not converted.
* Integers must be integral types (``4.0`` is not an integer count). NaN is never
  accepted; infinity only where a function documents it.
* Arrays are numeric, rectangular and not empty; their size is bounded (``max_size``) so
  that no accepted input can exhaust memory.
* Options are compared by equality against a fixed tuple; an unhashable or unknown option
  is an error naming the allowed ones.
* Sizes that drive loops or allocations have documented upper limits (each module names
  its own limits in its docstring); beyond them a function raises
  instead of running for hours.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable

import numpy as np

# Largest number of elements any array input or output of the library may have. Bounds
# memory: 2**26 float64 values are 512 MiB.
MAX_ELEMENTS = 2**26


def _meta(name: str, value, kind: str = "bound"):
    """The checks' own arguments (bounds, limits), checked without recursion."""
    if kind == "bound":
        if value is None or (is_real(value) and not math.isnan(float(value))):
            return value
        raise fail(name, "None or a real number (not NaN)", value)
    if kind == "count":
        if is_integer(value) and value >= 1:
            return int(value)
        raise fail(name, "an integer >= 1", value)
    if kind == "name":
        if isinstance(value, str) and value:
            return value
        raise fail("name", "a non-empty string (the argument's name)", value)
    raise AssertionError(kind)


def show(value, limit: int = 80) -> str:
    """``repr(value)``, shortened to ``limit`` characters for an error message."""
    limit = max(8, _meta("limit", limit, "count"))
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not hide the real error
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def fail(name: str, what: str, value) -> ValueError:
    """The library's error: ``<name> must be <what>, got <value>`` (returned, to raise)."""
    return ValueError(f"{name!s:.80} must be {what!s:.400}, got {show(value)}")


def _bounds_text(low, high, low_open: bool, high_open: bool) -> str:
    def num(x):
        return f"{x:g}" if isinstance(x, float) else str(x)

    if low is not None and high is not None:
        return f" in {'(' if low_open else '['}{num(low)}, {num(high)}{')' if high_open else ']'}"
    if low is not None:
        return f" {'>' if low_open else '>='} {num(low)}"
    if high is not None:
        return f" {'<' if high_open else '<='} {num(high)}"
    return ""


def _outside(x, low, high, low_open: bool, high_open: bool):
    """Boolean (array) of values outside the bounds (checked first: None or real)."""
    low, high = _meta("low", low), _meta("high", high)
    bad = np.zeros(np.shape(x), dtype=bool)
    if low is not None:
        bad |= (x <= low) if low_open else (x < low)
    if high is not None:
        bad |= (x >= high) if high_open else (x > high)
    return bad


def is_integer(value) -> bool:
    """True for Python and numpy integers, False for bool, floats, strings and the rest."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def is_real(value) -> bool:
    """True for real numbers (ints, floats, numpy scalars), False for bool and strings."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def integer(name: str, value, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an ``int`` if it is an integer in ``[low, high]``."""
    _meta("name", name, "name")
    low, high = _meta("low", low), _meta("high", high)
    what = "an integer" + _bounds_text(low, high, False, False)
    if not is_integer(value):
        raise fail(name, what, value)
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise fail(name, what, value)
    return value


def optional_integer(name: str, value, low: int | None = None, high: int | None = None):
    """``None``, or :func:`integer`."""
    return None if value is None else integer(name, value, low, high)


def real(
    name: str,
    value,
    low: float | None = None,
    high: float | None = None,
    *,
    low_open: bool = False,
    high_open: bool = False,
    finite: bool = True,
) -> float:
    """``value`` as a ``float`` if it is a real number within the bounds.

    NaN is never accepted; +-inf only with ``finite=False`` (and then only where the
    bounds allow it).
    """
    _meta("name", name, "name")
    low, high = _meta("low", low), _meta("high", high)
    what = ("a finite number" if finite else "a number (not NaN)") + _bounds_text(
        low, high, low_open, high_open
    )
    if not is_real(value):
        raise fail(name, what, value)
    try:
        x = float(value)
    except (OverflowError, ValueError):  # e.g. 10**400
        raise fail(name, what, value) from None
    if math.isnan(x) or (finite and math.isinf(x)) or _outside(x, low, high, low_open, high_open):
        raise fail(name, what, value)
    return x


def positive(name: str, value, high: float | None = None) -> float:
    """A finite real number > 0 (and <= ``high``)."""
    return real(name, value, 0.0, high, low_open=True)


def nonnegative(name: str, value, high: float | None = None) -> float:
    """A finite real number >= 0 (and <= ``high``)."""
    return real(name, value, 0.0, high)


def fraction(name: str, value, *, open_low: bool = False, open_high: bool = False) -> float:
    """A finite real number in [0, 1] (ends open on request)."""
    return real(name, value, 0.0, 1.0, low_open=open_low, high_open=open_high)


def boolean(name: str, value) -> bool:
    """``True`` or ``False`` (Python or numpy bool; not 0/1, not strings)."""
    if not isinstance(value, bool | np.bool_):
        raise fail(name, "True or False", value)
    return bool(value)


def choice(name: str, value, allowed: Iterable):
    """``value`` if it equals one of ``allowed`` (unhashable values are rejected cleanly)."""
    try:
        allowed = tuple(allowed)
    except TypeError:
        raise fail("allowed", "an iterable of options", allowed) from None
    try:
        hash(value)
    except TypeError:
        raise fail(name, f"one of {allowed}", value) from None
    # Compare type as well: 1 == True == 1.0, and a numpy array must not reach ==.
    for option in allowed:
        if type(option) is type(value) and option == value:
            return option
        if isinstance(option, str) and isinstance(value, np.str_) and str(value) == option:
            return option
    raise fail(name, f"one of {allowed}", value)


def text(name: str, value, max_length: int = 200) -> str:
    """A non-empty ``str`` of at most ``max_length`` characters."""
    max_length = _meta("max_length", max_length, "count")
    if not isinstance(value, str) or not value or len(value) > max_length:
        raise fail(name, f"a non-empty string of at most {max_length} characters", value)
    return str.__str__(value)  # a plain str copy: a subclass's own __format__ stays out


def instance(name: str, value, cls, what: str | None = None):
    """``value`` if it is an instance of ``cls`` (a class or a tuple of classes)."""
    classes = cls if isinstance(cls, tuple) else (cls,)
    if not classes or not all(isinstance(c, type) for c in classes):
        raise fail("cls", "a class or a non-empty tuple of classes", cls)
    if not isinstance(value, cls):
        if what is None:
            what = "a " + " or ".join(c.__name__ for c in classes)
        raise fail(name, what, value)
    return value


def function(name: str, value) -> Callable:
    """``value`` if it is callable."""
    if not callable(value):
        raise fail(name, "callable", value)
    return value


def array(
    name: str,
    value,
    *,
    ndim: int | None = None,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    finite: bool = True,
    integer: bool = False,
    empty: bool = False,
    max_size: int = MAX_ELEMENTS,
) -> np.ndarray:
    """``value`` as a numeric numpy array (float64, or int64 with ``integer=True``).

    Accepts scalars (``ndim=None`` or 0), sequences and arrays of real numbers. Rejects
    strings, bools, objects, ragged sequences, wrong ``ndim``, empty arrays (unless
    ``empty``), more than ``max_size`` elements, NaN, inf (unless ``finite=False``),
    non-integral values (with ``integer``) and values outside the bounds; the message names
    the first offending element.
    """
    _meta("name", name, "name")
    low, high = _meta("low", low), _meta("high", high)
    max_size = _meta("max_size", max_size, "count")
    if ndim is not None and not (is_integer(ndim) and 0 <= ndim <= 32):
        raise fail("ndim", "None or an integer in [0, 32]", ndim)
    kind = "integer" if integer else "real"
    dims = {None: "a ", 0: "a scalar ", 1: "a 1-D ", 2: "a 2-D "}.get(ndim, f"a {ndim}-D ")
    what = f"{dims}{kind} array" if ndim != 0 else ("an integer" if integer else "a real number")
    if isinstance(value, str | bytes | bool | np.bool_ | dict | set):
        raise fail(name, what, value)
    # Refuse oversized input before numpy copies it (a range(10**10) must not allocate).
    size = value.size if isinstance(value, np.ndarray) else _length(value)
    if size is not None and size > max_size:
        raise ValueError(f"{name} must be {what} of at most {max_size} elements, got {size}")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError, OverflowError):  # ragged, or not numbers
        raise fail(name, what, value) from None
    allowed_kinds = "iu" if integer else "iuf"
    if arr.dtype.kind not in allowed_kinds:
        raise fail(name, what, value)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must be {what}, got an array of shape {arr.shape}")
    if arr.size > max_size:
        raise ValueError(f"{name} must be {what} of at most {max_size} elements, got {arr.size}")
    if arr.size == 0 and not empty and arr.ndim:
        raise fail(name, f"a non-empty {what.removeprefix('a ')}", value)
    if arr.dtype.kind == "u" and arr.size and arr.max() >= 2**63:
        raise fail(name, f"{what} of values below 2**63", int(arr.max()))
    out = arr.astype(np.int64 if integer else np.float64)
    bad = np.isnan(out) if not integer else np.zeros(out.shape, dtype=bool)
    if finite and not integer:
        bad |= np.isinf(out)
    bad |= _outside(out, low, high, low_open, high_open)
    if np.any(bad):
        bounds = _bounds_text(low, high, low_open, high_open)
        first = out[bad].ravel()[0] if out.ndim else out.item()
        first = int(first) if integer else float(first)
        finite_text = "" if integer or not finite else "finite "
        raise fail(name, f"{finite_text}{kind} values{bounds}", first)
    return out


def _length(value) -> int | None:
    try:
        return len(value)
    except Exception:  # noqa: BLE001 - not a sized container: numpy decides below
        return None


def _caller_arguments(limit: int = 320) -> str:
    """``fn(a=1, b=2.5)``: the library function the user called (the outermost library frame
    above the one that called :func:`finite_result`) and its arguments -- what the user gave
    that led to the overflow -- shortened to ``limit`` characters."""
    import inspect
    import os

    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    frame = inspect.currentframe()
    try:
        frame = frame.f_back.f_back if frame and frame.f_back else None
        if frame is None:
            return ""
        while frame.f_back is not None and frame.f_back.f_code.co_filename.startswith(package):
            frame = frame.f_back
        code = frame.f_code
        count = code.co_argcount + code.co_kwonlyargcount
        names = code.co_varnames[:count]
        parts = [f"{n}={show(frame.f_locals.get(n), 60)}" for n in names if n in frame.f_locals]
    finally:
        del frame
    text = f"{getattr(code, 'co_qualname', code.co_name)}({', '.join(parts)})"
    return text if len(text) <= limit else text[: limit - 4] + "...)"


def finite_result(name: str, value):
    """``value`` if every element is finite; else the error of an overflowing result, which
    names the arguments of the calling function (what the user gave that led there)."""
    try:
        finite = bool(np.all(np.isfinite(value)))
    except TypeError:
        raise fail("value", "a real number or array", value) from None
    if not finite:
        given = _caller_arguments()
        given = f" in {given}" if given else ""
        raise ValueError(
            f"{name} must stay finite, but it overflows float64{given}: use smaller inputs"
        )
    return value


def as_output(x):
    """A Python float for 0-d results, else the float64 ndarray (vectorised functions)."""
    x = array("x", x, finite=False, empty=True)
    return float(x) if x.ndim == 0 else x
