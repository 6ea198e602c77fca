from fuzz import call

BASELINES = {
    "fence": call(),
    "payload": call(64, 3),
    "pingpong": call("ll", 64, iters=5, timeout=20.0),
    "PingPong": call("ll", 4, 10, 1e-6, 0.004, True, 0, 0),
}
SKIP = {
    "Link": "views a shared-memory buffer handed over by pingpong (not a reader-facing call)",
    "ll_send": "writes into a Link made by pingpong's processes",
    "ll_recv": "polls a Link made by pingpong's processes",
    "simple_send": "writes into a Link made by pingpong's processes",
    "simple_recv": "polls a Link made by pingpong's processes",
}
