"""Listeners: EventLog waits and filters; the dispatcher delivers in order, off the hot path,
and drops the oldest events when a listener falls more than its backlog behind."""

from __future__ import annotations

import gc
import logging
import threading
import weakref

import pytest

from lldsched import (
    EventLog,
    FakeClock,
    FixedRate,
    OneTime,
    Scheduler,
    Simulation,
    TaskEvent,
    TaskStatus,
    ValidationError,
)
from lldsched.logs import Repeats
from lldsched.model import ExecutionRecord, Outcome
from lldsched.threaded.dispatcher import LINGER, EventDispatcher
from tests.conftest import SchedulerFactory, settle
from tests.waits import wait_until


def event(n: int, record: bool = False) -> TaskEvent:
    rec = ExecutionRecord(f"task-{n}", f"t{n}", 1, 0, 0, 0, 0, 1, True) if record else None
    return TaskEvent(f"task-{n}", f"t{n}", TaskStatus.RUNNING, TaskStatus.SUCCEEDED, float(n), rec)


def test_event_log_wait_for_finds_past_and_future_events() -> None:
    log = EventLog()
    log.on_event(event(1))
    assert log.wait_for(lambda e: e.task_id == "task-1", timeout=0) == event(1)
    threading.Timer(0.01, log.on_event, args=(event(2, record=True),)).start()
    found = log.wait_for(lambda e: e.task_id == "task-2", timeout=5)
    assert found is not None and found.record is not None
    assert log.runs("t2") == [found.record] and log.runs("t1") == []


def test_event_log_wait_for_gives_up_after_its_timeout() -> None:
    log = EventLog()
    assert log.wait_for(lambda e: True, timeout=0.01) is None


def test_a_wait_for_predicate_may_read_the_log_itself() -> None:
    log = EventLog()
    for n in range(3):
        log.on_event(event(n, record=True))
    assert log.wait_for(lambda _: len(log.runs()) >= 3, timeout=1) is not None


def test_the_dispatcher_delivers_in_order_and_logs_a_raising_listener(
    caplog: pytest.LogCaptureFixture,
) -> None:
    dispatcher = EventDispatcher(repeats=Repeats(clock=lambda: 0.0))  # one instant: one window
    seen: list[int] = []

    def broken(e: TaskEvent) -> None:
        raise KeyError("oops")

    dispatcher.add(broken)
    dispatcher.add(lambda e: seen.append(int(e.at)))
    dispatcher.start()
    with caplog.at_level(logging.DEBUG, logger="lldsched"):
        for n in range(100):
            dispatcher.publish(event(n))
        assert dispatcher.flush(5)
    dispatcher.close(5)
    assert seen == list(range(100))
    # Each failure is logged; the first with its traceback, at ERROR, the repeats in
    # its window at DEBUG, naming the error (docs/decisions/logging.md, "Logging").
    lines = [r for r in caplog.records if r.name == "lldsched.listeners"]
    assert [r.levelno for r in lines] == [logging.ERROR] + [logging.DEBUG] * 99
    assert lines[0].exc_info is not None and caplog.text.count("KeyError: 'oops'") == 100


def stuck_in_an_event(dispatcher: EventDispatcher) -> threading.Event:
    """Start ``dispatcher`` with a listener that stays inside each event until the event
    returned is set; returns once it is inside the first, published here."""
    inside = threading.Event()
    go_on = threading.Event()

    def stuck(e: TaskEvent) -> None:
        inside.set()
        go_on.wait(5)

    dispatcher.add(stuck)
    dispatcher.start()
    dispatcher.publish(event(1))
    assert inside.wait(5)
    return go_on


def test_a_flush_that_timed_out_leaves_nothing_waiting_behind() -> None:
    """A listener stuck in an event, and ``flush`` (``wait_idle``'s) asked again and again
    with a short timeout: each says False, and none leaves its waiter for the delivery
    thread to let go (which would be kept until the stuck listener returned, one per
    call)."""
    dispatcher = EventDispatcher()
    go_on = stuck_in_an_event(dispatcher)
    for _ in range(3):
        assert not dispatcher.flush(timeout=0.01)  # the listener is inside: never True
    assert not dispatcher._flushing
    go_on.set()
    assert dispatcher.flush(timeout=5)
    dispatcher.close()


