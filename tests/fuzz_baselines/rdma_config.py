from fuzz import call

BASELINES = {"SimConfig": call(4096 * 20, loss=0.01, window_packets=30, reorder_window_s=1e-6)}
