from fuzz import call

from scaleout import trees as T

STEPS = T.tree_allreduce_schedule(6, 12, 2, 2).steps()
SCHED = T.tree_allreduce_schedule(3, 4, 1, 1)

BASELINES = {
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
}
