from fuzz import call

BASELINES = {
    "GPU": call(
        "H100-SXM",
        "Hopper",
        2022,
        "SXM",
        67.0,
        494.5,
        989.5,
        989.5,
        1979.0,
        80.0,
        3.35,
        132,
        50.0,
        4,
        18,
        700.0,
        "datasheet",
        secondary=("sms",),
        note="a note",
    ),
    "gpu": call("H100-SXM"),
}
