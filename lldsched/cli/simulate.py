"""``python -m lldsched simulate``: replay the built-in scenario and print a summary.

With ``--gantt out.png`` it also draws worker occupancy (:func:`lldsched.views.plots.gantt`);
that needs the views extra (``pip install 'lldsched[views]'``), imported only then.

Bad arguments (``--days`` not a finite number above 0 and at most :data:`MAX_DAYS`,
``--workers`` below 1 or above :data:`MAX_WORKERS`, ``--max-coroutines`` below 1 (the
constructor's own check and words: ``max_coroutines must be an int >= 1``), a
``--gantt`` path whose format is not PNG, SVG or PDF or whose folder does not exist,
a ``--gantt`` path that is empty, a folder, or names one (``week.png/``), a link to a
file in no folder or a loop of links,
or in a folder this user cannot write in (as
``os.access`` says), or a file read-only for this user, or one the file system will
not look up (a name too long for it), the views extra missing for ``--gantt``) are
refused before anything is simulated: ``error: ...`` on stderr and exit status 2, as
``python -m lldsched cron`` does.  What only the write finds out (a full disk) comes
after the summary: ``error: ...`` and exit status 1.  The chart is written whole or
not at all (:func:`lldsched.cli.write_whole`): a Ctrl-C or an error halfway leaves the
old file.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import math
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from lldsched import checks
from lldsched.cli import (
    BAD_ARGUMENTS,
    FAILED,
    Parser,
    examples,
    reader_left,
    say,
    to_stderr,
    write_whole,
)
from lldsched.errors import ValidationError
from lldsched.logs import counted
from lldsched.model import ExecutionRecord

if TYPE_CHECKING:
    from lldsched.sim.simulation import Simulation
    from lldsched.views.report import TaskSummary

__all__ = ["MAX_DAYS", "add_parser", "every_task", "main", "refusal"]

MAX_DAYS = 366
"""The most days ``--days`` replays: a year.  The simulation keeps every record, so its
time and memory grow with the days (366 days: 650,003 runs, about 6 s and 370 MB here);
``--days 1e9`` would run for years and exhaust memory long before.  A longer replay is
a :class:`~lldsched.sim.simulation.Simulation` of one's own."""

MAX_WORKERS = 100_000
"""The most ``--workers``: :class:`~lldsched.sim.simulation.Simulation`'s own bound
(``lldsched.sim.simulation.MAX_WORKERS``), written here so that the command line builds
its parser without importing the simulation, which only the run needs (most of what
every start, ``--help`` too, counted past ``import lldsched``); ``tests/test_docs.py``
keeps the two equal."""

DEFAULT_MAX_COROUTINES = 1000
"""``--max-coroutines``' default: ``Simulation``'s own, written here as :data:`MAX_WORKERS`
is (``tests/test_docs.py`` keeps the two equal)."""

GANTT_FORMATS = (".png", ".svg", ".pdf")
"""The formats ``--gantt`` writes (by the path's suffix)."""


def add_parser(commands: argparse._SubParsersAction[Parser]) -> None:
    parser = commands.add_parser(
        "simulate",
        help="replay the built-in scenario on virtual time and summarise every task",
        description="Replay the built-in schedules (hourly fan-out, an overrunning fixed-rate "
        "job, a flaky import with retries, a heartbeat, a nightly backup) in virtual time, a "
        "week unless --days says otherwise, and print a summary row per task.",
        epilog=examples("", "--days 1 --workers 2 --seed 7", "--days 1 --gantt day.png"),
    )
    parser.add_argument(
        "--days",
        type=float,
        default=7.0,
        help=f"simulated days, above 0 and at most {MAX_DAYS} (default 7)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=4,
        help=f"virtual workers, 1 to {MAX_WORKERS:,} (default 4)",
    )
    parser.add_argument(
        "--max-coroutines",
        type=int,
        default=DEFAULT_MAX_COROUTINES,
        help="coroutine runs in flight at once, at least 1, as Simulation(max_coroutines=...) "
        f"(default {DEFAULT_MAX_COROUTINES:,}; the built-in tasks are plain functions, on the "
        "workers)",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--gantt",
        metavar="PATH",
        help="also draw the runs as a Gantt chart, a lane per worker, to PATH (.png, .svg or "
        ".pdf; needs pip install 'lldsched[views]'; default: no chart)",
    )
    parser.set_defaults(handler=main)


