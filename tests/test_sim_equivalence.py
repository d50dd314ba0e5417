"""One state machine, two runtimes: the same scenario on the threaded Scheduler (with a fake
clock) and on the Simulation yields the same sequence of (task, due, attempt, outcome).

With durations on one worker, runs queue up behind a long one.  The scenarios avoid one case
on purpose: a CATCH_UP follow-up or a BUFFER_ONE run (due in the past) pushed while other due
entries, due after it, already wait.
Where it lands in the threaded runtime depends on whether its timer moved the others into the
hand-off queue before the follow-up was pushed, which is thread timing; the simulation puts it
in heap order (see lldsched/sim/simulation.py, "The hand-off queue is not modelled")."""

from __future__ import annotations

import functools
import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from lldsched import (
    CronSchedule,
    EventLog,
    ExecutionRecord,
    FakeClock,
    FixedDelay,
    FixedRate,
    OneTime,
    Overlap,
    OverrunPolicy,
    Priority,
    RetryPolicy,
    Schedule,
    Scheduler,
)
from lldsched.core.context import RunContext
from lldsched.sim import Simulation
from lldsched.testing import Stepper
from tests.conftest import T0
from tests.waits import wait_until

Outcome = tuple[str, float, int, str]
BERLIN = "Europe/Berlin"


RETRY = RetryPolicy(max_attempts=3, initial_backoff=5, multiplier=2)


@dataclass(frozen=True)
class Spec:
    name: str
    schedule: Schedule
    durations: tuple[float, ...] = ()  # the n-th run takes durations[n] seconds (then 0)
    failing_runs: frozenset[int] = frozenset()  # these run numbers (0-based, overall) raise
    retry: RetryPolicy = RETRY
    options: Mapping[str, Any] = field(default_factory=dict)  # more schedule() options


def scenario(with_durations: bool) -> list[Spec]:
    def d(*values: float) -> tuple[float, ...]:
        return values if with_durations else ()

    # CATCH_UP only without durations: with them, its late runs push past-due follow-ups.
    catch_up = [] if with_durations else [Spec("catch-up", FixedRate(30, OverrunPolicy.CATCH_UP))]
    return [
        *catch_up,
        Spec("rate", FixedRate(60), d(10, 70, 5)),  # the second run overruns: SKIP
        Spec("skip-too", FixedRate(45, OverrunPolicy.SKIP, start_delay=7), d(100)),
        Spec("delay", FixedDelay(50, start_delay=3), d(20, 20, 20)),
        Spec("cron", CronSchedule("*/5 * * * *"), d(30)),
        Spec("flaky", FixedRate(120, start_delay=11), d(4, 4, 4), frozenset({0, 1, 4, 5, 6})),
        Spec("once", OneTime(delay=200), d(15), frozenset({0})),
    ]


Advance = Callable[[float, "RunContext | None"], object]
"""A threaded run's duration: the clock moved by that many seconds, or, for a run given a
context, until its flag goes up for ``Overlap.CANCEL_OTHER``, whichever comes first."""


def action_for(spec: Spec, advance: Advance | None) -> Callable[..., None]:
    """The action of ``spec``'s runs: the n-th takes ``durations[n]`` (``advance``, on
    threads) and raises if ``n`` is in ``failing_runs``.  A ``CANCEL_OTHER`` task's runs
    take their context and stop when a slot that comes due cancels them, as the
    simulation ends them there ("a run that checks its flag"); the others take none."""
    runs = [0]

    def run(ctx: RunContext | None) -> None:
        n = runs[0]
        runs[0] += 1
        if advance is not None and n < len(spec.durations):
            advance(spec.durations[n], ctx)
        if n in spec.failing_runs:
            raise RuntimeError(f"run {n} failed")

    if spec.options.get("overlap") is Overlap.CANCEL_OTHER:

        def cooperative(ctx: RunContext) -> None:
            run(ctx)

        return cooperative

    def action() -> None:
        run(None)

    return action


