from fuzz import call

from scaleout import rdma as R

RES = {s: R.simulate(4096 * 8, strategy=s, loss=0.1, seed=3, timeline=True) for s in R.STRATEGIES}
LOSS = R.sweep("loss", [1e-3, 1e-2], message_bytes=4096 * 20)
LATE = R.sweep("reorder", [1e-3, 1e-2], message_bytes=4096 * 20)
DELAY = R.sweep("reorder_delay_s", [1e-7, 1e-6], message_bytes=4096 * 20, reorder=0.1)
QP = R.connect_rc(R.QueuePair(1), {"qp_num": 2, "psn": 0, "gid": "x"}, psn=0)

BASELINES = {
    "data_path_figure": call("gpudirect"),
    "qp_state_figure": call(QP),
    "transfer_animation": call(RES, "loss 10%", frames=10),
    "goodput_vs_loss_figure": call({"a": LOSS}, {"a": ([1e-3], [0.9])}),
    "reorder_figure": call(LATE, DELAY, 2e-6),
    "time_sequence_figure": call(RES["go-back-n"], 300),
}