def _days_text(days: float) -> str:
    """``--days`` as typed, for a message and the summary's first line: the float's
    shortest text that reads back as it (``366.0000001``, ``0.5``, ``inf``), a whole
    number without its ``.0``.  ``:g`` kept six digits: ``--days 366.0000001`` was refused
    as "at most 366, got 366", and ``--days 1.0000001`` summarised as "simulated 1 days"."""
    return repr(days).removesuffix(".0")


def refusal(args: argparse.Namespace) -> str | None:
    """Why ``args`` cannot be simulated (the message after ``error:``), or None."""
    if not math.isfinite(args.days) or args.days <= 0:
        return f"--days must be finite and > 0, got {_days_text(args.days)}"
    if args.days > MAX_DAYS:
        return (
            f"--days must be at most {MAX_DAYS} (a year: the simulation keeps every record), "
            f"got {_days_text(args.days)}"
        )
    if args.workers < 1:
        return f"--workers must be at least 1, got {args.workers}"
    if args.workers > MAX_WORKERS:
        return f"--workers must be at most {MAX_WORKERS:,}, got {args.workers:,}"
    try:  # the constructor's check, so the CLI says what Simulation(...) says
        checks.whole(args.max_coroutines, name="--max-coroutines", at_least=1)
    except ValidationError as exc:
        return str(exc)
    if args.gantt is None:
        return None
    if not args.gantt:  # Path("") is ".", a folder: that was the message
        return "--gantt '': the path is empty; name the file to write"
    path = Path(args.gantt)
    real = Path(os.path.realpath(path))  # what write_whole replaces: a link's file
    try:
        folder, is_a_folder, linked_folder = (
            path.parent.is_dir(),
            path.is_dir(),
            real.parent.is_dir(),
        )
        with contextlib.suppress(FileNotFoundError):  # a new file
            os.stat(real)  # a loop of links (ELOOP), not the chart written and then refused
    except OSError as exc:  # a name longer than the file system's (ENAMETOOLONG)
        return f"--gantt {args.gantt!r}: cannot write it there: {exc.strerror}"
    # Before the format: `--gantt charts/` names no file at all; nor does `week.png/`, a
    # folder's name whatever it ends with (was: pathlib's name of it, 'week.png', passed,
    # and the week was simulated before matplotlib's traceback).
    if is_a_folder:
        return f"--gantt {args.gantt!r}: that is a folder; name the file to write"
    if os.path.basename(args.gantt) in ("", ".", ".."):
        return (
            f"--gantt {args.gantt!r}: a path ending in '/', '.' or '..' names a folder; "
            "name the file to write"
        )
    if chart_format(args.gantt) not in GANTT_FORMATS:
        return (
            f"--gantt {args.gantt!r}: the chart is written as .png, .svg or .pdf{_no_suffix(path)}"
        )
    if not folder:
        return f"--gantt {args.gantt!r}: there is no folder {str(path.parent)!r} to write it in"
    if not linked_folder:  # a link to a file in a folder that is gone
        return f"--gantt {args.gantt!r}: it links to {str(real)!r}, whose folder does not exist"
    if not os.access(path.parent, os.W_OK | os.X_OK):  # this user's right, as the OS says
        return f"--gantt {args.gantt!r}: cannot write in the folder {str(path.parent)!r}"
    if path.exists() and not os.access(path, os.W_OK):  # replaced, not written: ask
        return f"--gantt {args.gantt!r}: the file is read-only for this user"
    try:  # without the extra, the views' error names it
        importlib.import_module("lldsched.views.frames")
        importlib.import_module("lldsched.views.plots")
    except ImportError as exc:
        return f"--gantt: {exc}"
    return None


def chart_format(path: str) -> str:
    """The format ``--gantt path`` is written in, by its suffix: ``.png``, ``.svg``,
    ``.pdf`` or another (refused), ``""`` for none; what :func:`refusal` checks and
    :func:`write_gantt` writes (``os.path.splitext``, whose suffix of a hidden file's
    name, ``.png``, is none, as pathlib's is)."""
    return os.path.splitext(path)[1].lower()