def moved(scheduler: Scheduler, end: float, ctx: RunContext | None) -> float:
    """Where a run that would end at ``end`` stops the clock next: ``end``, or for a run
    with a context (CANCEL_OTHER), the next instant an entry falls due before it, where
    its flag may go up (caller moves the clock there and asks again)."""
    if ctx is None:
        return end
    wait_until(lambda: handed_out(scheduler), timeout=10, what="the hand-out")  # what is due
    with scheduler._lock:
        head = scheduler._queue.next_due()  # after now, then
    return head if head is not None and head < end else end


def stopped(ctx: RunContext | None) -> bool:
    """A slot that came due cancelled the run: it stops here (its flag is up)."""
    return ctx is not None and ctx.cancelled and ctx.reason == "overlap"


def on_threads(specs: list[Spec], horizon: float) -> list[Outcome]:
    records = threaded_records(specs, horizon)[:-1]  # without the dead letter
    return [(r.name, r.due - T0, r.attempt, r.outcome) for r in records]


Intervention = tuple[float, Callable[[Any], object]]
"""An instant (seconds after the start) and a call of a verb on the runtime (a
``Scheduler`` or a ``Simulation``), made at that instant on both."""


def threaded_records(
    specs: list[Spec],
    horizon: float,
    *,
    start: float = T0,
    seed: int | None = None,
    tz: str = "UTC",
    interventions: Sequence[Intervention] = (),
) -> list[ExecutionRecord]:
    clock = FakeClock(start)
    log = EventLog()
    scheduler = Scheduler(workers=1, clock=clock, listeners=[log], seed=seed, tz=tz)
    waiting = deque(sorted(((start + at, act) for at, act in interventions), key=itemgetter(0)))

    def advance(seconds: float, ctx: RunContext | None) -> None:
        """An action's duration: the interventions due before its end are made on the way,
        at their instants, while it runs (as the simulation makes them mid-run); a run
        with a context stops where a slot coming due raises its flag (:func:`moved`)."""
        end = clock.now() + seconds
        while True:
            to = moved(scheduler, end, ctx)
            if waiting and waiting[0][0] < to:
                at, act = waiting.popleft()
                clock.set(max(at, clock.now()))
                act(scheduler)
                continue
            clock.set(to)
            if to >= end:
                return
            wait_until(lambda: handed_out(scheduler), timeout=10, what="the hand-out")
            if stopped(ctx):  # the slot at `to` cancelled it, handed out to no free worker
                return

    # Every task registered before the start, at the start, as in the simulation:
    # registered on a started scheduler, a later one raced the first run, whose action
    # advances the clock ("once", OneTime(delay=200), was due at 210 when "rate" ran first).
    for spec in specs:
        scheduler.schedule(
            spec.name, action_for(spec, advance), spec.schedule, retry=spec.retry,
            id=spec.name, **spec.options,
        )  # fmt: skip
    with scheduler:  # starts it
        assert scheduler.wait_idle(10)
        while True:  # step the clock from one due instant (or intervention) to the next
            upcoming = [t.next_run_at for t in scheduler.pending() if t.next_run_at is not None]
            following = min(upcoming, default=math.inf)
            if waiting and waiting[0][0] <= min(following, start + horizon):
                at, act = waiting.popleft()  # before what is due at its instant, as there
                clock.set(max(at, clock.now()))
                act(scheduler)
            elif following > start + horizon:
                break
            else:
                clock.set(max(following, clock.now()))
            assert scheduler.wait_idle(10)
        dead = scheduler.dead_letter()
    return [e.record for e in log.events if e.record is not None] + [dead_letter(dead)]


def handed_out(scheduler: Scheduler) -> bool:
    """Nothing due by now waits in the heap: the timer has handed it all out (and raised
    the flags of the runs a CANCEL_OTHER slot it handed out to a busy worker cancels)."""
    with scheduler._lock:
        head = scheduler._queue.next_due()
        return head is None or head > scheduler._clock.now()


