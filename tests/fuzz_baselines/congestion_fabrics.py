from fuzz import call

from scaleout.congestion import fabrics as F

BASELINES = {
    "fat_tree_hosts": call(64, 2),
    "fat_tree": call(4096, 64, "fat tree"),
    "rail_optimized": call(4096, 64),
    "rail_only": call(4096, 64, 8),
    "multi_plane": call(4096, 64, 2),
    "compare": call(4096, 64, 8, 2),
    "saving": call(F.rail_optimized(4096, 64), F.rail_only(4096, 64)),
}
SKIP = {
    "FabricSize": "a result record built by the sizing functions, not an input",
}
