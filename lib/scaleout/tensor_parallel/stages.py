"""Between pipeline stages: Megatron's scatter-gather of a stage's output.

Narayanan et al., SC21 (arXiv 2104.04473), Sec. 4.1; Megatron-LM
``--scatter-gather-tensors-in-pipeline``. A stage ends with g, so its output sits whole on
all t GPUs of its server; point-to-point sends carry it to the next stage (no all-to-all
anywhere), either whole on every rail or 1/t per rail followed by an NVLink all-gather.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import checks
from .. import collectives as C
from .. import costmodel as M
from ..nccl import p2p
from . import network
from .sizes import MAX_SCHEDULE_T, MAX_T, divides, layer_sizes, t_size
from .traffic import GPUS_PER_SERVER, INTER, INTRA, _link, collective_seconds

MODELS = ("nccl", "alpha-beta")


@dataclass(frozen=True)
class StageTransfer:
    """Sending one stage's output (b s h x dtype bytes, replicated on t GPUs after g) to
    the next pipeline stage on another server; GPU i sends to GPU i there, on its rail."""

    t: int
    tensor_bytes: float
    per_rail_full: float  # every GPU sends the whole tensor
    per_rail_scatter_gather: float  # every GPU sends 1/t of it ...
    allgather_bytes_per_gpu: float  # ... and the receivers' ring all-gather sends this each

    def __post_init__(self):
        t_size(self.t)
        for name in (
            "tensor_bytes",
            "per_rail_full",
            "per_rail_scatter_gather",
            "allgather_bytes_per_gpu",
        ):
            checks.nonnegative(name, getattr(self, name))

    @property
    def cross_server_full(self) -> float:
        return self.t * self.per_rail_full

    @property
    def cross_server_scatter_gather(self) -> float:
        return self.t * self.per_rail_scatter_gather

    @property
    def saving(self) -> float:
        """Cross-server bytes without scatter-gather over those with it (equals t)."""
        if self.cross_server_scatter_gather == 0:
            return 1.0
        return self.cross_server_full / self.cross_server_scatter_gather


def stage_transfer(b, s, h, t, dtype_bytes=2, gpus_per_server=GPUS_PER_SERVER) -> StageTransfer:
    """Bytes with and without Megatron's scatter-gather (Narayanan et al. 2021, Sec. 4.1;
    Megatron-LM ``--scatter-gather-tensors-in-pipeline``). The all-gather runs on NVLink,
    so t <= gpus_per_server."""
    b, s, h, t, dtype_bytes = layer_sizes(b, s, h, t, dtype_bytes)
    g = checks.integer("gpus_per_server", gpus_per_server, 1, MAX_T)
    if t > g:
        raise checks.fail(
            "t", f"<= gpus_per_server = {g} (the all-gather runs inside one server)", t
        )
    n = float(b * s * h) * dtype_bytes
    return StageTransfer(t, n, n, n / t, M.busbw_factor("allgather", t) * n)


def stage_transfer_seconds(
    b, s, h, t, dtype_bytes=2, intra=None, inter=None, *, model="nccl", machine=None
):
    """(seconds without, seconds with scatter-gather). The t rails run in parallel; with
    scatter-gather the receivers then all-gather the whole tensor inside their server.

    ``model="nccl"`` (the default): each rail's send is :func:`scaleout.nccl.p2p.sendrecv_us`
    (the book's point-to-point model, built from NCCL's constants: NCCL does not price
    send/recv) and the all-gather NCCL's model (:func:`collective_seconds`), on ``machine``
    (an :class:`scaleout.nccl.topo.Topology` or preset name; then leave ``intra``/``inter`` out)
    or the server :func:`scaleout.tensor_parallel.network.machine` builds from the links.
    ``model="alpha-beta"``: alpha + bytes beta on the ``inter`` NIC (costmodel's broadcast on
    p = 2) and chapter 1's NVLink ring all-gather on ``intra``."""
    model = checks.choice("model", model, MODELS)
    if model == "alpha-beta":
        if machine is not None:
            raise checks.fail("machine", "None unless model is 'nccl'", machine)
        st = stage_transfer(b, s, h, t, dtype_bytes)
        nv = _link("intra", INTRA if intra is None else intra)
        nic = _link("inter", INTER if inter is None else inter)

        def send(nbytes):
            return M.collective_time(
                "broadcast", "binomial", nbytes, 2, nic.alpha_s, nic.beta_s_per_byte
            )

        gather = M.collective_time(
            "allgather", "ring", st.tensor_bytes, st.t, nv.alpha_s, nv.beta_s_per_byte
        )
        return float(send(st.per_rail_full)), float(send(st.per_rail_scatter_gather) + gather)
    if machine is None:
        topo = network.machine(GPUS_PER_SERVER, INTRA if intra is None else intra,
                               INTER if inter is None else inter)  # fmt: skip
    else:
        topo = network.check_machine(machine)
        for name, value in (("intra", intra), ("inter", inter)):
            if value is not None:
                raise checks.fail(name, "None when machine is given", value)
    st = stage_transfer(b, s, h, t, dtype_bytes, gpus_per_server=topo.gpus_per_node)
    if topo.nics_per_node == 0:
        raise checks.fail("machine", "a machine with NICs (the stages sit on two servers)",
                          topo.name)  # fmt: skip
    full, part = p2p.sendrecv_us(
        [st.per_rail_full, st.per_rail_scatter_gather], False, machine=topo
    )
    gather = collective_seconds("allgather", st.tensor_bytes, st.t, machine=topo)
    return float(full * 1e-6), float(part * 1e-6 + gather)


def stage_transfer_schedule(t: int, n: int, scatter_gather: bool = True) -> list[C.Step]:
    """Steps on 2t ranks: 0..t-1 are stage k's server (each holds the whole n-element
    tensor), t..2t-1 the next stage's. Without scatter-gather, in step j rank i sends chunk
    j to rank t+i (t steps: all of it). With it, rank i sends only chunk i (one step), then
    a ring all-gather among t..2t-1 (:func:`scaleout.collectives.ring_allgather_schedule`).
    Replay with :func:`scaleout.collectives.replay`; count with ``bytes_sent_per_rank``.
    t <= ``MAX_SCHEDULE_T`` (the schedule holds t^2 transfers), n <= ``checks.MAX_ELEMENTS``."""
    t = t_size(t, MAX_SCHEDULE_T)
    n = checks.integer("n", n, 1, checks.MAX_ELEMENTS)
    scatter_gather = checks.boolean("scatter_gather", scatter_gather)
    divides(t, n, "n")
    bounds = [int(v) for v in C.chunk_bounds(n, t)]

    def rail(chunk_of):
        return C.Step(
            "rail",
            tuple(
                C.Transfer(i, t + i, c, bounds[c], bounds[c + 1] - bounds[c], False)
                for i in range(t)
                for c in [chunk_of(i)]
            ),
        )

    if not scatter_gather:
        return [rail(lambda i, j=j: j) for j in range(t)]
    shifted = [
        C.Step(
            "all-gather",
            tuple(
                C.Transfer(tr.src + t, tr.dst + t, tr.chunk, tr.offset, tr.count, tr.reduce)
                for tr in step.transfers
            ),
        )
        for step in C.ring_allgather_schedule(t, n)
    ]
    return [rail(lambda i: i)] + shifted
