from fuzz import call

from scaleout import trees as T

TREE = T.binary_tree(6)

BASELINES = {
    "BinaryTree": call(TREE.parent, TREE.children, TREE.child_type),
    "binary_tree": call(6, nccl_version=(2, 8, 3)),
    "double_binary_tree": call(7, nccl_version=(2, 8, 3)),
    "dtree_roots": call(7, nccl_version=(2, 8, 3)),
}
