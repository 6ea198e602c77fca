"""One RDMA write between two CPU processes (gloo point-to-point) against the single-process
reference of scaleout.rdma. The library tests are in tests/unit/test_rdma.py."""

import numpy as np
import pytest

from scaleout import rdma as R


def _rdma_write_worker(rank, world_size, nbytes, mtu, seed):
    """The chapter's emulated RDMA write: QP info exchanged with all_gather_object, packets
    shuffled and two dropped by the "network", placed by PSN, holes NACKed and resent."""
    import torch
    import torch.distributed as dist

    n = -(-nbytes // mtu)
    mine = np.random.default_rng([seed, rank])
    me = {"qp_num": 0x100 + rank, "psn": int(mine.integers(2**24)), "gid": f"fe80::{rank}"}
    peers = [None] * world_size
    dist.all_gather_object(peers, me)
    qp = R.connect_rc(R.QueuePair(me["qp_num"]), peers[1 - rank], psn=me["psn"], mtu=mtu)
    net = np.random.default_rng(seed)
    order, dropped = net.permutation(n), set(net.choice(n, 2, replace=False).tolist())
    end = torch.tensor([-1, 0])
    if rank == 0:
        data = torch.from_numpy(mine.integers(0, 256, nbytes, dtype=np.uint8))
        packets = R.write_packets(nbytes, mtu, start_psn=me["psn"])

        def send(p):
            dist.send(torch.tensor([p.psn, p.length]), dst=1)
            dist.send(data[p.offset : p.offset + p.length].contiguous(), dst=1)

        for i in order:
            if i not in dropped:
                send(packets[i])
        dist.send(end, dst=1)
        count = torch.zeros(1, dtype=torch.int64)
        dist.recv(count, src=1)
        nack = torch.zeros(int(count), dtype=torch.int64)
        dist.recv(nack, src=1)
        for psn in nack.tolist():
            send(packets[(psn - me["psn"]) % 2**24])
        dist.send(end, dst=1)
        resent = sorted((psn - me["psn"]) % 2**24 for psn in nack.tolist())
        return {"data": data.numpy(), "nack": resent, "dropped": sorted(dropped), "state": qp.state}
    memory, bitmap = torch.zeros(nbytes, dtype=torch.uint8), np.zeros(n, bool)

    def burst():
        arrived = []
        while True:
            head = torch.zeros(2, dtype=torch.int64)
            dist.recv(head, src=0)
            psn, length = head.tolist()
            if psn < 0:
                return arrived
            payload = torch.empty(length, dtype=torch.uint8)
            dist.recv(payload, src=0)
            j = (psn - qp.attrs["RQ_PSN"]) % 2**24
            memory[j * mtu : j * mtu + length] = payload
            bitmap[j] = True
            arrived.append(j)

    first = burst()
    holes = np.flatnonzero(~bitmap).tolist()
    nack = torch.tensor([(qp.attrs["RQ_PSN"] + j) % 2**24 for j in holes], dtype=torch.int64)
    dist.send(torch.tensor([len(holes)]), dst=0)
    dist.send(nack, dst=0)
    burst()
    return {"memory": memory.numpy(), "first": first, "holes": holes, "state": qp.state}


@pytest.mark.parametrize("nbytes,mtu,seed", [(40_000, 4096, 7), (10_001, 1024, 3)])
def test_distributed_rdma_write_matches_the_single_process_reference(nbytes, mtu, seed):
    from scaleout.dist import run

    sender, target = run(_rdma_write_worker, nprocs=2, args=(nbytes, mtu, seed),
                         show_output=False)  # fmt: skip
    assert sender["state"] == target["state"] == "RTS"
    np.testing.assert_array_equal(target["memory"], sender["data"])
    n = -(-nbytes // mtu)
    placed, missing = R.responder_ooo(target["first"], n)
    assert placed.all() and missing == target["holes"] == sender["dropped"] == sender["nack"]
    accepted, _ = R.responder_go_back_n(target["first"])
    kept = [j for j, a in zip(target["first"], accepted, strict=True) if a]
    assert kept == list(range(len(kept)))
