from fuzz import call

BASELINES = {
    "schedule": call("zb-h1", 4, 8, t_f=1.0, t_b=2.0, t_w=1.0),
}
