from fuzz import call

from scaleout import trees as T

TREE = T.binary_tree(6)
REPORT = T.check_tree(TREE)

BASELINES = {
    "TreeReport": call(6, True, True, 2, 3, 3),
    "check_tree": call(TREE),
    "DoubleTreeReport": call(6, (REPORT, REPORT), 2, 2, [], [], ()),
    "check_double_tree": call(7, nccl_version=(2, 8, 3)),
}
