from fuzz import call

from scaleout import trees as T

CMP = T.summit_comparison(3e-6, 2e-11)

BASELINES = {
    "PublishedComparison": call(
        CMP.gpus,
        CMP.nodes,
        CMP.measured_tree_us,
        CMP.measured_ring_us,
        CMP.model_tree_us,
        CMP.model_ring_us,
        CMP.tree_steps,
        CMP.ring_steps,
        CMP.source,
    ),
    "summit_comparison": call(3e-6, 2e-11, nbytes=8.0),
}
