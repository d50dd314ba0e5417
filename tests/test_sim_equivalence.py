"""One state machine, two runtimes: the same scenario on the threaded Scheduler (with a fake
clock) and on the Simulation yields the same sequence of (task, due, attempt, outcome).

With durations on one worker, runs queue up behind a long one.  The scenarios avoid one case
on purpose: a CATCH_UP follow-up or a BUFFER_ONE run (due in the past) pushed while other due
entries, due after it, already wait.
Where it lands in the threaded runtime depends on whether its timer moved the others into the
hand-off queue before the follow-up was pushed, which is thread timing; the simulation puts it
in heap order (see lldsched/sim/simulation.py, "The hand-off queue is not modelled")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

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
from lldsched.sim import Simulation
from tests.conftest import T0

Outcome = tuple[str, float, int, str]


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


def action_for(spec: Spec, advance: Callable[[float], object] | None) -> Callable[[], None]:
    runs = [0]

    def action() -> None:
        n = runs[0]
        runs[0] += 1
        if advance is not None and n < len(spec.durations):
            advance(spec.durations[n])
        if n in spec.failing_runs:
            raise RuntimeError(f"run {n} failed")

    return action


def on_threads(specs: list[Spec], horizon: float) -> list[Outcome]:
    return [(r.name, r.due - T0, r.attempt, r.outcome) for r in threaded_records(specs, horizon)]


def threaded_records(specs: list[Spec], horizon: float) -> list[ExecutionRecord]:
    clock = FakeClock(T0)
    log = EventLog()
    scheduler = Scheduler(workers=1, clock=clock, listeners=[log])
    # Every task registered before the start, at T0, as in the simulation: registered
    # on a started scheduler, a later one raced the first run, whose action advances the
    # clock ("once", OneTime(delay=200), was due at 210 when "rate" ran first).
    for spec in specs:
        scheduler.schedule(
            spec.name, action_for(spec, clock.advance), spec.schedule, retry=spec.retry,
            id=spec.name, **spec.options,
        )  # fmt: skip
    with scheduler:  # starts it
        assert scheduler.wait_idle(10)
        while clock.now() < T0 + horizon:  # step the clock from one due instant to the next
            upcoming = [t.next_run_at for t in scheduler.pending() if t.next_run_at is not None]
            if not upcoming or min(upcoming) > T0 + horizon:
                break
            clock.set(max(min(upcoming), clock.now()))
            assert scheduler.wait_idle(10)
    return [e.record for e in log.events if e.record is not None]  # runs and skipped slots


def durations_of(spec: Spec) -> Callable[[object, int], float]:
    """The simulation's duration model for ``spec``: the n-th run takes durations[n]."""
    runs = [0]

    def duration(rng: object, attempt: int) -> float:
        n = runs[0]
        runs[0] += 1
        return spec.durations[n] if n < len(spec.durations) else 0.0

    return duration


def on_simulation(specs: list[Spec], horizon: float, with_durations: bool) -> list[Outcome]:
    records = simulated_records(specs, horizon, with_durations)
    return [(r.name, r.due - T0, r.attempt, r.outcome) for r in records]


def simulated_records(
    specs: list[Spec], horizon: float, with_durations: bool
) -> list[ExecutionRecord]:
    sim = Simulation(workers=1, start=T0)
    for spec in specs:
        sim.schedule(
            spec.name, spec.schedule, retry=spec.retry,
            duration=durations_of(spec) if with_durations else 0.0,
            action=action_for(spec, None), id=spec.name, **spec.options,
        )  # fmt: skip
    sim.run(T0 + horizon)
    return sim.records()


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
