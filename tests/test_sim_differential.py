"""A randomized differential of the two runtimes: hypothesis draws a scenario, it runs on the
threaded Scheduler (one worker, a FakeClock moved by the actions) and on the Simulation, and
both must make the same records, answer every verb alike and leave every task alike.

A scenario is one to four tasks (OneTime, FixedRate with either overrun policy, FixedDelay
or cron schedules; a priority; a retry policy with backoff, jitter and a give-up streak that
dead-letters; a timeout; an overlap and a misfire policy; upstreams among the tasks before
it; what each run takes and which runs raise) and up to six control verbs (pause, resume,
cancel, remove, reschedule, modify, run_now, redrive) at chosen instants.  What is
compared: every record's task, due, attempt, outcome, start and finish, in the order made;
each verb's answer (its return value, or the class of what it raised); each task's status,
next run, attempt and priority at the end; the dead letter.  (A misfire policy is only
carried: no store restores the tasks, so it decides nothing here.)

It stays inside what the runtimes are documented to agree on, and is deterministic:

- **A verb never shares its instant.**  Every instant the tasks make is a whole second from
  the start (schedules, durations, backoffs, timeouts; the jitter's draws are floats no
  verb lands on), and the n-th verb is made at n/8 past a whole second: what a verb leads
  to (a run-now's run, its finish) falls at its own fraction, never at another verb's.  At
  an instant where a run finishes, or an entry is due, the simulation makes the verb in
  between (finish, verb, start) and the threaded timer would race it for the worker.
- **The timer hands out first.**  A verb during a run is made from inside the run's action
  on threads, at its instant, as the simulation makes it mid-run; each time the action
  moves the clock it waits until the timer has handed out every entry due by then
  (:func:`handed_out`), so those wait in the hand-off queue, not the heap, whatever the
  thread timing, before the verb or the run's end that follows.
- **The hand-off queue is not modelled by the simulation** (lldsched/sim/simulation.py,
  docs/DECISIONS.md "The hand-off queue is not modelled"): an entry pushed due already
  while another task's entry waits that it sorts before (a CATCH_UP slot, BUFFER_ONE's run,
  a run-now's slot that its extra run outlasted, a raised priority) takes its heap place
  there and queues behind on threads.  :class:`HandOffWatch` sees that case on the
  simulation, and the example is set aside (``reject``); about one in twelve is.
- **No timeout on a CANCEL_OTHER task**, nor a ``modify(timeout=)`` of one: its runs have a
  context, whose flag the threaded timer raises at the deadline, and a run with its flag
  raised is recorded ``timed_out`` whatever it measured, against the budget it began with
  (docs/DECISIONS.md, "Timeout flags of thread runs are raised by the timer thread"); the
  simulation has no flag and judges the duration against the timeout in force at the
  finish.  A run exactly as
  long as its timeout, or one whose timeout a ``modify`` changed mid-run, is judged
  differently (found by this test; the threaded side is the decided one).
- **The end** is where the threaded run came to rest: its actions move the clock past the
  horizon and what falls due meanwhile runs; the simulation is run to that instant.

The divergence it found and that was fixed (on two paths) is kept as examples below.
With the fix, a local search of 39,217 examples over 24 seeds found nothing else
(docs/DECISIONS.md, "A randomized differential of the two runtimes").
"""

from __future__ import annotations

import functools
import math
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from lldsched import (
    CronSchedule,
    EventLog,
    FakeClock,
    FixedDelay,
    FixedRate,
    Misfire,
    MisfirePolicy,
    OneTime,
    Overlap,
    OverrunPolicy,
    Priority,
    RetryPolicy,
    Schedule,
    Scheduler,
)
from lldsched.errors import LldschedError
from lldsched.sim import Simulation
from tests.conftest import T0
from tests.test_sim_equivalence import Spec, action_for, durations_of
from tests.waits import wait_until

HORIZON = 600.0
SEED = 3

DIFFERENTIAL = settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@dataclass(frozen=True)
class Verb:
    """``name`` called on task number ``target`` at ``at`` seconds after the start."""

    at: float
    name: str
    target: int
    argument: Any = None

    def __call__(self, runtime: Any, ids: list[str]) -> object:
        task_id = ids[self.target % len(ids)]
        try:
            if self.name == "reschedule":
                answer = runtime.reschedule(task_id, self.argument)
            elif self.name == "modify":
                answer = runtime.modify(task_id, **self.argument)
            else:
                answer = getattr(runtime, self.name)(task_id)
        except LldschedError as error:
            return (self.name, task_id, type(error).__name__)
        if isinstance(answer, bool):
            return (self.name, task_id, answer)
        return (self.name, task_id, answer.status.name, answer.next_run_at)


