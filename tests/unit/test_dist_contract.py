"""scaleout.dist.run: nesting refused up front, a result whose unpickling exits is a
RankError, the watcher reaped (issue 31)."""

from __future__ import annotations

import multiprocessing as mp
import os
import sys

import pytest

from scaleout.dist import RankError, launcher, run

pytestmark = pytest.mark.timeout(60)


def _children():
    me, pids = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == me:
                        pids.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return pids


@pytest.fixture(autouse=True)
def no_leftover_children():
    yield
    assert mp.active_children() == []
    assert _children() == []


def _nested(rank, world_size):
    return run(lambda r, w: r, 2, show_output=False)


def test_a_nested_run_is_refused_up_front_with_a_clear_message():
    with pytest.raises(RankError, match="cannot be nested") as info:
        run(_nested, 2, show_output=False, timeout=30)
    assert "default process group" in str(info.value)
    assert "initialize the default process group twice" not in str(info.value)


def test_nesting_refused_before_anything_is_forked(monkeypatch):
    monkeypatch.setattr(launcher, "_RANK", 3)  # where run() reads it
    with pytest.raises(RuntimeError, match="rank 3 of a running"):
        run(lambda r, w: r, 2)


class _ExitsWhenUnpickled:
    def __reduce__(self):
        return (sys.exit, ("unpickled",))


class _RaisesBaseWhenUnpickled:
    def __reduce__(self):
        return (_raise_generator_exit, ())


def _raise_generator_exit():
    raise GeneratorExit("from a result")


@pytest.mark.parametrize("cls", [_ExitsWhenUnpickled, _RaisesBaseWhenUnpickled])
def test_a_result_whose_unpickling_raises_base_exception_is_a_rank_error(cls):
    with pytest.raises(RankError, match="could not be unpickled in the parent") as info:
        run(lambda r, w: cls(), 2, show_output=False, timeout=30)
    assert info.value.ranks == [0, 1]


def test_no_temp_directory_or_watcher_outlives_a_normal_call(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    assert run(lambda r, w: r * 10, 3, show_output=False) == [0, 10, 20]
    assert list(tmp_path.iterdir()) == []


def test_without_an_interpreter_for_the_watcher_run_still_works(monkeypatch):
    monkeypatch.setattr(sys, "executable", "")
    assert run(lambda r, w: r + 1, 2, show_output=False) == [1, 2]
