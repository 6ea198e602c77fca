from fuzz import call

BASELINES = {
    "interval_figure": call(
        [60.0, 600.0, 6000.0], {"goodput": [0.8, 0.9, 0.7]}, {"optimum": (600.0, 0.9)}, title="t"
    ),
    "scale_figure": call([1024, 2048], {"synchronous": [0.9, 0.8]}, title="t"),
    "causes_figure": call({"Faulty GPU": ("GPU", 148, 30.1), "SSD": ("Host", 3, 0.7)}, title="t"),
    "budget_figure": call([1.0, 10.0], {"90%": [600.0, -5.0]}, {"Tectonic": 2.8}, title="t"),
    "explorer_figure": call(1024, 5.0, "8B", 100.0, 10.0),
}
