from fuzz import call

from scaleout.compute import published as P

BASELINES = {
    "Row": call(P.MAMF[0], "A100-80GB", "fit", 271.2, "compute", (256, 128), 3),
    "rows": call(),
    "Summary": call("transfer", 5, 0.06, 0.2, 1.0),
    "summary": call("transfer"),
    "LayerRow": call(P.KORTHIKANTI_TABLE4[0], 5.4, 9.7, 1.6, 0.0),
    "layer_rows": call(),
    "LayerSummary": call(
        5,
        {"forward": 0.1, "backward": 0.2, "combined": 0.15},
        {"forward": 0.1, "backward": 0.2, "combined": 0.15},
        1.0,
        1.0,
    ),
    "layer_summary": call(),
}
NONFINITE_OK = {
    "Summary": "rank_correlation is NaN when the model predicts one value",
}
