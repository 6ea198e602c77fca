from fuzz import call

BASELINES = {
    "ranks": call([3.0, 1.0, 2.0, 2.0]),
    "spearman": call([1.0, 2.0, 3.0], [2.0, 4.0, 5.0]),
    "relative_errors": call([1.1, 2.0], [1.0, 2.5]),
    "ErrorSummary": call(3, 0.1, 0.2, 1.0),
    "error_summary": call([1.1, 2.0, 2.9], [1.0, 2.5, 3.0]),
}
NONFINITE_OK = {
    "spearman": "NaN when one of the two arrays is constant (documented)",
    "ErrorSummary": "spearman is NaN when one side is constant (documented)",
    "error_summary": "spearman is NaN when one side is constant (documented)",
}
