"""The command line: ``python -m lldsched <command>`` (also the ``lldsched`` script).

One module per command in this package: :mod:`~lldsched.cli.demo`,
:mod:`~lldsched.cli.cron`, :mod:`~lldsched.cli.simulate` and :mod:`~lldsched.cli.lab`;
this module builds the parser and runs the chosen command.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence


def build_parser(prog: str = "python -m lldsched") -> argparse.ArgumentParser:
    """The parser; ``prog`` is how its usage lines name the command."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="lldsched: an in-process task scheduler you can read, run and replay.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="the scheduler's behaviour in eleven lines")
    demo.set_defaults(handler=_demo)
    cron = commands.add_parser("cron", help="explain a cron expression and list its next fires")
    cron.add_argument(
        "expr",
        help='five fields, six with seconds first, or a macro: "0 3 * * 1-5", '
        '"*/15 * * * * *", @daily',
    )
    cron.add_argument("--tz", default="UTC", help="IANA time zone (default: UTC)")
    cron.add_argument(
        "-n", type=int, default=5, help="how many fire times, 1 to 10,000 (default: 5)"
    )
    cron.add_argument(
        "--start",
        help="ISO date-time to list fires after, read in --tz without an offset (default: now)",
    )
    cron.set_defaults(handler=_cron)
    from lldsched.cli.simulate import add_parser as add_simulate

    add_simulate(commands)
    from lldsched.cli.lab import add_parser as add_lab

    add_lab(commands)
    return parser


def _demo(args: argparse.Namespace) -> int:
    from lldsched.cli.demo import run_demo

    for line in run_demo():
        print(line)
    return 0


def _cron(args: argparse.Namespace) -> int:
    from lldsched.cli.cron import run_cron

    return run_cron(args.expr, tz=args.tz, n=args.n, start=args.start)


def main(argv: Sequence[str] | None = None, *, prog: str = "lldsched") -> int:
    """Run the command ``argv`` names (default: the process's arguments).

    ``prog`` names the command in usage and error lines: ``lldsched``, the script
    installed by pip, calls this as it is; ``python -m lldsched`` passes its own name.
    """
    args = build_parser(prog).parse_args(argv)
    try:
        status = int(args.handler(args))
        sys.stdout.flush()  # a pipe that closed early fails here, inside the try
        return status
    except BrokenPipeError:  # `python -m lldsched demo | head -3`: the reader left early
        # Point stdout at /dev/null so the interpreter's final flush does not fail too
        # (the recipe in the signal module's documentation).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
