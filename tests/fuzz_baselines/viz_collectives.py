from fuzz import call

from scaleout import costmodel as M

FIT = M.fit_alpha_beta([1e3, 1e5, 1e7], [1e-4, 2e-4, 5e-3], 4)

BASELINES = {
    "holdings": call("allreduce", p=4, root=0),
    "collective_figure": call("reduce", p=4, root=1),
    "ring_allreduce_animation": call(4),
    "cost_curves": call(
        8, 3e-6, 2e-11, gamma=0.0, algorithms=("ring", "tree"), nbytes=[1e3, 1e6, 1e9]
    ),
    "measured_vs_model": call([1e3, 1e5, 1e7], [1e-4, 2e-4, 5e-3], FIT, 4),
    "cost_vs_ranks": call(
        1e6, 3e-6, 2e-11, gamma=0.0, algorithms=("ring", "tree"), ranks=[2, 8, 64]
    ),
}
