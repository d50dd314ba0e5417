"""``python -m lldsched tasks``' arguments and help (:func:`add_parser`), and the checks of
the options a verb takes; the command's run is :mod:`lldsched.cli.storetasks`, imported
only when the command runs: every command's parser, ``--help`` too, is built at each
start, and the run's modules (the store's reader and opener) are no part of that.
"""

from __future__ import annotations

import argparse

from lldsched.cli import Parser, examples
from lldsched.model import TaskStatus

__all__ = ["EXAMPLE_STORE", "STATUSES", "VERBS", "add_parser"]

VERBS = ("show", "redrive", "pause", "resume", "cancel", "run-now", "remove")
"""What may follow ``tasks``: ``show`` reads, the others act (each a runtime verb)."""
STATUSES = tuple(status.value for status in TaskStatus)


EXAMPLE_STORE = "sqlite:///var/lib/app/jobs.db"
"""The store the examples of ``--help`` name (tests/test_cli_tasks.py runs them on one)."""


def add_parser(commands: argparse._SubParsersAction[Parser]) -> None:
    parser = commands.add_parser(
        "tasks",
        help="list a durable store's tasks, show one, and act on it (redrive, pause, ...)",
        description="A durable store's tasks: a table (--status failed: the dead letter), "
        "one task in full (show ID), or a verb on one (redrive, pause, resume, cancel, "
        "run-now, remove ID), which the processes running the store apply.  Reading imports "
        "none of the jobs' code; a verb needs it importable (the service's environment).  "
        "Nothing refused is changed (status 2); a verb's write that failed: status 1.",
        epilog=examples(
            f"--store {EXAMPLE_STORE}",
            f"--store {EXAMPLE_STORE} --status failed",
            f"--store {EXAMPLE_STORE} show task-17",
            f"--store {EXAMPLE_STORE} redrive task-17",
        ),
    )
    parser.add_argument(
        "verb", nargs="?", choices=VERBS, metavar="verb",
        help=f"one of: {', '.join(VERBS)} (default: none, list the tasks)",
    )  # fmt: skip
    parser.add_argument("task_id", nargs="?", metavar="ID", help="the task's id (with a verb)")
    parser.add_argument(
        "--store", metavar="URL",
        help="sqlite:///ABSOLUTE/PATH, sqlite:RELATIVE/PATH or postgresql://USER@HOST/DB "
        "(default: $LLDSCHED_STORE; a password is better kept in ~/.pgpass or PGPASSWORD)",
    )  # fmt: skip
    parser.add_argument(
        "--status", choices=STATUSES, metavar="STATUS",
        help=f"list only the tasks in it: {', '.join(STATUSES)} (default: every task)",
    )  # fmt: skip
    parser.add_argument(
        "--json", action="store_true",
        help="one JSON object a line per task; with show, the task's, its records in it (not "
        "with a verb that acts; default: a table)",
    )  # fmt: skip
    parser.add_argument(
        "--records", type=int, metavar="N",
        help="with show (only): how many of the last records (default: 5)",
    )  # fmt: skip
    parser.set_defaults(handler=_handler)


def _handler(args: argparse.Namespace) -> int:
    """The options a verb takes checked (one that cannot apply is refused, never ignored:
    ``redrive ID --json`` printed a line of text to a script that reads JSON), then
    :func:`~lldsched.cli.storetasks.run_tasks`."""
    refuse = args.command_parser.error
    if args.status is not None and args.verb is not None:
        refuse("argument --status: only when listing, with no verb")
    if args.json and args.verb not in (None, "show"):
        refuse(f"argument --json: only when listing or with show, not with {args.verb}")
    if args.records is not None and args.verb != "show":
        refuse("argument --records: only with show")
    from lldsched.cli.storetasks import run_tasks  # the run's modules: not the parser's

    return run_tasks(
        args.store, args.verb, args.task_id, status=args.status, as_json=args.json,
        records=5 if args.records is None else args.records,
    )  # fmt: skip
