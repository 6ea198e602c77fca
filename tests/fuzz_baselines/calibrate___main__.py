BASELINES = {}
SKIP = {
    "main": "the command line: argparse exits on bad argv; its exit codes are tested in "
    "tests/unit/test_calibrate.py",
}
