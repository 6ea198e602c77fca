from fuzz import call

from scaleout.calibrate import Log, Result, Row

_TEXT = (
    "# Collective test starting: all_reduce_perf\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong\n"
    "        1024           256     float     sum      -1    10.00    0.10    0.18      0"
    "    10.00    0.10    0.18      0\n"
)
_R = Result(10.0, 0.1, 0.18, 0.0)
_LOG = Log(
    "allreduce",
    8,
    ("Rank  0 Group  0 Pid 1 on h device  0 [0x00] GPU",),
    0.18,
    (Row(1024, 256, "float", "sum", -1, _R, _R),),
)

BASELINES = {
    "parse_nccl_tests": call(_TEXT, collective="allreduce"),
    "parse_nccl_tests_all": call(_TEXT),
    "format_nccl_tests": call(_LOG, binary="all_reduce_perf"),
    "float_text": call(12.345, 7),
}
SKIP = {}
