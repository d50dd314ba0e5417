"""docs/MIGRATING.md's table, its rows run as printed beside APScheduler 3.

A row whose APScheduler cell is an ``add_job(f, ...)`` call and whose lldsched cell
opens with a schedule is evaluated as the page prints it: the call on an APScheduler 3
scheduler on a fake clock (:mod:`tests.aps3`), the schedule in a
:class:`~lldsched.sim.Simulation` from the same instant, in the same zone; both must
fire on the same instants.  So a row a user copies cannot drift from what it claims
(a ``start_date`` to come, which a ``start_delay`` would make one period late, or an
``hour=7`` that cron text with ``*`` minutes would run sixty times).

The habits no row can run, a zone left out and a job added again, are run here too,
and the page's cell for each must say what they found.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import apscheduler.events
import pytest
import tzlocal

import lldsched
from lldsched import FakeClock, FixedRate, Scheduler, Simulation, TaskEvent, TaskStatus
from tests.aps3 import FakeDatetime, FakeNow, ManualScheduler, aps_scheduler, noop, patch_now

MIGRATING = Path(__file__).resolve().parent.parent / "docs" / "MIGRATING.md"
BERLIN = ZoneInfo("Europe/Berlin")
START = datetime(2026, 1, 5, 9, 0, tzinfo=BERLIN)  # a Monday
# the names a row's cells use: a start and an end to come (off the interval's grid), a date;
# and APScheduler's, `datetime.now(tz)` the fake clock's instant
NAMES = {
    "sd": START + timedelta(minutes=62),
    "ed": START + timedelta(hours=3),
    "dt": START + timedelta(minutes=10),
}
CELL = re.compile(r"(?<!\\)\|")  # a cell's edge: a pipe that is not escaped (`a \| b`)
CODE = re.compile(r"`([^`]+)`")


@pytest.fixture
def aps_on(monkeypatch: pytest.MonkeyPatch) -> type[FakeNow]:
    return patch_now(monkeypatch)


def row(first_cell_code: str) -> list[str]:
    """The cells of the row of a MIGRATING.md table whose first cell opens with the code
    ``first_cell_code``."""
    found = []
    for line in MIGRATING.read_text(encoding="utf-8").splitlines():
        if line.startswith("| `"):
            cells = [cell.strip() for cell in CELL.split(line)[1:-1]]
            if CODE.match(cells[0]) and CODE.findall(cells[0])[0] == first_cell_code:
                found.append(cells)
    assert len(found) == 1, f"MIGRATING.md has {len(found)} rows for {first_cell_code!r}"
    return found[0]


def first_code(cell: str) -> str:
    match = CODE.search(cell)
    assert match is not None, cell
    return match.group(1)


RUNNABLE_ROWS = [
    'add_job(f, "interval", minutes=5)',
    'add_job(f, "interval", minutes=5, next_run_time=datetime.now(tz))',
    'add_job(f, "interval", minutes=5, start_date=sd, end_date=ed)',
    'add_job(f, "cron", day_of_week="mon-fri", hour=2, minute=30)',
    'add_job(f, "cron", hour=7)',
    'add_job(f, "date", run_date=dt)',
]


@pytest.mark.parametrize("call", RUNNABLE_ROWS)
def test_a_rows_two_cells_fire_on_the_same_instants(aps_on: type[FakeNow], call: str) -> None:
    cells = row(call)
    until = START + timedelta(days=2)
    heard: list[tuple[str, str, float]] = []
    aps = aps_scheduler(START, heard)

    def add_job(*args: Any, **kwargs: Any) -> None:
        aps.add_job(*args, id="job", **kwargs)

    theirs_names = {"add_job": add_job, "f": noop, "datetime": FakeDatetime, "tz": BERLIN}
    eval(call, {**theirs_names, **NAMES})  # the APScheduler cell, as printed
    aps.run_until(until)
    ported = first_code(cells[1])
    schedule = eval(ported, {**vars(lldsched), **NAMES})  # the lldsched cell, as printed
    sim = Simulation(start=START, tz="Europe/Berlin")
    sim.schedule("job", schedule, id="job", duration=0)
    sim.run(until)
    theirs = [at for kind, _, at in heard if kind == "run"]
    assert theirs and [kind for kind, _, _ in heard] == ["run"] * len(theirs)
    assert [record.due for record in sim.records()] == theirs, (call, ported)


def test_a_start_date_to_come_is_the_first_fire_and_a_start_delay_would_add_a_period(
    aps_on: type[FakeNow],
) -> None:
    """Why the row's ``Window`` wraps a ``FixedRate`` without ``start_delay``: APScheduler's
    first fire is the ``start_date`` itself, and a window starts its schedule there."""
    heard: list[tuple[str, str, float]] = []
    aps = aps_scheduler(START, heard)
    aps.add_job(noop, "interval", minutes=5, start_date=NAMES["sd"], id="job")
    aps.run_until(START + timedelta(hours=2))
    sim = Simulation(start=START)
    delayed = lldsched.Window(FixedRate(300, start_delay=300), start=NAMES["sd"])
    sim.schedule("job", delayed, id="job", duration=0)
    sim.run(START + timedelta(hours=2))
    theirs = [at for _, _, at in heard]
    assert theirs[0] == NAMES["sd"].timestamp()
    assert [record.due for record in sim.records()] == [at + 300 for at in theirs[:-1]]


@pytest.fixture
def host_in_berlin(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The host's zone is Europe/Berlin, as tzlocal (APScheduler's default) reads it."""
    with monkeypatch.context() as patch:
        patch.setenv("TZ", "Europe/Berlin")
        tzlocal.reload_localzone()
        yield
    tzlocal.reload_localzone()


