from fuzz import call

from scaleout import planner as PL
from scaleout import sim

MODEL = PL.Model("moe", layers=4, hidden=1024, heads=16, seq=1024, ffn=2048, swiglu=True)

BASELINES = {
    "MoE": call(8, 2, 4, dispatch_bytes=1.0, combine_bytes=2.0),
    "price": call(sim.MoE(8, 2, 4), MODEL, PL.h100_cluster(16), PL.Plan(t=1, p=2, d=8, b=1)),
}
SKIP = {"Priced": "a record made by price()"}
