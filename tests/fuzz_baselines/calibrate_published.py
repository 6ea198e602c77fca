from fuzz import call

BASELINES = {
    "entries": call(),
    "log_files": call(),
    "log_text": call("mi300x_rccl_2078.txt"),
    "source_url": call("mi300x_rccl_2078.txt"),
    "setting": call("mi300x_rccl_2078.txt"),
    "Entry": call(
        "a.txt",
        "busbw",
        1.0,
        "GB/s",
        "key",
        "p. 1",
        "stated",
        None,
        "",
        None,
        None,
        8,
        1,
        "allreduce",
    ),
}
SKIP = {}