def test_a_scheduler_given_no_zone_reads_cron_in_the_hosts_in_apscheduler_and_utc_here(
    aps_on: type[FakeNow], host_in_berlin: None
) -> None:
    cells = row("BackgroundScheduler()")
    heard: list[tuple[str, str, float]] = []
    aps = aps_scheduler(START, heard, timezone="local")
    assert str(aps.timezone) == "Europe/Berlin"
    aps.add_job(noop, "cron", hour=2, minute=30, id="job")
    aps.run_until(START + timedelta(days=1))
    theirs = [at for _, _, at in heard]
    assert theirs == [datetime(2026, 1, 6, 2, 30, tzinfo=BERLIN).timestamp()]

    def ours(**zone: Any) -> list[float]:
        sim = Simulation(start=START, **zone)
        sim.schedule("job", "30 2 * * *", id="job", duration=0)
        sim.run(START + timedelta(days=1))
        return [record.due for record in sim.records()]

    assert ours() == [datetime(2026, 1, 6, 2, 30, tzinfo=UTC).timestamp()]  # an hour later
    ported = eval(first_code(cells[1]), vars(lldsched))  # the row's Scheduler(tz=...)
    assert ours(tz=ported.tz) == theirs
    assert cells[2].startswith("**no**"), cells[2]


def test_a_job_added_again_is_added_in_apscheduler_and_changed_here(
    aps_on: type[FakeNow],
) -> None:
    """``add_job(..., replace_existing=True)`` of an id taken sends ``EVENT_JOB_ADDED``
    again, at every start of a service; lldsched's replacement changes the task it has:
    nothing to hear for the same definition, a change (``previous`` its status) for a new
    one.  The listener table's test for ``EVENT_JOB_ADDED`` hears neither, and says so."""
    codes: list[int] = []
    FakeNow.instant = START
    aps = ManualScheduler(timezone=UTC)
    aps.add_listener(lambda event: codes.append(event.code), apscheduler.events.EVENT_ALL)
    aps.start()
    codes.clear()
    for source in ("erp", "erp", "crm"):  # three starts of a service; the last changed it
        aps.add_job(noop_with, "interval", minutes=5, id="job", replace_existing=True,
                    args=[source])  # fmt: skip
    assert codes == [apscheduler.events.EVENT_JOB_ADDED] * 3
    events: list[TaskEvent] = []
    every_5_min = FixedRate(300, start_delay=300)  # nothing runs: the clock stands
    with Scheduler(clock=FakeClock(START), listeners=[events.append]) as ours:
        for source in ("erp", "erp", "crm"):
            ours.schedule("job", noop_with, every_5_min, id="job", replace_existing=True,
                          args=[source])  # fmt: skip
    added = row("EVENT_JOB_ADDED")[1]
    assert [eval(first_code(added), {"event": event}) for event in events] == [True, False]
    changed = events[1]
    assert (changed.previous, changed.status, changed.record) == (
        *(TaskStatus.SCHEDULED,) * 2,
        None,
    )
    assert "replace_existing" in added, added


def noop_with(source: str) -> None:
    pass
