"""``python -m scaleout.calibrate LOG [--machine dgx-h100 --nodes 2 ...]``: a nccl-tests log
beside the book's NCCL model. Exit 0 with the report, 2 with one line on input it cannot read
or use."""

from __future__ import annotations

import argparse
import sys

from .. import nccl
from .nccl_tests import parse_nccl_tests
from .records import COLLECTIVES
from .report import report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scaleout.calibrate",
                                     description=__doc__.splitlines()[0])  # fmt: skip
    parser.add_argument("log", help="a file of nccl-tests output ('-' for stdin)")
    parser.add_argument("--machine", default="dgx-h100", choices=sorted(nccl.PRESETS))
    parser.add_argument("--nodes", type=int, default=1)
    parser.add_argument("--ranks", type=int, default=None, help="if the log has no device list")
    parser.add_argument("--collective", default=None, choices=COLLECTIVES)
    parser.add_argument("--nics-per-node", type=int, default=None)
    parser.add_argument("--nic-gbps", type=float, default=None)
    parser.add_argument("--nvls", choices=("on", "off"), default=None)
    args = parser.parse_args(argv)
    try:
        if args.log == "-":
            text = sys.stdin.read()
        else:
            with open(args.log, encoding="utf-8", errors="replace") as f:
                text = f.read(2**25 + 1)
        log = parse_nccl_tests(text, collective=args.collective)
        over = {}
        if args.nics_per_node is not None:
            over["nics_per_node"] = args.nics_per_node
        if args.nic_gbps is not None:
            over["nic_gbps"] = args.nic_gbps
        if args.nvls is not None:
            over["nvls"] = args.nvls == "on"
        text = report(log, args.nodes, collective=args.collective,
                      ranks=args.ranks, machine=args.machine, **over)  # fmt: skip
    except (OSError, ValueError, UnicodeError) as e:
        print(f"error: {args.log}: {e}", file=sys.stderr)
        return 2
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
