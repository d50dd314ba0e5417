"""``python -m lldsched``: the command line of :mod:`lldsched.cli`."""

import sys

from lldsched.cli import main

if __name__ == "__main__":
    sys.exit(main(prog="python -m lldsched"))
