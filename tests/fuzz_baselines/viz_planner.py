from fuzz import call

from scaleout import planner as PL

TINY = PL.Model("tiny", 4, 64, 4, seq=32, vocab=128)
FOUR = PL.Cluster("4 A100", 4)
G = PL.grid(TINY, FOUR, 8, space=PL.Space(max_microbatch=2, vs=(1, 2)))
BASELINES = {
    "plan_label": call(G.results[0].plan),
    "breakdown_figure": call(list(G.results[:2]), labels=["a", "b"], title="t"),
    "heatmap_traces": call(G),
    "heatmap_figure": call(G, "t", "s"),
    "validation_figure": call(list(PL.validation()[:3])),
    "batch_animation": call([G], [8], "tiny"),
    "mesh_figure": call(2, 2, 2),
}
NONFINITE_OK = {
    "heatmap_traces": "NaN marks the pairs where nothing fits (drawn blank)",
    "heatmap_figure": "NaN marks the pairs where nothing fits (drawn blank)",
    "batch_animation": "NaN marks the pairs where nothing fits (drawn blank)",
}
BASELINES["validation_table"] = call(list(PL.validation()[:3]))
BASELINES["explorer_figure"] = call("Llama-2-70B on H100", 64, 128, "megatron")
BASELINES["sweep_figure"] = call(list(PL.validation()), 13)
