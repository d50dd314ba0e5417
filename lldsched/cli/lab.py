"""``python -m lldsched lab [decision]``: switch a design decision off and print what
breaks (see :mod:`lldsched.lab`).  With no decision, the list of them."""

from __future__ import annotations

import argparse

from lldsched.cli import Parser, examples, say
from lldsched.lab import DECISIONS, decision

__all__ = ["add_parser", "main"]


def add_parser(commands: argparse._SubParsersAction[Parser]) -> None:
    keys = [row.key for row in DECISIONS]
    parser = commands.add_parser(
        "lab",
        help="switch one design decision off and print what breaks",
        description="The design lab: each decision is switched off by swapping one "
        "collaborator of the real runtime, and the consequence is measured.  With no "
        "decision, list them.",
        epilog=examples("", "push"),
    )
    parser.add_argument(
        "decision", nargs="?", choices=keys, metavar="decision", help=f"one of: {', '.join(keys)}"
    )
    parser.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    if args.decision is None:
        width = max(len(row.key) for row in DECISIONS)
        # "lldsched lab" or "python -m lldsched lab": as the command was called.
        prog = args.command_parser.prog
        say(f"{prog} <decision>  (seconds each; wheel: half a minute or more)")
        for row in DECISIONS:
            say(f"  {row.key:<{width}}  {row.title}, switched off: {row.switched_off}")
            say(f"  {'':<{width}}  {row.claim}")
        return 0
    row = decision(args.decision)
    say(f"{row.title}, switched off ({row.switched_off}). {row.claim}")
    for line in row.run():
        say(f"  {line}")
    say(f"  caught by {row.lab_test}")
    return 0


if __name__ == "__main__":  # python -m lldsched.cli.lab
    from lldsched.cli import not_an_entry_point

    not_an_entry_point("lab")
