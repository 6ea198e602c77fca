from fuzz import call

from scaleout import pipeline as P

S = P.schedule("1f1b", 2, 2)
T = P.timeline_from_records([(0, "F", 0, 0.0, 1.0), (1, "F", 0, 1.0, 2.0)], 2)
ARRAYS = (S.stage, S.microbatch, S.chunk, S.phase, S.start, S.end)

BASELINES = {
    "stage_order": call("1f1b", 4, 8),
    "Timeline": call(2, 1, *ARRAYS),
    "Schedule": call(2, 1, *ARRAYS, name="1f1b", m=2, dep=S.dep),
    "schedule": call("zb-h1", 4, 8, t_f=1.0, t_b=2.0, t_w=1.0),
    "timeline_from_records": call([(0, "F", 0, 0.0, 1.0), (1, "B", 0, 1.0, 3.0)], 2),
    "bubble_fraction": call(S, of="ideal"),
    "bubble_closed_form": call("interleaved", 4, 8, 2, of="ideal"),
    "idle_intervals": call(S),
    "in_flight_timeline": call(S, 1),
    "peak_in_flight": call(S),
    "p2p_messages": call(S),
    "activation_message_bytes": call(1, 2048, 12288, 2),
    "model_state_bytes": call(7e9, 16),
    "min_gpus": call(7e9, 16, 80.0),
    "layer_owners": call(30, 4),
}
