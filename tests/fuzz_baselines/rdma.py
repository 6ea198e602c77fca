from fuzz import call

from scaleout import rdma as R
from scaleout.rdma_sim import SimConfig

PEER = {"qp_num": 4, "psn": 77, "gid": "fe80::9"}

BASELINES = {
    "local_ack_timeout_s": call(14),
    "QueuePair": call(1),
    "connect_rc": call(R.QueuePair(3), PEER, psn=11),
    "WritePacket": call(0, "RDMA WRITE Only", 0, 100, (0, 0, 100)),
    "write_packets": call(10_000, 4096, 0x1000, 7, 3),
    "rdma_write_steps": call(10_000, 4096, 0xA000, 0x1000, 5, 42, start_psn=3),
    "responder_go_back_n": call([0, 1, 3, 2], 0),
    "responder_ooo": call([0, 1, 3, 2], 4, 0),
    "data_path_times": call(1e9),
    "simulate": call(4096 * 20, loss=0.01, seed=1),
    "Sweep": call("loss", [0.0], ("go-back-n",), [[1.0]], [[400.0]], [[1.0]], [[0.0]], [[0.0]]),
    "sweep": call("loss", [0.0, 0.01], message_bytes=4096 * 20, seed=1),
    "ideal_completion_s": call(SimConfig(4096 * 20)),
    "gbn_goodput_fraction": call(0.01, 8e-6, 8.192e-8, 1.31e-4),
}
