"""APScheduler 3 on a fake clock, for the tests that set it beside lldsched.

APScheduler 3 (the ``bench`` extra, which ``make test`` installs) reads the wall clock
through ``datetime.now`` in a few modules; :func:`patch_now` replaces that name in each
with :class:`FakeDatetime` (pytest's ``monkeypatch`` puts it back), which answers
:attr:`FakeNow.instant`.  :class:`ManualScheduler` is a scheduler without a thread:
:meth:`~ManualScheduler.run_until` steps the fake clock from one due instant to the
next, and its jobs run inline (APScheduler's ``DebugExecutor``).  It relies on
APScheduler internals (``_process_jobs``, which modules read ``datetime.now``): if a
3.x release moves them, this harness fails, not lldsched
(docs/decisions/migrating.md, "The guide is checked against APScheduler 3 itself").
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import apscheduler.executors.base
import apscheduler.schedulers.base
import apscheduler.triggers.date
import apscheduler.triggers.interval
import pytest
from apscheduler.events import EVENT_JOB_EXECUTED, EVENT_JOB_MISSED, JobExecutionEvent
from apscheduler.executors.debug import DebugExecutor
from apscheduler.schedulers.base import BaseScheduler

__all__ = ["FakeDatetime", "FakeNow", "ManualScheduler", "aps_scheduler", "noop", "patch_now"]


class FakeNow:
    """The instant APScheduler's ``datetime.now`` answers (an aware datetime)."""

    instant = datetime(2026, 1, 1, tzinfo=UTC)


class FakeDatetime(datetime):
    @classmethod
    def now(cls, tz: Any = None) -> Any:
        return FakeNow.instant.astimezone(tz) if tz else FakeNow.instant.replace(tzinfo=None)


class ManualScheduler(BaseScheduler):  # type: ignore[misc]
    """APScheduler 3 without a thread: :meth:`run_until` steps its fake clock."""

    def shutdown(self, wait: bool = True) -> None:
        super().shutdown(wait)

    def wakeup(self) -> None:
        pass

    def _create_default_executor(self) -> DebugExecutor:
        return DebugExecutor()

    def run_until(self, until: datetime) -> None:
        while True:
            due = [job.next_run_time for job in self.get_jobs() if job.next_run_time]
            # by timestamp: aware datetimes of one tzinfo compare as wall times
            due.sort(key=datetime.timestamp)
            if not due or due[0].timestamp() > until.timestamp():
                FakeNow.instant = until
                return
            FakeNow.instant = max(due[0], FakeNow.instant, key=datetime.timestamp)  # never back
            self._process_jobs()


def patch_now(monkeypatch: pytest.MonkeyPatch) -> type[FakeNow]:
    """Point every module of APScheduler that reads ``datetime.now`` at :class:`FakeNow`."""
    for module in (
        apscheduler.schedulers.base,
        apscheduler.executors.base,
        apscheduler.triggers.interval,
        apscheduler.triggers.date,
    ):
        monkeypatch.setattr(module, "datetime", FakeDatetime)
    return FakeNow


def aps_scheduler(
    start: datetime, heard: list[tuple[str, str, float]], *, timezone: Any = None
) -> ManualScheduler:
    """A started :class:`ManualScheduler` at ``start``, in ``timezone`` (``start``'s zone
    unless given; ``"local"``: APScheduler's default, the host's zone), appending
    ``("run" | "missed", job id, scheduled instant)`` to ``heard``."""
    FakeNow.instant = start
    if timezone == "local":
        scheduler = ManualScheduler()
    else:
        scheduler = ManualScheduler(timezone=timezone or start.tzinfo)

    def listen(event: JobExecutionEvent) -> None:
        kind = "run" if event.code == EVENT_JOB_EXECUTED else "missed"
        heard.append((kind, event.job_id, event.scheduled_run_time.timestamp()))

    scheduler.add_listener(listen, EVENT_JOB_EXECUTED | EVENT_JOB_MISSED)
    scheduler.start()
    return scheduler


def noop() -> None:
    pass
