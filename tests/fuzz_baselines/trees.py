from fuzz import call

from scaleout import trees as T

TREE = T.binary_tree(6)
STEPS = T.tree_allreduce_schedule(6, 12, 2, 2).steps()
SCHED = T.tree_allreduce_schedule(3, 4, 1, 1)
REPORT = T.check_tree(TREE)
CMP = T.summit_comparison(3e-6, 2e-11)

BASELINES = {
    "BinaryTree": call(TREE.parent, TREE.children, TREE.child_type),
    "binary_tree": call(6, nccl_version=(2, 8, 3)),
    "double_binary_tree": call(7, nccl_version=(2, 8, 3)),
    "dtree_roots": call(7, nccl_version=(2, 8, 3)),
    "TreeReport": call(6, True, True, 2, 3, 3),
    "check_tree": call(TREE),
    "DoubleTreeReport": call(6, (REPORT, REPORT), 2, 2, [], [], ()),
    "check_double_tree": call(7, nccl_version=(2, 8, 3)),
    "TreeAllreduceSchedule": call(
        SCHED.p,
        SCHED.numel,
        SCHED.chunks,
        SCHED.ntrees,
        SCHED.depth,
        SCHED.nsteps,
        SCHED.step,
        SCHED.tree,
        SCHED.chunk,
        SCHED.src,
        SCHED.dst,
        SCHED.up,
        SCHED.offset,
        SCHED.count,
    ),
    "tree_allreduce_schedule": call(6, 12, chunks=2, trees=2, nccl_version=(2, 8, 3)),
    "tree_allreduce": call([[1.0, 2.0, 3.0]] * 5, chunks=2, trees=2),
    "flows_per_step": call(STEPS, 6),
    "schedule_time": call(STEPS, 6, 4, 3e-6, 2e-11),
    "port_messages": call(TREE),
    "port_load": call(8, trees=2),
    "tree_allreduce_time": call(1e6, 64, 3e-6, 2e-11, chunks=4, trees=2),
    "optimal_chunks": call(1e6, 64, 3e-6, 2e-11, trees=2),
    "best_tree_time": call(1e6, 64, 3e-6, 2e-11, trees=2),
    "crossover_vs_ring": call(64, 3e-6, 2e-11, trees=2),
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
NONFINITE_OK = {"crossover_vs_ring": "NaN is its documented answer when the tree never wins"}
