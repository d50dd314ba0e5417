"""The figures the user guides state are the code's: a default or a bound changed on one
side only fails here, naming the document and its words.

Each row is (document, the words it prints, the value in the code, the figure those
words give). The words are matched with the document's line breaks and indentation
collapsed to single blanks, so a reflowed paragraph still matches. tests/test_docs.py
runs the guides' code blocks; this checks the numbers their prose gives.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from lldsched import MisfirePolicy, RetryPolicy, Scheduler, SqliteTaskStore
from lldsched.core.misfires.plan import MAX_SLOTS
from lldsched.core.results import RESULT_LIMIT
from lldsched.core.retention import RETIRE_BATCH
from lldsched.logs import REPEAT_WINDOW
from lldsched.policies import Misfire
from lldsched.schedules.cron.schedule import MAX_PREVIEW
from lldsched.schedules.cron.search import HORIZON_DAYS
from lldsched.testing import Stepper
from lldsched.threaded.coroutines.shutdown import CANCEL_GRACE

DOCS = Path(__file__).resolve().parent.parent / "docs"


def default(function: Any, name: str) -> Any:
    return inspect.signature(function).parameters[name].default


RETAINED = default(Scheduler, "retain_finished")

FIGURES = [
    ("MIGRATING.md", "`Scheduler(workers=10)` (default 4)", default(Scheduler, "workers"), 4),
    ("GUIDE.md", "`max_coroutines` (default 1000)", default(Scheduler, "max_coroutines"), 1000),
    ("GUIDE.md", "`max_wait` (default 60 s;", default(Scheduler, "max_wait"), 60.0),
    ("GUIDE.md", "past a backlog of 10,000", default(Scheduler, "listener_backlog"), 10_000),
    ("EXTENDING.md", "past a backlog of 10,000", default(Scheduler, "listener_backlog"), 10_000),
    ("GUIDE.md", '(`Scheduler(tz="Europe/Berlin")`, default UTC)', default(Scheduler, "tz"), "UTC"),
    (
        "TESTING.md",
        "keeps the latest 100 of each task by default",
        default(Scheduler, "history_limit"),
        100,
    ),
    ("GUIDE.md", "the 10,000 most recently finished stay", RETAINED, 10_000),
    (
        "GUIDE.md",
        "retired in batches of 101, so up to 10,100 are held",
        RETAINED // RETIRE_BATCH + 1,
        101,
    ),
    (
        "MIGRATING.md",
        "`shutdown()` (`drain=True, timeout=5.0`)",
        default(Scheduler.shutdown, "timeout"),
        5.0,
    ),
    (
        "MIGRATING.md",
        "(5 s by default; `None`: no bound)",
        default(Scheduler.shutdown, "timeout"),
        5.0,
    ),
    (
        "GUIDE.md",
        "at once without a drain or a second (half the `timeout`, if that is less)",
        CANCEL_GRACE,
        1.0,
    ),
    (
        "MIGRATING.md",
        "a second before `timeout` runs out (half the timeout, if that is less)",
        CANCEL_GRACE,
        1.0,
    ),
    (
        "GUIDE.md",
        "(1 s, 2 s, 4 s … capped at 60 s, optional jitter)",
        [RetryPolicy().backoff(attempt) for attempt in (1, 2, 3, 9)],
        [1.0, 2.0, 4.0, 60.0],
    ),
    (
        "GUIDE.md",
        "`RetryPolicy(fail_after_given_up=n)` slots given up in a row (default: never)",
        RetryPolicy().fail_after_given_up,
        None,
    ),
    (
        "MIGRATING.md",
        "lldsched tries 3 times (two retries, 1 s then 2 s after a failure)",
        (RetryPolicy().max_attempts, RetryPolicy().backoff(1), RetryPolicy().backoff(2)),
        (3, 1.0, 2.0),
    ),
    (
        "GUIDE.md",
        "`MisfirePolicy(on_misfire, grace=60, max_catch_up=100)`",
        (MisfirePolicy().grace, MisfirePolicy().max_catch_up),
        (60.0, 100),
    ),
    ("GUIDE.md", "`RUN_ONCE` (the default)", MisfirePolicy().on_misfire, Misfire.RUN_ONCE),
    ("MIGRATING.md", "at most 1,000 a task, then one record for the rest", MAX_SLOTS, 1000),
    (
        "MIGRATING.md",
        "a task that fails the same way again within a minute is logged at DEBUG",
        REPEAT_WINDOW,
        60.0,
    ),
    (
        "EXTENDING.md",
        "(once a minute per task of each scheduler or simulation)",
        REPEAT_WINDOW,
        60.0,
    ),
    ("GUIDE.md", "as its `repr` cut to 200 characters", RESULT_LIMIT, 200),
    ("ASYNCIO.md", "cut to 200 characters", RESULT_LIMIT, 200),
    (
        "GUIDE.md",
        '`synchronous="NORMAL"` (the default)',
        default(SqliteTaskStore, "synchronous"),
        "NORMAL",
    ),
    ("CRON.md", "`n` at most 10,000 (`MAX_PREVIEW`", MAX_PREVIEW, 10_000),
    ("CRON.md", "or `None` when nothing fires within 100 years", HORIZON_DAYS, 36_525),
    ("TESTING.md", "| `Stepper(scheduler, timeout=5.0)` |", default(Stepper, "timeout"), 5.0),
]


def prose(document: str) -> str:
    return re.sub(r"\s+", " ", (DOCS / document).read_text())


@pytest.mark.parametrize(("document", "words", "value", "figure"), FIGURES)
def test_a_figure_the_guides_give_is_the_codes(
    document: str, words: str, value: object, figure: object
) -> None:
    assert words in prose(document), f"docs/{document} no longer says {words!r}"
    assert value == figure, f"docs/{document} says {words!r}, the code has {value!r}"
