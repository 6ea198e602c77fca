import numpy as np
from fuzz import call

from scaleout import data_parallel as D

RNG = np.random.default_rng(0)
X = RNG.standard_normal((8, 2))
Y = RNG.standard_normal(8)
PER_SAMPLE = D.squared_error_grads(np.zeros(2), X, Y)

BASELINES = {
    "shard_sizes": call(10, 4),
    "local_gradients": call(PER_SAMPLE, [2, 2, 2, 2]),
    "average_gradients": call(PER_SAMPLE[:4], [2, 2, 2, 2]),
    "equivalence_error": call(PER_SAMPLE, [2, 2, 2, 2], weighted=False),
    "squared_error_grads": call(np.zeros(2), X, Y),
    "data_parallel_sgd": call(
        D.squared_error_grads, np.zeros(2), [(X.tolist(), Y.tolist())], 4, 0.1, weighted=False
    ),
}
