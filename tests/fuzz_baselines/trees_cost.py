from fuzz import call

from scaleout import trees as T

TREE = T.binary_tree(6)

BASELINES = {
    "port_messages": call(TREE),
    "port_load": call(8, trees=2),
    "tree_allreduce_time": call(1e6, 64, 3e-6, 2e-11, chunks=4, trees=2),
    "optimal_chunks": call(1e6, 64, 3e-6, 2e-11, trees=2),
    "best_tree_time": call(1e6, 64, 3e-6, 2e-11, trees=2),
    "crossover_vs_ring": call(64, 3e-6, 2e-11, trees=2),
}
NONFINITE_OK = {"crossover_vs_ring": "NaN is its documented answer when the tree never wins"}
