import dataclasses

from fuzz import call

from scaleout.rdma import simulate

RESULT = simulate(4096 * 8, loss=0.1, seed=3, timeline=True)
TIMELINE = RESULT.timeline
SUMMARY = {f.name: getattr(RESULT, f.name) for f in dataclasses.fields(RESULT)}
SUMMARY["timeline"] = None

BASELINES = {
    "Timeline": call(**{f.name: getattr(TIMELINE, f.name) for f in dataclasses.fields(TIMELINE)}),
    "SimResult": call(**SUMMARY),
}
NONFINITE_OK = {"Timeline": "NaN marks times that do not exist (a lost packet never arrives)"}
