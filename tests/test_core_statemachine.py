"""The core state machine against a small reference model (hypothesis, stateful).

Random sequences of steps drive a ``SchedulerCore`` through ``tests.harness.Harness``
on a ``FakeClock``: register a task (OneTime / FixedRate with SKIP or CATCH_UP /
FixedDelay, small integer periods and start delays, a RetryPolicy of 1 to 3
attempts with small capped backoffs and no jitter, an optional timeout, a random
priority); begin the next due entry (the clock jumps to it); finish one of the runs
in flight (several may be in flight at once) ok, with an error text, or over its
timeout; pause, resume, cancel, redrive, remove, modify (priority, timeout),
reschedule (a new schedule) and run_now a random id (live, terminal, removed, or
never registered); and advance the clock.  The core is built with a random
history limit (None, 0, 1, 3 or 100) and one first task; at most 4 tasks
are registered at once, 8 in all.  The control verbs mostly pick a task they act on
(so pause/resume/redrive sequences are frequent), sometimes any id ever registered,
now and then an unknown one.

The model, written here from the lifecycle (docs/ARCHITECTURE.md, "The lifecycle")
and the code as it is, keeps per task its status, attempt counter, next due instant, schedule slot,
whether it is queued (and in which order the queue hands tasks out: due, then
priority, then push order), whether a run is in flight, run / failure counts and
last error; and, globally, the dead letter in order and the clock.  After every
step the invariants check that the core agrees: each task's ``status``,
``attempt``, ``next_run_at``, ``running``, ``run_count``, ``failure_count``,
``last_error`` and ``len(history)`` (bounded by the history limit), the registry
(removed ids are gone), ``core.dead_letter()``, the live queue entries in order
(and the queue's own live count, which tombstone accounting must keep right),
and the events each step emitted (task, previous status, new status, instant).
Each begin checks the task, attempt, due and slot of the run it started, and each
finish checks the record it returned (attempt, due, slot, times, ok, error,
timed out) and that it is the newest of the history.

Rules the model encodes (besides the plain transitions):

* a successful run reschedules with the attempt counter reset (slot = the new due)
  or retires the task SUCCEEDED, its attempt counter left as it was;
* a failed or timed-out run (``finished - started > timeout``) retries at
  ``finished + min(max_backoff, initial * multiplier ** (attempt - 1))`` while
  ``attempt < max_attempts``, keeping the slot; else a one-off task is FAILED and
  dead-lettered, and a recurring one gives the slot up (the record says GIVEN_UP):
  it goes on to the next due instant a success would have had, attempt counter
  reset, unless ``fail_after_given_up`` slots in a row were given up (FAILED,
  dead-lettered); a successful run, or a redrive, starts the count again;
* the fixed-rate slots a SKIP run passed over (between its slot and its next due)
  are recorded after the run, each an event with no change of status, unless the
  task was cancelled mid-run; at most ``MAX_SKIPPED`` + 1 records per run;
* FixedRate's next due is the run's slot plus one period; with SKIP the first slot
  of the grid not before the finish; FixedDelay's is the finish plus the delay;
* a task paused (or cancelled) mid-run keeps that status when the run finishes,
  the next due is remembered for resume, nothing is queued; but a run that ends
  the task (SUCCEEDED or FAILED) still ends it while paused;
* resume of a task paused mid-run (run still going) makes it RUNNING again; else
  due = max(previous due, now), RETRYING if attempt > 0 else SCHEDULED (the slot
  re-anchored at the due, unless a plan's run is due: run_now's extra run keeps its slot);
* cancel from any non-terminal status (next due cleared); redrive FAILED ->
  SCHEDULED due now, attempt 0, slot now, out of the dead letter (a slot run_now
  set aside is dropped); remove cancels a live task, unregisters it and drops it
  from the dead letter; unknown or removed ids raise TaskNotFoundError;
* modify changes no status: a new priority queues a queued task again at the same
  due (a new push), a new timeout judges the run in flight at its finish; SUCCEEDED
  and CANCELLED tasks raise SchedulerStateError; a change is announced as an event
  from the status to itself, no change is not announced;
* reschedule of a SCHEDULED task, or one PAUSED between runs, gives it the new
  schedule's first due from now (queued if SCHEDULED, slot = that due); of a task
  with work owed (running, retrying, paused mid-run or while retrying) keeps that
  work, and the next successful run is followed by the new schedule's first due
  counted from its finish; a FAILED task just takes the schedule; SUCCEEDED and
  CANCELLED raise SchedulerStateError; a slot set aside by run_now is dropped;
* run_now of a SCHEDULED task due later queues it now (slot = now) and sets its
  pending due aside: the next successful run is followed by that due instead of
  the schedule's answer; of a RETRYING task due later, queues the retry now
  (attempt and slot kept); otherwise returns False and changes nothing.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from lldsched import (
    ExecutionRecord,
    FakeClock,
    FixedDelay,
    FixedRate,
    OneTime,
    Outcome,
    OverrunPolicy,
    Priority,
    RetryPolicy,
    ScheduledTask,
    SchedulerStateError,
    TaskNotFoundError,
    TaskStatus,
)
from lldsched.core.machine import MAX_SKIPPED
from tests.harness import Harness

SCHEDULED = TaskStatus.SCHEDULED
RUNNING = TaskStatus.RUNNING
RETRYING = TaskStatus.RETRYING
PAUSED = TaskStatus.PAUSED
SUCCEEDED = TaskStatus.SUCCEEDED
FAILED = TaskStatus.FAILED
CANCELLED = TaskStatus.CANCELLED
TERMINAL = (SUCCEEDED, FAILED, CANCELLED)

T0 = 1_000_000.0  # integral instants and periods: every sum is exact in a float
MAX_LIVE = 4  # registered at once
MAX_TASKS = 8  # registered in all, removed ones included
UNKNOWN_ID = "no-such-task"
TARGETS = st.integers(0, 3 * MAX_TASKS)  # see CoreMachine.target


def noop() -> None:
    return None


@dataclass(frozen=True)
class Spec:
    """What a task is registered with."""

    kind: str  # "once", "rate" or "delay"
    period: int  # the OneTime delay, the FixedRate period or the FixedDelay delay
    start_delay: int
    overrun: OverrunPolicy
    retry: RetryPolicy
    timeout: int | None
    priority: Priority

    def schedule(self) -> OneTime | FixedRate | FixedDelay:
        if self.kind == "once":
            return OneTime(delay=self.period)
        if self.kind == "rate":
            return FixedRate(self.period, self.overrun, start_delay=self.start_delay)
        return FixedDelay(self.period, start_delay=self.start_delay)

    def first(self, now: float) -> float:
        return now + (self.period if self.kind == "once" else self.start_delay)

    def next_due(self, slot: float, finished: float) -> float | None:
        """The due instant after a successful run of ``slot`` that finished at ``finished``."""
        if self.kind == "once":
            return None
        if self.kind == "delay":
            return finished + self.period
        due = slot + self.period
        while self.overrun is OverrunPolicy.SKIP and due < finished:
            due += self.period
        return due

    def skipped(self, slot: float, due: float) -> int:
        """How many records the slots between ``slot`` and ``due`` make (capped)."""
        if self.kind != "rate":
            return 0
        return min(max(0, int((due - slot) // self.period) - 1), MAX_SKIPPED + 1)

    def backoff(self, attempt: int) -> float:
        r = self.retry
        return float(min(r.max_backoff, r.initial_backoff * r.multiplier ** (attempt - 1)))


# The strategies specs() draws from, built once: a strategy built afresh on every draw has
# its properties (emptiness, recursion) worked out again each time, which cost more than
# the stateful run's own checks.
KINDS = st.sampled_from(["once", "rate", "delay"])
PERIODS = {kind: st.integers(0 if kind == "once" else 1, 5) for kind in ("once", "rate", "delay")}
BACKOFFS = st.integers(0, 3)
ATTEMPTS = st.integers(1, 3)
MULTIPLIERS = st.sampled_from([1, 2, 3])
BACKOFF_CAP_ABOVE_INITIAL = st.integers(0, 4)
FAIL_AFTER_GIVEN_UP = st.none() | st.integers(1, 2)
START_DELAYS = st.integers(0, 3)
OVERRUNS = st.sampled_from(list(OverrunPolicy))
TIMEOUTS = st.none() | st.integers(1, 3)
PRIORITIES = st.sampled_from(list(Priority))


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    kind = draw(KINDS)
    period = draw(PERIODS[kind])
    initial = draw(BACKOFFS)
    retry = RetryPolicy(
        max_attempts=draw(ATTEMPTS),
        initial_backoff=initial,
        multiplier=draw(MULTIPLIERS),
        max_backoff=initial + draw(BACKOFF_CAP_ABOVE_INITIAL),
        jitter=0.0,
        fail_after_given_up=draw(FAIL_AFTER_GIVEN_UP),
    )
    return Spec(
        kind=kind,
        period=period,
        start_delay=draw(START_DELAYS),
        overrun=draw(OVERRUNS),
        retry=retry,
        timeout=draw(TIMEOUTS),
        priority=draw(PRIORITIES),
    )


@dataclass
class Model:
    """What the reference model knows of one task."""

    spec: Spec
    status: TaskStatus
    due: float | None  # next_run_at
    slot: float
    seq: int  # push order of its queue entry (meaningful while queued)
    attempt: int = 0
    queued: bool = True
    in_flight: bool = False
    removed: bool = False
    aside: float | None = None  # the due run_now set aside, handed out after the next ok run
    fresh: bool = False  # rescheduled with work owed: the next ok run is followed by a first run
    run_count: int = 0
    failure_count: int = 0
    last_error: str | None = None
    timeout_error: bool = False  # last_error is the core's TimeoutError text
    given_up: int = 0  # slots given up in a row
    records: int = 0  # runs and skipped slots recorded


@dataclass
class InFlight:
    """One run begun and not finished yet."""

    task_id: str
    started: float
    attempt: int
    due: float
    slot: float
    finish: Callable[[float, float, str | None], ExecutionRecord] = field(repr=False)


Event = tuple[str, TaskStatus | None, TaskStatus]


class CoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock(T0)
        self.h = Harness(self.clock)
        self.core = self.h.core
        self.limit: int | None = 100
        self.now = T0
        self.ids: list[str] = []  # every id ever registered, removed ones too
        self.model: dict[str, Model] = {}
        self.objects: dict[str, ScheduledTask] = {}
        self.dead: list[str] = []
        self.runs: list[InFlight] = []
        self.pushes = 0
        self.seen = 0  # events already checked

    @initialize(limit=st.sampled_from([None, 0, 1, 3, 100]), spec=specs())
    def build(self, limit: int | None, spec: Spec) -> None:
        """A core with a random history limit, and a first task (every example has one)."""
        self.limit = limit
        self.h = Harness(self.clock, history_limit=limit)
        self.core = self.h.core
        self.add(spec)

    # -- model helpers -------------------------------------------------------------

    def push(self, m: Model, due: float) -> None:
        self.pushes += 1
        m.due, m.seq, m.queued = due, self.pushes, True

    def live(self, task_id: str) -> Model | None:
        m = self.model.get(task_id)
        return None if m is None or m.removed else m

    @staticmethod
    def applies(verb: str, m: Model | None) -> bool:
        """Whether ``verb`` changes a task in the state ``m`` (None: not registered)."""
        if m is None:
            return False
        return {
            "pause": m.status in (SCHEDULED, RETRYING, RUNNING),
            "resume": m.status is PAUSED,
            "cancel": m.status not in TERMINAL,
            "redrive": m.status is FAILED,
            "remove": True,
            "modify": m.status not in (SUCCEEDED, CANCELLED),
            "reschedule": m.status not in (SUCCEEDED, CANCELLED),
            "run_now": m.status in (SCHEDULED, RETRYING),
        }[verb]

    def expect_events(self, expected: list[Event]) -> None:
        events = self.h.events[self.seen :]
        self.seen = len(self.h.events)
        assert [(e.task_id, e.previous, e.status) for e in events] == expected
        assert all(e.at == self.now for e in events)

    # -- rules ------------------------------------------------------------------------

    @precondition(lambda self: len(self.core.tasks) < MAX_LIVE and len(self.ids) < MAX_TASKS)
    @rule(spec=specs())
    def add(self, spec: Spec) -> None:
        task = self.core.add(
            f"t{len(self.ids)}",
            noop,
            spec.schedule(),
            priority=spec.priority,
            retry=spec.retry,
            timeout=None if spec.timeout is None else float(spec.timeout),
        )
        assert task.id not in self.model and self.core.get(task.id) is task
        first = spec.first(self.now)
        m = Model(spec, SCHEDULED, first, first, 0)
        self.push(m, first)
        self.ids.append(task.id)
        self.model[task.id] = m
        self.objects[task.id] = task
        self.expect_events([(task.id, None, SCHEDULED)])

    @precondition(lambda self: any(m.queued for m in self.model.values()))
    @rule()
    def begin(self) -> None:
        task_id, m = min(
            ((i, m) for i, m in self.model.items() if m.queued),
            key=lambda im: (im[1].due, im[1].spec.priority.value, im[1].seq),
        )
        assert m.due is not None
        self.now = max(self.now, m.due)
        run = self.h.begin()
        assert run.task.id == task_id and run.task is self.objects[task_id]
        previous = m.status
        assert previous in (SCHEDULED, RETRYING)
        m.status, m.queued, m.in_flight = RUNNING, False, True
        m.attempt += 1
        assert (run.attempt, run.due, run.slot) == (m.attempt, m.due, m.slot)
        finish = functools.partial(self.core.finish, run)
        self.runs.append(InFlight(task_id, self.now, m.attempt, m.due, m.slot, finish))
        self.expect_events([(task_id, previous, RUNNING)])

    @precondition(lambda self: self.runs)
    @rule(
        index=st.integers(0, 7),
        duration=st.integers(0, 6),
        error=st.none() | st.sampled_from(["RuntimeError: boom", "OSError: gone", "E"]),
    )
    def finish(self, index: int, duration: int, error: str | None) -> None:
        run = self.runs.pop(index % len(self.runs))
        self.clock.advance(duration)
        self.now += duration
        self.finish_run(run, error)

    @precondition(
        lambda self: any(self.model[r.task_id].spec.timeout is not None for r in self.runs)
    )
    @rule(index=st.integers(0, 7), over=st.integers(1, 3))
    def finish_over_timeout(self, index: int, over: int) -> None:
        timed = [r for r in self.runs if self.model[r.task_id].spec.timeout is not None]
        run = timed[index % len(timed)]
        self.runs.remove(run)
        timeout = self.model[run.task_id].spec.timeout
        assert timeout is not None
        self.now = max(self.now, run.started + timeout + over)
        self.clock.set(self.now)
        self.finish_run(run, None)

    def finish_run(self, run: InFlight, error: str | None) -> None:
        m = self.model[run.task_id]
        record = run.finish(run.started, self.now, error)
        timeout = m.spec.timeout
        timed_out = timeout is not None and self.now - run.started > timeout
        ok = error is None and not timed_out
        assert (record.task_id, record.attempt, record.due, record.slot) == (
            run.task_id,
            run.attempt,
            run.due,
            run.slot,
        )
        assert (record.started, record.finished, record.ok, record.timed_out) == (
            run.started,
            self.now,
            ok,
            timed_out,
        )
        if error is not None:
            assert record.error == error
        elif timed_out:
            assert record.error is not None and record.error.startswith("TimeoutError")
        else:
            assert record.error is None
        task = self.objects[run.task_id]

        m.run_count += 1
        m.in_flight = False
        if not ok:
            m.failure_count += 1
            m.last_error, m.timeout_error = error, error is None
        else:
            m.given_up = 0

        due: float | None = None
        expected = Outcome.OK if ok else Outcome.TIMED_OUT if timed_out else Outcome.FAILED
        on_grid = False
        if ok:
            due, on_grid = self.next_slot(m, run.slot)
            outcome = SCHEDULED if due is not None else SUCCEEDED
        elif run.attempt < m.spec.retry.max_attempts:
            outcome, due = RETRYING, self.now + m.spec.backoff(run.attempt)
        else:
            due, on_grid = self.next_slot(m, run.slot)  # as after a success: the slot is given up
            outcome = FAILED
            if due is not None:  # recurring: the slot is given up
                expected = Outcome.GIVEN_UP
                m.given_up += 1
                limit = m.spec.retry.fail_after_given_up
                if limit is not None and m.given_up >= limit:
                    due = None
                else:
                    outcome = SCHEDULED
        assert record.outcome is expected
        skipped = m.spec.skipped(run.slot, due) if outcome is SCHEDULED and due and on_grid else 0

        previous = m.status
        if previous is RUNNING or (previous is PAUSED and outcome in (SUCCEEDED, FAILED)):
            m.status = outcome
            if due is not None:
                self.push(m, due)
                if outcome is SCHEDULED:
                    m.slot, m.attempt = due, 0
            else:
                m.due = None
                if outcome is FAILED:
                    self.dead.append(run.task_id)
        elif previous is PAUSED:
            m.due = due
            if outcome is SCHEDULED:
                assert due is not None
                m.slot, m.attempt = due, 0
        else:
            assert previous is CANCELLED
            skipped = 0
        m.records += 1 + skipped
        history = task.history  # the run's record, then its skipped slots, as far as kept
        if self.limit is None or self.limit > skipped:
            assert history[-1 - skipped] == record
        tail = history[max(0, len(history) - skipped) :]
        assert [r.outcome for r in tail] == [Outcome.SKIPPED] * len(tail)
        events: list[Event] = [(run.task_id, previous, m.status)]
        self.expect_events(events + [(run.task_id, m.status, m.status)] * skipped)

    def next_slot(self, m: Model, slot: float) -> tuple[float | None, bool]:
        """What the schedule answers after a run of ``slot`` ends its slot (ok, or given
        up): a rescheduled task's first run, a slot set aside by run_now, or the next
        slot of its grid; and whether it came from the grid (only then can slots in
        between have been skipped)."""
        due: float | None
        if m.fresh:
            due, on_grid = m.spec.first(self.now), False
        elif m.aside is not None:
            due, on_grid = m.aside, False
        else:
            due, on_grid = m.spec.next_due(slot, self.now), True
        m.aside, m.fresh = None, False
        return due, on_grid

    def target(self, verb: str, index: int) -> str:
        """The id ``verb`` is applied to: mostly a task it acts on (if there is one),
        else any id ever registered (index % 4 == 1), or one never registered (index 0)."""
        ids = self.ids
        if index % 4 != 1:
            ids = [i for i in self.ids if self.applies(verb, self.live(i))] or ids
        return UNKNOWN_ID if index == 0 else ids[index % len(ids)]

    @rule(index=TARGETS)
    def pause(self, index: int) -> None:
        task_id = self.target("pause", index)
        m = self.live(task_id)
        if m is None:
            self.expect_not_found(self.core.pause, task_id)
            return
        previous = m.status
        paused = previous in (SCHEDULED, RETRYING, RUNNING)
        assert self.core.pause(task_id) is paused
        if paused:
            m.status, m.queued = PAUSED, False
        self.expect_events([(task_id, previous, PAUSED)] if paused else [])

    @rule(index=TARGETS)
    def resume(self, index: int) -> None:
        task_id = self.target("resume", index)
        m = self.live(task_id)
        if m is None:
            self.expect_not_found(self.core.resume, task_id)
            return
        resumed = m.status is PAUSED
        assert self.core.resume(task_id) is resumed
        if not resumed:
            self.expect_events([])
            return
        if m.in_flight:
            m.status = RUNNING
        else:
            assert m.due is not None
            due = max(m.due, self.now)
            m.status = RETRYING if m.attempt else SCHEDULED
            if m.status is SCHEDULED and m.aside is None and not m.fresh:
                m.slot = due  # a plan's run (run_now's extra run) keeps its slot
            self.push(m, due)
        self.expect_events([(task_id, PAUSED, m.status)])

    @rule(index=TARGETS)
    def cancel(self, index: int) -> None:
        task_id = self.target("cancel", index)
        m = self.live(task_id)
        if m is None:
            self.expect_not_found(self.core.cancel, task_id)
            return
        self.model_cancel(task_id, m, self.core.cancel(task_id))

    def model_cancel(self, task_id: str, m: Model, returned: bool) -> None:
        previous = m.status
        cancelled = previous not in TERMINAL
        assert returned is cancelled
        if cancelled:
            m.status, m.queued, m.due = CANCELLED, False, None
        self.expect_events([(task_id, previous, CANCELLED)] if cancelled else [])

    @rule(index=TARGETS)
    def redrive(self, index: int) -> None:
        task_id = self.target("redrive", index)
        m = self.live(task_id)
        if m is None:
            self.expect_not_found(self.core.redrive, task_id)
            return
        redriven = m.status is FAILED
        assert self.core.redrive(task_id) is redriven
        if redriven:
            self.dead.remove(task_id)
            m.status, m.attempt, m.slot, m.given_up = SCHEDULED, 0, self.now, 0
            m.aside, m.fresh = None, False
            self.push(m, self.now)
        self.expect_events([(task_id, FAILED, SCHEDULED)] if redriven else [])

    @rule(index=TARGETS)
    def remove(self, index: int) -> None:
        task_id = self.target("remove", index)
        m = self.live(task_id)
        if m is None:
            self.expect_not_found(self.core.remove, task_id)
            return
        previous = m.status
        assert self.core.remove(task_id) is self.objects[task_id]
        self.model_cancel(task_id, m, previous not in TERMINAL)
        m.removed = True
        if task_id in self.dead:
            self.dead.remove(task_id)

    @rule(
        index=TARGETS,
        priority=st.none() | st.sampled_from(list(Priority)),
        timeout=st.sampled_from(["unchanged", None, 1, 2, 3]),
    )
    def modify(self, index: int, priority: Priority | None, timeout: str | int | None) -> None:
        task_id = self.target("modify", index)
        m = self.live(task_id)
        options: dict[str, Any] = {}
        if priority is not None:
            options["priority"] = priority
        if timeout != "unchanged":
            options["timeout"] = None if timeout is None else float(timeout)
        if m is None:
            self.expect_not_found(functools.partial(self.core.modify, **options), task_id)
            return
        if m.status in (SUCCEEDED, CANCELLED):
            try:
                self.core.modify(task_id, **options)
            except SchedulerStateError:
                pass
            else:
                raise AssertionError(f"modify({task_id!r}) of a {m.status} task did not raise")
            self.expect_events([])
            return
        assert self.core.modify(task_id, **options) is self.objects[task_id]
        new_priority = m.spec.priority if priority is None else priority
        new_timeout = m.spec.timeout if timeout == "unchanged" else timeout
        assert new_timeout is None or isinstance(new_timeout, int)
        changed = (new_priority, new_timeout) != (m.spec.priority, m.spec.timeout)
        if m.queued and new_priority is not m.spec.priority:
            assert m.due is not None
            self.push(m, m.due)
        m.spec = dataclasses.replace(m.spec, priority=new_priority, timeout=new_timeout)
        self.expect_events([(task_id, m.status, m.status)] if changed else [])

    @rule(index=TARGETS, spec=specs())
    def reschedule(self, index: int, spec: Spec) -> None:
        task_id = self.target("reschedule", index)
        m = self.live(task_id)
        new = dataclasses.replace(
            spec, retry=m.spec.retry, timeout=m.spec.timeout, priority=m.spec.priority
        ) if m is not None else spec  # fmt: skip
        if m is None:
            self.expect_not_found(
                functools.partial(self.core.reschedule, schedule=new.schedule()), task_id
            )
            return
        if m.status in (SUCCEEDED, CANCELLED):
            try:
                self.core.reschedule(task_id, new.schedule())
            except SchedulerStateError:
                pass
            else:
                raise AssertionError(f"reschedule({task_id!r}) of a {m.status} task did not raise")
            self.expect_events([])
            return
        assert self.core.reschedule(task_id, new.schedule()) is self.objects[task_id]
        m.spec, m.aside, m.fresh = new, None, False
        if m.status in (SCHEDULED, PAUSED) and not m.in_flight and m.attempt == 0:
            first = new.first(self.now)
            m.slot = first
            if m.status is SCHEDULED:
                self.push(m, first)
            else:
                m.due = first
        elif m.status in (RUNNING, RETRYING, PAUSED):
            m.fresh = True
        self.expect_events([(task_id, m.status, m.status)])

    @rule(index=TARGETS)
    def run_now(self, index: int) -> None:
        task_id = self.target("run_now", index)
        m = self.live(task_id)
        if m is None:
            self.expect_not_found(self.core.run_now, task_id)
            return
        added = m.status in (SCHEDULED, RETRYING) and m.due is not None and m.due > self.now
        assert self.core.run_now(task_id) is added
        if added:
            if m.status is SCHEDULED:
                assert m.aside is None and m.due is not None
                m.aside, m.slot = m.due, self.now
            self.push(m, self.now)
        self.expect_events([(task_id, m.status, m.status)] if added else [])

    @rule(seconds=st.integers(1, 6))
    def advance(self, seconds: int) -> None:
        self.clock.advance(seconds)
        self.now += seconds
        self.expect_events([])

    def expect_not_found(self, verb: Callable[[str], object], task_id: str) -> None:
        try:
            verb(task_id)
        except TaskNotFoundError:
            pass
        else:
            raise AssertionError(f"{verb!r}({task_id!r}) did not raise TaskNotFoundError")
        self.expect_events([])

    # -- invariants --------------------------------------------------------------------

    @invariant()
    def the_tasks_agree_with_the_model(self) -> None:
        assert self.clock.now() == self.now
        assert sorted(self.core.tasks) == sorted(i for i, m in self.model.items() if not m.removed)
        for task_id, m in self.model.items():
            task = self.objects[task_id]
            if not m.removed:
                assert self.core.tasks[task_id] is task
            got = (task.status, task.attempt, task.next_run_at, task.running)
            assert got == (m.status, m.attempt, m.due, m.in_flight), (task_id, got, m)
            assert (task.run_count, task.failure_count) == (m.run_count, m.failure_count)
            if m.timeout_error:
                assert task.last_error is not None and task.last_error.startswith("TimeoutError")
            else:
                assert task.last_error == m.last_error
            kept = m.records if self.limit is None else min(m.records, self.limit)
            assert len(task.history) == kept
            assert task.given_up == m.given_up

    @invariant()
    def the_model_keeps_the_lifecycle_rules(self) -> None:
        for m in self.model.values():
            assert m.queued == (m.status in (SCHEDULED, RETRYING) and not m.removed)
            assert (m.status is SCHEDULED) <= (m.attempt == 0)
            assert (m.status in (RETRYING, RUNNING)) <= (m.attempt >= 1)
            assert (m.status in TERMINAL) <= (m.due is None)
            assert (m.status is RUNNING) <= m.in_flight

    @invariant()
    def the_dead_letter_agrees(self) -> None:
        assert self.core.dead_letter() == self.dead
        assert self.dead == [i for i in self.dead if self.model[i].status is FAILED]

    @invariant()
    def the_queue_hands_out_tasks_in_the_model_order(self) -> None:
        queued = sorted(
            ((i, m) for i, m in self.model.items() if m.queued),
            key=lambda im: (im[1].due, im[1].spec.priority.value, im[1].seq),
        )
        entries = self.h.queue.entries()
        assert [(task_id, due) for due, _, _, task_id in entries] == [(i, m.due) for i, m in queued]
        assert len(self.h.queue) == len(entries)


CoreMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=40, deadline=None)
TestCoreStateMachine = CoreMachine.TestCase
