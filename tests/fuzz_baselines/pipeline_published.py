from fuzz import call

from scaleout import compute as C
from scaleout import pipeline_published as PP

LAYER = C.Layer(hidden=1024, heads=16, seq=512)
ROWS = (PP.Row("s", "a", "x", 1.0, 1.1, "ratio"), PP.Row("s", "a", "y", 2.0, 1.9, "ratio"))

BASELINES = {
    "Row": call("src", "setting", "1F1B", 11.8, 12.4, "samples/s per GPU"),
    "step_ms": call("zb-h1", 4, 8, 1.0, 2.0, t_w=1.0, t_comm=0.1, v=1),
    "qi2024_rows": call(),
    "relative": call(ROWS, "x"),
    "sc21_interleaving_rows": call(),
    "gpipe_rows": call(),
    "sc21_microbatch_rows": call(),
    "Skill": call(3, 0.1, 0.2, 0.9, 1.0),
    "skill": call(ROWS),
    "stage_times": call(LAYER, 4, 2, "A100-80GB", t=2, recompute="full", flash=False, dtype="fp16"),
    "microbatch_throughput": call(
        LAYER,
        8,
        2,
        16,
        [1, 2, 4],
        gpu="A100-80GB",
        t=2,
        name="1f1b",
        recompute="full",
        flash=False,
        dtype="fp16",
    ),
    "single_gpu_tflops": call(LAYER, [1, 2], gpu="A100-80GB", dtype="fp16"),
}
