from fuzz import call

from scaleout import pipeline as P

S = P.schedule("1f1b", 2, 2)

ARRAYS = (S.stage, S.microbatch, S.chunk, S.phase, S.start, S.end)

BASELINES = {
    "Timeline": call(2, 1, *ARRAYS),
    "Schedule": call(2, 1, *ARRAYS, name="1f1b", m=2, dep=S.dep),
    "timeline_from_records": call([(0, "F", 0, 0.0, 1.0), (1, "B", 0, 1.0, 3.0)], 2),
}