def dead_letter(ids: list[str]) -> ExecutionRecord:
    """The dead letter at the end, as a last pseudo-record, so it is compared too."""
    return ExecutionRecord("", f"dead letter: {ids}", 0, 0.0, 0.0, -1, 0.0, 0.0, False)


def durations_of(spec: Spec) -> Callable[[object, int], float]:
    """The simulation's duration model for ``spec``: the n-th run takes durations[n]."""
    runs = [0]

    def duration(rng: object, attempt: int) -> float:
        n = runs[0]
        runs[0] += 1
        return spec.durations[n] if n < len(spec.durations) else 0.0

    return duration


def on_simulation(specs: list[Spec], horizon: float, with_durations: bool) -> list[Outcome]:
    records = simulated_records(specs, horizon, with_durations)[:-1]
    return [(r.name, r.due - T0, r.attempt, r.outcome) for r in records]


def simulated_records(
    specs: list[Spec],
    horizon: float,
    with_durations: bool,
    *,
    start: float = T0,
    seed: int = 0,
    tz: str = "UTC",
    interventions: Sequence[Intervention] = (),
) -> list[ExecutionRecord]:
    sim = Simulation(workers=1, start=start, seed=seed, tz=tz)
    for spec in specs:
        sim.schedule(
            spec.name, spec.schedule, retry=spec.retry,
            duration=durations_of(spec) if with_durations else 0.0,
            action=action_for(spec, None), id=spec.name, **spec.options,
        )  # fmt: skip
    for at, act in interventions:
        sim.at(start + at, functools.partial(act, sim))
    sim.run(start + horizon)
    return [*sim.records(), dead_letter(sim.dead_letter())]


def test_zero_durations_on_one_worker_give_the_same_runs_on_both_runtimes() -> None:
    specs = scenario(with_durations=False)
    threaded = on_threads(specs, horizon=900)
    simulated = on_simulation(scenario(with_durations=False), horizon=900, with_durations=False)
    assert len(threaded) > 40
    assert threaded == simulated


def test_durations_advanced_by_the_actions_give_the_same_runs_on_both_runtimes() -> None:
    threaded = on_threads(scenario(with_durations=True), horizon=900)
    simulated = on_simulation(scenario(with_durations=True), horizon=900, with_durations=True)
    assert {name for name, _, _, outcome in threaded if outcome == "failed"} == {"flaky", "once"}
    assert threaded == simulated


def test_a_catch_up_overrun_gives_the_same_runs_on_both_runtimes() -> None:
    specs = [
        Spec("catch-up", FixedRate(45, OverrunPolicy.CATCH_UP, start_delay=7), (100, 0, 0, 60)),
        Spec("far", FixedRate(400, start_delay=350), (5,)),
    ]
    threaded = on_threads(specs, horizon=900)
    simulated = on_simulation(specs, horizon=900, with_durations=True)
    assert [due for name, due, _, _ in threaded if name == "catch-up"][:4] == [7, 52, 97, 142]
    assert threaded == simulated


def test_dependencies_timeouts_priorities_and_buffer_one_give_the_same_runs_on_both_runtimes() -> (
    None
):
    """A dependent held BLOCKED while its upstream retries, a run over its timeout, a HIGH
    task among them, and BUFFER_ONE folding the slots of a long run: same sequence, also
    when each attempt started and finished, on one worker."""
    specs = [
        Spec("up", FixedRate(100, start_delay=10), (20, 30, 20, 10), frozenset({1})),
        Spec(
            "down", FixedRate(100, start_delay=10), (5, 5, 5),
            options={"depends_on": ["up"], "priority": Priority.LOW},
        ),
        Spec("high", FixedRate(50, start_delay=10), (3, 3, 3), options={"priority": Priority.HIGH}),
        Spec("slow", FixedRate(200, start_delay=25), (30, 2, 40), options={"timeout": 25}),
        Spec(
            "buffered", FixedRate(60, start_delay=33), (150, 5, 5, 5),
            options={"overlap": Overlap.BUFFER_ONE},
        ),
    ]  # fmt: skip

    def timed(records: list[ExecutionRecord]) -> list[tuple[str, float, int, str, float, float]]:
        """What each record says, up to the horizon: on threads an action advances the
        clock past it, where the simulation stops."""
        return [
            (r.name, r.due - T0, r.attempt, r.outcome, r.started - T0, r.finished - T0)
            for r in records
            if r.finished <= T0 + 900
        ]

    threaded = timed(threaded_records(specs, horizon=900))
    simulated = timed(simulated_records(specs, horizon=900, with_durations=True))
    outcomes = {(name, outcome) for name, _, _, outcome, _, _ in threaded}
    assert {("down", "blocked"), ("slow", "timed_out"), ("buffered", "coalesced")} <= outcomes
    assert len(threaded) > 50
    assert threaded == simulated


