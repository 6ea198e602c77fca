from fuzz import call

from scaleout import pipeline as P

ORDERS = P.stage_order("1f1b", 2, 2)

BASELINES = {
    "pipeline": call("1f1b", 2, 2, [[1.0] * len(o) for o in ORDERS], t_comm=0.1, v=1, t_host=0.01),
    "observed_delays": call(
        "1f1b",
        2,
        2,
        [
            [(n, float(i), i + 0.5) for i, n in enumerate(["F0", "F1", "B0", "B1"])],
            [(n, i + 0.6, i + 1.0) for i, n in enumerate(["F0", "B0", "F1", "B1"])],
        ],
    ),
    "collective": call([[1.0, 2.0], [1.0, 3.0]], 0.5, [0.1, 0.1]),
}
SKIP = {"Replay": "a record made by pipeline() and collective()"}
