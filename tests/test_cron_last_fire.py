"""A cron schedule's last fire: a run that overruns it has no next slot, said as such.

A cron expression fires up to its horizon (9999-12-29 here, the last date whose search
a ``datetime`` holds); a run that starts on the slot before the last and is still
running after the last has nothing left to be due at.  ``next_run_and_skipped`` (the
one question the core asks after each run) answers ``(None, ())`` then, as
``next_run`` answers ``None``: the task ends, nothing skipped.
"""

from __future__ import annotations

from datetime import UTC, datetime

from lldsched import CronSchedule
from lldsched.model import ExecutionRecord
from lldsched.schedules.base import next_run_and_skipped

DAY = 86_400.0
LAST = datetime(9999, 12, 29, tzinfo=UTC).timestamp()  # "0 0 * * *"'s last fire


def record_of(slot: float, finished: float) -> ExecutionRecord:
    return ExecutionRecord(
        task_id="t1", name="t", attempt=1, due=slot, slot=slot, worker=0,
        started=slot, finished=finished, ok=True,
    )  # fmt: skip


def test_a_run_that_overruns_the_last_fire_has_no_next_run_and_skips_nothing() -> None:
    schedule = CronSchedule("0 0 * * *")
    assert schedule.next_after(LAST - DAY) == LAST and schedule.next_after(LAST) is None
    overran = record_of(LAST - DAY, finished=LAST + DAY / 2)  # past the last fire
    assert schedule.next_run(overran, overran.finished) is None
    assert schedule.next_run_and_skipped(overran, limit=10) == (None, ())
    assert next_run_and_skipped(schedule, overran, limit=10) == (None, ())


def test_a_run_that_ends_before_the_last_fire_is_due_at_it() -> None:
    schedule = CronSchedule("0 0 * * *")
    on_time = record_of(LAST - DAY, finished=LAST - DAY / 2)
    assert schedule.next_run_and_skipped(on_time, limit=10) == (LAST, ())
    overran = record_of(LAST - 2 * DAY, finished=LAST - DAY / 2)  # past one fire
    assert schedule.next_run_and_skipped(overran, limit=10) == (LAST, [LAST - DAY])
