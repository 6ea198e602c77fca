from fuzz import call

from scaleout import pipeline as P

ORDERS = P.stage_order("1f1b", 2, 2)

BASELINES = {
    "pipeline": call("1f1b", 2, 2, [[1.0] * len(o) for o in ORDERS], t_comm=0.1, v=1),
    "collective": call([[1.0, 2.0], [1.0, 3.0]], 0.5, [0.1, 0.1]),
}
SKIP = {"Replay": "a record made by pipeline() and collective()"}
