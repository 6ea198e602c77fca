import numpy as np
from fuzz import call

from scaleout import data_parallel as D

NAIVE, DDP = D.uniform_model_timelines(1e8, 24, 8, 3e-6, 2e-11)
SIZES = [4096.0, 1024.0, 4096.0, 1024.0]
BUCKETS = D.assign_buckets(SIZES, 5000.0, 1024.0)
QUIET, LOUD = D.accumulation(DDP, 4), D.accumulation(DDP, 4, no_sync=False)
GRADS = np.array([[1.0, 0.5], [0.2, -0.3], [-0.4, 0.9], [0.0, 1.0]])

BASELINES = {
    "bucket_colors": call(3),
    "gradient_average_figure": call(GRADS, GRADS.mean(0)),
    "bucket_figure": call(["a", "b", "c", "d"], SIZES, BUCKETS),
    "timeline_figure": call(NAIVE, DDP, title="a step"),
    "timeline_animation": call(NAIVE, DDP, frames=8),
    "cap_sweep_figure": call([1.0, 25.0], [DDP, DDP], NAIVE),
    "accumulation_table_figure": call({"400 Gb/s, k = 4": (QUIET, LOUD)}, title="k"),
    "caps_table_figure": call(["1 MiB", "25 MiB"], NAIVE, [DDP, DDP], title="caps"),
}
