import numpy as np
from fuzz import call

BASELINES = {
    "Lognormal": call(0.05, 1.0),
    "factors": call({1: 1.5}, 8, np.random.default_rng(0)),
    "check": call({1: 1.5}),
}