def _no_suffix(path: Path) -> str:
    """What ``path``'s name lacks, said after the formats: a name that is all suffix
    (``.png``) is a hidden file's, with none."""
    if path.suffix:
        return ""
    hidden = ": a name that starts with a dot is a hidden file's" if path.name[:1] == "." else ""
    return f", by the name's suffix, and {path.name!r} has none{hidden}"


def main(args: argparse.Namespace) -> int:
    refused = refusal(args)
    if refused is not None:
        return to_stderr(f"error: {refused}", BAD_ARGUMENTS)
    from lldsched.sim.scenario import build_scenario  # the run's: not the parser's import
    from lldsched.views.report import format_summary

    sim = build_scenario(workers=args.workers, seed=args.seed, max_coroutines=args.max_coroutines)
    began = time.perf_counter()
    sim.run_for(args.days * 86400)
    elapsed = time.perf_counter() - began
    records = sim.records()
    runs = sum(record.outcome.ran for record in records)  # not the slots skipped
    try:
        say(
            f"simulated {_days_text(args.days)} {'day' if args.days == 1 else 'days'} on "
            f"{counted(args.workers, 'worker')} (seed {args.seed}): "
            f"{counted(runs, 'run')} in {elapsed:.2f} s of wall time"
        )
        say(format_summary(every_task(sim, records)))
        dead = [sim.task(task_id).name for task_id in sim.dead_letter()]
        say(f"dead letter: {dead}")
    except BrokenPipeError:  # the reader left (`| head -1`)
        if not args.gantt:
            raise  # nothing but the summary was asked for: done, as the reader is
        reader_left()  # the chart was asked for too: drawn all the same (was: status 0, none)
    if args.gantt:
        failed = write_gantt(sim, args.gantt)
        if failed is not None:  # the summary above stands; the chart alone is missing
            return to_stderr(f"error: {failed}", FAILED)
        say(f"gantt chart: {args.gantt}")
    return 0


def every_task(sim: Simulation, records: list[ExecutionRecord]) -> list[TaskSummary]:
    """A summary row per task of ``sim`` (:func:`summarize` of ``records``, overruns by
    each task's schedule), in the order the tasks first appear in the records, then a row
    of no run for each task with no record yet (a report due at 01:00 in a replay of 57
    minutes), in the order registered: it had no row, and the table read as a service
    without it (:func:`~lldsched.views.report.no_runs`, ``task_summary``'s rule too)."""
    from lldsched.views.report import summarize

    tasks = sim.tasks()
    return summarize(records, {task.id: task.schedule for task in tasks}, tasks=tasks)


def write_gantt(sim: Simulation, path: str) -> str | None:
    """Draw ``sim``'s runs to ``path`` (the format's own canvas, Agg for PNG: no pyplot,
    no global backend; matplotlib stays inside :mod:`lldsched.views.plots`); why it
    could not (the message after ``error:``: what only the write finds out, a full
    disk, a file system that refuses it), or None.

    A lane for each of ``sim``'s workers, those that ran nothing too (and the coroutine
    lane, ``worker == workers``, where a run is on it): without ``workers=``, the chart
    had a lane per worker that ran something, and ``--workers 12`` read "on 9 workers"."""
    from lldsched.views.frames import to_frame  # refusal() imported both: the extra is here
    from lldsched.views.plots import gantt

    frame = to_frame(sim)
    lanes = range(sim.workers + bool((frame["worker"] == sim.workers).any()))
    figure = gantt(frame, workers=lanes)
    suffix = chart_format(path)[1:]  # refusal() allowed it
    try:  # the old chart or the whole new one, never a part (a Ctrl-C, a full disk)
        write_whole(path, lambda stream: figure.savefig(stream, format=suffix, dpi=100))
    except OSError as exc:  # the reason alone: the file it names may be the partial one
        reason = f"[Errno {exc.errno}] {exc.strerror}" if exc.strerror else str(exc)
        return f"--gantt {path!r}: cannot write it: {reason}"
    return None


if __name__ == "__main__":  # python -m lldsched.cli.simulate
    from lldsched.cli import not_an_entry_point

    not_an_entry_point("simulate")
