from fuzz import call

from scaleout import topology as T

BASELINES = {
    "nvlink_timeline": call("per GPU", "bidirectional"),
    "nvlink_timeline_choices": call(),
    "nvswitch_domains": call("whole domain", "bidirectional"),
    "nvswitch_domain_choices": call(),
    "server_boundary": call("per direction"),
    "traffic_figure": call(lambda c: T.dp_allreduce(c, 1e9), 2, 4, 1e9, 1, 1),
    "allreduce_times": call(
        T.allreduce_scenarios(2, 4, 450.0, 50.0),
        "a title",
        T.nccl_allreduce_scenarios(2, machine=T.nccl_machine(4, 4, 400.0)),
    ),
    "measured_bandwidth": call([1e3, 1e6], [1e8, 1e9], 5e9, {2: 1e9, 4: 1e9}),
}