@dataclass(frozen=True)
class Scenario:
    specs: tuple[Spec, ...]
    verbs: tuple[Verb, ...]

    @property
    def ids(self) -> list[str]:
        return [spec.name for spec in self.specs]


@dataclass(frozen=True)
class Outcome:
    records: list[tuple[object, ...]]
    answers: list[object]
    tasks: list[tuple[object, ...]]
    dead: list[str]


def tasks_of(runtime: Any) -> list[tuple[object, ...]]:
    return sorted(
        (t.id, t.status.name, t.next_run_at, t.attempt, int(t.priority)) for t in runtime.tasks()
    )


def handed_out(scheduler: Scheduler) -> bool:
    """Nothing due by now waits in the heap: the timer has handed it all out."""
    with scheduler._lock:
        head = scheduler._queue.next_due()
        return head is None or head > scheduler._clock.now()


def on_threads(scenario: Scenario) -> tuple[Outcome, float]:
    """The scenario on the threaded runtime, and the instant it came to rest at."""
    main = threading.current_thread()
    clock = FakeClock(T0)
    log = EventLog()
    scheduler = Scheduler(workers=1, clock=clock, listeners=[log], seed=SEED)
    waiting = deque(sorted(scenario.verbs, key=lambda verb: verb.at))
    answers: list[object] = []

    def move(to: float) -> None:
        """Set the clock; from inside a run, wait until the timer has handed out what
        fell due meanwhile, so that it is in the hand-off queue, not the heap, whatever
        the thread timing, before the verb or the run's end that follows."""
        clock.set(max(to, clock.now()))
        if threading.current_thread() is not main:
            wait_until(lambda: handed_out(scheduler), timeout=10, what="the hand-out",
                       every=0.0002)  # fmt: skip

    def make(verb: Verb) -> None:
        move(T0 + verb.at)
        answers.append(verb(scheduler, scenario.ids))

    def advance(seconds: float) -> None:  # a run's duration; its verbs made on the way
        end = clock.now() + seconds
        while waiting and T0 + waiting[0].at < end:
            make(waiting.popleft())
        move(end)

    for spec in scenario.specs:
        scheduler.schedule(
            spec.name, action_for(spec, advance), spec.schedule, retry=spec.retry,
            id=spec.name, **spec.options,
        )  # fmt: skip
    with scheduler:
        assert scheduler.wait_idle(10)
        while True:
            upcoming = [t.next_run_at for t in scheduler.pending() if t.next_run_at is not None]
            following = min(upcoming, default=float("inf"))
            if waiting and T0 + waiting[0].at <= min(following, T0 + HORIZON):
                make(waiting.popleft())
            elif following > T0 + HORIZON:
                break
            else:
                clock.set(max(following, clock.now()))
            assert scheduler.wait_idle(10)
        tasks, dead = tasks_of(scheduler), scheduler.dead_letter()
    # The listener has heard every event once the scheduler has shut down.
    records = [record_of(e.record) for e in log.events if e.record is not None]
    return Outcome(records, answers, tasks, dead), clock.now()


class HandOffWatch:
    """Watches the simulation's queue for the case the hand-off queue decides
    (lldsched/sim/simulation.py, "The hand-off queue is not modelled"): an entry pushed
    due already (at or before the instant) while other tasks' entries already due wait,
    which on threads wait in the hand-off queue, their places final there.  There the
    new entry queues behind them all, except for the core's re-queue of a task at its
    due time with a new priority (``modify(priority=)``): on threads its entry, handed
    out, is not re-queued and keeps its place.  Here the new entry takes its heap
    place.  Seen when the two orders differ."""

    def __init__(self, sim: Simulation) -> None:
        self.seen = False
        self.requeuing = False  # inside the core's _requeue (modify, or a replace)
        queue = sim._queue
        push = queue.push
        core = sim._core
        requeue = core._requeue

        def requeued(task: Any) -> None:
            self.requeuing = True
            try:
                requeue(task)
            finally:
                self.requeuing = False

        core._requeue = requeued  # type: ignore[method-assign]

        def watched(task: Any, due: float) -> None:
            now = sim.now
            if due <= now and not self.seen:
                waiting = [
                    entry[:4]
                    for entry in (*queue._heap, *queue._lane, *queue._old)
                    if entry[0] <= now and queue.live(entry) is not None
                ]
                own = [entry for entry in waiting if entry[3] == task.id]
                kept = own[0] if own and self.requeuing else None
                new = (due, task.priority._value_, math.inf)
                self.seen = any(
                    (kept is not None and kept[:3] < entry[:3]) != (new < entry[:3])
                    for entry in waiting
                    if entry[3] != task.id
                )
            push(task, due)

        queue.push = watched  # type: ignore[method-assign]


