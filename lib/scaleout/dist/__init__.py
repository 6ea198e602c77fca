"""Run torch.distributed code on N CPU processes, straight from a notebook cell.

    def hello(rank, world_size):        # defined in a notebook cell
        t = torch.tensor([float(rank)])
        dist.all_reduce(t)
        return t.item()

    run(hello, nprocs=4)                # -> [6.0, 6.0, 6.0, 6.0], in rank order

Why fork, and not ``torch.multiprocessing.spawn``: the book promises that the code a reader
sees in a cell is the code that runs. ``spawn`` starts fresh interpreters and has to pickle
the function by reference (module + name); a function defined in a notebook cell lives in
``__main__`` of the kernel and cannot be found that way, nor can closures or lambdas. A
``fork``ed child is a copy of the kernel: the function object, the helpers it calls and the
variables it closes over are all already there, nothing is pickled on the way in. The price
of fork is that a child inherits a multi-threaded parent (the Jupyter kernel runs IO and
heartbeat threads): any lock another thread held at fork time stays locked in the child.
Each child therefore touches nothing it inherited that another thread may hold -- it
replaces ``sys.stdout``/``sys.stderr`` first (the kernel's ZMQ-backed ``OutStream`` must not
be used after fork), builds its own process group and talks to the parent only through
files. Results (the one thing that crosses back) must be picklable. Platforms without fork
(Windows; macOS defaults to spawn and is fork-fragile) should use the ``torchrun`` scripts
in :mod:`scaleout.demos` instead, which run the same worker functions.

Rendezvous uses a ``FileStore`` in a fresh temporary directory per launch, so there are no
fixed ports, no stale files from an earlier run, and two launches at once never collide.
A rank that has returned waits on that store until every rank has returned before it
leaves: a rank that exits early closes its sockets under peers still connecting or reading.
Gloo is pinned to the loopback interface (``GLOO_SOCKET_IFNAME=lo`` unless already set).

Every launch is bounded: the parent waits with a deadline (at most :data:`MAX_TIMEOUT_S`),
kills all ranks as soon as one fails (the others would block in a collective forever), and
in every outcome -- success, error, timeout, KeyboardInterrupt -- SIGKILLs and reaps every
child and removes the temporary directory before returning.

Interrupts are honoured at every moment. Python runs a signal's handler in the main thread
between bytecodes, so a Ctrl-C (or a Jupyter "interrupt kernel") that lands while a rank is
being forked would raise ``KeyboardInterrupt`` inside one of the interpreter's at-fork hooks,
where it is printed and discarded -- and the launch would go on until its timeout. While it
forks, and while it cleans up, the launcher therefore blocks SIGINT
(``signal.pthread_sigmask``) and holds back any that another thread receives; it delivers
the interrupt right after, where it ends the launch like any other.

A killed caller (a kernel restart, the OOM killer, SIGKILL, SIGTERM) leaves nothing behind
either. The ranks ask the kernel for SIGKILL when their parent dies (``PR_SET_PDEATHSIG``),
and each launch starts a small watcher process (a fresh interpreter in its own session,
told each rank's pid) that notices the caller's death within a tenth of a second, SIGKILLs
every rank's process group (so what the ranks started dies too) and removes the temporary
directory. The watcher starts before that directory exists and is given its name, and the
launch makes it with ``os.mkdir``, not ``tempfile`` (whose first use in a process writes and
deletes a probe file): a caller killed at any instant of the start leaves no file either.
On a normal return the caller has done all that itself and stops the watcher.

A nested launch -- ``run`` called inside a rank -- is rejected up front with a
``RuntimeError``: the rank already holds torch's default process group, which a forked
child would inherit and could not initialise again.

Processes a rank starts die with the call too. Each rank leads its own process group, and
the parent SIGKILLs that group when the rank exits (a rank's children are orphans from then
on) and again when the call ends, for every rank, whether it exited early or not (Linux
keeps a group's id out of reuse while any member lives). What escapes: a descendant that
leaves the rank's group on purpose (``setsid()``, ``setpgrp()``, ``subprocess.Popen(...,
start_new_session=True)``, a daemon that double-forks into a new session); such a process
is the caller's to stop.


The package: ``launcher`` (:func:`run`, its errors and limits) and ``guard`` (interrupts held
back, the parent-death signal, the watcher, killing the ranks' process groups).
"""

from . import launcher as _launcher
from .launcher import (
    DistributedTimeout,
    RankError,
    run,
)

# The documented constants are bound here too: autodoc reads the ``#:`` comment of a
# constant in the module it documents (this one), not where the constant is defined.

#: The most ranks one call may fork.
MAX_NPROCS = _launcher.MAX_NPROCS

#: The longest deadline one call accepts, in seconds (one day).
MAX_TIMEOUT_S = _launcher.MAX_TIMEOUT_S

__all__ = [
    "run",
    "RankError",
    "DistributedTimeout",
    "MAX_NPROCS",
    "MAX_TIMEOUT_S",
]
