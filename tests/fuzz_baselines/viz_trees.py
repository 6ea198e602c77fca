from fuzz import call

from scaleout import trees as T

BASELINES = {
    "trees_figure": call(7, nccl_version=(2, 8, 3)),
    "allreduce_animation": call(5, chunks=2, trees=2),
    "cost_vs_ranks": call(3e-6, 2e-11, link="nic-400g", ranks=[2, 8, 64]),
    "time_vs_size": call(8, 3e-6, 2e-11, link="nic-400g", nbytes=[1e3, 1e6, 1e9]),
    "traffic_figure": call(4, chunks=2),
    "measured_figure": call([64, 1024], {"ring": [1e-3, 2e-3], "two trees": [5e-4, 6e-4]}, 8),
    "summit_figure": call(T.summit_comparison(3e-6, 2e-11)),
}
