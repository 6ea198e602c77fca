from fuzz import call

BASELINES = {
    "layouts_figure": call(16, 4),
    "ring_animation": call(16, 4, "zigzag", True),
    "memory_figure": call([1024, 4096], {"no CP": [1e9, 4e9]}, gpu_bytes=80e9, title="t"),
    "scheme_figure": call(
        [1, 2, 4], {"ring": [3.0, 1.5, float("nan")]}, "ms", "title", log_y=True
    ),  # fmt: skip
    "benchmark_figure": call(["a", "b"], [0.5, 0.9], [0.53, 1.0], title="t"),
    "hybrid_figure": call(
        [8, 4, 2, 1],
        {"zig-zag": [21.0, 21.5, 21.2, 17.8]},
        {"zig-zag": [22.8, 22.9, 23.0, 23.3]},
        title="t",
    ),  # fmt: skip
}
