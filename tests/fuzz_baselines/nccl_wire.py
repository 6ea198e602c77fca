import numpy as np
from fuzz import call

BASELINES = {
    "efficiency": call("LL128"),
    "Frame": call(np.zeros((2, 16), dtype=np.int64), "caption"),
    "protocol_frames": call("LL", 256),
    "Channel": call(0, (0, 1, 2), 0, 1),
    "ring_paths": call(8, 4),
    "pxn_route": call(3, 5, 8),
}
