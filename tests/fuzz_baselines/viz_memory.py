from fuzz import call

from scaleout import memory as M

BASELINES = {
    "stage_layout": call(dp=4),
    "accountings": call(8, ("mixed", "megatron-bf16")),
    "gb_text": call(31.4),
    "memory_by_stage": call(7.5e9, 64, 1e9),
    "memory_vs_dp": call(7.5e9, [1, 4, 64], 1e9, 80e9, "7.5B", start=64),
    "activation_curves": call(M.TRANSFORMERS["7.5B"], [512, 2048]),
    "table_figure": call(
        ["7.5B ZeRO-1", "7.5B ZeRO-3"],
        ["1", "64"],
        [["120", "31.4"], ["120", "1.88"]],
        [[False, True], [False, True]],
        "a table",
        bold=[[False, True], [False, False]],
    ),
    "zero3_animation": call(2, 2, prefetch=1),
    "zero_table1": call({"7.5B": 7.5e9, "1T": 1e12}, [1, 64, 1024], 32e9),
    "published_table": call(["a", "b"], [144.0, 88.0], {"model": [144.0, 143.0]}, {"model": [0]}),
    "min_dp_table": call({("7.5B", "full"): [None, 2, 2, 2]}, {("7.5B", "full"): 0.9e9}, 80e9),
    "measured_state_bytes": call([100, 90], [100, 90], 95.0),
}
