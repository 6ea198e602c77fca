from fuzz import call

from scaleout import pipeline as P
from scaleout import pipeline_published as PP

S = P.schedule("1f1b", 2, 2)
ROWS = (PP.Row("s", "a", "x", 1.0, 1.1, "ratio"), PP.Row("s", "b", "x", 2.0, 1.9, "ratio"))

BASELINES = {
    "gantt_traces": call(S, color_by="phase", xaxis="x", yaxis="y", legend=True, scale=1.0),
    "gantt": call(S, title="t", color_by="stage", scale=1.0, height=300),
    "schedules_animation": call([S], frames=5, color_by="phase", title="t", labels=["a"]),
    "bubble_vs_m": call(2, [2, 4], vs=(2,)),
    "in_flight_bars": call({"1F1B": S}),
    "in_flight_over_time": call({"1F1B": S}, stage=1),
    "microbatch_sweep": call(
        [1, 2], {"a": [1.0, 1.1]}, {"a": [1.0, 1.2]}, title="t", yaxis_title="y"
    ),
    "validation_scatter": call({"a": ROWS}, title="t"),
    "memory_figure": call([1e9, 1e10], {"Adam": 16}, {"H100 80GB": 80.0}),
    "memory_per_gpu": call(7e9, 16, 80.0, 8, gpu_name="H100"),
    "cuts_figure": call(4, 2),
    "states_breakdown": call(
        {"ZeRO": {"fp16 parameters": 2.0, "Adam": 12.0}}, title="t", unit="bytes per parameter"
    ),
}