def test_a_removed_listener_is_not_kept_alive_by_the_idle_delivery_thread() -> None:
    """Once removed and dropped, a listener is garbage even while no event comes: the
    delivery thread, waiting for the next event, kept the list of listeners of the last
    one it delivered (a closed ControlPanel stayed referenced until the next event)."""

    class Listening:
        def __call__(self, e: TaskEvent) -> None:
            pass

    dispatcher = EventDispatcher()
    listening = Listening()
    dispatcher.add(listening)
    dispatcher.start()
    dispatcher.publish(event(1))
    assert dispatcher.flush(5)  # delivered: the thread now waits for the next event
    assert dispatcher.remove(listening)
    ref = weakref.ref(listening)
    del listening
    gc.collect()
    assert ref() is None, "the idle delivery thread keeps the removed listener alive"
    dispatcher.close(5)


def test_a_listener_that_falls_behind_loses_the_oldest_events_not_the_newest(
    caplog: pytest.LogCaptureFixture,
) -> None:
    dispatcher = EventDispatcher(backlog=10)
    gate, holding = threading.Event(), threading.Event()
    seen: list[int] = []

    def slow(e: TaskEvent) -> None:
        holding.set()
        gate.wait(5)
        seen.append(int(e.at))

    dispatcher.add(slow)
    dispatcher.start()
    with caplog.at_level(logging.WARNING, logger="lldsched"):
        dispatcher.publish(event(0))
        assert holding.wait(5)  # the listener holds event 0; the rest pile up
        for n in range(1, 50):
            dispatcher.publish(event(n))
        gate.set()
        assert dispatcher.flush(5)
    dispatcher.close(5)
    assert seen == [0, *range(40, 50)]
    assert dispatcher.dropped == 39
    assert caplog.text.count("fell 10 events behind") == 1  # once per overflow episode


def test_a_listener_that_overflows_at_every_burst_is_warned_of_once_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A listener that catches up between bursts but not within them overflows at each
    burst: each overflow wrote a WARNING (as many as the events dropped, with bursts
    one event too long).  Now the first overflow of a minute is a WARNING, the others
    DEBUG lines, and the next minute's WARNING counts them and what they dropped."""
    now = [0.0]
    dispatcher = EventDispatcher(backlog=3, repeats=Repeats(clock=lambda: now[0]))
    gate, holding = threading.Semaphore(0), threading.Semaphore(0)
    seen: list[int] = []

    def slow(e: TaskEvent) -> None:
        if e.at < 0:  # a burst's head: held while the burst piles up behind it
            holding.release()
            assert gate.acquire(timeout=5)
        seen.append(int(e.at))

    def burst(first: int) -> None:
        dispatcher.publish(event(-1))
        assert holding.acquire(timeout=5)  # the listener holds it; the rest pile up
        for n in range(first, first + 5):  # 5 behind a backlog of 3: 2 dropped
            dispatcher.publish(event(n))
        gate.release()
        assert dispatcher.flush(5)  # caught up: the overflow is over

    dispatcher.add(slow)
    dispatcher.start()
    with caplog.at_level(logging.DEBUG, logger="lldsched.listeners"):
        for first in (0, 10, 20):  # three overflows inside one minute
            burst(first)
        now[0] = 61.0
        burst(30)  # a minute later: warned again, counting what the DEBUG lines said
    dispatcher.close(5)
    assert [n for n in seen if n >= 0] == [2, 3, 4, 12, 13, 14, 22, 23, 24, 32, 33, 34]
    assert dispatcher.dropped == 8
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "lldsched.listeners"]
    warning, debug = logging.WARNING, logging.DEBUG
    assert [level for level, _ in lines] == [warning, debug, debug, warning]
    assert lines[0][1] == (
        "listeners fell 3 events behind; dropping the oldest (metrics().dropped_events counts them)"
    )
    assert lines[3][1] == (
        "listeners fell 3 events behind; dropping the oldest (5 more dropped since the "
        "last such warning, 2 overflows since; metrics().dropped_events counts them)"
    )


