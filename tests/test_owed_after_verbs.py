"""A verb made at the instant an owed attempt is due, before it ran: the row says what
the process does with the attempt, and a restart from it decides as the process does.

A restart that found a run in flight owes that attempt: its row keeps saying
``running`` until the attempt begins (``core.owe``), and ``start()`` decides the
downtime with the attempt owed (``recovery.at_start``).  A pause decides the task anew
(a resume runs a fresh slot, due at the resume), and so does a reschedule, or a
``modify`` with a new schedule (as if registered now).  At the owed attempt's instant
those left the task due where it was, at the same run count: the mark stayed
(``core.owes`` True) and ``start()`` still decided the attempt owed, where the row the
verb wrote said it was not (a restart read it as a slot of its downtime), and the next write
without a transition said ``running`` again.  A ``modify`` that keeps the schedule
decides nothing anew, but wrote the row without ``running``: a restart then read the
owed attempt as a slot of its downtime.  ``run_now`` and ``redrive`` change nothing
here (the task is due already, and not failed) (docs/decisions/persistence.md, "A verb that decides
the task anew ends an owed attempt")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lldsched import FakeClock, FixedRate, Priority, Scheduler, SqliteTaskStore
from lldsched.model import TaskStatus
from lldsched.persistence import TaskSnapshot
from lldsched.testing import Stepper
from tests import jobs
from tests.conftest import T0

HOUR = 3600.0
LATER = T0 + 1.5 * HOUR  # 09:00 and 10:00 passed
RATE = FixedRate(HOUR)

Outcomes = list[tuple[float, int, str]]
Verb = Callable[[Scheduler, FakeClock], object]


def _crashed(path: Path) -> None:
    """The file the process running attempt 1 of ``job`` (hourly from 09:00) left when it
    died: the row ``running``, no record."""
    with SqliteTaskStore(path) as store:
        writer = Scheduler(clock=FakeClock(T0 - 60), store=store)
        task = writer.schedule("job", jobs.noop, RATE, id="job")
        store.save(TaskSnapshot(task.definition, TaskStatus.RUNNING, T0, 1, 0, 0, None, True))


def _pause_resume(scheduler: Scheduler, clock: FakeClock) -> None:
    assert scheduler.pause("job")
    assert scheduler.resume("job")


def _pause_resume_late(scheduler: Scheduler, clock: FakeClock) -> None:
    """Resumed ten minutes on: due then, its grid there (a guard: the due instant moved)."""
    assert scheduler.pause("job")
    clock.advance(600)
    assert scheduler.resume("job")


def _modify_schedule(scheduler: Scheduler, clock: FakeClock) -> None:
    scheduler.schedule("job", jobs.noop, FixedRate(HOUR / 2), id="job", replace_existing=True)


VERBS: dict[str, tuple[Verb, bool]] = {  # the verb, and whether the attempt stays owed
    "pause-resume": (_pause_resume, False),
    "pause-resume-late": (_pause_resume_late, False),
    "reschedule": (lambda s, _: s.reschedule("job", RATE), False),
    "modify-schedule": (_modify_schedule, False),
    "modify-priority": (lambda s, _: s.modify("job", priority=Priority.HIGH), True),
    "run-now": (lambda s, _: s.run_now("job"), True),
    "redrive": (lambda s, _: s.redrive("job"), True),
}


def _history(store: SqliteTaskStore) -> Outcomes:
    return [((r.slot - T0) / HOUR, r.attempt, r.outcome.value) for r in store.records("job")]


def _restarted_at_nine(
    path: Path, verb: Verb, clock: FakeClock
) -> tuple[Scheduler, SqliteTaskStore, bool]:
    """Restarted at 09:00, the owed attempt's instant, and ``verb`` made then: the
    scheduler, not started, its store, and whether the job's row says the attempt is
    owed."""
    store = SqliteTaskStore(path)
    scheduler = Scheduler(clock=clock, store=store, workers=1)
    (row,) = store.load_all()
    assert row.running and row.next_run_at == T0  # owed, as recovery wrote it
    verb(scheduler, clock)
    (row,) = store.load_all()
    return scheduler, store, row.running


@pytest.mark.parametrize("name", list(VERBS))
def test_a_verb_at_the_owed_attempts_instant_leaves_a_row_a_restart_reads_as_the_process(
    tmp_path: Path, name: str
) -> None:
    verb, owed = VERBS[name]
    # The process: the verb at 09:00, started at 10:30 (its downtime decided at start()).
    _crashed(tmp_path / "a.db")
    clock = FakeClock(T0)
    scheduler, store, said = _restarted_at_nine(tmp_path / "a.db", verb, clock)
    assert said is owed
    clock.set(LATER)
    with store, Stepper(scheduler) as steps:
        steps.advance_to(LATER + 1)
        process = _history(store)
    # The same, killed after the verb and restarted from its row at 10:30.
    _crashed(tmp_path / "b.db")
    _, killed, _ = _restarted_at_nine(tmp_path / "b.db", verb, FakeClock(T0))
    killed.close()  # never started: the file as a kill leaves it
    with SqliteTaskStore(tmp_path / "b.db") as store:
        with Stepper(Scheduler(clock=FakeClock(LATER), store=store)) as steps:
            steps.advance_to(LATER + 1)
        restart = _history(store)
    assert process == restart
    ran = (0.0, 1, "ok") in process  # the 09:00 attempt, run as the attempt it was
    assert ran is owed