Timed = tuple[str, float, int, str, float, float]


def timed_records(records: list[ExecutionRecord], start: float) -> list[Timed]:
    """Each record's task, due, attempt, outcome, start and finish (from ``start``), in
    the order made: which run came first is compared, and when each began."""
    return [
        (r.name, r.due - start, r.attempt, r.outcome, r.started - start, r.finished - start)
        for r in records
    ]


def test_retries_with_capped_jittered_backoff_give_up_and_dead_letter_alike_on_both_runtimes() -> (
    None
):
    """Backoffs growing by 3 and capped at 20 s, jittered from one seed, a slot given up
    after its attempts, a task FAILED into the dead letter after two given-up slots, and
    a one-off task that succeeds on its third attempt: same retries at the same instants."""
    jittery = RetryPolicy(max_attempts=3, initial_backoff=8, multiplier=3, max_backoff=20,
                          jitter=0.5)  # fmt: skip
    doomed = RetryPolicy(max_attempts=2, initial_backoff=4, fail_after_given_up=2)
    specs = [
        Spec("jittery", FixedRate(100, start_delay=1), (2,) * 8, frozenset({0, 1, 2, 3}), jittery),
        Spec("doomed", FixedRate(60, start_delay=45), (1,) * 8, frozenset(range(8)), doomed),
        Spec("once", OneTime(delay=30), (3, 3, 3), frozenset({0, 1}),
             RetryPolicy(max_attempts=3, initial_backoff=2, multiplier=5)),
    ]  # fmt: skip
    threaded = timed_records(threaded_records(specs, horizon=400, seed=7), T0)
    simulated = timed_records(simulated_records(specs, 400, True, seed=7), T0)
    jittered = [(due, attempt) for name, due, attempt, *_ in threaded if name == "jittery"]
    assert [attempt for _, attempt in jittered] == [1, 2, 3, 1, 2, 1, 1]
    first_wait = jittered[1][0] - 3  # the first run finished at 3: 8 s, jittered by half
    assert 4 < first_wait < 8  # drawn, not a bound
    second_wait = jittered[2][0] - (jittered[1][0] + 2)  # 24 s capped at 20, jittered
    assert 10 < second_wait < 20
    outcomes = {(name, outcome) for name, _, _, outcome, _, _ in threaded}
    assert {("jittery", "given_up"), ("doomed", "given_up"), ("once", "ok")} <= outcomes
    assert threaded[-1][0] == "dead letter: ['doomed']"  # FAILED after two slots given up
    assert threaded == simulated


