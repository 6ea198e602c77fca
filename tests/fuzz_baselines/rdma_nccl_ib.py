from fuzz import call

BASELINES = {
    "adaptive_routing_default": call("infiniband"),
    "ib_defaults": call(),
    "message_work_requests": call([4096, 65536], link_layer="roce", adaptive_routing=True),
    "needs_flush": call(
        8.0,
        protocol="simple",
        gpudirect=True,
        bytes_received=1,
        grace_c2c=False,
        data_direct_nic=False,
        force=False,
    ),
}
