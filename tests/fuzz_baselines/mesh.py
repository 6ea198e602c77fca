from fuzz import call

BASELINES = {"Mesh": call(tp=2, cp=2, ep=2, dp=2, pp=2)}