@pytest.mark.parametrize(
    "night",
    [
        datetime(2026, 3, 28, 12, tzinfo=UTC),  # Berlin springs forward: 02:00 CET -> 03:00 CEST
        datetime(2026, 10, 24, 12, tzinfo=UTC),  # and falls back: 03:00 CEST -> 02:00 CET
    ],
)
def test_cron_across_a_dst_change_gives_the_same_runs_on_both_runtimes(night: datetime) -> None:
    """Wall-clock jobs (02:30, 03:00) and stepping jobs (hourly, every 20 min from 01:00 to
    03:59) in Berlin through a night its clocks change, four due together at times, on one
    worker: the same fires, in the same order, at the same instants (docs/CRON.md, "Time
    zones and DST", says which; two are checked here)."""
    start = night.timestamp()
    runs = (20,) * 200
    specs = [
        Spec("nightly", CronSchedule("30 2 * * *"), runs),
        Spec("three", CronSchedule("0 3 * * *"), runs),
        Spec("hourly", CronSchedule("0 * * * *"), runs),
        Spec("twenty", CronSchedule("*/20 1-3 * * *"), runs, options={"priority": Priority.HIGH}),
    ]
    horizon = 36 * 3600 - 600  # no run in flight at the end: a threaded one would finish
    threaded = timed_records(threaded_records(specs, horizon, start=start, tz=BERLIN), start)
    simulated = timed_records(
        simulated_records(specs, horizon, True, start=start, tz=BERLIN), start
    )
    assert threaded == simulated

    def local(name: str) -> list[str]:
        return [
            datetime.fromtimestamp(start + due, ZoneInfo(BERLIN)).strftime("%d %H:%M %Z")
            for task, due, *_ in threaded
            if task == name
        ]

    if night.month == 3:
        assert [t for t in local("nightly") if t < "30"] == ["29 03:00 CEST"]  # 02:30 is not
        assert len([t for t in local("hourly") if t.startswith("29")]) == 23
    else:
        assert [t for t in local("nightly") if t < "26"] == ["25 02:30 CEST"]  # the first one
        assert len([t for t in local("hourly") if t.startswith("25")]) == 25
        assert local("twenty").count("25 02:00 CET") == 1
        assert local("twenty").count("25 02:00 CEST") == 1


def test_priorities_on_a_saturated_worker_and_a_pause_and_resume_mid_run_alike_on_both() -> None:
    """One worker, busy from 10 to 110: a LOW, a NORMAL and a HIGH one-off task and a HIGH
    heartbeat fall due at 50 and start at 110 by priority (HIGH first, the heartbeat
    registered before the HIGH one-off, then NORMAL, then LOW, whatever order they were
    registered in); a task is paused at 215, mid-run (its run finishes and nothing
    follows), and resumed at 515, when the slot it slept through runs at once, its grid
    re-anchored there (docs/decisions/schedules.md, "Resume re-anchors a fixed-rate grid")."""
    specs = [
        Spec("long", FixedRate(400, start_delay=10), (100, 100)),
        Spec("beat", FixedRate(30, start_delay=50), (1,) * 40, options={"priority": Priority.HIGH}),
        Spec("low", OneTime(delay=50), (5,), options={"priority": Priority.LOW}),
        Spec("normal", OneTime(delay=50), (5,)),
        Spec("high", OneTime(delay=50), (5,), options={"priority": Priority.HIGH}),
        Spec("paused", FixedRate(120, start_delay=200), (40,) * 10),
    ]
    interventions = [
        (215.0, lambda runtime: runtime.pause("paused")),
        (515.0, lambda runtime: runtime.resume("paused")),
    ]
    threaded = timed_records(threaded_records(specs, 700, interventions=interventions), T0)
    simulated = timed_records(simulated_records(specs, 700, True, interventions=interventions), T0)
    assert threaded == simulated
    ran = [
        (name, due, started) for name, due, _, outcome, started, _ in threaded if outcome == "ok"
    ]
    assert [name for name, _, started in ran if 110 <= started < 130] == [
        "beat", "high", "normal", "low"
    ]  # fmt: skip
    paused = [(due, started) for name, due, started in ran if name == "paused"]
    assert paused == [(200, 201), (515, 515), (635, 635)]  # 320 and 440 slept through


