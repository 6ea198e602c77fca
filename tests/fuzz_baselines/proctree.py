import os

from fuzz import call

BASELINES = {
    "descendants": call(os.getpid()),
    "describe": call([os.getpid()]),
    "Finished": call(0, "", ""),
}
SKIP = {
    "kill_tree": "kills processes; tests/integration/test_proctree.py runs it on its own children",
    "run": "starts processes; tests/integration/test_proctree.py covers its arguments",
}
