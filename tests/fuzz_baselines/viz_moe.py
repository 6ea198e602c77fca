import numpy as np
from fuzz import call

from scaleout import moe

_R = moe.route(np.random.default_rng(0).normal(size=(8, 4)), 2, 1.0)
_PLAN = moe.dispatch_plan(_R, 2, token_bytes=4.0)

BASELINES = {
    "routing_animation": call(_R, 2, title="t"),
    "load_bars": call(_R, 2, title="t", ymax=10),
    "plan_matrix": call(_PLAN, "bytes", title="t"),
    "alltoall_topology": call(
        [2e6, 2e6, 2e6, 2e6], [1e6, 1e6, 1e6, 1e6], 2, 450.0, 50.0, title="t"
    ),
    "cost_curves": call(
        [1, 2, 4],
        {"a": [1.0, 2.0, 3.0]},
        "x",
        "y",
        title="t",
        log_x=True,
        marker_x=2,
        marker_text="m",
        log_y=False,
        highlight=(2, 2.0, "h"),
    ),
    "mesh_figure": call(moe.mesh(8, 4), 8, title="t"),
    "measured_vs_model": call(
        ["a", "b"], [1.0, 2.0], [1.5, 2.5], title="t", unit="us", groups=["g", "h"]
    ),
    "rows_table": call(["r1", "r2"], ["c1"], [["a"], ["b"]], [[True], [False]], "t", "s"),
    "parameter_bars": call(["a", "b"], [10e9, 5e9], [1e9, 2e9], title="t"),
}
