"""Traffic patterns: tensor-parallel rings, pipeline sends, data-parallel rings and trees,
NCCL's flat rings striped over the NICs, and the hierarchical all-reduce.

Taught in chapter 11, "NVLink, NVSwitch and the cluster network"
(``chapters/11_nvlink_topology.ipynb``); see :mod:`scaleout.topology` for the model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .. import checks, trees
from .cluster import Cluster, _cluster
from .records import DP_ALGORITHMS, MAX_CHANNELS, MAX_FLOWS, Flow, Traffic, _flow


def _ring_flows(gpus, nbytes: float, factor: float) -> list[Flow]:
    p = len(gpus)
    return [_flow(gpus[i], gpus[(i + 1) % p], factor * nbytes) for i in range(p) if p > 1]


def _groups(cluster: Cluster, groups) -> list[list[int]]:
    """A non-empty list of non-empty GPU lists, each GPU once per group, at most
    ``MAX_FLOWS`` GPUs in all."""
    what = "a non-empty list of non-empty lists of distinct GPU indices"
    if isinstance(groups, str | bytes | Mapping) or not isinstance(groups, Iterable):
        raise checks.fail("groups", what, groups)
    out, total = [], 0
    for group in groups:
        if isinstance(group, str | bytes | Mapping) or not isinstance(group, Iterable):
            raise checks.fail("groups", what, group)
        gpus = []
        for gpu in group:
            total += 1
            if total > MAX_FLOWS:
                raise checks.fail("groups", f"at most {MAX_FLOWS} GPUs in all", "more")
            gpus.append(cluster._gpu(gpu))
        if not gpus or len(set(gpus)) != len(gpus):
            raise checks.fail("groups", what, group)
        out.append(gpus)
    if not out:
        raise checks.fail("groups", what, groups)
    return out


def ring_allreduce(cluster: Cluster, groups, nbytes: float, name: str = "ring all-reduce"):
    """Ring all-reduce of ``nbytes`` per GPU in each group (a list of GPU lists, all run
    at once): every GPU sends 2(p-1)/p * nbytes to its successor over 2(p-1) steps
    (Patarasuk & Yuan 2009; MPICH ``allreduce_intra_ring.c``). One ring, one channel: a
    hop between servers goes through the one NIC of the GPU that sends it."""
    cluster = _cluster(cluster)
    nbytes = checks.nonnegative("nbytes", nbytes)
    name = checks.text("name", name)
    groups = _groups(cluster, groups)
    flows = [f for grp in groups for f in _ring_flows(grp, nbytes, 2 * (len(grp) - 1) / len(grp))]
    steps = max(2 * (len(group) - 1) for group in groups)
    return Traffic(name, (tuple(flows),), (steps,))


def tp_allreduce(cluster: Cluster, nbytes: float, tp: int | None = None) -> Traffic:
    """Tensor parallelism: groups of ``tp`` consecutive GPUs of one server (default: the
    whole server) each ring-all-reduce ``nbytes`` (Shoeybi et al. 2019: TP traffic is
    all-reduce, kept inside the NVLink domain)."""
    cluster = _cluster(cluster)
    g = cluster.gpus_per_server
    tp = g if tp is None else checks.integer("tp", tp, 1, g)
    if g % tp:
        raise ValueError(f"tp must divide gpus_per_server = {g}, got {tp}")
    groups = [list(range(start, start + tp)) for start in range(0, cluster.num_gpus, tp)]
    return ring_allreduce(cluster, groups, nbytes, f"TP all-reduce (tp = {tp})")


def pp_send(cluster: Cluster, nbytes: float, scatter_gather: bool = True) -> Traffic:
    """Pipeline parallelism with one stage per server: every stage boundary s -> s+1 sends
    an activation of ``nbytes``. Each GPU i sends to GPU i of the next server (same rail).
    Without scatter-gather every one of the t GPUs sends the whole activation; with it
    (Narayanan et al. 2021, sec. 4.1) each sends nbytes / t, then the receiving server
    rebuilds the tensor with an NVLink ring all-gather: cross-server bytes / t."""
    cluster = _cluster(cluster)
    nbytes = checks.nonnegative("nbytes", nbytes)
    scatter_gather = checks.boolean("scatter_gather", scatter_gather)
    g = cluster.gpus_per_server
    share = nbytes / g if scatter_gather else nbytes
    sends = tuple(
        _flow(s * g + i, (s + 1) * g + i, share)
        for s in range(cluster.servers - 1)
        for i in range(g)
    )
    name = "PP send" + (" with scatter-gather" if scatter_gather else "")
    if not scatter_gather:
        return Traffic(name, (sends,), (1,))
    receivers = [list(range(s * g, (s + 1) * g)) for s in range(1, cluster.servers)]
    gather = tuple(f for grp in receivers for f in _ring_flows(grp, nbytes / g, g - 1))
    return Traffic(name, (sends, gather), (1, g - 1))


def dp_groups(cluster: Cluster) -> list[list[int]]:
    """Data-parallel groups when TP fills each server: GPU i of every server, per i."""
    cluster = _cluster(cluster)
    g = cluster.gpus_per_server
    return [[s * g + i for s in range(cluster.servers)] for i in range(g)]


def _tree_flows(group: list[int], parent, nbytes: float) -> list[Flow]:
    """Each child sends ``nbytes`` up to its parent (reduce) and gets ``nbytes`` back
    (broadcast); ``parent[k]`` is the parent of rank k (-1 for the root)."""
    flows = []
    for child, up in enumerate(parent):
        if up >= 0:
            flows += [
                _flow(group[child], group[up], nbytes),
                _flow(group[up], group[child], nbytes),
            ]
    return flows


def _depth(parent: list[int]) -> int:
    """Edges on the longest path from a rank to the root of the tree ``parent``."""
    depth = [0] * len(parent)
    for k in range(len(parent)):
        d, up = 0, parent[k]
        while up >= 0 and d <= len(parent):
            d, up = d + 1, parent[up]
        depth[k] = d
    return max(depth, default=0)


def dp_allreduce(cluster: Cluster, nbytes: float, algorithm: str = "ring") -> Traffic:
    """Data-parallel gradient all-reduce of ``nbytes`` per GPU across servers, one group
    per local rank (all at once).

    * ``"ring"``: servers in order.
    * ``"tree"``: one binary tree over servers in heap order (parent of s is (s-1)//2);
      each child sends nbytes up (reduce) and receives nbytes back (broadcast),
      pipelined, so an inner node moves 3 x nbytes through its NIC in each direction.
    * ``"double-tree"``: NCCL's two trees (:func:`scaleout.trees.double_binary_tree`,
      chapter 9), each carrying half the data. No rank has more than two children over
      both trees, so no NIC carries more than 2 x nbytes per direction, like the ring; for
      an odd number of servers one rank (rank 0) is an inner node of *both* trees, with
      one child in each (:func:`scaleout.trees.check_double_tree`).
    """
    cluster = _cluster(cluster)
    algorithm = checks.choice("algorithm", algorithm, DP_ALGORITHMS)
    if algorithm == "ring":
        return ring_allreduce(cluster, dp_groups(cluster), nbytes, "DP ring all-reduce")
    nbytes = checks.nonnegative("nbytes", nbytes)
    s = cluster.servers
    if algorithm == "tree":
        parents = [[(k - 1) // 2 if k else -1 for k in range(s)]]
    else:
        parents = [tree.parent.tolist() for tree in trees.double_binary_tree(s)]
        nbytes = nbytes / 2
    flows = [
        f
        for group in dp_groups(cluster)
        for parent in parents
        for f in _tree_flows(group, parent, nbytes)
    ]
    depth = max(_depth(parent) for parent in parents)
    name = "DP tree all-reduce" if algorithm == "tree" else "DP double binary tree all-reduce"
    return Traffic(name, (tuple(flows),), (2 * depth,))


def _server_path(g: int, nics: int, rail_in: int, rail_out: int) -> list[int]:
    """Local ranks of one server in a channel's ring: enter at a GPU of ``rail_in``,
    visit the others, leave from a GPU of ``rail_out`` (a different GPU when g > 1)."""
    per = g // nics
    enter = rail_in * per
    leave = rail_out * per + per - 1
    if leave == enter and g > 1:  # one GPU per rail and the same rail both ways
        leave = (enter + 1) % g  # leave from the next GPU: this hop crosses rails
    middle = [k for k in range(g) if k not in (enter, leave)]
    return [enter, *middle] + ([leave] if leave != enter else [])


def _exit_rails(servers: int, nics: int) -> list[int]:
    """Rail each server leaves by in channel 0: neighbours differ (so a server enters on
    one rail and leaves on another) wherever ``nics`` allows it."""
    rails = [s % nics for s in range(servers)]
    if servers > 2 and nics > 2 and rails[-1] == rails[0]:
        rails[-1] = 1  # differs from rails[0] = 0 and from rails[-2] = nics - 1
    return rails


def flat_ring_allreduce(cluster: Cluster, nbytes: float, channels: int | None = None) -> Traffic:
    """All-reduce of ``nbytes`` per GPU over every GPU as NCCL's ring algorithm lays it
    out: ``channels`` flat rings over all GPUs (default: one per NIC of a server), each
    carrying ``nbytes / channels``, all at once.

    Each ring enters a server through a NIC, visits its GPUs one after another over NVLink
    and leaves through a NIC; NCCL runs several such rings at once, one per NIC, so that
    the NICs' bandwidths add up (NVIDIA/nccl issue 412, S. Jeaugey), and keeps each ring on
    the same NIC from node to node so that its traffic stays on one rail of a
    rail-optimized fabric (``NCCL_CROSS_NIC`` in NCCL's environment-variable documentation).
    Here channel c leaves server s by rail (r_s + c) mod nics and enters server s+1 on that
    same rail: every hop between servers stays on one rail (one leaf switch), and with one
    channel per NIC every NIC carries 2(p-1)/p * nbytes / channels each way. NCCL may enter
    and leave a server through the same NIC (its last GPU reaches that NIC over PCIe, which
    this model does not draw); the model sends every flow through its sending GPU's own NIC
    and alternates rails instead, which puts the same bytes on every NIC and leaf. Where the
    rails cannot alternate (two NICs and an odd number of servers) a server enters and leaves
    on one rail, by two GPUs when the rail has two.

    ``channels=1`` is one ring whose hops between servers each go through a single NIC:
    the "what if one NIC" case, the pricing NCCL does *not* do. Chapter 10 prices NCCL's
    ring (and its choice between ring and tree) with NCCL's own cost model.
    """
    cluster = _cluster(cluster)
    nbytes = checks.nonnegative("nbytes", nbytes)
    nics = cluster.nics_per_server
    c = nics if channels is None else checks.integer("channels", channels, 1, MAX_CHANNELS)
    g, s, p = cluster.gpus_per_server, cluster.servers, cluster.num_gpus
    if c * p > MAX_FLOWS:
        raise checks.fail("channels * GPUs", f"at most {MAX_FLOWS} flows", c * p)
    share = 2 * (p - 1) / p * nbytes / c if p > 1 else 0.0
    base = _exit_rails(s, nics)
    flows = []
    for k in range(c):
        out = [(r + k) % nics for r in base]
        ring = []
        for server in range(s):
            rail_in = out[server - 1] if s > 1 else (out[0] + 1) % nics
            local = _server_path(g, nics, rail_in, out[server])
            ring += [server * g + i for i in local]
        flows += _ring_flows(ring, share, 1.0)
    name = f"flat ring all-reduce, {c} channel" + ("s" if c > 1 else "")
    return Traffic(name, (tuple(flows),), (2 * (p - 1),))


def hierarchical_allreduce(cluster: Cluster, nbytes: float) -> Traffic:
    """Hierarchical all-reduce of ``nbytes`` per GPU over every GPU, in three phases: ring
    reduce-scatter inside each server (NVLink), ring all-reduce of the 1/g shards across
    servers on each rail, ring all-gather inside each server.

    This is Horovod's hierarchical all-reduce (``HOROVOD_HIERARCHICAL_ALLREDUCE``: NCCL
    reduce-scatter, MPI all-reduce across nodes, NCCL all-gather; ``NCCLHierarchicalAllreduce``
    in ``horovod/common/ops/nccl_operations.cc``) and the two-level case of BlueConnect (Cho
    et al., SysML 2019). It is an alternative to NCCL's algorithm, not what NCCL does: NCCL
    runs flat rings over all GPUs (:func:`flat_ring_allreduce`) or trees.
    """
    cluster = _cluster(cluster)
    nbytes = checks.nonnegative("nbytes", nbytes)
    g, s = cluster.gpus_per_server, cluster.servers
    servers = [list(range(k * g, (k + 1) * g)) for k in range(s)]
    inside = tuple(f for grp in servers for f in _ring_flows(grp, nbytes, (g - 1) / g))
    across = ring_allreduce(cluster, dp_groups(cluster), nbytes / g).phases[0]
    phases = (inside, across, inside)
    return Traffic("hierarchical all-reduce", phases, (g - 1, 2 * (s - 1), g - 1))
