from fuzz import call

BASELINES = {
    "WritePacket": call(0, "RDMA WRITE Only", 0, 100, (0, 0, 100)),
    "write_packets": call(10_000, 4096, 0x1000, 7, 3, immediate=5),
    "rdma_write_steps": call(10_000, 4096, 0xA000, 0x1000, 5, 42, start_psn=3),
    "responder_go_back_n": call([0, 1, 3, 2], 0),
    "responder_ooo": call([0, 1, 3, 2], 4, 0, 4),
}