def simulated(scenario: Scenario) -> tuple[Simulation, HandOffWatch, list[object]]:
    """The scenario on the simulation run to the horizon (:func:`differ` runs it on), its
    watch, and the verbs' answers, made and to come."""
    sim = Simulation(workers=1, start=T0, seed=SEED)
    watch = HandOffWatch(sim)
    for spec in scenario.specs:
        sim.schedule(
            spec.name, spec.schedule, retry=spec.retry, duration=durations_of(spec),
            action=action_for(spec, None), id=spec.name, **spec.options,
        )  # fmt: skip
    answers: list[object] = []
    for verb in sorted(scenario.verbs, key=lambda verb: verb.at):
        sim.at(T0 + verb.at, functools.partial(answer, verb, sim, scenario.ids, answers))
    sim.run(T0 + HORIZON)
    return sim, watch, answers


def answer(verb: Verb, runtime: Any, ids: list[str], answers: list[object]) -> None:
    answers.append(verb(runtime, ids))


def record_of(r: Any) -> tuple[object, ...]:
    return (r.name, r.due - T0, r.attempt, r.outcome, r.started - T0, r.finished - T0)


def differ(scenario: Scenario, *, aside: bool = True) -> tuple[Outcome, Outcome] | None:
    """Both runtimes' outcomes of ``scenario``; None where the hand-off queue decides
    (:class:`HandOffWatch`), which the runtimes are documented to differ on, unless
    ``aside`` is False."""
    sim, watch, answers = simulated(scenario)
    if watch.seen and aside:
        return None
    threaded, end = on_threads(scenario)
    sim.run(max(end, T0 + HORIZON))
    if watch.seen and aside:
        return None
    records = [record_of(r) for r in sim.records()]
    return threaded, Outcome(records, answers, tasks_of(sim), sim.dead_letter())


# ---------------------------------------------------------------- the generated space

seconds = st.integers
CRONS = ["* * * * *", "*/2 * * * *", "*/5 * * * *", "3-59/7 * * * *"]

schedules: st.SearchStrategy[Schedule] = st.one_of(
    st.builds(lambda d: OneTime(delay=d), seconds(0, 400)),
    st.builds(
        lambda i, o, s: FixedRate(i, o, start_delay=s),
        seconds(10, 200),
        st.sampled_from(list(OverrunPolicy)),
        seconds(0, 120),
    ),
    st.builds(lambda i, s: FixedDelay(i, start_delay=s), seconds(10, 200), seconds(0, 120)),
    st.builds(CronSchedule, st.sampled_from(CRONS)),
)

retries = st.builds(
    RetryPolicy,
    max_attempts=st.integers(1, 4),
    initial_backoff=seconds(1, 20),
    multiplier=st.sampled_from([1, 2, 3]),
    max_backoff=st.sampled_from([20, 60]),
    jitter=st.sampled_from([0.0, 0.0, 0.5]),
    fail_after_given_up=st.sampled_from([None, None, 1, 2]),
)
priorities = st.sampled_from(list(Priority))
misfires = st.builds(
    MisfirePolicy, st.sampled_from(list(Misfire)), grace=seconds(0, 120), max_catch_up=st.just(5)
)
overlaps = st.sampled_from([None, *Overlap])


@st.composite
def specs(draw: st.DrawFn, index: int) -> Spec:
    schedule = draw(schedules)
    options: dict[str, Any] = {"priority": draw(priorities), "misfire": draw(misfires)}
    # On a grid only, not beside CATCH_UP, and only BUFFER_ONE with upstreams: else a
    # ValidationError at registration (core/registration.py).
    gridded = isinstance(schedule, CronSchedule) or (
        isinstance(schedule, FixedRate) and schedule.on_overrun is OverrunPolicy.SKIP
    )
    overlap = draw(overlaps) if gridded else None
    if overlap is not None:
        options["overlap"] = overlap
        if overlap is Overlap.ALLOW:
            options["max_instances"] = draw(st.integers(1, 3))
    if overlap is not Overlap.CANCEL_OTHER and draw(st.booleans()):  # see the docstring
        options["timeout"] = draw(seconds(1, 60))
    if index and overlap in (None, Overlap.BUFFER_ONE) and draw(st.booleans()):
        upstreams = draw(st.sets(st.integers(0, index - 1), min_size=1))
        options["depends_on"] = [f"t{i}" for i in sorted(upstreams)]
    return Spec(
        f"t{index}",
        schedule,
        tuple(draw(st.lists(seconds(0, 90), max_size=8))),
        frozenset(draw(st.sets(st.integers(0, 9), max_size=6))),
        draw(retries),
        options,
    )


