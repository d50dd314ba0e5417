"""The documents stay true: what they show runs, and what they draw is the code.

* the package diagram of docs/ARCHITECTURE.md is the package's real imports, and a
  folder box that lists its modules lists them all;
* every default or bound the documents quote in the sentences of ``QUOTED`` (a
  ``history_limit``, a lease, a retry's backoff, a timeout, ``--days``) is the code's;
* OPERATIONS.md names every thread the runtime and the PostgreSQL store start, and its
  logging table every logger of lldsched/logs.py;
* the README and notebook 00 give the range of the notebooks' self-check questions;
* the README's ``make demo`` transcript is what the demo prints (``tests/test_demo.py``
  runs the demo against the same text);
* the command transcripts of docs/CRON.md are what ``python -m lldsched cron`` prints;
* the ``gunicorn.conf.py`` hooks of docs/CLUSTER.md, called as gunicorn calls them in
  forked workers, run its task once on the shared store; its two deployment examples
  that the block runner leaves out run too (on a temporary file, on the tests'
  PostgreSQL server);
* every Python block of README.md and docs/**/*.md runs, unless the line above it says
  ``<!-- not run: ... -->`` (a deployment example that needs a server or an app), and
  prints what it shows: the ``# ...`` lines right under a call of ``print`` (under its
  last line, when it is written over several; under a loop's body, the lines it prints
  in turn), in the order shown, ``...`` in such a line standing for any text (a pid, a
  path); TESTING.md's, one module, each after the ones before it;
* the runnable blocks of the README and every guide but ARCHITECTURE and the decision log
  pass a user's ``mypy --strict`` (tests/test_typing_user.py's runner, in one run),
  but for the lines UPGRADING shows because mypy refuses them;
* every other fenced block is listed in ``NOT_RUN`` with the test that checks it or
  why nothing runs it: OPERATIONS.md's failure log is what its example logs as
  ``service.py``, the ``python -m lldsched`` commands of the shell blocks do what the
  text says, CLUSTER.md's schema is a shared store's file, ARCHITECTURE.md's
  lifecycle is ``TRANSITIONS``, and every extra the documents name is pyproject's.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.machinery
import importlib.util
import inspect
import io
import linecache
import logging
import os
import re
import shlex
import subprocess
import sys
import tempfile
import types
import warnings
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from lldsched import (
    CronSchedule,
    FixedRate,
    MisfirePolicy,
    OneTime,
    RetryPolicy,
    Scheduler,
    SqliteTaskStore,
)
from lldsched.cli.cron import MAX_FIRES
from lldsched.cli.simulate import DEFAULT_MAX_COROUTINES, MAX_DAYS, MAX_WORKERS
from lldsched.core import dependencies
from lldsched.core.duequeue import COMPACT_MIN_ENTRIES, COMPACT_SLICE
from lldsched.core.metrics import Metrics
from lldsched.core.misfires import plan as misfireplan
from lldsched.core.results import RESULT_LIMIT
from lldsched.core.retention import RETIRE_BATCH
from lldsched.errors import ERROR_LIMIT
from lldsched.logs import LOGGERS, REPEAT_WINDOW
from lldsched.model import Outcome
from lldsched.schedules.cron.schedule import MAX_PREVIEW
from lldsched.schedules.cron.search import HORIZON_DAYS
from lldsched.sim import simulation
from lldsched.sim.scenario import build_scenario
from lldsched.testing import Stepper
from lldsched.threaded import pool
from lldsched.threaded.idlewaits import IdleWaits
from tests import jobs
from tests.forking import in_child
from tests.test_demo import EXPECTED as DEMO_OUTPUT
from tests.test_layering import MODULES
from tests.test_typing_user import MYPY_BLOCKED, kept_folder, user_mypy

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PACKAGE = ROOT / "lldsched"
NOTEBOOK_SOURCES = ROOT / "notebooks" / "src"


# --- the package diagram -------------------------------------------------------------

NODE = re.compile(r'^\s*(\w+)\["(.*)"\]\s*$')
ARROW = re.compile(r"^\s*(\w+)\s*-->\s*(\w+)\s*$")
# Every box imports these two; the diagram leaves those arrows out (its text says so).
IMPLIED = {"vocab", "schedules"}


def diagram() -> tuple[dict[str, str], dict[str, list[str]], set[tuple[str, str]]]:
    """The mermaid block of ARCHITECTURE.md: each box's package or modules (a folder
    box maps ``lldsched.<folder>``; another box maps each module it names), the names
    each box lists, and the arrows."""
    text = (DOCS / "ARCHITECTURE.md").read_text()
    (block,) = re.findall(r"```mermaid\n(.*?)```", text, flags=re.DOTALL)
    owners: dict[str, str] = {}
    listed: dict[str, list[str]] = {}
    arrows: set[tuple[str, str]] = set()
    for line in block.splitlines():
        if node := NODE.match(line):
            box, label = node.groups()
            head, *rest = label.split("<br/>")
            if head.endswith("/"):
                owners[f"lldsched.{head.rstrip('/').replace('/', '.')}"] = box
                names = " · ".join(rest)
                listed[box] = [name.strip() for name in names.split("·")] if "·" in names else []
            else:
                for name in head.split("·"):
                    owners[f"lldsched.{name.strip()}"] = box
        elif arrow := ARROW.match(line):
            arrows.add((arrow.group(1), arrow.group(2)))
    return owners, listed, arrows


def box_of(module: str, owners: dict[str, str]) -> str | None:
    if module == "lldsched.__main__":
        return owners.get("lldsched.cli")
    for prefix in sorted(owners, key=len, reverse=True):
        if module == prefix or module.startswith(prefix + "."):
            return owners[prefix]
    return None


def test_every_module_of_the_package_is_in_a_box_of_the_diagram() -> None:
    owners, _, _ = diagram()
    outside = sorted(m for m in MODULES if m != "lldsched" and box_of(m, owners) is None)
    assert outside == [], "modules the package diagram does not place"


def test_every_name_in_a_box_is_a_module_of_its_folder() -> None:
    owners, listed, _ = diagram()
    stale = []
    for package, box in owners.items():
        folder = PACKAGE.joinpath(*package.split(".")[1:])
        if not folder.is_dir() and not folder.with_suffix(".py").is_file():
            stale.append(package)
        for name in listed.get(box, []):
            if not (folder / f"{name}.py").is_file() and not (folder / name).is_dir():
                stale.append(f"{package}: {name}")
    assert stale == []


def test_a_box_that_lists_its_folders_modules_lists_every_one() -> None:
    """A folder box that names its modules names them all (``threaded/jumps.py`` was
    left out of ``threaded/``'s): a list that stops short reads as the folder's whole."""
    owners, listed, _ = diagram()
    unlisted = []
    for package, box in owners.items():
        folder = PACKAGE.joinpath(*package.split(".")[1:])
        if not folder.is_dir() or not listed.get(box):
            continue
        names = {name.rstrip("/") for name in listed[box]}
        modules = {path.stem for path in folder.glob("*.py") if path.stem != "__init__"}
        folders = {path.name for path in folder.iterdir() if (path / "__init__.py").is_file()}
        unlisted += [f"{package}.{name}" for name in sorted((modules | folders) - names)]
    assert unlisted == [], "modules of a folder its box of the diagram does not list"


def test_the_vocabulary_the_packages_section_lists_is_the_diagrams() -> None:
    """ "The packages" names the vocabulary's modules in prose as the diagram's box does."""
    owners, _, _ = diagram()
    vocabulary = {name.removeprefix("lldsched.") for name, box in owners.items() if box == "vocab"}
    text = (DOCS / "ARCHITECTURE.md").read_text()
    (prose,) = re.findall(r"the vocabulary\n?\s*\((.*?)\) →", text, flags=re.DOTALL)
    assert set(re.findall(r"`(\w+)\.py`", prose)) == vocabulary


def test_the_arrows_of_the_diagram_are_the_imports_between_its_boxes() -> None:
    owners, _, arrows = diagram()
    found: dict[tuple[str, str], str] = {}
    for module, imported in MODULES.items():
        source = box_of(module, owners)
        for name in imported:
            if name not in MODULES or name == "lldsched" or module == "lldsched":
                continue
            target = box_of(name, owners)
            if source and target and source != target:
                found.setdefault((source, target), f"{module} imports {name}")
    undrawn = sorted(
        f"{a} --> {b} ({why})"
        for (a, b), why in found.items()
        if (a, b) not in arrows and b not in IMPLIED
    )
    assert undrawn == [], "imports between boxes that the diagram has no arrow for"
    drawn_not_made = sorted(f"{a} --> {b}" for a, b in arrows if (a, b) not in found)
    assert drawn_not_made == [], "arrows that no module makes"


# --- defaults and bounds the documents quote ---------------------------------------


def default(function: Any, parameter: str) -> Any:
    """The default of ``parameter`` in ``function``'s signature."""
    return inspect.signature(function).parameters[parameter].default


def shared_sqlite() -> tuple[float, float]:
    """The lease and poll of a shared SQLite store opened without them (None in the
    signature: the constructor sets the defaults)."""
    with (
        tempfile.TemporaryDirectory() as directory,
        SqliteTaskStore(Path(directory) / "tasks.db", shared=True) as store,
    ):
        return store.lease, store.poll


def plot_base() -> Any:
    from lldsched.views.plots import _base

    return _base


def gantt_function() -> Any:
    from lldsched.views.plots import gantt

    return gantt


def panel() -> Any:
    from lldsched.views import panel

    return panel


def postgres_store() -> Any:
    from lldsched.stores.postgres import PostgresTaskStore

    return PostgresTaskStore


# A document's words that quote a default or a bound, its figures in groups, and what the
# code's are, in order: a changed default (or bound) fails here, naming the words that
# still say the old one. Each must be found in its document: a sentence reworded moves
# its entry here with it.
QUOTED: list[tuple[str, str, Any]] = [
    ("GUIDE.md", r"at most `max_coroutines`\s+\(default ([\d,]+)\)",
     lambda: [default(Scheduler, "max_coroutines")]),
    ("GUIDE.md", r"`retain_finished` \(default: the ([\d,]+) most recently finished stay, "
     r"retired in\s+batches of ([\d,]+), so up to ([\d,]+) are held",
     lambda: retained(default(Scheduler, "retain_finished"))),
    ("GUIDE.md", r"`max_wait` \(default ([\d.]+) s", lambda: [default(Scheduler, "max_wait")]),
    ("../README.md", r"never\s+polling \(and at most (\d+) s, `max_wait`",
     lambda: [default(Scheduler, "max_wait")]),
    ("GUIDE.md", r"a slow one loses its oldest events past a\s+backlog of ([\d,]+)",
     lambda: [default(Scheduler, "listener_backlog")]),
    ("EXTENDING.md", r"loses its oldest events past a backlog of ([\d,]+)",
     lambda: [default(Scheduler, "listener_backlog")]),
    ("GUIDE.md", r"due at finish \+ backoff \((\d+) s, (\d+) s, (\d+) s … capped at (\d+) s",
     lambda: [*(RetryPolicy().backoff(n) for n in (1, 2, 3)), RetryPolicy().max_backoff]),
    ("GUIDE.md", r"`MisfirePolicy\(on_misfire, grace=(\d+), max_catch_up=(\d+)\)`",
     lambda: [MisfirePolicy().grace, MisfirePolicy().max_catch_up]),
    ("GUIDE.md", r"`synchronous=\"(\w+)\"` \(the default\)",
     lambda: [default(SqliteTaskStore, "synchronous")]),
    ("GUIDE.md", r"`Scheduler\(tz=\"Europe/Berlin\"\)`, default (\w+)\)",
     lambda: [default(Scheduler, "tz")]),
    ("GUIDE.md", r"`result`:\s+what the action returned, as its `repr` cut to (\d+) characters",
     lambda: [RESULT_LIMIT]),
    ("ASYNCIO.md", r"`record.result` is the `repr` of what the job returned,\s+cut to (\d+)",
     lambda: [RESULT_LIMIT]),
    ("ARCHITECTURE.md", r"`result_text`: its `repr`, cut to (\d+) characters",
     lambda: [RESULT_LIMIT]),
    ("ARCHITECTURE.md", r"compacted a slice of (\d+) entries per operation",
     lambda: [COMPACT_SLICE]),
    # It said "under 1.5x the live entries": a heap below the minimum is never compacted.
    ("ARCHITECTURE.md", r"in a heap of at least (\d+) entries .*? at\s+most 1\.5x the live "
     r"entries plus (\d+)\.",
     lambda: [COMPACT_MIN_ENTRIES, COMPACT_MIN_ENTRIES]),
    ("OPERATIONS.md", r"\(`history_limit`, (\d+) records, packed\), finished tasks held "
     r"\(`retain_finished`,\s+([\d,]+)\).*?listener\s+backlog \(([\d,]+) events\)",
     lambda: [default(Scheduler, name) for name in
              ("history_limit", "retain_finished", "listener_backlog")]),
    ("TESTING.md", r"a scheduler keeps the latest (\d+) of\s+each task by default",
     lambda: [default(Scheduler, "history_limit")]),
    ("OPERATIONS.md", r"up to `retention` \(([\d,]+)\) records per task",
     lambda: [same(default(SqliteTaskStore, "retention"), default(postgres_store(), "retention"))]),
    ("OPERATIONS.md", r"\(`lease=(\d+)` s by default\)",
     lambda: [same(shared_sqlite()[0], default(postgres_store(), "lease"))]),
    ("OPERATIONS.md", r"The text is cut at ([\d,]+) characters \(`lldsched.errors.ERROR_LIMIT`",
     lambda: [ERROR_LIMIT]),
    ("OPERATIONS.md", r"within (\d+) seconds of it\s+\(`lldsched.logs.REPEAT_WINDOW`",
     lambda: [REPEAT_WINDOW]),
    ("OPERATIONS.md", r"the\s+store's `timeout`, (\d+) s, even through a network",
     lambda: [default(postgres_store(), "timeout")]),
    ("CLUSTER.md", r"at most `poll` seconds later \((\d+) s by\s+default\)",
     lambda: [same(shared_sqlite()[1], default(postgres_store(), "poll"))]),
    ("CLUSTER.md", r"`lease / 6` \((\d+) s at the default (\d+) s\)",
     lambda: [shared_sqlite()[0] / 6, shared_sqlite()[0]]),
    ("CLUSTER.md", r"disagree by more than `lease - lease/3` \(a margin of (\d+) s at the "
     r"default (\d+) s\)",
     lambda: [shared_sqlite()[0] * 2 / 3, shared_sqlite()[0]]),
    ("CLUSTER.md", r"every other process waits \(up to `timeout`, (\d+) s,",
     lambda: [default(SqliteTaskStore, "timeout")]),
    ("CLUSTER.md", r"within the store's `timeout` \((\d+) s\)",
     lambda: [default(postgres_store(), "timeout")]),
    ("CLUSTER.md", r"\(`handoff=`, (\d+) per\s+worker by default\)",
     lambda: [Scheduler(workers=3)._pool.capacity / 3]),
    ("CLUSTER.md", r"a plan cut at the ([\d,]+)-slot cap", lambda: [misfireplan.MAX_SLOTS]),
    ("CLUSTER.md", r"the finish times of its last (\d+)\s+successes of each upstream",
     lambda: [dependencies._KEPT_HERE]),
    ("MIGRATING.md", r"`Scheduler\(workers=10\)` \(default (\d+)\)",
     lambda: [default(Scheduler, "workers")]),
    ("MIGRATING.md", r"lldsched tries (\d+) times \(two retries, (\d+) s then (\d+) s after",
     lambda: [RetryPolicy().max_attempts, RetryPolicy().backoff(1), RetryPolicy().backoff(2)]),
    ("MIGRATING.md", r"`shutdown\(\)` \(`drain=True, timeout=([\d.]+)`\).*?lldsched's default "
     r"gives up after (\d+) s",
     lambda: [default(Scheduler.shutdown, "timeout")] * 2),
    ("MIGRATING.md", r"\((\d+) s by default; `None`: no bound\)",
     lambda: [default(Scheduler.shutdown, "timeout")]),
    ("MIGRATING.md", r"\(at most `max_catch_up`, (\d+) by default\)",
     lambda: [MisfirePolicy().max_catch_up]),
    ("MIGRATING.md", r"lldsched's default, `RUN_ONCE` with (\d+) s of grace",
     lambda: [MisfirePolicy().grace]),
    ("TESTING.md", r"`Stepper\(scheduler, timeout=([\d.]+)\)`",
     lambda: [default(Stepper, "timeout")]),
    ("CRON.md", r"`preview\(n=(\d+), start=None\)`.*?`n` at most ([\d,]+) \(`MAX_PREVIEW`",
     lambda: [default(CronSchedule.preview, "n"), MAX_PREVIEW]),
    ("CRON.md", r"or `None` when nothing fires within (\d+) years",
     lambda: [round(HORIZON_DAYS / 365.25)]),
    ("SIMULATION.md", r"`--days` is at most (\d+)", lambda: [MAX_DAYS]),
    ("SIMULATION.md", r"Past (\d+) runs\s+\(`DETAIL_RUNS`\)", lambda: [plot_base().DETAIL_RUNS]),
    ("SIMULATION.md", r"draws at most (\d+) lanes \(`max_lanes=`, `MAX_LANES`",
     lambda: [same(plot_base().MAX_LANES, default(gantt_function(), "max_lanes"))]),
    ("SIMULATION.md", r"It shows at most (\d+) rows \(`max_rows=`, `MAX_ROWS`\)",
     lambda: [same(panel().MAX_ROWS, default(panel().ControlPanel, "max_rows"))]),
    ("SIMULATION.md", r"`--workers` \(and `Simulation\(workers=...\)`\) is at most ([\d,]+)",
     lambda: [same(simulation.MAX_WORKERS, MAX_WORKERS)]),
    ("SIMULATION.md", r"threaded\s+`Scheduler\(workers=...\)` is at most ([\d,]+)",
     lambda: [pool.MAX_WORKERS]),
    ("SIMULATION.md", r"`--max-coroutines` \(and `Simulation\(max_coroutines=...\)`,\s+"
     r"default ([\d,]+)",
     lambda: [same(default(simulation.Simulation, "max_coroutines"), DEFAULT_MAX_COROUTINES,
                   default(build_scenario, "max_coroutines"))]),
    ("SIMULATION.md", r"`python -m lldsched cron -n` lists at most ([\d,]+) fires",
     lambda: [MAX_FIRES]),
]  # fmt: skip


def retained(count: int) -> list[int]:
    """What a ``retain_finished`` count holds: the count, the batch it retires in, and
    the most it holds before a batch retires."""
    return [count, count // RETIRE_BATCH + 1, count + count // RETIRE_BATCH]


def same(*values: object) -> object:
    """The one value two places hold (the SQLite and the PostgreSQL store's default),
    which one figure of a document quotes for both."""
    assert len(set(values)) == 1, f"one figure is quoted for {values}"
    return values[0]


def as_figure(value: object) -> float | str:
    """A figure, as the code has it or as the documents write it (``10,000``, ``5.0``),
    or a word (``NORMAL``)."""
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(str(value).replace(",", ""))
    except ValueError:
        return str(value)


@pytest.mark.parametrize(
    ("name", "words", "actual"), QUOTED, ids=[f"{name}:{words[:30]}" for name, words, _ in QUOTED]
)
def test_the_defaults_and_bounds_the_documents_quote_are_the_codes(
    name: str, words: str, actual: Any
) -> None:
    text = " ".join((DOCS / name).read_text().split())  # a sentence may wrap anywhere
    found = re.findall(words.replace(r"\s+", " ").replace(r"\n", " "), text)
    assert found, f"{name} no longer says {words!r}: move this check with the sentence"
    figures = [as_figure(value) for value in actual()]
    for quoted in found:
        groups = [quoted] if isinstance(quoted, str) else list(quoted)
        shown = [as_figure(group) for group in groups]
        assert shown == figures, f"{name} quotes {shown} where the code has {figures}"


def test_the_logging_table_of_operations_md_lists_every_logger_once() -> None:
    """OPERATIONS.md, "Logging": a row per logger of lldsched/logs.py, in its order."""
    section = (DOCS / "OPERATIONS.md").read_text().split("\n## Logging\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    assert re.findall(r"^\| `(lldsched\.\w+)` \|", section, flags=re.M) == list(LOGGERS)


def test_the_metrics_table_of_operations_md_names_every_field_of_the_snapshot() -> None:
    """OPERATIONS.md, "Monitoring": each field of ``Metrics`` (and its properties
    ``alive`` and ``runs``) is named in the table's first column once, and nothing else is:
    a dashboard's author reads the table, not the class."""
    section = (DOCS / "OPERATIONS.md").read_text().split("\n## Monitoring\n", 1)[1]
    rows = re.findall(r"^\| (`.*?) \|", section.split("\n## ", 1)[0], flags=re.M)
    named = [name for row in rows for name in re.findall(r"`(\w+)`", row)]
    fields = [*Metrics._fields, "alive", "runs"]
    assert sorted(named) == sorted(fields)


def test_operations_md_lists_every_outcome_a_failed_attempts_line_can_carry() -> None:
    """OPERATIONS.md, "Logging": the ``outcome`` field of a failed attempt's line is its
    record's, one of the outcomes of a run that did not succeed (``given_up`` too)."""
    text = " ".join((DOCS / "OPERATIONS.md").read_text().split("\n## Logging\n", 1)[1].split())
    (listed,) = re.findall(r"`outcome` \(((?:`\w+`,? ?)+)\)", text)
    failed = {outcome.value for outcome in Outcome if outcome.ran and outcome is not Outcome.OK}
    assert set(re.findall(r"`(\w+)`", listed)) == failed


def test_the_outcome_propertys_docstring_names_every_outcome() -> None:
    """``help(record.outcome)`` is where a user looks up what a record's outcome can be:
    it listed seven of the nine (not ``blocked`` or ``cancelled``)."""
    from lldsched.model import ExecutionRecord

    doc = " ".join((ExecutionRecord.outcome.__doc__ or "").split())
    assert sorted(o.value for o in Outcome if not re.search(rf"\b{o.value}\b", doc)) == []


def explained() -> list[tuple[Any, Any]]:
    """Schedules whose ``explain()`` the docstring of their class's ``explain`` quotes
    whole, with the method that quotes it."""
    from datetime import UTC, datetime

    from lldsched import FixedDelay, Jittered, OneTime, OverrunPolicy, Window

    nine, five = (datetime(2026, 6, 1, hour, tzinfo=UTC) for hour in (9, 17))
    return [
        (FixedRate.explain, FixedRate(60)),
        (FixedRate.explain, FixedRate(60, on_overrun=OverrunPolicy.CATCH_UP)),
        (FixedDelay.explain, FixedDelay(10)),
        (OneTime.explain, OneTime(at=nine)),
        (OneTime.explain, OneTime(delay=5)),
        (Jittered.explain, Jittered(FixedRate(60), 5, seed=7)),
        (Window.explain, Window(FixedRate(60), start=nine, end=five, max_runs=3)),
        (CronSchedule.explain, CronSchedule("0 3 * * 1-5")),
        (CronSchedule.explain, CronSchedule("30 1 * * *", tz="Europe/Berlin")),
    ]


@pytest.mark.parametrize(
    ("method", "schedule"), explained(), ids=[repr(schedule) for _, schedule in explained()]
)
def test_an_explanation_a_docstring_quotes_is_what_explain_says(method: Any, schedule: Any) -> None:
    """``Window.explain``'s docstring quoted its sentence without the comma it has."""
    doc = " ".join((method.__doc__ or "").split())
    assert f'"{schedule.explain()}"' in doc


@pytest.mark.parametrize("verb", ["cancel", "pause", "remove"])
def test_the_simulations_verbs_that_cut_runs_say_which_as_the_schedulers_do(verb: str) -> None:
    """A process-isolated run in flight is cut by ``cancel``, ``pause`` and ``remove`` on
    both runtimes (the simulation's ends at the verb, as its worker process would be
    killed); the simulation's docstrings said only a coroutine run was, and that "a run
    in flight finishes"."""
    from lldsched import OneTime, Simulation

    sim = Simulation()
    task = sim.schedule("iso", OneTime(at=10), action="math:factorial", args=[5],
                        isolation="process", duration=100)  # fmt: skip
    sim.run(50)
    getattr(sim, verb)(task.id)
    sim.run(200)
    (record,) = sim.records()
    assert record.finished == 50 and "its worker process was killed" in (record.error or "")
    doc = " ".join((getattr(Simulation, verb).__doc__ or "").split())
    assert "coroutine" in doc and "process-isolated" in doc, f"Simulation.{verb}"


def test_a_run_a_shutdown_cut_is_counted_cancelled_where_the_documents_say() -> None:
    """A coroutine run a simulation's shutdown cut is ``cancelled``: a failure in
    ``failure_count``, ``cancelled`` in ``task_summary``, as for ``Overlap.CANCEL_OTHER``.
    ``failure_count``'s docstring and SIMULATION.md's frame and summary bullets named
    CANCEL_OTHER alone."""
    import asyncio

    from lldsched import OneTime, Simulation
    from lldsched.core.task import ScheduledTask
    from lldsched.views.frames import task_summary, to_frame

    async def action() -> None:
        await asyncio.sleep(0)

    sim = Simulation()
    task = sim.schedule("co", OneTime(at=10), action=action, duration=100)
    sim.run(20)
    sim.shutdown(timeout=5)
    assert [record.outcome for record in sim.records()] == [Outcome.CANCELLED]
    assert task.failure_count == 1
    assert task_summary(to_frame(sim))["cancelled"].tolist() == [1]
    docstring = " ".join((ScheduledTask.failure_count.__doc__ or "").split())
    simulation = " ".join((DOCS / "SIMULATION.md").read_text().split())
    assert "shutdown" in docstring
    assert re.search(
        r"cancelled for a run `Overlap.CANCEL_OTHER` cut short or a shutdown", simulation
    )
    assert re.search(r"cancelled \(by `CANCEL_OTHER` or a shutdown's cut,", simulation)


def test_an_upstreams_success_counts_from_the_dependents_slot_not_its_last_run() -> None:
    """``help(TaskStatus)`` said a dependent waits for each upstream to succeed "since its
    last run"; the rule (core/dependencies.py, GUIDE.md, ``schedule``'s docstring) counts
    from its previous slot's start: a success between a slot's first attempt and its
    retry releases the next slot."""
    from lldsched import RetryPolicy, Simulation, TaskStatus
    from lldsched.sim import fails_on

    sim = Simulation(workers=2, start=0)
    sim.schedule("up", FixedRate(40), id="up", duration=5)  # succeeds at 5 and 45, then paused
    sim.schedule("down", FixedRate(3600, start_delay=10), id="down", duration=10,
                 fails=fails_on(1), retry=RetryPolicy(max_attempts=2, initial_backoff=30),
                 depends_on=["up"])  # fmt: skip  # slot 10: fails at 20, retried 50 to 60
    sim.at(46, lambda: sim.pause("up"))
    sim.run(4000)
    down = [(r.slot, r.started, r.outcome.value) for r in sim.records() if r.task_id == "down"]
    assert down[2] == (3610.0, 3610.0, "failed")  # not blocked: 45 is after the slot's 10
    doc = " ".join((TaskStatus.__doc__ or "").split())
    assert "has succeeded since its previous slot started" in doc


def test_a_schedules_next_run_is_asked_after_a_slot_given_up_as_its_protocol_says() -> None:
    """EXTENDING.md: ``next_run`` is asked after a success and after a slot given up,
    never for a retry; the ``Schedule`` protocol's docstring, what a schedule's author
    reads in an editor, said "after the successful run"."""
    from lldsched import RetryPolicy, Simulation
    from lldsched.schedules.base import Schedule

    asked: list[str] = []

    class Hourly:
        def first_run(self, now: float) -> float:
            return now

        def next_run(self, record: Any, now: float) -> float:
            asked.append(record.outcome.value)
            return float(record.slot + 3600)

    sim = Simulation()
    sim.schedule("x", Hourly(), fails=1.0, retry=RetryPolicy(max_attempts=2, initial_backoff=1))
    sim.run(60)  # the first slot: an attempt, its retry, the slot given up
    assert [r.outcome.value for r in sim.records()] == ["failed", "given_up"]
    assert "given_up" in asked and "failed" not in asked
    doc = " ".join((Schedule.next_run.__doc__ or "").split())
    assert "successful" not in doc and "given up" in doc


def test_an_event_of_a_change_of_definition_is_described_where_events_are() -> None:
    """GUIDE.md: a change of a task's definition (a replace, ``reschedule``, ``modify``,
    ``run_now``) is heard as an event whose ``previous`` equals its ``status``; the
    ``TaskEvent`` docstring called every event "a status change"."""
    from lldsched import EventLog, Simulation, TaskEvent

    log = EventLog()
    sim = Simulation(listeners=[log])
    sim.schedule("x", FixedRate(60), id="x")
    sim.run(1)
    before = len(log.events)
    sim.reschedule("x", FixedRate(120))
    sim.modify("x", timeout=5)
    sim.schedule("x", FixedRate(30), id="x", replace_existing=True)
    changes = log.events[before:]
    assert len(changes) == 3 and all(e.previous is e.status and e.record is None for e in changes)
    doc = " ".join((TaskEvent.__doc__ or "").split())
    assert "previous == status" in doc and "reschedule" in doc and "replace" in doc


def test_a_tasks_history_holds_the_slots_decided_without_a_run_as_its_docstring_says() -> None:
    """``task.history`` keeps every record of the task, a slot a SKIP overrun passed over
    included (``run_count`` counts the runs alone); its docstring said "the most recent
    runs"."""
    from lldsched import Simulation
    from lldsched.core.task import ScheduledTask

    sim = Simulation(workers=1)
    task = sim.schedule("long", FixedRate(60), duration=120)
    sim.run(400)
    assert [r.outcome.value for r in task.history] == ["ok", "skipped"] * 3
    assert task.run_count == 3
    doc = " ".join((ScheduledTask.history.__doc__ or "").split())
    assert "runs" not in doc.split("(")[0] and "decided without" in doc


# --- the notebooks, as the README and the kit's start page describe them --------------

NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def check_yourself_questions(source: Path) -> int:
    """The questions of a notebook source's "Check yourself" section (its answers, folded
    under ``<details>``, are numbered too and not counted)."""
    section = source.read_text().split("# ## Check yourself", 1)[1].split("<details>", 1)[0]
    return len(re.findall(r"^# \d+\. ", section, flags=re.M))


def test_the_self_check_questions_are_as_many_as_the_readme_and_the_index_say() -> None:
    counts = [check_yourself_questions(path) for path in sorted(NOTEBOOK_SOURCES.glob("*.py"))]
    assert len(counts) == 11 and min(counts) >= 1
    readme = " ".join(README.read_text().split())
    index = " ".join((NOTEBOOK_SOURCES / "00-index.py").read_text().replace("# ", "").split())
    for text, words in (
        (readme, r"ends with (\w+) to (\w+) self-check questions"),
        (index, r"ends with (\w+) to (\w+) \*Check yourself\* questions"),
    ):
        ((low, high),) = re.findall(words, text)
        assert (NUMBERS[low], NUMBERS[high]) == (min(counts), max(counts))


# --- contents lists --------------------------------------------------------------------


def sections_and_contents(path: Path) -> tuple[list[str], list[str]]:
    """A document's ``##`` and ``###`` headings outside code blocks, and the names its
    "Contents:" list links to, in order."""
    text = path.read_text(encoding="utf-8")
    outside = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    headings = re.findall(r"^###? (.*?)\s*$", outside, flags=re.M)
    listed = text.split("Contents:\n", 1)[1].split("\n\n#", 1)[0] if "Contents:\n" in text else ""
    return headings, re.findall(r"^\s*- \[(.*?)\]\(#", listed, flags=re.M)


@pytest.mark.parametrize("path", sorted(DOCS.glob("*.md")), ids=lambda path: path.name)
def test_a_contents_list_names_every_section_in_order(path: Path) -> None:
    headings, listed = sections_and_contents(path)
    assert listed in ([], headings), f"{path.name}: its Contents list is not its sections"


def test_the_guides_have_a_contents_list() -> None:
    for path in [*GUIDES, *SPECIALISED]:
        headings, listed = sections_and_contents(path)
        assert listed == headings != [], path.name


# --- transcripts ---------------------------------------------------------------------


def test_the_readmes_demo_transcript_is_what_the_demo_prints() -> None:
    readme = README.read_text()
    after = readme.split("`make demo` prints", 1)[1]
    (transcript,) = re.findall(r"```\n(.*?)```", after, flags=re.DOTALL)[:1]
    assert transcript == DEMO_OUTPUT


def cron_transcripts() -> list[tuple[str, str]]:
    text = (DOCS / "CRON.md").read_text()
    found = []
    for block in re.findall(r"```\n(\$ python -m lldsched cron .*?)```", text, flags=re.DOTALL):
        command, _, output = block.partition("\n")
        found.append((command.removeprefix("$ python -m lldsched "), output))
    return found


@pytest.mark.parametrize(("command", "output"), cron_transcripts())
def test_the_cron_commands_of_cron_md_print_what_it_shows(
    command: str,
    output: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lldsched.cli import main

    monkeypatch.chdir(ROOT)  # --crontab tests/crontabs/...: a path from the repository's root
    assert main(shlex.split(command)) in (0, None)
    assert capsys.readouterr().out == output


def test_cron_md_shows_its_command_transcripts() -> None:
    assert len(cron_transcripts()) == 4


# --- the gunicorn recipe of CLUSTER.md ---------------------------------------------------


def gunicorn_conf() -> str:
    """CLUSTER.md's ``gunicorn.conf.py`` block."""
    text = (DOCS / "CLUSTER.md").read_text()
    blocks: list[str] = re.findall(
        r"```python\n(# gunicorn\.conf\.py\n.*?)```", text, flags=re.DOTALL
    )
    (block,) = blocks
    return block


def test_the_gunicorn_recipe_of_cluster_md_runs_a_task_once_over_its_forked_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its block defines hooks that the block's own run never calls: here gunicorn's part
    is played, each worker a forked child calling post_fork, then worker_exit."""
    path = tmp_path / "tasks.db"
    block = gunicorn_conf()
    assert '"/var/lib/app/tasks.db"' in block
    conf: dict[str, Any] = {}
    exec(
        compile(block.replace("/var/lib/app/tasks.db", str(path)), "gunicorn.conf.py", "exec"), conf
    )

    def register(scheduler: Scheduler) -> None:  # the app's jobs: one report, every worker
        scheduler.schedule("report", jobs.noop, FixedRate(3600), id="report", replace_existing=True)

    monkeypatch.setitem(
        sys.modules, "app", types.SimpleNamespace(jobs=types.SimpleNamespace(register=register))
    )

    def worker() -> bool:
        hooks = types.SimpleNamespace(cfg=types.SimpleNamespace(graceful_timeout=30))
        conf["post_fork"](None, hooks)  # gunicorn's server and worker objects
        idle: bool = hooks.scheduler.wait_idle(timeout=5)
        conf["worker_exit"](None, hooks)
        return idle and not hooks.scheduler.running

    assert [in_child(worker) for _ in range(3)] == ["True"] * 3
    with SqliteTaskStore(path, shared=True) as store:
        assert [snapshot.task.id for snapshot in store.load_all()] == ["report"]
        assert [record.ok for record in store.records()] == [True]  # three workers, one run


# --- the deployment examples of CLUSTER.md that the block runner leaves out -------------


def not_run_block(path: Path, because: str) -> str:
    """The Python block of ``path`` under ``<!-- not run: <because>... -->``."""
    text = path.read_text()
    blocks: list[str] = re.findall(
        rf"<!-- not run: {re.escape(because)}[^\n]*\n```python\n(.*?)```", text, flags=re.DOTALL
    )
    (block,) = blocks
    return block


def test_cluster_mds_first_example_makes_one_task_of_every_workers_registration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run as two workers would (two stores on the file, here in one process), with the
    app's job a function of the tests: the defaults its comment names, one task."""
    block = not_run_block(DOCS / "CLUSTER.md", "a deployment example")
    assert '"/var/lib/app/tasks.db"' in block
    block = block.replace("/var/lib/app/tasks.db", str(tmp_path / "tasks.db"))
    app = types.SimpleNamespace(jobs=types.SimpleNamespace(report=jobs.noop))
    workers = []
    for _ in range(2):
        namespace: dict[str, Any] = {"app": app}
        exec(compile(block, "CLUSTER.md", "exec"), namespace)
        workers.append(namespace)
    try:
        for worker in workers:
            assert (worker["store"].lease, worker["store"].poll) == (30.0, 1.0)
            assert [task.id for task in worker["scheduler"].tasks()] == ["report"]
    finally:
        for worker in workers:
            worker["scheduler"].shutdown()
            worker["store"].close()


def test_cluster_mds_postgres_example_runs_on_a_real_server(postgres_dsn: str) -> None:
    block = not_run_block(DOCS / "CLUSTER.md", "it needs a PostgreSQL server")
    assert '"postgresql://app:secret@db.internal/app"' in block
    namespace: dict[str, Any] = {}
    block = block.replace("postgresql://app:secret@db.internal/app", postgres_dsn)
    exec(compile(block, "CLUSTER.md", "exec"), namespace)
    scheduler, store = namespace["scheduler"], namespace["store"]
    try:
        assert (store.lease, store.poll) == (30.0, 1.0) and scheduler.running
        task = scheduler.schedule("report", jobs.noop, FixedRate(3600), id="report")
        assert scheduler.wait_idle(timeout=10) and task.run_count == 1
    finally:
        scheduler.shutdown()
        store.close()


def thread_names_bullet() -> str:
    """OPERATIONS.md's "Thread names" bullet, on one line."""
    text = " ".join((DOCS / "OPERATIONS.md").read_text().split())
    (bullet,) = re.findall(r"- \*\*Thread names\*\* (.*?) - \*\*", text)
    return str(bullet)


def test_operations_md_names_every_thread_a_scheduler_starts() -> None:
    """Each thread name the threaded runtime makes (``f"{prefix}timer"``; the coroutine
    runner's, named ``{prefix}loop``, as ``f"{self._name}-executor-join"``) is in the
    bullet, as ``-timer``, ``-loop-executor-join``: a thread dump names nothing it
    does not explain."""
    made = set()
    for path in (PACKAGE / "threaded").rglob("*.py"):  # its collaborators' folders too
        source = path.read_text()
        made |= set(re.findall(r"\{(?:self\._)?thread_prefix\}([\w-]+)", source))
        made |= {f"loop-{name}" for name in re.findall(r"\{self\._name\}-([\w-]+)", source)}
    assert {"timer", "worker", "events", "loop", "loop-to-thread"} <= made
    bullet = thread_names_bullet()
    assert sorted(name for name in made if f"-{name}" not in bullet) == []


def test_operations_md_names_the_postgresql_stores_threads() -> None:
    """Every thread a PostgreSQL store starts (a name in lldsched/stores/postgres/), and
    no other."""
    made = set()
    modules = sorted((PACKAGE / "stores" / "postgres").glob("*.py"))
    assert len(modules) > 10  # the store's folder: an empty glob would check nothing
    for path in modules:
        made |= set(re.findall(r"\"(lldsched-pg-[\w-]+)\"", path.read_text()))
    (sentence,) = re.findall(r"A PostgreSQL store's own threads are (.*?)\.", thread_names_bullet())
    assert set(re.findall(r"`(lldsched-pg-[\w-]+)`", sentence)) == made


# --- Python blocks of the README and docs/ -------------------------------------------

DOCUMENTS = [README, *sorted(DOCS.rglob("*.md"))]  # docs/decisions/ too
# The guides the README's depth moved to: with the README, they hold the blocks that
# show what they print (the API tour, the service recipes, the simulation).
GUIDES = [DOCS / name for name in ("GUIDE.md", "OPERATIONS.md", "SIMULATION.md")]
# The guides for one subject each, read by whoever meets it: each lists its sections too.
SPECIALISED = [
    DOCS / f"{name}.md"
    for name in ("ASYNCIO", "CLUSTER", "CRON", "EXTENDING", "MIGRATING", "TESTING", "UPGRADING")
]


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """The Python blocks of a document that run: the line each begins on, and its text."""
    text = path.read_text(encoding="utf-8")
    return [
        (text[: match.start(2)].count("\n") + 1, match.group(2))
        for match in re.finditer(
            r"(?:^([^\n]*)\n)?```python\n(.*?)```", text, flags=re.MULTILINE | re.DOTALL
        )
        if not (match.group(1) or "").startswith("<!-- not run")
    ]


BLOCKS = [(path, line, block) for path in DOCUMENTS for line, block in python_blocks(path)]
# Documents whose blocks are one module, as they say ("The examples below are one test
# module"): a block runs after the ones before it, in their namespace, and may use what
# they defined or imported (its fixtures' classes in its tests' annotations).
ONE_MODULE = [DOCS / "TESTING.md"]
# The documents whose examples users copy into projects that mypy checks.
TYPED = [README, *(DOCS / f"{name}.md" for name in
                   ("GUIDE", "EXTENDING", "ASYNCIO", "OPERATIONS", "TESTING",
                    "CRON", "CLUSTER", "SIMULATION", "MIGRATING", "UPGRADING"))]  # fmt: skip
# The lines a document shows because a user's mypy refuses them, and what it says: the
# deprecated call UPGRADING shows ("To find the old forms in a code base, run its tests
# with ..., or mypy"). Each must be refused, as said; no other line may be.
REFUSED = [
    ("UPGRADING.md", "old = RetryPolicy(5, 0.5)",
     'Too many positional arguments for "RetryPolicy"  [call-arg]'),
]  # fmt: skip
# The packages the TYPED blocks import that ship no types, checked as a user's project
# whose configuration sets ``ignore_missing_imports`` for them (and nothing else):
# APScheduler 3 (MIGRATING's service, as it was), and ``app``, the reader's own package
# (CLUSTER's gunicorn.conf.py imports its jobs).
UNTYPED = ("apscheduler", "app")


def shown_output(block: str) -> list[str]:
    """The ``# ...`` lines that follow a call of ``print`` (its last line: a call written
    over several lines, too), in order."""
    ends = {
        node.end_lineno
        for node in ast.walk(ast.parse(block))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "print"
    }
    shown: list[str] = []
    after_print = False
    for number, line in enumerate(block.splitlines(), 1):
        if after_print and line.startswith("# "):
            shown.append(line[2:])
            continue
        after_print = number in ends
    return shown


def matches(pattern: str, line: str) -> bool:
    parts = [re.escape(part) for part in pattern.split("...")]
    return re.fullmatch(".*".join(parts), line) is not None


def unprinted(shown: list[str], printed: list[str]) -> list[str]:
    """The shown lines not printed in the order shown (empty when all were)."""
    missing: list[str] = []
    at = 0
    for line in shown:
        found = next((n for n in range(at, len(printed)) if matches(line, printed[n])), None)
        if found is None:
            missing.append(line)
        else:
            at = found + 1
    return missing


def test_the_readme_and_its_guides_have_their_blocks_and_show_what_they_print() -> None:
    for path in [README, *GUIDES]:
        blocks = [block for _, block in python_blocks(path)]
        assert len(blocks) >= 2, f"{path.name} lost its examples"
        assert sum(len(shown_output(block)) for block in blocks) >= 1, path.name
    # The README held 23 blocks showing 28 printed lines before its depth moved out.
    moved = [block for path in [README, *GUIDES] for _, block in python_blocks(path)]
    assert len(moved) >= 23, "the README and its guides lost the API tour"
    assert sum(len(shown_output(block)) for block in moved) >= 28


def registered_once_started(block: str) -> list[int]:
    """The lines of ``block`` that register a job by ``replace_existing=True`` (a
    redeploy's registration) inside a ``with Scheduler(..., store=...)`` block: the
    scheduler started before the code's definition, so a restored task due at once runs
    first under its stored one (docs/UPGRADING.md, "The recipe")."""
    lines: list[int] = []
    for node in ast.walk(ast.parse(block)):
        if not isinstance(node, ast.With | ast.AsyncWith) or not any(
            isinstance(item.context_expr, ast.Call)
            and isinstance(item.context_expr.func, ast.Name)
            and item.context_expr.func.id == "Scheduler"
            and any(keyword.arg == "store" for keyword in item.context_expr.keywords)
            for item in node.items
        ):
            continue
        lines.extend(
            inner.lineno
            for statement in node.body
            for inner in ast.walk(statement)
            if isinstance(inner, ast.Call)
            and isinstance(inner.func, ast.Attribute)
            and inner.func.attr == "schedule"
            and any(keyword.arg == "replace_existing" for keyword in inner.keywords)
        )
    return lines


def test_a_documented_service_registers_its_jobs_before_it_starts() -> None:
    """GUIDE.md's ``start_service`` (and UPGRADING.md's own renamed action, OPERATIONS.md's
    backup) registered inside ``with Scheduler(store=...)``, against UPGRADING.md's
    advice (docs/decisions/upgrading.md, "Every example of a service registers its jobs
    before `start()`")."""
    late = [
        f"{path.name}:{line + number - 1}"
        for path, line, block in BLOCKS
        for number in registered_once_started(block)
    ]
    assert late == []


def reader_module(path: Path) -> types.ModuleType:
    """The module ``path``'s blocks run in: one of its own, as a reader's script is (a
    dataclass defined in a block looks its module up in ``sys.modules``), with the spec
    an imported module has, its loader the document's. A module made bare
    (``types.ModuleType``) has none: Python 3.15's linecache, reading a block's line
    for a traceback or a warning, warned "Module globals is missing a __spec__.loader"
    (a DeprecationWarning, an error under ``-W error``)."""
    loader = importlib.machinery.SourceFileLoader("docs", str(path))
    spec = importlib.util.spec_from_loader("docs", loader)
    assert spec is not None
    return importlib.util.module_from_spec(spec)


def test_a_blocks_module_gives_its_loader_to_linecache_without_a_warning(
    tmp_path: Path,
) -> None:
    """What linecache asks of a module's globals, 3.15's without a DeprecationWarning:
    a ``__spec__`` whose loader is the ``__loader__``, and that loader's source, read
    for a file no longer where the code says it is (a lazy entry; 3.11 made none for a
    bare module)."""
    module = reader_module(README)
    assert module.__spec__ is not None and module.__name__ == module.__spec__.name == "docs"
    assert module.__loader__ is module.__spec__.loader is not None
    moved = str(tmp_path / "README.md")  # compiled from a file that is gone
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        assert linecache.lazycache(moved, module.__dict__)
        assert linecache.getlines(moved) == README.read_text().splitlines(keepends=True)


@pytest.fixture
def logging_restored() -> Iterator[None]:
    """A block that configures logging (the "Logging" section's dictConfig) leaves
    lldsched's loggers as it found them, for the tests that run after it."""
    names = ["lldsched", *LOGGERS]
    kept = [
        (logger, logger.level, list(logger.handlers), logger.propagate, logger.disabled)
        for logger in map(logging.getLogger, names)
    ]
    yield
    for logger, level, handlers, propagate, disabled in kept:
        logger.setLevel(level)
        logger.handlers[:] = handlers
        logger.propagate, logger.disabled = propagate, disabled


@pytest.mark.usefixtures("logging_restored")
@pytest.mark.parametrize(
    ("path", "line", "block"),
    BLOCKS,
    ids=[f"{path.name}:{line}" for path, line, _ in BLOCKS],
)
def test_every_python_block_of_the_documents_runs_and_prints_what_it_shows(
    path: Path, line: int, block: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = reader_module(path)
    monkeypatch.setitem(sys.modules, "docs", module)
    timed_out = waits_timing_out(monkeypatch)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        if path in ONE_MODULE:
            for before, earlier in python_blocks(path):
                if before < line:
                    exec(compile("\n" * (before - 1) + earlier, str(path), "exec"), module.__dict__)
        out.seek(0)
        out.truncate()
        exec(compile("\n" * (line - 1) + block, str(path), "exec"), module.__dict__)
    assert unprinted(shown_output(block), out.getvalue().splitlines()) == []
    assert timed_out == [], f"a wait ran out its timeout, waiting for nothing: {timed_out}"


def typed_modules() -> dict[str, tuple[Path, str]]:
    """The Python blocks of the ``TYPED`` documents that run, as a user's files: a file
    name, its document, and its text, each block on its document's lines (mypy's line
    is the document's); a block its own module, or a document's blocks one module (one
    of ``ONE_MODULE``)."""
    modules: dict[str, tuple[Path, str]] = {}
    for path in TYPED:
        stem = path.stem.lower()
        for line, block in python_blocks(path):
            name = f"{stem}_md.py" if path in ONE_MODULE else f"{stem}_md_{line}.py"
            text = modules.get(name, (path, ""))[1]
            modules[name] = (path, text + "\n" * (line - 1 - text.count("\n")) + block)
    return modules


@pytest.mark.timeout(MYPY_BLOCKED + 60)  # mypy's run is bounded in CPU time (MYPY_CPU)
def test_the_examples_users_copy_pass_a_users_mypy_strict(request: pytest.FixtureRequest) -> None:
    """Every runnable block of the ``TYPED`` documents passes ``mypy --strict`` run as a
    user's project runs it (one run for all, in tests/test_typing_user.py's kept cache;
    ``UNTYPED``'s packages ``ignore_missing_imports``), but for the ``REFUSED`` lines,
    which it must refuse as said.  EXTENDING's decorator, CRON, CLUSTER and MIGRATING
    called ``datetime.fromtimestamp`` or compared on values that may be None, and most
    blocks left their functions unannotated, which ``--strict`` refuses."""
    folder = kept_folder(request)
    written = folder / "documents"
    written.mkdir(exist_ok=True)
    modules = typed_modules()
    assert len(modules) >= 30, "the documents lost their examples"
    for name, (_, text) in modules.items():
        (written / name).write_text(text)  # the same path each run: a block unchanged is
        # read from mypy's cache
    errors = user_mypy([written / name for name in modules], folder, UNTYPED)
    named = {(written / name).resolve(): path for name, (path, _) in modules.items()}
    found, refused = [], []
    for file, number, line in errors:
        path, said = named[file], line.split(": error: ", 1)[1]
        code = path.read_text(encoding="utf-8").splitlines()[number - 1].strip()
        if (path.name, code, said) in REFUSED:
            refused.append((path.name, code, said))
        else:
            found.append(f"{path.relative_to(ROOT)}:{number}: {said}")
    assert not found, "\n".join(found)
    assert sorted(refused) == sorted(REFUSED), "a line shown as refused passes mypy"


def waits_timing_out(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ``wait_idle`` and ``wait_drained`` calls that return False from now on (the
    list fills as they do).  An example's wait that runs out its timeout waits for what
    never comes (``wait_drained`` with a recurring task registered): the reader's copy
    stalls for the whole timeout, and what it prints next depends on the timing."""
    timed_out: list[str] = []
    wait = IdleWaits._wait

    def recorded(self: IdleWaits, timeout: float | timedelta, *, drained: bool) -> bool:
        done = wait(self, timeout, drained=drained)
        if not done:
            timed_out.append(f"{'wait_drained' if drained else 'wait_idle'}({timeout!r})")
        return done

    monkeypatch.setattr(IdleWaits, "_wait", recorded)
    return timed_out


def test_a_shown_line_that_is_not_printed_is_caught() -> None:
    shown = ["blocked 0.0 1200.0 -> 1200.0", "TimeoutError: killed at ... budget"]
    assert (
        unprinted(shown, ["blocked 0.0 1200.0 -> 1200.0", "TimeoutError: killed at 1 s budget"])
        == []
    )
    assert unprinted(
        shown, ["blocked 0.0 1200.0 -> 1300.0", "TimeoutError: killed at 1 s budget"]
    ) == [shown[0]]
    assert unprinted(shown, list(reversed(shown))) != []  # order counts


def test_the_lines_shown_under_a_print_of_several_lines_are_checked_too() -> None:
    # The README's simulation summary and SIMULATION.md's pool sizes were printed by a
    # call written over two lines, and the lines shown under it were never compared.
    block = (
        "for row in rows:\n"
        '    print(f"{row.name} {row.runs} runs, "\n'
        '          f"{row.skipped} skipped")\n'
        "# import 136 runs, 0 skipped\n"
        "# report 23 runs, 0 skipped\n"
        'print("one line")  # a note, not output\n'
        "# one line\n"
        "x = ('print(', 1)\n"
        "# not output: no print was called above\n"
    )
    assert shown_output(block) == [
        "import 136 runs, 0 skipped",
        "report 23 runs, 0 skipped",
        "one line",
    ]


def test_a_block_marked_not_run_is_left_out(tmp_path: Path) -> None:
    document = tmp_path / "X.md"
    document.write_text(
        "<!-- not run: needs a server -->\n```python\nraise SystemExit\n```\n\n"
        "Text.\n```python\nprint(1)\n```\n"
    )
    assert python_blocks(document) == [(8, "print(1)\n")]


# --- the blocks that are not Python: logs, commands, schemas ---------------------------


def fenced_blocks(path: Path) -> list[tuple[int, str, str]]:
    """Every fenced block of a document: the line its text begins on, its language
    (``""`` for none) and its text."""
    text = path.read_text(encoding="utf-8")
    return [
        (text[: match.start(3)].count("\n") + 1, match.group(2), match.group(3))
        for match in re.finditer(
            r"^( *)```(\w*)[^\n]*\n(.*?)^\1```", text, flags=re.MULTILINE | re.DOTALL
        )
    ]


def operations_failure_example() -> tuple[str, str]:
    """OPERATIONS.md's failed-run example (the Python block before "The traceback is in
    the log") and the log it shows (the text block after)."""
    text = (DOCS / "OPERATIONS.md").read_text()
    before, after = text.split("The traceback is in the log", 1)
    block = re.findall(r"```python\n(.*?)```", before, flags=re.DOTALL)[-1]
    shown = re.findall(r"```text\n(.*?)```", after, flags=re.DOTALL)[0]
    return block, shown


def log_lines(text: str) -> list[str]:
    """A log's lines as the documents compare them: a timestamp as ``<time>``, and
    without the ``^^^``/``~~~`` lines under a traceback's source line (each Python
    version draws them its own way)."""
    stamped = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+\+00:00", "<time>", text)
    return [line for line in stamped.splitlines() if not re.fullmatch(r"\s*[~^]+\s*", line)]


def test_operations_mds_failed_run_logs_what_it_shows(tmp_path: Path) -> None:
    """The example saved as ``service.py`` and run as the text says: its log is the
    block's, line for line (``...`` for the package's path and a line number in it).
    The block quoted ``task.py`` line 453 when it was 460, and left out the traceback's
    source lines, which a reader's run prints."""
    block, shown = operations_failure_example()
    (tmp_path / "service.py").write_text(block)
    setup = 'import logging; logging.basicConfig(format="%(levelname)s %(name)s %(message)s")'
    assert f"`{setup.split('; ')[1]}`" in " ".join((DOCS / "OPERATIONS.md").read_text().split())
    run = subprocess.run(
        [sys.executable, "-c", f"{setup}; import runpy; runpy.run_path('service.py')"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    printed, expected = log_lines(run.stderr), log_lines(shown)
    assert len(printed) == len(expected), run.stderr
    pairs = zip(expected, printed, strict=True)
    assert [(want, got) for want, got in pairs if not matches(want, got)] == []


def simulated_week(out: str, folder: Path) -> None:
    """ "a built-in week (an hourly fan-out, an overrunning fixed-rate job, a flaky
    import, a heartbeat, a nightly backup) with a summary per task"."""
    assert out.startswith("simulated 7 days on 4 workers (seed 0): ")
    columns = out.splitlines()[1].split()[1:11]  # runs ... skipped; the times' are two words
    rows = {line.split()[0]: line.split()[1:11] for line in out.splitlines()[2:-1]}
    of = {name: dict(zip(columns, row, strict=True)) for name, row in rows.items()}
    reports = [name for name in of if name.startswith("report-")]
    assert len(reports) >= 2 and all(int(of[name]["runs"]) >= 7 * 23 for name in reports)
    assert int(of["compaction"]["overrun"]) > 0 and int(of["import"]["failed"]) > 0
    assert int(of["heartbeat"]["runs"]) > int(of["import"]["runs"])
    assert int(of["nightly-backup"]["runs"]) == 7


def week_chart(out: str, folder: Path) -> None:
    """ "The chart is written beside `out.png` and then put in its place"."""
    assert out.splitlines()[-1] == "gantt chart: out.png"
    assert (folder / "out.png").read_bytes().startswith(b"\x89PNG")
    assert [path.name for path in folder.iterdir()] == ["out.png"]  # no part left


def eleven_decisions(out: str, folder: Path) -> None:
    """ "# the eleven decisions"."""
    from lldsched.lab import DECISIONS

    listed = re.findall(r"^  (\S+) {2,}", out, flags=re.M)
    assert listed == [row.key for row in DECISIONS] and len(listed) == 11


def silent_push(out: str, folder: Path) -> None:
    """ "# a silent push: a task due now waits 12 h"."""
    assert "silent push:" in out and "12 h late" in out


# The commands the shell blocks of the documents give to ``python -m lldsched``, each
# with what the text around it says it does.  (``cron`` commands run above, with their
# transcripts; ``demo`` in tests/test_demo.py.)
SHELL_COMMANDS: dict[str, Any] = {
    "simulate --days 7 --workers 4 --seed 0": simulated_week,
    "simulate --days 7 --workers 4 --gantt out.png": week_chart,
    "lab": eleven_decisions,
    "lab push": silent_push,
}


def shell_commands() -> list[tuple[str, str]]:
    """The ``python -m lldsched`` commands of the documents' shell blocks: where, and
    the command's words (a ``# ...`` comment left out)."""
    found = []
    for path in DOCUMENTS:
        for line, language, text in fenced_blocks(path):
            if language not in ("sh", "bash", "shell", "console"):
                continue
            for number, command in enumerate(text.splitlines()):
                if match := re.search(r"python -m lldsched (.*)", command.split(" #", 1)[0]):
                    found.append((f"{path.name}:{line + number}", match.group(1).strip()))
    return found


def test_the_documents_shell_commands_are_the_ones_run_here() -> None:
    assert sorted(command for _, command in shell_commands()) == sorted(SHELL_COMMANDS)


@pytest.mark.parametrize("command", sorted(SHELL_COMMANDS))
def test_a_shell_command_of_the_documents_does_what_the_text_says(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Run as a reader runs it, in a folder of its own: it exits 0 and prints (or
    writes) what the document says."""
    from lldsched.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(shlex.split(command)) == 0
    SHELL_COMMANDS[command](capsys.readouterr().out, tmp_path)


def test_cluster_mds_schema_is_a_shared_sqlite_stores_file(tmp_path: Path) -> None:
    """The schema block of CLUSTER.md against the file a shared store makes: its version,
    each column it adds (``+ name TYPE``) with its type, the tables it gives whole, the
    counters, and every index (the block left ``tasks_version`` out)."""
    import sqlite3

    text = (DOCS / "CLUSTER.md").read_text()
    (schema,) = [t for _, language, t in fenced_blocks(DOCS / "CLUSTER.md")
                 if language == "sql" and t.startswith("tasks:")]  # fmt: skip
    with SqliteTaskStore(tmp_path / "tasks.db", shared=True):
        pass
    with contextlib.closing(sqlite3.connect(tmp_path / "tasks.db")) as db:
        (version,) = db.execute("PRAGMA user_version").fetchone()
        tables = {
            name: {row[1]: row[2] for row in db.execute(f"PRAGMA table_info({name})")}
            for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        counters = sorted(name for (name,) in db.execute("SELECT name FROM counters"))
        made = db.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
        indexes = sorted(sql.strip() for (sql,) in made)
    assert f"**Schema version {version}**" in text
    table, added = "", []
    for line in schema.splitlines():
        if column := re.match(r"(?:(\w+):)?\s+\+ (\w+)\s+(\w+)", line):
            table = column.group(1) or table
            added.append((table, column.group(2), column.group(3)))
        elif whole := re.match(r"(leases|removed)\s+\((.*)\)", line):
            named = [part.split()[0] for part in whole.group(2).split(",")]
            assert named == list(tables[whole.group(1)]), line
    assert [(t, name, tables[t].get(name)) for t, name, _ in added] == added
    assert len(added) == 13
    (listed,) = re.findall(r"^counters \((.*?)\)", schema, flags=re.M)
    assert sorted(re.findall(r"'(\w+)'", listed)) == counters
    assert sorted(re.findall(r"^(CREATE INDEX .*?);", schema, flags=re.M)) == indexes


def test_upgrading_mds_table_of_schema_versions_is_the_stores_steps() -> None:
    """UPGRADING.md's table of what each schema version added: a row per version past
    1 up to both stores' current one, and each column, table or index a cell names in
    backticks (``tasks.grid``, ``slot_due``; a verb such as ``run_now`` aside) made by
    that version's step of its store ("the same": the SQLite cell's names)."""
    from lldsched.stores.postgres import tables as postgres_tables
    from lldsched.stores.sqlite import schema as sqlite_schema

    text = (DOCS / "UPGRADING.md").read_text().split("\n## Schema versions\n", 1)[1]
    rows = re.findall(r"^\| (\d+) \| (.*?) \| (.*?) \|$", text, flags=re.M)
    assert sqlite_schema.SCHEMA_VERSION == postgres_tables.SCHEMA_VERSION
    assert [int(row[0]) for row in rows] == list(range(2, sqlite_schema.SCHEMA_VERSION + 1))
    for version, sqlite, postgres in rows:
        before = int(version) - 1
        postgres = sqlite if postgres == "the same" else postgres
        steps = [(sqlite, " ".join(sqlite_schema.MIGRATIONS[before])),
                 (postgres, postgres_tables.UPGRADES[before])]  # fmt: skip
        for cell, step in steps:
            for name in set(re.findall(r"`(?:\w+\.)?(\w+)`", cell)) - {"run_now"}:
                assert re.search(rf"\b{name}\b", step), (version, name, step)


def test_architecture_mds_lifecycle_draws_every_edge_of_the_table() -> None:
    """ "The lifecycle" block of ARCHITECTURE.md (``A|B -> C|D``: each source to each
    target) has the edges of ``TRANSITIONS``, no more, no fewer.  It left out that a
    paused task whose run was in flight ends SUCCEEDED or FAILED when the run ends."""
    from lldsched.core.lifecycle import TRANSITIONS

    text = (DOCS / "ARCHITECTURE.md").read_text().split("\n## The lifecycle\n", 1)[1]
    (block,) = re.findall(r"```\n(.*?)```", text, flags=re.DOTALL)[:1]
    drawn = {
        (source, target)
        for sources, targets in re.findall(r"^([A-Z|]+)\s*->\s*([A-Z|]+)", block, flags=re.M)
        for source in sources.split("|")
        for target in targets.split("|")
    }
    table = {(edge.source.name, edge.target.name) for edge in TRANSITIONS if edge.source}
    assert sorted(table - drawn) == [] and sorted(drawn - table) == []


# Every fenced block of the documents that the Python block runner does not run, by
# its document, language and first line's start: what checks it instead, or why
# nothing runs it.  A block added, or one whose first line changed, fails
# test_every_block_not_run_is_listed_with_what_checks_it until it is listed here.
NOT_RUN: dict[tuple[str, str, str], str] = {
    ("MIGRATING.md", "ini", "# backup.timer"): "systemd timer units: the block after it "
    "ports them and asserts the instants systemd-analyze calendar (systemd 252) gave",
    ("MIGRATING.md", "python", "from datetime import timedelta"): "Celery's beat_schedule "
    "(Celery is not a test dependency): the block after it ports it and asserts the instants "
    "Celery 5.5.3's beat sent, measured outside the suite",
    ("README.md", "sh", "make demo"): "make: the demo's output is "
    "test_the_readmes_demo_transcript_is_what_the_demo_prints; make test is the suite",
    ("README.md", "sh", "pip install ."): "installs: test_every_extra_the_documents_name_is_one",
    ("README.md", "", "cron '*/15"): "test_the_readmes_demo_transcript_is_what_the_demo_prints",
    ("ARCHITECTURE.md", "", "  schedule / reschedule"): "a drawing; its verbs are "
    "test_architecture_mds_drawing_names_the_verbs_of_both_runtimes",
    ("ARCHITECTURE.md", "mermaid", "flowchart TD"): "the package diagram: the tests above",
    ("ARCHITECTURE.md", "", "SCHEDULED -> RUNNING"): "test_architecture_mds_lifecycle_draws_"
    "every_edge_of_the_table",
    ("CLUSTER.md", "python", "from lldsched import FixedRate"): "not run (/var/lib/app): "
    "test_cluster_mds_first_example_makes_one_task_of_every_workers_registration",
    ("CLUSTER.md", "sql", "tasks:    + priority"): "test_cluster_mds_schema_is_a_shared_"
    "sqlite_stores_file",
    ("CLUSTER.md", "sql", "SELECT id, next_run_at"): "a sketch of sqlite/shared._CLAIMABLE "
    "and TAKE, abridged: not run",
    ("CLUSTER.md", "sh", "pip install '.[postgres]'"): "installs: "
    "test_every_extra_the_documents_name_is_one",
    ("CLUSTER.md", "python", "from lldsched import Scheduler"): "not run (db.internal): "
    "test_cluster_mds_postgres_example_runs_on_a_real_server",
    ("GUIDE.md", "python", "import logging"): "a notebook cell: tests/test_in_a_notebook.py "
    "runs it twice on a real kernel",
    ("GUIDE.md", "python", "%matplotlib inline"): "a notebook cell: "
    "tests/test_in_a_notebook.py runs it twice on a real kernel, and sees its chart redrawn",
    (
        "CLUSTER.md",
        "sql",
        "WITH due AS (",
    ): "a sketch of postgres/lease_sql.CLAIM, abridged: not run",
    (
        "CLUSTER.md",
        "sql",
        "WITH given   AS",
    ): "a sketch of postgres/lease_sql.SETTLE, abridged: not run",
    ("CRON.md", "", "$ python -m lldsched cron"): "test_the_cron_commands_of_cron_md_print_what_"
    "it_shows",
    ("OPERATIONS.md", "text", "WARNING lldsched.jobs"): "test_operations_mds_failed_run_logs_"
    "what_it_shows",
    ("OPERATIONS.md", "", "python -m lldsched tasks"): "the tasks command on a store: "
    "test_operations_mds_tasks_commands_do_what_its_comments_say (each line, on a SQLite "
    "file and the tests' PostgreSQL server); tests/test_cli_tasks.py runs every form",
    ("OPERATIONS.md", "ini", "# /etc/systemd/system"): "a systemd unit: not run (systemd); "
    "the service it starts is tests/test_container.py's",
    ("OPERATIONS.md", "ini", "  [uwsgi]"): "a uWSGI configuration: not run (uWSGI); its "
    "settings are the warning's: test_operations_mds_uwsgi_block_sets_what_the_warning_names",
    ("PERFORMANCE.md", "", "make bench"): "the benchmarks: not run (minutes); their options "
    "are tests/test_doc_references.py's",
    ("PERFORMANCE.md", "", "cd /tmp/mypyc-tree"): "a mypyc build of a copied tree: not run "
    "(minutes, a compiler)",
    ("PERFORMANCE.md", "", "python -m compileall"): "the instruction counters: not run "
    "(minutes); their options are tests/test_doc_references.py's",
    ("SIMULATION.md", "sh", ".venv/bin/python -m lldsched"): "test_a_shell_command_of_the_"
    "documents_does_what_the_text_says",
    ("TESTING.md", "sh", "PYTHONPATH=$PWD .venv/bin/python tools/mutate.py"): "mutation "
    "testing: not run (minutes); its options are tests/test_doc_references.py's",
    ("TESTING.md", "sh", "apt-get install -y debootstrap"): "the suite in a Debian sid "
    "chroot, as root: not run (it installs a system and runs the whole suite)",
    (
        "TESTING.md",
        "sh",
        "PYTHONPATH=$PWD .venv/bin/python -m tests.test_concurrent_verbs",
    ): "soaks: not run (ten minutes each); their options are tests/test_doc_references.py's",
    ("TESTING.md", "sh", "mkdir -p /tmp/corpus/cron"): "fuzzing: not run (minutes, and "
    "atheris is no dependency); the findings are tests of their own",
}


def test_operations_mds_uwsgi_block_sets_what_the_warning_names() -> None:
    """The two settings the WARNING of a scheduler made, or a store opened, in uWSGI's
    master names are the block's (lldsched.forkhooks.UWSGI_SETTINGS)."""
    from lldsched.forkhooks import UWSGI_SETTINGS

    (block,) = [text for name, language, text in not_run_blocks() if "[uwsgi]" in text]
    set_in_block = set(re.findall(r"^\s*;?\s*([\w-]+ = true)\s*$", block, flags=re.MULTILINE))
    named = set(re.findall(r"([\w-]+ = true)", UWSGI_SETTINGS))
    assert named == {"lazy-apps = true", "py-call-osafterfork = true"}
    assert named <= set_in_block, (named, set_in_block)


def filled_store(store: Any) -> None:
    """The store OPERATIONS.md's commands read: ``task-17`` in the dead letter, ``sync``
    scheduled (its first run made), nobody holding it once filled."""
    with Scheduler(store=store) as scheduler:
        scheduler.schedule("sync", jobs.noop, FixedRate(3600), id="sync")
        scheduler.schedule(
            "import", jobs.broken, OneTime(delay=0), id="task-17", retry=RetryPolicy(max_attempts=1)
        )
        assert scheduler.wait_idle(timeout=30)
    store.close()


def test_operations_mds_tasks_commands_do_what_its_comments_say(
    tmp_path: Path, postgres_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The four commands of "A store's tasks from a shell", each on a store of the kind
    it names (the SQLite file, the PostgreSQL dsn), run as written: the table of every
    task, the dead letter, ``show``, ``redrive``; and a verb with nothing to do answers
    what the text quotes, whole (it left out "; nothing changed")."""
    from lldsched.cli import main
    from lldsched.stores.postgres import PostgresTaskStore

    (block,) = [
        t for name, _, t in not_run_blocks() if name == "OPERATIONS.md" and "tasks --store" in t
    ]
    sqlite_url = f"sqlite:{tmp_path / 'jobs.db'}"
    filled_store(SqliteTaskStore(tmp_path / "jobs.db"))
    filled_store(PostgresTaskStore(postgres_dsn))
    stores = {"sqlite:///var/lib/app/jobs.db": sqlite_url, "postgresql://app@db/app": postgres_dsn}
    printed = []
    for line in block.splitlines():
        argv = shlex.split(line.split(" #", 1)[0].removeprefix("python -m lldsched "))
        assert main([stores.get(arg, arg) for arg in argv]) == 0, line
        out, err = capsys.readouterr()
        assert err == "", line
        printed.append(out.splitlines())
    table, dead, shown, redriven = printed
    assert table[0].split()[:3] == ["ID", "NAME", "STATUS"]
    assert sorted((row.split()[0], row.split()[2]) for row in table[1:]) == [
        ("sync", "scheduled"), ("task-17", "failed")
    ]  # fmt: skip
    assert [(row.split()[0], row.split()[2]) for row in dead[1:]] == [("task-17", "failed")]
    assert shown[0] == "task task-17" and "  status      failed" in shown
    assert redriven == ["task task-17: redriven: due now"]
    text = " ".join((DOCS / "OPERATIONS.md").read_text().split())
    (quoted,) = re.findall(r"`(task (\S+): nothing to redrive [^`]*)`", text)
    assert main(["tasks", "--store", sqlite_url, "redrive", quoted[1]]) == 0
    assert capsys.readouterr().out == quoted[0] + "\n"


def not_run_blocks() -> list[tuple[str, str, str]]:
    """The fenced blocks the Python block runner leaves: (document, language, text)."""
    found = []
    for path in DOCUMENTS:
        run = {line for line, _ in python_blocks(path)}
        for line, language, text in fenced_blocks(path):
            if not (language == "python" and line in run):
                found.append((path.name, language, text))
    return found


def test_every_block_not_run_is_listed_with_what_checks_it() -> None:
    blocks = not_run_blocks()

    def listed(key: tuple[str, str, str], name: str, language: str, text: str) -> bool:
        return (name, language) == key[:2] and text.startswith(key[2])

    unlisted = [
        f"{name} ({language}): {text.splitlines()[0]}"
        for name, language, text in blocks
        if not any(listed(key, name, language, text) for key in NOT_RUN)
    ]
    assert unlisted == [], "a block nothing runs: run it, or list it in NOT_RUN"
    unused = [key for key in NOT_RUN if not any(listed(key, *block) for block in blocks)]
    assert unused == [], "NOT_RUN lists blocks no document has"
    named = [
        t for why in NOT_RUN.values() for t in re.findall(r"(?<![/\w])test_\w+\b(?!\.py)", why)
    ]
    assert [test for test in named if test not in globals()] == [], "tests NOT_RUN names"


def test_every_extra_the_documents_name_is_one() -> None:
    """``pip install '.[postgres]'``, ``lldsched[views]``: an extra of pyproject.toml."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    named = {
        name
        for path in DOCUMENTS
        for name in re.findall(r"(?:lldsched|\.)\[(\w+)\]", path.read_text())
    }
    assert {"views", "postgres", "notebook"} <= named
    assert sorted(named - set(extras)) == []


def test_architecture_mds_drawing_names_the_verbs_of_both_runtimes() -> None:
    """The first drawing of ARCHITECTURE.md: the verbs over the state machine, each a
    method of the threaded ``Scheduler`` and of the ``Simulation``."""
    from lldsched import Simulation

    (drawing,) = re.findall(r"```\n(.*?)```", (DOCS / "ARCHITECTURE.md").read_text(),
                            flags=re.DOTALL)[:1]  # fmt: skip
    verbs = drawing.splitlines()[0].split(" / ")
    assert len(verbs) >= 10
    assert [
        v for v in verbs if not (hasattr(Scheduler, v.strip()) and hasattr(Simulation, v.strip()))
    ] == []
