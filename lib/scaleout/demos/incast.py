"""A real incast: several processes send TCP to one receiver across a rate-limited veth
pair into a network namespace of this machine, showing queueing delay and unequal shares.

``python -m scaleout.demos.incast`` (as root, on Linux with network namespaces) runs it and
prints the result, or says why it cannot run here. What it does, all bounded in time and
undone in ``finally``:

1. creates a namespace ``soinc<pid>`` and a veth pair, one end inside it with the receiver's
   address; nothing outside this machine is reached (a private /24 from 10.213.0.0/16);
2. limits the root-side end with ``tc qdisc ... tbf rate <rate>mbit``: that queue is the
   congested switch port;
3. starts a receiver (TCP sink and UDP echo) inside the namespace and ``senders`` sender
   processes outside, sender i with ``streams[i]`` TCP connections, for ``seconds``;
4. pings the UDP echo every 20 ms, before (idle) and during the incast: the difference is
   the queueing delay of the bottleneck queue;
5. deletes the veth pair and the namespace, and stops every process it started.

TCP shares the bottleneck per connection, not per sender: a sender with 4 connections gets
about 4 shares, as a NIC with 4 queue pairs gets more of an ECMP fabric.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

from .. import checks

MAX_SENDERS = 16
MAX_SECONDS = 10.0

_RECEIVER = r"""
import json, socket, sys, threading, time
port, t_start, t_end = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
counts, lock = {}, threading.Lock()
def serve(conn):
    conn.settimeout(t_end - time.time() + 5)
    try:
        who = int(conn.recv(4).decode())
        while True:
            data = conn.recv(1 << 16)
            if not data:
                break
            if t_start <= time.time() < t_end:
                with lock:
                    counts[who] = counts.get(who, 0) + len(data)
    except Exception:
        pass
    finally:
        conn.close()
def echo():
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("0.0.0.0", port + 1))
    udp.settimeout(0.1)
    while time.time() < t_end + 1:
        try:
            msg, peer = udp.recvfrom(64)
            udp.sendto(msg, peer)
        except socket.timeout:
            pass
threading.Thread(target=echo, daemon=True).start()
tcp = socket.socket(); tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
tcp.bind(("0.0.0.0", port)); tcp.listen(64); tcp.settimeout(0.1)
print("ready", flush=True)
while time.time() < t_end + 1:
    try:
        conn, _ = tcp.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()
    except socket.timeout:
        pass
print(json.dumps(counts), flush=True)
"""

_SENDER = r"""
import socket, sys, time
host, port, who = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
streams, seconds = int(sys.argv[4]), float(sys.argv[5])
socks = []
for _ in range(streams):
    s = socket.create_connection((host, port), timeout=5)
    s.sendall(b"%04d" % who)
    socks.append(s)
block, end = b"x" * 65536, time.time() + seconds
for s in socks:
    s.setblocking(False)
while time.time() < end:
    for s in socks:
        try:
            s.send(block)
        except BlockingIOError:
            pass
    time.sleep(0.0005)
for s in socks:
    s.close()
