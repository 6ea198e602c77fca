from fuzz import call

BASELINES = {
    "headroom_bytes": call(100.0, 100.0, 4096, 1e-6),
    "pfc": call(
        3,
        100.0,
        40e-6,
        incast_start_s=10e-6,
        incast_stop_s=30e-6,
        cable_m=100.0,
        xoff_bytes=60e3,
        xon_bytes=None,
        mtu_bytes=4096,
        response_s=1e-6,
        dt_s=100e-9,
    ),
}
SKIP = {
    "PFCResult": "a result record built by pfc, not an input",
}
