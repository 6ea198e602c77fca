from fuzz import call

BASELINES = {
    "show": call([1, 2, 3]),
    "fail": call("p", "an integer >= 1", 0),
    "is_integer": call(3),
    "is_real": call(2.5),
    "integer": call("p", 4, 1, 8),
    "optional_integer": call("p", None, 1, 8),
    "real": call("x", 0.5, 0.0, 1.0),
    "positive": call("x", 2.0),
    "nonnegative": call("x", 0.0),
    "fraction": call("f", 0.25),
    "boolean": call("flag", True),
    "choice": call("c", "ring", ("ring", "tree")),
    "text": call("s", "hello"),
    "instance": call("x", 3, int),
    "function": call("f", len),
    "array": call("x", [1.0, 2.0], ndim=1, low=0.0),
    "finite_result": call("sum", 3.0),
    "as_output": call([1.0, 2.0]),
}
NONFINITE_OK = {"as_output": "a converter of results: passes inf through by design"}
