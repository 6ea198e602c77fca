from fuzz import call

from scaleout import planner as PL

TINY = PL.Model("tiny", 4, 64, 4, seq=32, vocab=128)
FOUR = PL.Cluster("4 A100", 4)
SPACE = PL.Space(max_microbatch=2, vs=(1, 2))
G = PL.grid(TINY, FOUR, 8, space=SPACE)
BASELINES = {
    "divisors": call(3072),
    "Space": call(
        max_microbatch=4,
        vs=(1, 2),
        zero_stages=(0, 1),
        recompute=("full",),
        sps=(False,),
        overlap="none",
        dp_overlap=True,
        precision="mixed",
        flash=False,
        scatter_gather=True,
    ),
    "candidates": call(TINY, FOUR, 8, SPACE, ts=[1, 2], ps=[1, 2]),
    "search": call(TINY, FOUR, 8, SPACE, calibration=1.5, usable_fraction=0.9, ts=None, ps=None),
    "Grid": call(G.rows, G.cols, G.row_values, G.col_values, G.best, G.possible, G.results),
    "grid": call(TINY, FOUR, 8, "t", "p", SPACE, calibration=1.5, usable_fraction=0.9),
}
NONFINITE_OK = {
    "Grid": "best holds NaN where no plan of a pair fits (documented)",
    "grid": "best holds NaN where no plan of a pair fits (documented)",
}