"""


@dataclass(frozen=True)
class IncastResult:
    """Per-sender goodput (Mb/s), the bottleneck rate, and the UDP round trip (ms) with the
    link idle and during the incast (medians)."""

    rate_mbit: float
    streams: tuple[int, ...]
    goodput_mbit: tuple[float, ...]
    idle_rtt_ms: float
    loaded_rtt_ms: float

    @property
    def queueing_delay_ms(self) -> float:
        return self.loaded_rtt_ms - self.idle_rtt_ms


def _run(cmd: list[str], timeout: float = 10.0) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def available() -> tuple[bool, str]:
    """(True, "") if this machine lets this process create a namespace and a veth pair with
    a tbf qdisc; else (False, why)."""
    if not sys.platform.startswith("linux"):
        return False, "real incast skipped: needs Linux network namespaces"
    if os.geteuid() != 0:
        return False, "real incast skipped: creating network namespaces needs root"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return False, f"real incast skipped: the '{tool}' command (iproute2) is missing"
    name = f"soprobe{os.getpid()}"
    try:
        made = _run(["ip", "netns", "add", name])
        if made.returncode:
            return False, f"real incast skipped: ip netns add failed ({made.stderr.strip()})"
    finally:
        _run(["ip", "netns", "del", name])
    return True, ""


def _probe(sock, addr, until: float, every: float = 0.02) -> list[float]:
    rtts = []
    while time.time() < until:
        t0 = time.perf_counter()
        sock.sendto(b"p", addr)
        try:
            sock.recvfrom(64)
            rtts.append((time.perf_counter() - t0) * 1e3)
        except OSError:
            pass
        time.sleep(every)
    return rtts


def run_incast(senders: int = 4, rate_mbit: float = 100.0, seconds: float = 2.0,
               streams=None) -> IncastResult:  # fmt: skip
    """Run the incast of the module docstring (``ValueError`` where :func:`available` says
    it cannot run). ``streams``: TCP connections per sender (default one each). Limits: 2..16
    senders, 1..1000 Mb/s, 1..10 s."""
    import socket

    n = checks.integer("senders", senders, 2, MAX_SENDERS)
    rate = checks.real("rate_mbit", rate_mbit, 1.0, 1000.0)
    secs = checks.real("seconds", seconds, 1.0, MAX_SECONDS)
    streams = (1,) * n if streams is None else tuple(
        checks.integer("streams", s, 1, 8) for s in streams)  # fmt: skip
    if len(streams) != n:
        raise checks.fail("streams", f"one count per sender ({n})", streams)
    ok, why = available()
    if not ok:
        raise ValueError(why)
    pid = os.getpid()
    ns, a, b = f"soinc{pid}", f"soi{pid % 100000}a", f"soi{pid % 100000}b"
    net = f"10.213.{pid % 250}"
    host, port = f"{net}.2", 5201
    procs: list[subprocess.Popen] = []
    try:
        for cmd in (
            ["ip", "netns", "add", ns],
            ["ip", "link", "add", a, "type", "veth", "peer", "name", b],
            ["ip", "link", "set", b, "netns", ns],
            ["ip", "addr", "add", f"{net}.1/24", "dev", a],
            ["ip", "link", "set", a, "up"],
            ["ip", "-n", ns, "addr", "add", f"{host}/24", "dev", b],
            ["ip", "-n", ns, "link", "set", b, "up"],
            ["ip", "-n", ns, "link", "set", "lo", "up"],
            ["tc", "qdisc", "add", "dev", a, "root", "tbf", "rate", f"{rate:g}mbit",
             "burst", "32kbit", "latency", "100ms"],
        ):  # fmt: skip
            done = _run(cmd)
            if done.returncode:
                raise RuntimeError(f"{' '.join(cmd)} failed: {done.stderr.strip()}")
        t0 = time.time() + 1.0  # senders start then; goodput counted from t0 + 0.5 s
        window = (t0 + 0.5, t0 + secs)
        receiver = subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, "-c", _RECEIVER, str(port),
             repr(window[0]), repr(window[1])],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        procs.append(receiver)
        if receiver.stdout.readline().strip() != "ready":
            raise RuntimeError("the receiver did not start")
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.settimeout(0.5)
        idle = _probe(udp, (host, port + 1), t0)
        for who in range(n):
            procs.append(subprocess.Popen(
                [sys.executable, "-c", _SENDER, host, str(port), str(who), str(streams[who]),
                 str(secs)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))  # fmt: skip
        time.sleep(max(0.0, window[0] - time.time()))
        loaded = _probe(udp, (host, port + 1), window[1])
        udp.close()
        for p in procs[1:]:
            p.wait(timeout=secs + 5)
        out, _ = receiver.communicate(timeout=secs + 10)
        counts = json.loads(out.strip().splitlines()[-1])
        span = window[1] - window[0]
        goodput = tuple(counts.get(str(i), 0) * 8 / span / 1e6 for i in range(n))
        return IncastResult(rate, streams, goodput, statistics.median(idle),
                            statistics.median(loaded) if loaded else float("nan"))  # fmt: skip
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=5)
        _run(["ip", "link", "del", a])
        _run(["ip", "netns", "del", ns])


def main() -> None:
    ok, why = available()
    if not ok:
        print(why)
        return
    for streams in ((1, 1, 1, 1), (4, 1, 1, 1)):
        r = run_incast(4, 100.0, 3.0, streams)
        shares = ", ".join(f"{g:.1f}" for g in r.goodput_mbit)
        print(
            f"streams {streams}: goodput {shares} Mb/s of {r.rate_mbit:g}; RTT idle "
            f"{r.idle_rtt_ms:.2f} ms, during the incast {r.loaded_rtt_ms:.1f} ms"
        )


if __name__ == "__main__":
    main()
