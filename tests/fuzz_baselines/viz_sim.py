from fuzz import call

from scaleout import planner as PL
from scaleout import sim

SMALL = PL.Model("small", layers=8, hidden=1024, heads=16, seq=1024)
TRACE = sim.simulate(SMALL, PL.a100_cluster(8), 16, PL.Plan(t=2, p=2, d=2, b=1))

BASELINES = {
    "timeline": call(TRACE, ranks=None, title="t", scale=1e3, unit="ms", streams=("compute",)),
    "breakdown_bars": call(
        {"sim": TRACE.breakdown, "planner": {"compute": 1.0, "tp": 0.1}},
        title="b",
        unit_s=1.0,
        unit="s",
    ),  # fmt: skip
    "slowest_of_n": call([8, 64], {"a": [1.0, 1.1]}, title="j"),
}
