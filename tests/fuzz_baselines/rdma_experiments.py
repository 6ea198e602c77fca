from fuzz import call

BASELINES = {
    "simulate": call(4096 * 20, strategy="selective-repeat", timeline=False, loss=0.01, seed=1),
    "Sweep": call("loss", [0.0], ("go-back-n",), [[1.0]], [[400.0]], [[1.0]], [[0.0]], [[0.0]]),
    "sweep": call("loss", [0.0, 0.01], ("go-back-n", "ooo-bitmap"), message_bytes=4096 * 20),
}
NONFINITE_OK = {"simulate": "timeline=True: NaN marks times that do not exist"}

# Every strategy at every value of a sweep at the largest write (issue 31).
EXTREMES = {"sweep": [call("loss", [0.0] * 256, message_bytes=2**22 * 4096)]}
