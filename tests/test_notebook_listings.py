"""What a notebook says about the code it prints is true of that code.

Notebook 01 prints ``Scheduler._timer_loop`` and its two named steps (``_flag_timeouts``,
``_wake_at``) with ``inspect.getsource`` (so the listing is the code, always) and maps
their lines to concerns in a table: each code fragment the table's first column quotes
must still be in one of them, or the table explains lines that are gone (a rename would
leave the table pointing at nothing).

Notebooks 03, 06, 08 and 10 quote defaults, an error's text and a test's size in their
prose: each quote is still there, and still what the code says."""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from lldsched import MisfirePolicy, RetryPolicy, Scheduler, testing
from lldsched.sim import ClusterScenario, ClusterTask
from lldsched.testing import Stepper
from lldsched.threaded.coroutines.flights import UNFINISHED
from lldsched.threaded.coroutines.shutdown import grace_for
from lldsched.threaded.processes.pool import killed_by_shutdown
from tests.test_notebook_figures import prose

ROOT = Path(__file__).resolve().parent.parent
TIMER_TABLE = "| in `_timer_loop` and its steps | the concern it answers |"
TIMER_STEPS = (Scheduler._timer_loop, Scheduler._flag_timeouts, Scheduler._wake_at)


def _quoted_in_first_column(source: str, header: str) -> list[str]:
    """The backticked fragments in the first column of the Markdown table under ``header``."""
    lines = [line.removeprefix("# ") for line in source.splitlines()]
    start = lines.index(header) + 2  # past the header and its | --- | row
    fragments: list[str] = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        first = line.split("|")[1]
        fragments.extend(re.findall(r"`([^`]+)`", first))
    return fragments


def test_every_fragment_notebook_01_s_table_quotes_is_in_the_timer_loop() -> None:
    source = (ROOT / "notebooks" / "src" / "01-timer-and-heap.py").read_text()
    fragments = _quoted_in_first_column(source, TIMER_TABLE)
    assert len(fragments) >= 15  # the table was found and read
    loop = "".join(inspect.getsource(step) for step in TIMER_STEPS)
    missing = [fragment for fragment in fragments if fragment not in loop]
    assert not missing, f"notebook 01's table quotes what the timer loop no longer has: {missing}"


# What notebooks 03, 06, 08 and 10 quote of the package (a default, an error's text, a
# figure of a test), each with what the code says: (notebook, the quote as the prose
# reads on one line, a check of the code that returns what the quote says).
def _stepper_timeout() -> object:
    return inspect.signature(Stepper).parameters["timeout"].default


def _history_limit() -> object:
    return inspect.signature(Scheduler).parameters["history_limit"].default


def _default_retry_waits() -> object:
    default = RetryPolicy()
    longer = RetryPolicy(max_attempts=default.max_attempts + 10)
    return default.max_attempts, [longer.backoff(n) for n in range(1, 9)]


def _cluster_processes_slots() -> object:
    source = (ROOT / "tests" / "test_cluster_processes.py").read_text()
    (slots,) = re.findall(r"^SLOTS = (\d+)$", source, flags=re.MULTILINE)
    return int(slots)


QUOTES = [
    (
        "03-failure",
        "The default policy makes three attempts, waiting 1 s, then 2 s (and 4, 8, ... "
        "capped at 60 s for longer policies)",
        _default_retry_waits,
        (3, [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]),
    ),
    (
        "06-persistence-and-shutdown",
        "(`CancelledError: the scheduler shut down without draining`,",
        lambda: f"CancelledError: {killed_by_shutdown(drain=False, drained=4.0)}",
        "CancelledError: the scheduler shut down without draining",
    ),
    (
        "06-persistence-and-shutdown",
        "for `timeout=5` `CancelledError: the scheduler shut down, its drain out of time "
        "after 4 s`)",
        lambda: f"CancelledError: {killed_by_shutdown(drain=True, drained=5 - grace_for(5))}",
        "CancelledError: the scheduler shut down, its drain out of time after 4 s",
    ),
    (
        "06-persistence-and-shutdown",
        "is cancelled (`CancelledError: scheduler shut down`, drained or not)",
        lambda: UNFINISHED[0],
        "CancelledError: scheduler shut down",
    ),
    (
        "06-persistence-and-shutdown",
        "by a drain a second before the shutdown's `timeout` runs out (half the timeout, when "
        "that is less than a second)",
        lambda: [grace_for(timeout) for timeout in (None, 5.0, 2.0, 1.0)],
        [1.0, 1.0, 1.0, 0.5],
    ),
    (
        "06-persistence-and-shutdown",
        "bounded by `max_catch_up`",
        lambda: "max_catch_up" in {field.name for field in dataclasses.fields(MisfirePolicy)},
        True,
    ),
    ("08-testing-a-scheduler", "(5 real seconds per instant by default)", _stepper_timeout, 5),
    ("08-testing-a-scheduler", "(by default the latest 100 of each task)", _history_limit, 100),
    (
        "08-testing-a-scheduler",
        "a `SettleTimeoutError` naming it",
        lambda: "SettleTimeoutError" in testing.__all__,
        True,
    ),
    (
        "10-when-one-process-is-not-enough",
        "1,200 slots over three processes",
        _cluster_processes_slots,
        1200,
    ),
    (
        "10-when-one-process-is-not-enough",
        "the **margin**, `lease - renewal`",
        lambda: (
            ClusterScenario(
                nodes=1, tasks=(ClusterTask("t", every=60.0),), lease=30.0, renewal=10.0
            ).margin
        ),
        20.0,
    ),
]


@pytest.mark.parametrize(
    ("notebook", "quote", "code", "says"), QUOTES, ids=[quote[1][:40] for quote in QUOTES]
)
def test_what_a_notebook_quotes_of_the_package_is_what_the_package_does(
    notebook: str, quote: str, code: Callable[[], object], says: object
) -> None:
    assert quote in prose(notebook), f"notebook {notebook} no longer reads {quote!r}"
    assert code() == says, f"notebook {notebook} reads {quote!r}, but the code gives {code()!r}"
