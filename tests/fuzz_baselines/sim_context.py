from fuzz import call

from scaleout import planner as PL
from scaleout import sim

MODEL = PL.Model("small", layers=4, hidden=1024, heads=16, seq=4096)

BASELINES = {
    "CP": call(4),
    "price": call(sim.CP(4), MODEL, PL.h100_cluster(16), PL.Plan(t=1, p=2, d=8, b=1)),
}
SKIP = {"PricedCP": "a record made by price()"}
