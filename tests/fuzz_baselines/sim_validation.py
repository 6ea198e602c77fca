from fuzz import call

from scaleout.sim.validation import Comparison

PARTS = {"compute": 1.0}
ROWS = [
    Comparison("a", 1.0, 1.01, 1.1, "held-out", "s", PARTS, PARTS),
    Comparison("b", 2.0, 2.05, 2.1, "held-out", "s", PARTS, PARTS),
    Comparison("c", 3.0, 2.9, 3.3, "fit", "s", PARTS, PARTS),
]

BASELINES = {
    "against_planner": call(ROWS),
    "held_out": call(ROWS),
}
SKIP = {
    "published": "no arguments; 75 simulations (about 20 s), run and checked by chapter 16",
    "Comparison": "a record made by published(); fuzzed through against_planner and held_out",
}