VERBS = ["pause", "resume", "cancel", "remove", "reschedule", "modify", "run_now", "redrive"]


@st.composite
def verbs(draw: st.DrawFn) -> Verb:
    name = draw(st.sampled_from(VERBS))
    argument: Any = None
    if name == "reschedule":
        argument = draw(schedules)
    elif name == "modify":
        argument = draw(
            st.fixed_dictionaries(
                {},
                optional={
                    "retry": retries,
                    "timeout": st.one_of(st.none(), seconds(1, 60)),
                    "priority": priorities,
                },
            )
        )
    at = draw(seconds(0, int(HORIZON) - 1))  # scenarios() gives it its own fraction
    return Verb(at, name, draw(st.integers(0, 3)), argument)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    count = draw(st.integers(1, 4))
    drawn = tuple(draw(specs(i)) for i in range(count))
    made = draw(st.lists(verbs(), max_size=6))
    flagged = {i for i, spec in enumerate(drawn) if spec.options.get("overlap") is CANCEL_OTHER}
    return Scenario(
        drawn,
        tuple(
            untimed(verb, at=verb.at + (i + 1) / 8) if verb.target % count in flagged
            else Verb(verb.at + (i + 1) / 8, verb.name, verb.target, verb.argument)
            for i, verb in enumerate(made)
        ),
    )  # fmt: skip


CANCEL_OTHER = Overlap.CANCEL_OTHER


def untimed(verb: Verb, *, at: float) -> Verb:
    """``verb`` at ``at``, without a new timeout: it names a CANCEL_OTHER task (see the
    module docstring)."""
    argument = verb.argument
    if verb.name == "modify":
        argument = {key: value for key, value in argument.items() if key != "timeout"}
    return Verb(at, verb.name, verb.target, argument)


@DIFFERENTIAL
@given(scenario=scenarios())
def test_random_scenarios_run_alike_on_both_runtimes(scenario: Scenario) -> None:
    outcomes = differ(scenario)
    if outcomes is None:
        reject()  # the hand-off queue's case (HandOffWatch)
    threaded, simulated = outcomes
    assert threaded == simulated


# ------------------------------------------------- divergences it found, kept as examples

RUN_ONCE = RetryPolicy(max_attempts=1)


def test_an_overlapping_tasks_late_pending_slot_keeps_its_place_on_both_runtimes() -> None:
    """A CANCEL_OTHER task every 10 s whose first run takes 72 s, and a one-off due at 33:
    the slot queued at 10 as the long run began runs first when it ends, on both runtimes
    (it is due first).  The finish queued that slot again, due in the past: on threads the
    entry already handed out died and the new one queued behind the one-off."""
    scenario = Scenario(
        (
            Spec("t0", FixedRate(10), (72,), retry=RUN_ONCE,
                 options={"overlap": Overlap.CANCEL_OTHER}),
            Spec("t1", OneTime(delay=33), retry=RUN_ONCE),
        ),
        (),
    )  # fmt: skip
    outcomes = differ(scenario, aside=False)  # it was the hand-off queue's case, needlessly
    assert outcomes is not None
    threaded, simulated = outcomes
    ran = [(name, due) for name, due, _, outcome, *_ in threaded.records if outcome == "ok"]
    assert ran[:3] == [("t0", 0), ("t0", 10), ("t1", 33)]
    assert threaded == simulated


def test_an_overlapping_tasks_pending_slot_after_a_given_up_run_keeps_its_place() -> None:
    """The same when the long run fails and its slot is given up: the task is due at the
    slot queued behind it (10), which runs before the retry of another task due at 11."""
    scenario = Scenario(
        (
            Spec("t1", OneTime(delay=0), failing_runs=frozenset({0}),
                 retry=RetryPolicy(max_attempts=2, initial_backoff=11)),
            Spec("t2", FixedRate(10), (11,), frozenset({0}), RUN_ONCE,
                 options={"overlap": Overlap.CANCEL_OTHER}),
        ),
        (),
    )  # fmt: skip
    outcomes = differ(scenario, aside=False)
    assert outcomes is not None
    threaded, simulated = outcomes
    assert [(name, due, outcome) for name, due, _, outcome, *_ in threaded.records][:4] == [
        ("t1", 0, "failed"), ("t2", 0, "given_up"), ("t2", 10, "ok"), ("t1", 11, "ok")
    ]  # fmt: skip
    assert threaded == simulated
