"""Print the SIMD targets numpy dispatches to at run time on this CPU (space-separated).

`make test` runs the notebook tests a second time with ``NPY_DISABLE_CPU_FEATURES`` set
to this list (numpy's documented switch, "Runtime dispatch" in numpy's CPU build options),
so that numpy uses only its baseline code paths, as it would on an older CPU; both runs
must reproduce the committed outputs. ``--check`` instead verifies that the variable has
taken effect (no dispatch target left enabled) and exits 1 if not.
"""

import sys

from numpy._core import _multiarray_umath as umath

enabled = [f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)]
if "--check" in sys.argv[1:]:
    if enabled:
        print(f"numpy still dispatches to {enabled}: NPY_DISABLE_CPU_FEATURES had no effect")
        sys.exit(1)
    print(f"numpy runs its baseline paths only ({', '.join(umath.__cpu_baseline__)})")
else:
    print(" ".join(umath.__cpu_dispatch__))