def test_overlap_policies_on_a_saturated_worker_give_the_same_runs_on_both_runtimes() -> None:
    """CANCEL_OTHER and ALLOW on one worker: a slot due while the worker is taken waits for
    it, and the run that starts late records the slots it is late for skipped instead of
    chasing them (docs/decisions/overlap.md, "CANCEL_OTHER and ALLOW queue the next slot as a run
    begins"); a CANCEL_OTHER slot that comes due while a run of its task holds the worker
    cancels that run all the same (its action stops at its flag), and waits for the worker
    behind what was due before it ("CANCEL_OTHER cancels at the slot, whether or not a
    worker is free"): alike on both, at the same instants."""
    specs = [
        Spec("cancel", FixedRate(60, start_delay=5), (130,) * 20,
             options={"overlap": Overlap.CANCEL_OTHER}),
        Spec("allow", FixedRate(50, start_delay=7), (70,) * 20,
             options={"overlap": Overlap.ALLOW, "max_instances": 2}),
    ]  # fmt: skip
    horizon = 600

    def made_by_the_horizon(records: list[ExecutionRecord]) -> list[Timed]:
        """On threads a run's action moves the clock past the horizon, and the records
        it leads to follow; the simulation stops there."""
        return [r for r in timed_records(records, T0) if r[5] <= horizon]

    threaded = made_by_the_horizon(threaded_records(specs, horizon))
    simulated = made_by_the_horizon(simulated_records(specs, horizon, True))
    assert threaded == simulated
    cancel = [(due, outcome, started) for name, due, _, outcome, started, _ in threaded
              if name == "cancel"]  # fmt: skip
    # the run at 5 is cut at 65; the slot at 65 starts at 135, after ALLOW's run (due at
    # 7) that took the worker first, skips 125 and is cut at 185, and so on
    assert cancel[:5] == [(5, "cancelled", 5), (125, "skipped", 135), (65, "cancelled", 135),
                          (245, "skipped", 255), (185, "cancelled", 255)]  # fmt: skip


def test_a_services_forty_jobs_on_three_workers_stepped_on_threads_run_as_simulated() -> None:
    """What a capacity planner replays: twenty hourly crons in Berlin across the night the
    clocks go forward and twenty fixed rates, on three workers, failing now and then and
    retried with jittered backoff, on a threaded ``Scheduler`` that
    ``lldsched.testing.Stepper`` moves through time and on a ``Simulation`` of the same
    seed: the same runs, attempt by attempt (worker numbers aside: on threads, whichever
    thread takes the run)."""
    start, horizon = datetime(2026, 3, 28, 22, tzinfo=UTC), 8 * 3600
    retry = RetryPolicy(max_attempts=3, initial_backoff=10, jitter=0.5)

    def failing_now_and_then(salt: int) -> Callable[[], None]:
        runs = [0]

        def action() -> None:
            runs[0] += 1
            if (runs[0] * 7 + salt) % 13 == 0:
                raise RuntimeError(f"run {runs[0]}")

        return action

    def jobs() -> list[tuple[str, Schedule, Callable[[], None]]]:
        crons: list[tuple[str, Schedule, Callable[[], None]]] = [
            (f"cron-{i}", CronSchedule(f"{i} * * * *", tz=BERLIN), failing_now_and_then(i))
            for i in range(20)
        ]
        return crons + [
            (f"rate-{i}", FixedRate(300 + 30 * i), failing_now_and_then(100 + i)) for i in range(20)
        ]

    log = EventLog()
    scheduler = Scheduler(workers=3, clock=FakeClock(start), listeners=[log], seed=5)
    for name, schedule, action in jobs():
        scheduler.schedule(name, action, schedule, id=name, retry=retry)
    with Stepper(scheduler) as stepper:
        stepper.advance(horizon)
    sim = Simulation(workers=3, start=start, seed=5)
    for name, schedule, action in jobs():
        sim.schedule(name, schedule, action=action, id=name, retry=retry)
    sim.run_for(horizon)

    def runs(records: Sequence[ExecutionRecord]) -> list[tuple[Any, ...]]:
        return sorted(
            (r.task_id, r.slot, r.due, r.attempt, r.started, r.finished, r.error, r.outcome)
            for r in records
        )

    threaded = runs([event.record for event in log.events if event.record is not None])
    assert threaded == runs(sim.records())
    assert len(threaded) > 1300 and sum(r[3] > 1 for r in threaded) > 50  # retries ran
