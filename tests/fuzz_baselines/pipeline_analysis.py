from fuzz import call

from scaleout import pipeline as P

S = P.schedule("1f1b", 2, 2)

BASELINES = {
    "bubble_fraction": call(S, of="ideal"),
    "bubble_closed_form": call("interleaved", 4, 8, 2, of="ideal"),
    "idle_intervals": call(S),
    "in_flight_timeline": call(S, 1),
    "peak_in_flight": call(S),
    "p2p_messages": call(S),
    "activation_message_bytes": call(1, 2048, 12288, 2),
}
