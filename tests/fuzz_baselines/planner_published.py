from fuzz import call

from scaleout import planner as PL

RUN = PL.runs()[0]
ROW = PL.validation()[0]
LLAMA = next(r for r in PL.runs() if r.alternatives)
ERR = PL.errors_of([ROW])
BASELINES = {
    "Run": call(
        LLAMA.key,
        LLAMA.model,
        LLAMA.cluster,
        LLAMA.batch,
        LLAMA.plan,
        LLAMA.measured,
        LLAMA.convention,
        LLAMA.split,
        LLAMA.sweep,
        LLAMA.source,
        LLAMA.assumed,
        None,
        LLAMA.alternatives,
        0.5,
    ),
    "runs": call(),
    "fig_plan": call(13, 8),
}
