from fuzz import call

from scaleout.rdma import published as P

BASELINES = {
    "LossResult": call(
        "k", "source", "system", 0.01, "goodput_fraction", 0.6, "about", "go-back-n", note="a note"
    ),
    "simulated": call("goodput_fraction", 0.01, "go-back-n"),
    "Comparison": call(P.RESULTS[0], 0.3, 0.9, "below"),
    "compare": call(),
}
NONFINITE_OK = {"simulated": "inf for sr_over_gbn where go-back-N delivers nothing (documented)"}
