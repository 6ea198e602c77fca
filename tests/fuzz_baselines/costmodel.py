from fuzz import call

from scaleout import costmodel as M

F = M.ALGORITHMS[("allreduce", "ring")]

BASELINES = {
    "ceil_log2": call(8),
    "busbw_factor": call("allreduce", 8),
    "algbw": call(1e9, 0.01),
    "busbw": call("allreduce", 1e9, 0.01, 8),
    "CostFormula": call(F.formula, F.source, F.messages, F.beta_per_byte, F.gamma_per_byte),
    "collective_time": call("allreduce", "ring", 1e6, 8, 3e-6, 2e-11, gamma=1e-12),
    "AlphaBetaFit": call(3e-6, 2e-11, [0.01, -0.02], fitted=[True, True]),
    "fit_alpha_beta": call(
        [1e3, 1e5, 1e7],
        [1e-4, 2e-4, 5e-3],
        4,
        collective="allreduce",
        algorithm="ring",
        gamma=0.0,
        fit_rows="alternate",
    ),
    "crossover_bytes": call("allreduce", "ring", "recursive_doubling", 64, 3e-6, 2e-11, gamma=0.0),
}
NONFINITE_OK = {"crossover_bytes": "NaN is its documented answer when the costs never cross"}
