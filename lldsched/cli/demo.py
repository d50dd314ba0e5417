"""The demo: the scheduler's behaviour told in eleven lines, every figure computed.

``python -m lldsched demo`` runs a real threaded :class:`~lldsched.threaded.scheduler.Scheduler`
on a :class:`~lldsched.clock.FakeClock`, so hours pass in milliseconds and the
output is the same on every run.  Each line reads its numbers back from the
library (schedules, records, the heap's statistics); nothing is hard-coded.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime

from lldsched.clock import FakeClock, utc_datetime
from lldsched.listeners import EventLog
from lldsched.model import ExecutionRecord, TaskStatus
from lldsched.policies import OverrunPolicy, RetryPolicy
from lldsched.schedules import CronSchedule, FixedRate, OneTime
from lldsched.threaded.scheduler import Scheduler

__all__ = ["run_demo"]

START = datetime(2026, 11, 30, 9, 7, tzinfo=UTC)


def _clock_time(timestamp: float) -> str:
    return utc_datetime(timestamp).strftime("%H:%M")


def _noop() -> None:
    return None


def run_demo() -> Iterator[str]:
    """Yield the demo's lines, one per behaviour."""
    t0 = START.timestamp()

    cron = CronSchedule("*/15 * * * *")
    fires = ", ".join(_clock_time(t) for t in cron.fire_times(t0, 3))
    yield f"cron {cron.expr!r} from {_clock_time(t0)} UTC fires at {fires}"

    long_run = ExecutionRecord(
        task_id="t",
        name="report",
        attempt=1,
        due=t0,
        slot=t0,
        worker=0,
        started=t0,
        finished=t0 + 150,
        ok=True,
    )
    skip = FixedRate(60, OverrunPolicy.SKIP).next_run(long_run, long_run.finished) - t0
    catch_up = FixedRate(60, OverrunPolicy.CATCH_UP).next_run(long_run, long_run.finished) - t0
    yield (
        f"fixed rate 60 s after a run of {long_run.duration:.0f} s: "
        f"skip -> t+{skip:.0f} s, catch-up -> t+{catch_up:.0f} s"
    )

    clock = FakeClock(START)
    log = EventLog()
    scheduler = Scheduler(workers=2, clock=clock, listeners=[log])
    with scheduler:
        yield from _story(scheduler, clock, log)


def _story(scheduler: Scheduler, clock: FakeClock, log: EventLog) -> Iterator[str]:
    def settle() -> None:
        if not scheduler.wait_idle(timeout=5.0):
            raise RuntimeError("the demo scheduler did not settle within 5 s")

    def advance(seconds: float) -> None:
        clock.advance(seconds)
        settle()

    begin = clock.now()
    heartbeat = scheduler.schedule("heartbeat", _noop, FixedRate(30))
    settle()
    advance(30)
    advance(30)
    # Its runs as they started, not a count "in the first minute": the third, at +60 s,
    # is a new minute's, and "3 runs in the first minute" read as three a minute.
    starts = [f"+{r.started - begin:.0f} s" for r in log.runs("heartbeat")]
    yield f"heartbeat every 30 s: runs at {', '.join(starts[:-1])} and {starts[-1]}"

    attempts = iter([RuntimeError("source not ready"), RuntimeError("source not ready")])

    def flaky_import() -> None:
        error = next(attempts, None)
        if error is not None:
            raise error

    scheduler.schedule("import", flaky_import, OneTime(delay=0))
    settle()
    advance(1)
    advance(2)
    runs = log.runs("import")
    waits = " and ".join(
        f"+{later.due - earlier.finished:.0f} s" for earlier, later in itertools.pairwise(runs)
    )
    yield f"import: succeeded on attempt {runs[-1].attempt} after retries at {waits}"

    def cleanup() -> None:
        raise RuntimeError("disk is full")

    failing = scheduler.schedule(
        "cleanup", cleanup, OneTime(delay=0), retry=RetryPolicy(max_attempts=2)
    )
    settle()
    advance(1)
    yield f"cleanup: failed after {failing.attempt} attempts, last error {failing.last_error!r}"
    dead = scheduler.dead_letter()  # task ids: each named, as the lines above name tasks
    yield f"dead letter: {dead} ({', '.join(scheduler.task(d).name for d in dead)})"

    scheduler.pause(heartbeat.id)  # leave the timer nothing nearer than tonight's report
    scheduler.schedule("nightly-report", _noop, OneTime(delay=12 * 3600))
    settle()
    parked = scheduler.pending()[0].next_run_at
    assert parked is not None
    parked_hours = (parked - clock.now()) / 3600
    frozen = clock.now()
    scheduler.schedule("urgent-alert", _noop, OneTime(delay=0))
    ran = log.wait_for(lambda e: e.name == "urgent-alert" and e.record is not None, timeout=5.0)
    unnudged = ran is not None and clock.now() == frozen
    yield (
        f"timer parked {parked_hours:.0f} h out, then an insertion due now: "
        f"urgent-alert ran without a nudge = {unnudged}"
    )
    scheduler.resume(heartbeat.id)
    settle()

    digest = scheduler.schedule("digest", _noop, FixedRate(3600, start_delay=60))
    scheduler.pause(digest.id)
    advance(120)
    yield (
        f"digest paused through its slot: {len(log.runs('digest'))} runs, "
        f"status {digest.status.value}"
    )
    scheduler.resume(digest.id)
    settle()
    assert digest.next_run_at is not None
    yield (
        f"digest resumed: {len(log.runs('digest'))} run, "
        f"next due in {digest.next_run_at - clock.now():.0f} s"
    )

    scheduler.cancel(digest.id)
    scheduler.cancel(heartbeat.id)
    stats = scheduler.queue_stats()
    yield (
        f"cancelled digest and heartbeat: heap holds {stats.entries} entries, "
        f"{stats.tombstones} tombstoned"
    )

    scheduler.shutdown()
    tasks = scheduler.tasks()
    succeeded = sum(task.status is TaskStatus.SUCCEEDED for task in tasks)
    yield (
        f"shutdown: {len(tasks)} tasks registered, {succeeded} succeeded, "
        f"{len(scheduler.dead_letter())} dead"
    )


if __name__ == "__main__":  # python -m lldsched.cli.demo
    from lldsched.cli import not_an_entry_point

    not_an_entry_point("demo")
