from fuzz import call

from scaleout import topology as T

BASELINES = {
    "Link": call("nic-out", 0),
    "Flow": call(0, 5, 1e6),
    "Path": call(0, 5, "leaf", (T.Link("nic-out", 0), T.Link("nic-in", 1)), ("rail 0 leaf",)),
    "Timing": call(1e-3, 1e-5, 9.9e-4, T.Link("nic-out", 0)),
    "Traffic": call("a pattern", ((T.Flow(0, 5, 1e6),),), (1,)),
}
