from fuzz import call

from scaleout.rdma import QueuePair

BASELINES = {
    "local_ack_timeout_s": call(14),
    "retry_exhausted_s": call(20, 7),
    "rnr_retries": call(3),
    "QueuePair": call(1, "RESET", {}, []),
    # One QueuePair object serves every case: once a case connects it, later ones start
    # from RTS and are refused (a ValueError), which is still the contract.
    "connect_rc": call(QueuePair(3), {"qp_num": 4, "psn": 77, "gid": "fe80::9"}, psn=11),
}
NONFINITE_OK = {
    "local_ack_timeout_s": "TIMEOUT 0 means wait forever: math.inf, documented",
    "retry_exhausted_s": "TIMEOUT 0 means wait forever: math.inf, documented",
    "rnr_retries": "RNR_RETRY 7 means retry forever: math.inf, documented",
}

# A peer with extra keys but one missing (issue 31: was a KeyError).
EXTREMES = {"connect_rc": [call(QueuePair(3), {"qp_num": 4, "gid": "fe80::9", "x": 1}, psn=11)]}