def test_a_slow_listener_on_a_scheduler_never_blocks_its_workers(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    gate = threading.Event()
    scheduler = make_scheduler(clock=clock, listeners=[lambda e: gate.wait(5)], listener_backlog=10)
    tasks = [scheduler.schedule(f"t{n}", lambda: None, OneTime(delay=0)) for n in range(50)]
    try:
        assert scheduler.wait_idle(timeout=0.2) is False  # events wait, but the runs are done:
        assert all(task.status is TaskStatus.SUCCEEDED for task in tasks)
        assert scheduler.dropped_events > 0
    finally:
        gate.set()
    settle(scheduler)


def test_listeners_can_be_added_and_removed_while_running(
    make_scheduler: SchedulerFactory, clock: FakeClock
) -> None:
    scheduler = make_scheduler(clock=clock)
    log = EventLog()
    scheduler.add_listener(log)
    scheduler.schedule("a", lambda: None, OneTime(delay=0))
    settle(scheduler)
    assert [r.name for r in log.runs()] == ["a"]
    assert scheduler.remove_listener(log) is True
    scheduler.schedule("b", lambda: None, OneTime(delay=0))
    settle(scheduler)
    assert [r.name for r in log.runs()] == ["a"]  # removed: it hears nothing more
    assert scheduler.remove_listener(log) is False
    # the last one gone, no event object is built any more (the path with no listener)
    assert scheduler._core.emit is None


def test_event_log_runs_leave_out_slots_a_misfire_policy_decided() -> None:
    log = EventLog()
    ran_record = ExecutionRecord("task-1", "t", 1, 0, 0, 0, 0, 1, True)
    missed = ExecutionRecord(
        "task-1", "t", 0, 60, 60, -1, 90, 90, False, None, False, Outcome.MISSED
    )
    for record in (ran_record, missed):
        log.on_event(
            TaskEvent("task-1", "t", TaskStatus.SCHEDULED, TaskStatus.SCHEDULED, 0, record)
        )
    assert log.runs("t") == [ran_record] and len(log.events) == 2


def test_a_dispatcher_that_published_nothing_has_delivered_everything(clock: FakeClock) -> None:
    """Nothing published, nothing to wait for: ``delivered`` is True and ``flush`` returns
    True at once, with no delivery thread started; so a scheduler with nothing registered
    is idle before ``start()`` (counted busy, it would wait out its timeout and say
    False)."""
    dispatcher = EventDispatcher()
    assert dispatcher.delivered and not dispatcher.busy
    assert dispatcher.flush(timeout=5)
    assert dispatcher.thread is None
    scheduler = Scheduler(clock=clock)
    assert scheduler.wait_idle(timeout=5) and scheduler.wait_drained(timeout=5)


def test_the_delivery_thread_never_holds_the_interpreters_exit() -> None:
    """Each delivery thread is a daemon, the one started before ``start()`` (for events
    published then) as the one that waits from ``start()`` to ``close()``: a dispatcher
    never closed (a scheduler never shut down) leaves a thread waiting for events for
    good, and a thread that is not a daemon would keep the process from exiting."""
    heard = threading.Event()
    dispatcher = EventDispatcher()
    dispatcher.add(lambda _: heard.set())
    dispatcher.publish(event(1))
    before = dispatcher.thread
    assert before is not None and before.daemon
    assert heard.wait(5) and dispatcher.flush(timeout=5)
    before.join()  # it ends once it delivered (LINGER later)
    dispatcher.start()
    steady = dispatcher.thread
    assert steady is not None and steady is not before and steady.daemon
    dispatcher.close()


class ParkingCondition(threading.Condition):
    """The dispatcher's condition, telling the test each time its delivery thread parks on
    it, and for how long (``None``: until notified)."""

    def __init__(self, lock: threading.Lock) -> None:
        super().__init__(lock)
        self.parked = threading.Event()
        self.timeouts: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.timeouts.append(timeout)
        self.parked.set()
        return super().wait(timeout)


def test_once_started_one_delivery_thread_waits_for_events_until_close() -> None:
    """From ``start()`` to ``close()`` the delivery thread waits for the next event with no
    time limit (one thread throughout), not for the moment a thread started before
    ``start()`` lingers for before it ends (one more thread at every lull)."""
    dispatcher = EventDispatcher()
    cond = ParkingCondition(dispatcher._lock)
    dispatcher._cond = cond
    dispatcher.start()
    assert cond.parked.wait(5)
    assert cond.timeouts == [None]
    dispatcher.close()
    assert dispatcher.thread is not None and not dispatcher.thread.is_alive()


def test_before_start_the_delivery_thread_lingers_for_more_before_it_ends() -> None:
    """Before ``start()`` the thread started for the events published waits
    :data:`LINGER` seconds for more once it delivered them, so that a burst of
    registrations with lulls between is delivered by one thread, not one per lull."""
    dispatcher = EventDispatcher()
    cond = ParkingCondition(dispatcher._lock)
    dispatcher._cond = cond
    dispatcher.publish(event(1))
    assert cond.parked.wait(5)
    assert cond.timeouts == [LINGER]
    thread = dispatcher.thread
    assert thread is not None
    thread.join()  # no more came: it ended
    assert dispatcher.delivered


def test_a_flush_is_let_go_as_the_last_event_is_delivered_not_at_its_timeout() -> None:
    """A ``flush`` (``wait_idle``'s) waiting behind a listener inside an event is let go
    as that event's delivery ends, before the delivery thread waits for more (not let
    go, it would wait out its timeout, and say True only then)."""
    dispatcher = EventDispatcher()
    cond = ParkingCondition(dispatcher._lock)
    dispatcher._cond = cond
    go_on = stuck_in_an_event(dispatcher)
    answers: list[bool] = []
    flusher = threading.Thread(target=lambda: answers.append(dispatcher.flush(60)), daemon=True)
    flusher.start()
    wait_until(lambda: bool(dispatcher._flushing), timeout=5, what="flush() to wait")
    cond.parked.clear()
    go_on.set()
    assert cond.parked.wait(5)  # delivered, and waiting for the next event
    assert not dispatcher._flushing  # the flush let go
    flusher.join()
    assert answers == [True]
    dispatcher.close()


def test_a_dispatcher_closed_is_not_started_again() -> None:
    """``start()`` once closed is a no-op: no thread is left waiting for events that no
    ``close()`` will end, and an event published then is still delivered, by a thread
    that ends once it is (as after a shutdown)."""
    heard = threading.Event()
    dispatcher = EventDispatcher()
    dispatcher.add(lambda _: heard.set())
    dispatcher.start()
    first = dispatcher.thread
    dispatcher.close()
    assert first is not None and not first.is_alive()
    dispatcher.start()
    assert dispatcher.thread is first  # no thread started
    dispatcher.publish(event(1))
    assert heard.wait(5) and dispatcher.flush(timeout=5)
    later = dispatcher.thread
    assert later is not None and later is not first
    dispatcher.close()  # joins it: it ends, not waiting for more
    assert not later.is_alive()


def test_events_before_start_are_delivered_then_not_held_until_start(clock: FakeClock) -> None:
    log = EventLog()
    scheduler = Scheduler(clock=clock, listeners=[log])
    for n in range(50):
        scheduler.schedule(f"t{n}", lambda: None, OneTime(delay=60))
    assert log.wait_for(lambda _: len(log.events) == 50, timeout=5) is not None
    assert scheduler.dropped_events == 0 and not scheduler.running
    assert scheduler.shutdown()


@pytest.mark.parametrize("escape", [SystemExit(2), KeyboardInterrupt()])
def test_a_listener_that_raises_a_base_exception_is_logged_and_later_events_still_arrive(
    make_scheduler: SchedulerFactory,
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    escape: BaseException,
) -> None:
    def exits(event: TaskEvent) -> None:
        if event.name == "first" and event.record is not None:
            raise escape

    log = EventLog()
    scheduler = make_scheduler(clock=clock, listeners=[exits, log])
    with caplog.at_level(logging.ERROR, logger="lldsched"):
        scheduler.schedule("first", lambda: None, OneTime(delay=0))
        settle(scheduler)  # before: False for ever, the delivery thread ended silently
    assert "raised on" in caplog.text and type(escape).__name__ in caplog.text
    scheduler.schedule("second", lambda: None, OneTime(delay=0))
    settle(scheduler)
    assert [record.name for record in log.runs()] == ["first", "second"]  # after it, too


def test_wait_idle_returns_once_the_run_a_listener_queued_has_finished_too() -> None:
    """wait_idle's True holds when it is returned: a listener's run_now during the
    delivery of the events is waited for too (lldsched.testing.Stepper builds on it)."""
    clock = FakeClock(0)

    def follow_up(event: TaskEvent) -> None:
        if event.name == "first" and event.record is not None:
            scheduler.run_now("second")

    with Scheduler(clock=clock, listeners=[follow_up]) as scheduler:
        hourly = FixedRate(3600, start_delay=3600)
        second = scheduler.schedule("second", lambda: None, hourly, id="second")
        for round_ in range(1, 21):  # a race, if there were one, shows within a few rounds
            scheduler.schedule("first", lambda: None, OneTime(delay=0))
            assert scheduler.wait_idle(timeout=5)
            assert second.run_count == round_


class Heard:
    """A listener that is a method: ``heard.on_event_of`` is a new bound method at each
    reading, as ``ControlPanel._on_event`` is."""

    def __init__(self) -> None:
        self.events: list[TaskEvent] = []

    def on_event_of(self, event: TaskEvent) -> None:
        self.events.append(event)


@pytest.mark.parametrize("kind", ["threaded", "simulated"])
def test_a_method_listener_is_one_listener_however_often_it_is_read(kind: str) -> None:
    """Before: ``remove_listener(obj.method)`` compared by identity a bound method made
    anew, found nothing and returned False (a closed ControlPanel went on hearing every
    event), and ``add_listener`` took the same method twice (every event heard twice)."""
    heard = Heard()
    runtime = Scheduler(clock=FakeClock(0)) if kind == "threaded" else Simulation()
    try:
        runtime.add_listener(heard.on_event_of)
        with pytest.raises(ValidationError, match=r"on_event_of of .* is registered already"):
            runtime.add_listener(heard.on_event_of)  # read again: the same listener
        runtime.add_listener(print)
        with pytest.raises(ValidationError, match="is registered already"):
            runtime.add_listener(print)  # a function too
        assert runtime.remove_listener(print)
        assert runtime.remove_listener(heard.on_event_of)  # read again: found
        assert not runtime.remove_listener(heard.on_event_of)
        other = Heard()  # the same method of another object is another listener
        runtime.add_listener(heard.on_event_of)
        runtime.add_listener(other.on_event_of)
        assert runtime.remove_listener(other.on_event_of)
        assert runtime.remove_listener(heard.on_event_of)
    finally:
        if isinstance(runtime, Scheduler):
            assert runtime.shutdown(timeout=5)


@pytest.mark.parametrize("kind", ["threaded", "simulated"])
def test_a_verb_after_shutdown_reaches_the_listeners_with_no_further_call(kind: str) -> None:
    """A ``pause`` and a ``cancel`` allowed after a shutdown are heard as they happen,
    on both runtimes: the threaded one queued them for a delivery thread that had ended,
    so a listener heard them only at a later ``wait_idle()`` or ``shutdown()``."""
    log = EventLog()
    runtime: Scheduler | Simulation
    if kind == "threaded":
        runtime = Scheduler(clock=FakeClock(0), listeners=[log])
        runtime.start()
        task = runtime.schedule("later", lambda: None, OneTime(delay=60))
    else:
        runtime = Simulation(1, listeners=[log])
        task = runtime.schedule("later", OneTime(delay=60))
    assert runtime.shutdown()
    runtime.pause(task.id)
    runtime.cancel(task.id)
    heard = log.wait_for(lambda e: e.status is TaskStatus.CANCELLED, timeout=5)
    assert heard is not None and heard.previous is TaskStatus.PAUSED
    assert [e.status for e in log.events][-2:] == [TaskStatus.PAUSED, TaskStatus.CANCELLED]


@pytest.mark.parametrize("kind", ["threaded", "simulated"])
def test_a_listeners_verbs_act_without_deadlock_and_are_heard_after_its_event(kind: str) -> None:
    """docs/GUIDE.md, "Listeners": a listener may call the runtime's verbs, ``shutdown()``
    included.  On hearing task a's run begin, it pauses a (whose run is still going:
    its action waits for the listener), cancels b and registers c; on c's success it
    shuts the runtime down.  Every listener hears a's transitions in their order, on
    both runtimes: the simulation called the listeners at once with the pause's event,
    from inside the first listener, so the listener after it heard ``running ->
    paused`` before ``scheduled -> running``."""
    log = EventLog()
    shut: list[bool] = []
    gate = threading.Event()  # a's run (on threads) goes on once the listener paused it
    runtime: Scheduler | Simulation

    def verbs(event: TaskEvent) -> None:
        if event.task_id == "a" and event.status is TaskStatus.RUNNING:
            assert runtime.pause("a") and runtime.cancel("b")
            if isinstance(runtime, Scheduler):
                runtime.schedule("c", lambda: None, OneTime(delay=0), id="c")
            else:
                runtime.schedule("c", OneTime(delay=0), id="c")
            gate.set()
        elif event.task_id == "c" and event.status is TaskStatus.SUCCEEDED:
            shut.append(runtime.shutdown(timeout=5))

    if kind == "threaded":
        runtime = Scheduler(workers=2, clock=FakeClock(0), listeners=[verbs, log])
        runtime.schedule("a", lambda: gate.wait(5), FixedRate(10), id="a")
        runtime.schedule("b", lambda: None, FixedRate(10), id="b", paused=True)
        runtime.start()
        assert log.wait_for(lambda e: e.task_id == "c" and e.status is TaskStatus.SUCCEEDED)
        runtime.shutdown(timeout=5)  # (the log heard c after the listener's shutdown returned)
    else:
        runtime = Simulation(2, listeners=[verbs, log])
        runtime.schedule("a", FixedRate(10), id="a", duration=3)
        runtime.schedule("b", FixedRate(10), id="b", paused=True)
        runtime.run_for(60)  # the listener's shutdown ends it once a's run in flight ended
        assert runtime.now == 3.0
    assert shut == [True] and not runtime.running
    assert [task.status for task in runtime.tasks()] == [
        TaskStatus.PAUSED, TaskStatus.CANCELLED, TaskStatus.SUCCEEDED,
    ]  # fmt: skip
    new, running, paused = None, TaskStatus.RUNNING, TaskStatus.PAUSED
    scheduled = TaskStatus.SCHEDULED
    assert [(e.previous, e.status) for e in log.events if e.task_id == "a"] == [
        (new, scheduled), (scheduled, running), (running, paused), (paused, paused),
    ]  # fmt: skip
    (record,) = runtime.task("a").history
    assert record.ok  # the run the pause found in flight ended as it would have


def test_a_listener_hears_the_events_published_while_it_is_registered_only() -> None:
    """``add_listener`` delivers every *future* event: a listener added while earlier
    events waited in the queue (a slow listener ahead of them) heard those too, as the
    delivery thread read the listeners when it took each event, not when it was
    published.  A removed one is not called with an event whose delivery had not begun
    when ``remove_listener`` returned, even one published before."""
    gate, holding = threading.Event(), threading.Event()

    def slow(e: TaskEvent) -> None:
        holding.set()
        gate.wait(5)

    early, late = EventLog(), EventLog()
    scheduler = Scheduler(clock=FakeClock(0), listeners=[slow, early])
    scheduler.start()
    try:
        scheduler.schedule("a", lambda: None, OneTime(delay=60), id="a")
        assert holding.wait(5)  # the slow listener holds a's event
        scheduler.schedule("b", lambda: None, OneTime(delay=60), id="b")  # it waits
        scheduler.add_listener(late)
        assert scheduler.remove_listener(early)
        scheduler.schedule("c", lambda: None, OneTime(delay=60), id="c")
        gate.set()
        assert scheduler.wait_idle(timeout=5)
    finally:
        gate.set()
        assert scheduler.shutdown(timeout=5)
    # early heard a's event as its delivery had begun; b's had not, c's came after
    assert [e.task_id for e in early.events] == ["a"]
    assert [e.task_id for e in late.events] == ["c"]


def test_a_simulated_listener_added_or_removed_by_a_listener_follows_the_same_rule() -> None:
    """In a ``Simulation`` a listener that adds one on hearing a's run begin, then pauses
    a: the one added heard the event under way (the listeners' list grew as it was
    iterated) and the pause published before it was added; a listener removed there
    heard the pause all the same.  Each now hears what was published while it was
    registered (and, removed, nothing not yet begun)."""
    early, late = EventLog(), EventLog()
    sim: Simulation

    def verbs(e: TaskEvent) -> None:
        if e.task_id == "a" and e.status is TaskStatus.RUNNING:
            assert sim.pause("a")  # published: waits for the event under way
            sim.add_listener(late)
            assert sim.remove_listener(early)
            sim.schedule("b", OneTime(delay=60), id="b")

    sim = Simulation(1, listeners=[verbs, early])
    sim.schedule("a", OneTime(delay=0), id="a", duration=3)
    sim.run_for(1)
    assert [(e.task_id, e.status) for e in early.events] == [
        ("a", TaskStatus.SCHEDULED), ("a", TaskStatus.RUNNING),
    ]  # fmt: skip
    assert [(e.task_id, e.status) for e in late.events] == [("b", TaskStatus.SCHEDULED)]


def test_queued_events_reach_the_listeners_registered_as_each_was_published() -> None:
    """Listeners added and removed while events wait in the dispatcher's queue (its
    thread held in a listener by the first event, so nothing is delivered meanwhile):
    each event reaches the listeners registered when it was published that are still
    registered as it is delivered.  A listener removed and added again is a new
    registration, which hears none of the events published before it; one dropped from
    the full backlog reaches nobody."""
    dispatcher = EventDispatcher(backlog=4)
    entered, release = threading.Event(), threading.Event()

    def gate(e: TaskEvent) -> None:
        if e.task_id == "task-0":
            entered.set()
            release.wait(timeout=5)

    dispatcher.add(gate)
    dispatcher.publish(event(0))  # its thread takes it, and waits in gate
    assert entered.wait(timeout=5)
    a, b, c = EventLog(), EventLog(), EventLog()
    dispatcher.add(a)
    dispatcher.publish(event(1))  # to a; dropped by event 5
    dispatcher.add(b)
    dispatcher.publish(event(2))  # to a (removed below) and b
    assert dispatcher.remove(a)
    dispatcher.add(a)
    dispatcher.publish(event(3))  # to b and a again
    dispatcher.add(c)
    dispatcher.publish(event(4))
    dispatcher.publish(event(5))  # the backlog full: event 1 dropped
    dispatcher.start()
    release.set()
    try:
        assert dispatcher.flush(timeout=5)
    finally:
        dispatcher.close(timeout=5)
    assert dispatcher.dropped == 1
    assert [e.task_id for e in a.events] == ["task-3", "task-4", "task-5"]
    assert [e.task_id for e in b.events] == ["task-2", "task-3", "task-4", "task-5"]
    assert [e.task_id for e in c.events] == ["task-4", "task-5"]


def test_a_simulated_listener_removed_and_added_again_hears_none_of_the_events_waiting() -> None:
    """The simulation's rule with events waiting behind the one under way (a listener's
    verbs publish them): a listener removed and added again there does not hear b's
    event, published before its new registration, and each listener added hears the
    events published after it only."""
    early, late, later = EventLog(), EventLog(), EventLog()
    sim: Simulation

    def verbs(e: TaskEvent) -> None:
        if e.task_id == "a":
            sim.schedule("b", OneTime(delay=60), id="b")  # waits for a's event
            assert sim.remove_listener(early)  # it still hears a's event, after this one
            sim.add_listener(early)
            sim.add_listener(late)
            sim.schedule("c", OneTime(delay=60), id="c")
            sim.add_listener(later)
            sim.schedule("d", OneTime(delay=60), id="d")

    sim = Simulation(1, listeners=[verbs, early])
    sim.schedule("a", OneTime(delay=60), id="a")
    assert [e.task_id for e in early.events] == ["a", "c", "d"]
    assert [e.task_id for e in late.events] == ["c", "d"]
    assert [e.task_id for e in later.events] == ["d"]
