"""What keeps a launch from leaving anything behind: SIGINT held back while the launcher
forks and cleans up, the caller's handler put back in each rank, the parent-death signal,
the watcher process that cleans up after a killed caller, and killing every rank's process
group. See :mod:`scaleout.dist` for why each is needed.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import signal
import sys
import tempfile
import threading

_WATCH_POLL_S = 0.05  # how often the watcher checks that the caller lives
_SAVED_SIGINT = None  # the caller's SIGINT handler while the launcher holds SIGINT back


# The watcher: a fresh interpreter (no inherited locks or threads) in its own session. Reads
# rank pids, one a line, from stdin; "done" means the caller cleaned up itself. If instead
# the caller dies (its parent pid changes) or stdin closes first, it SIGKILLs every rank and
# every rank's process group a few times over (a process forking at that moment), then
# removes the launch's temporary directory: every path it was given, since the caller names
# the directory before it makes it, in the first candidate folder that takes it.
_WATCHER_SOURCE = r"""
import os, select, shutil, signal, sys, time
for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
    signal.signal(sig, signal.SIG_IGN)
caller, poll, paths = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
pids, buf = set(), b""
while os.getppid() == caller:
    if not select.select([0], [], [], poll)[0]:
        continue
    chunk = os.read(0, 4096)
    if not chunk:
        break
    *lines, buf = (buf + chunk).split(b"\n")
    for line in lines:
        if line == b"done":
            sys.exit(0)
        if line.strip():
            pids.add(int(line))
for _ in range(4):
    for pid in pids:
        for kill in (os.killpg, os.kill):
            try:
                kill(pid, signal.SIGKILL)
            except OSError:
                pass
    time.sleep(poll)
for path in paths:
    shutil.rmtree(path, ignore_errors=True)
"""


def _private_dir_paths() -> list[str]:
    """Where a launch's temporary directory may go, in order: a fresh name (pid and 96
    random bits) in each folder :func:`tempfile.gettempdir` would consider (or in
    ``tempfile.tempdir`` where the caller set it).

    Not ``tempfile.mkdtemp``: the first ``gettempdir`` of a process probes each folder with
    a file it writes and deletes, which a SIGKILL in between leaves behind, and the
    directory must not exist before the watcher knows its name."""
    if tempfile.tempdir is not None:
        folders = [os.fsdecode(tempfile.tempdir)]
    else:
        folders = [os.environ.get(v) for v in ("TMPDIR", "TEMP", "TMP")]
        folders += ["/tmp", "/var/tmp", "/usr/tmp"]
        try:
            folders.append(os.getcwd())
        except OSError:
            pass
    name = f"scaleout-run-{os.getpid()}-{secrets.token_hex(12)}"
    return list(dict.fromkeys(os.path.join(os.path.abspath(f), name) for f in folders if f))


def _make_private_dir(paths: list[str]) -> str:
    """Make the first of ``paths`` that can be made (mode 0700); its path."""
    for path in paths:
        try:
            os.mkdir(path, 0o700)
            return path
        except OSError:
            continue
    folders = [os.path.dirname(p) for p in paths]
    raise FileNotFoundError(f"scaleout.dist.run found no usable temporary folder in {folders}")


class _HoldInterrupts:
    """Hold SIGINT back for the ``with`` block, deliver it after.

    In the main thread (the only one where Python runs signal handlers), SIGINT is blocked
    for this thread and the Python handler swapped for one that only records the signal
    (another thread may still receive a process-directed SIGINT: its handler then runs in
    this thread, anywhere, at-fork hooks included). On exit the caller's handler is put back,
    SIGINT unblocked (a pending one is delivered now) and a recorded one replayed: the
    caller's handler is called, which raises ``KeyboardInterrupt`` for Python's default one.
    Elsewhere (``run`` called from another thread) nothing is needed: a KeyboardInterrupt is
    raised in the main thread, never in this thread's fork.
    """

    def __enter__(self):
        global _SAVED_SIGINT
        self.active = threading.current_thread() is threading.main_thread()
        self.caught = []
        if self.active:
            self.mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            self.old = signal.signal(signal.SIGINT, lambda signum, frame: self.caught.append(1))
            _SAVED_SIGINT = self.old
        return self

    def __exit__(self, *exc):
        global _SAVED_SIGINT
        if not self.active:
            return False
        signal.signal(signal.SIGINT, self.old)
        _SAVED_SIGINT = None
        signal.pthread_sigmask(signal.SIG_SETMASK, self.mask)  # a pending SIGINT: delivered
        if self.caught:
            if callable(self.old):
                self.old(signal.SIGINT, None)  # default_int_handler: raises KeyboardInterrupt
            elif self.old == signal.SIG_DFL:
                signal.raise_signal(signal.SIGINT)
        return False


def _restore_interrupts_in_rank():
    """A forked rank starts with the launcher's SIGINT mask and handler: put back the
    caller's (and so its children's, which inherit the mask through exec)."""
    if _SAVED_SIGINT is not None:
        try:
            signal.signal(signal.SIGINT, _SAVED_SIGINT)
        except (ValueError, TypeError):
            pass
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


class _Watcher:
    """The process that cleans up after a caller that was killed (see the module docstring)."""

    def __init__(self, paths):
        import subprocess

        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-I",
                "-S",
                "-c",
                _WATCHER_SOURCE,
                str(os.getpid()),
                str(_WATCH_POLL_S),
                *paths,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a signal to the caller's process group spares it
        )
        self.fd = self.proc.stdin.fileno()

    @classmethod
    def start(cls, paths):
        """A watcher that removes ``paths`` after a killed caller, or None where no
        interpreter can be started (an embedded Python without ``sys.executable``): the
        ranks' PR_SET_PDEATHSIG still applies."""
        if not sys.executable:
            return None
        try:
            return cls(paths)
        except OSError:
            return None

    def _send(self, text):
        try:
            os.write(self.fd, text.encode())
        except OSError:  # the watcher died: nothing to tell it
            pass

    def watch(self, pid):
        self._send(f"{pid}\n")

    def finish(self):
        """The caller has cleaned up: stop the watcher (SIGKILL: it may still be starting,
        and waiting for it to read "done" would cost the call its start-up time) and reap it."""
        try:
            self.proc.kill()
        except OSError:
            pass
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait()


def _set_parent_death_signal():
    """Linux: if the parent dies (kernel killed), the kernel SIGKILLs this child too."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def _kill_group(pid):
    """SIGKILL the process group a rank leads (the rank and whatever it started)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # empty group, or never made
        pass


def _kill_all(procs):
    """SIGKILL every rank's process group (exited ranks too: what they started is an
    orphan) and every unreaped rank, then reap them all."""
    for p in procs:
        if p.pid is None:
            continue
        _kill_group(p.pid)
        if p.exitcode is None:  # a reaped rank's pid may belong to someone else now
            try:
                os.kill(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    for p in procs:
        if p.pid is not None:
            p.join()
