"""What the simulation says of its coroutine lane and of the entries it sets aside, read
beside the threaded runtime in the same state: ``metrics().coroutines`` counts the
coroutine runs in flight and those due that wait for a slot, as ``Scheduler.metrics()``
does; ``queue_stats()`` and ``metrics().queued`` count an entry set aside
(:mod:`lldsched.sim.lanes`) where the simulation's model keeps it (docs/decisions/simulation.md,
"What the simulation reads of the entries it sets aside"); and a plain function that
returns an awaitable gives its worker back at once, as on threads, its awaitable run on
the coroutine lane."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator

import pytest

from lldsched import EventLog, FakeClock, OneTime, RetryPolicy, Scheduler
from lldsched.sim import Simulation, fixed
from tests.waits import wait_until

T = 1_000_000.0
ONCE = RetryPolicy(max_attempts=1)


async def no_op() -> None:
    pass


def plain() -> None:
    pass


def returns_no_op() -> Awaitable[None]:  # a plain function returning a coroutine
    return no_op()


class Gate:
    """Coroutine runs held on threads until :meth:`open`; counts the runs begun."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.begun = 0

    async def held(self) -> None:
        self.begun += 1
        while not self.opened.is_set():
            await asyncio.sleep(0.001)

    def returns_held(self) -> Awaitable[None]:  # a plain function returning a coroutine
        return self.held()

    def open(self) -> None:
        self.opened.set()


@pytest.fixture
def gate() -> Iterator[Gate]:
    made = Gate()
    yield made
    made.open()


def lane_state(runtime: Simulation | Scheduler, action: Callable[[], object]) -> None:
    """Three coroutine tasks due at 0 on a lane of two (two run, one waits for a slot)
    and one due at 100 (not due yet)."""
    for name in ("c1", "c2", "c3"):
        runtime.schedule(name, schedule=OneTime(delay=0), action=action, id=name, retry=ONCE)
    runtime.schedule("later", schedule=OneTime(delay=100), action=action, id="later", retry=ONCE)


@pytest.mark.parametrize("at", [0, 10])
def test_metrics_count_the_coroutine_runs_in_flight_and_waiting_as_on_threads(
    gate: Gate, at: float
) -> None:
    """Read 10 s after the three fell due, or at that very instant (``c3`` waits for a
    slot from then: the loop's, not the heap's)."""
    sim = Simulation(workers=1, start=T, max_coroutines=2)
    lane_state(sim, no_op)
    for name in ("c1", "c2", "c3", "later"):
        sim.model(name, duration=fixed(50))
    sim.run(T + at)
    simulated = sim.metrics()

    clock = FakeClock(T)
    with Scheduler(workers=1, clock=clock, max_coroutines=2) as scheduler:
        lane_state(scheduler, gate.held)
        clock.set(T + at)
        wait_until(lambda: gate.begun == 2 and scheduler.metrics().coroutines == 3,
                   timeout=10, what="two coroutine runs and one waiting")  # fmt: skip
        threaded = scheduler.metrics()
        gate.open()
        assert scheduler.wait_idle(10)
    # "c3", due at 0, has waited ``at`` for a slot: late on both (lag read 0.0 of it)
    for metrics in (threaded, simulated):
        assert (metrics.coroutines, metrics.busy, metrics.queued, metrics.lag) == (3, 0, 1, at)


def test_queue_stats_count_what_is_set_aside_as_in_the_heap_but_a_due_coroutine() -> None:
    """An entry set aside before it is due, or a thread task's due entry waiting for a
    worker, is counted where the simulation keeps it in its model (the heap: it has no
    hand-off queue); a coroutine entry due and waiting for a slot is the event loop's,
    as on threads (``metrics().coroutines``, and late in ``lag``), not the heap's."""
    sim = Simulation(workers=1, start=T, max_coroutines=2)
    lane_state(sim, no_op)
    sim.schedule("long", OneTime(delay=0), action=plain, id="long", duration=fixed(50))
    sim.schedule("waits", OneTime(delay=5), action=plain, id="waits", duration=fixed(5))
    for name in ("c1", "c2", "c3", "later"):
        sim.model(name, duration=fixed(50))
    without_lanes = Simulation(workers=1, start=T)
    without_lanes.schedule("long", OneTime(delay=0), action=plain, id="long",
                           duration=fixed(50))  # fmt: skip
    without_lanes.schedule("waits", OneTime(delay=5), action=plain, id="waits",
                           duration=fixed(5))  # fmt: skip
    sim.run(T + 10)
    without_lanes.run(T + 10)
    # "later" (not due yet) and "waits" (due, no worker free): two live entries, as the
    # simulation of thread tasks alone counts "waits"; "c3" waits for the loop.
    assert sim.queue_stats() == (2, 0)
    assert without_lanes.queue_stats() == (1, 0)
    metrics = sim.metrics()
    assert (metrics.queued, metrics.coroutines, metrics.busy) == (2, 3, 1)
    assert metrics.lag == 10.0  # "c3", due at 0, waiting for a slot of the loop, as on threads
    assert without_lanes.metrics().lag == 5.0  # "waits", due at 5
    sim.cancel("waits")  # its entry set aside is a tombstone now, until it surfaces
    assert sim.queue_stats() == (2, 1)
    assert sim.metrics().queued == 1
    sim.run(T + 200)
    assert sim.queue_stats() == (0, 0)
    assert sim.metrics().coroutines == 0


def test_a_plain_function_returning_a_coroutine_gives_its_worker_back_as_on_threads(
    gate: Gate,
) -> None:
    """On threads the worker calls the function and hands the awaitable to the event
    loop: it is free at once, and a thread task due at 5 starts at 5.  The simulation held
    the worker for the whole run: the thread task started at 50."""
    sim = Simulation(workers=1, start=T)
    sim.schedule("a", OneTime(delay=0), action=returns_no_op, id="a", duration=fixed(50))
    sim.schedule("b", OneTime(delay=5), action=plain, id="b", duration=fixed(1))
    sim.run(T + 10)
    simulated_metrics = sim.metrics()
    sim.run(T + 100)
    simulated = [(r.task_id, r.started - T, r.finished - T, r.worker) for r in sim.records()]

    clock, log = FakeClock(T), EventLog()
    with Scheduler(workers=1, clock=clock, listeners=[log]) as scheduler:
        scheduler.schedule("a", gate.returns_held, OneTime(delay=0), id="a")
        wait_until(lambda: gate.begun == 1, timeout=10, what="a's coroutine")
        clock.set(T + 5)
        scheduler.schedule("b", plain, OneTime(delay=0), id="b")
        wait_until(lambda: len(scheduler.task("b").history) == 1, timeout=10, what="b's run")
        clock.set(T + 6)  # b's run takes 1 s in the simulation; none here (it is the same)
        threaded_metrics = scheduler.metrics()
        clock.set(T + 50)
        gate.open()
        assert scheduler.wait_idle(10)
    threaded = [(e.record.task_id, e.record.started - T, e.record.worker)
                for e in log.events if e.record is not None]  # fmt: skip
    assert threaded == [("b", 5, 0), ("a", 0, 0)]
    assert simulated == [("b", 5, 6, 0), ("a", 0, 50, 0)]
    assert (threaded_metrics.busy, threaded_metrics.coroutines) == (0, 1)
    assert (simulated_metrics.busy, simulated_metrics.coroutines) == (0, 1)


def test_a_plain_functions_awaitable_waits_for_a_place_on_a_full_lane() -> None:
    """On a lane of one, the awaitable "b" returned at 5 waits for "a"'s to end at 50,
    then takes its 10 s: recorded from its worker's start (5) to 60, on that worker; its
    worker ran "c" meanwhile.  Counted in ``coroutines`` while it waits, as on threads."""
    sim = Simulation(workers=1, start=T, max_coroutines=1)
    sim.schedule("a", OneTime(delay=0), action=returns_no_op, id="a", duration=fixed(50))
    sim.schedule("b", OneTime(delay=5), action=returns_no_op, id="b", duration=fixed(10))
    sim.schedule("c", OneTime(delay=6), action=plain, id="c", duration=fixed(1))
    sim.run(T + 10)
    assert (sim.metrics().coroutines, sim.busy) == (2, 0)
    sim.run(T + 100)
    records = [(r.task_id, r.started - T, r.finished - T, r.worker) for r in sim.records()]
    assert records == [("c", 6, 7, 0), ("a", 0, 50, 0), ("b", 5, 60, 0)]
    assert sim.metrics().coroutines == 0


def test_a_plain_functions_awaitable_waits_for_a_place_on_threads_too() -> None:
    """The threaded side of the test above ("c" takes no time here)."""
    first, second = Gate(), Gate()
    clock, log = FakeClock(T), EventLog()
    try:
        with Scheduler(workers=1, clock=clock, listeners=[log], max_coroutines=1) as scheduler:
            scheduler.schedule("a", first.returns_held, OneTime(delay=0), id="a")
            wait_until(lambda: first.begun == 1, timeout=10, what="a's coroutine")
            clock.set(T + 5)
            scheduler.schedule("b", second.returns_held, OneTime(delay=0), id="b")
            wait_until(lambda: scheduler.metrics().coroutines == 2, timeout=10,
                       what="b's awaitable handed over")  # fmt: skip
            clock.set(T + 6)
            scheduler.schedule("c", plain, OneTime(delay=0), id="c")
            wait_until(lambda: len(scheduler.task("c").history) == 1, timeout=10, what="c")
            assert (second.begun, scheduler.metrics().busy) == (0, 0)  # b waits, no worker
            clock.set(T + 50)
            first.open()
            wait_until(lambda: second.begun == 1, timeout=10, what="b's coroutine")
            clock.set(T + 60)
            second.open()
            assert scheduler.wait_idle(10)
    finally:
        first.open()
        second.open()
    records = [(e.record.task_id, e.record.started - T, e.record.finished - T, e.record.worker)
               for e in log.events if e.record is not None]  # fmt: skip
    assert records == [("c", 6, 6, 0), ("a", 0, 50, 0), ("b", 5, 60, 0)]


@pytest.mark.parametrize("verb", ["pause", "cancel"])
def test_a_verb_ends_a_plain_functions_awaitable_waiting_for_a_place(verb: str) -> None:
    sim = Simulation(workers=1, start=T, max_coroutines=1)
    sim.schedule("a", OneTime(delay=0), action=returns_no_op, id="a", duration=fixed(50))
    sim.schedule("b", OneTime(delay=5), action=returns_no_op, id="b", duration=fixed(10),
                 retry=ONCE)  # fmt: skip
    sim.at(T + 20, lambda: getattr(sim, verb)("b"))
    sim.run(T + 100)
    records = [(r.task_id, r.started - T, r.finished - T, r.error) for r in sim.records()]
    why = "paused" if verb == "pause" else "cancelled"
    assert records == [("b", 5, 20, f"CancelledError: task {why}"), ("a", 0, 50, None)]
    assert sim.metrics().coroutines == 0


def test_places_freed_at_once_go_first_come_first_served_entries_and_awaitables() -> None:
    """Two places free at 50: the coroutine task's entry due at 5 takes one and the
    awaitable handed over at 6 the other, as the threaded loop begins what waits in the
    order it came; the one handed over at 7 waits on.  (A first cut gave a freed place to
    an awaitable only at a finish and deferred to the entry there for each place freed:
    the awaitable of 6 waited for the next finish.)"""
    sim = Simulation(workers=1, start=T, max_coroutines=2)
    for name in ("a", "b"):
        sim.schedule(name, OneTime(delay=0), action=returns_no_op, id=name, duration=fixed(50))
    sim.schedule("c", OneTime(delay=5), action=no_op, id="c", duration=fixed(10))
    sim.schedule("d", OneTime(delay=6), action=returns_no_op, id="d", duration=fixed(10))
    sim.schedule("e", OneTime(delay=7), action=returns_no_op, id="e", duration=fixed(10))
    sim.run(T + 20)
    assert sim.metrics().coroutines == 5
    sim.run(T + 100)
    records = sorted((r.task_id, r.started - T, r.finished - T) for r in sim.records())
    assert records == [
        ("a", 0, 50), ("b", 0, 50), ("c", 50, 60), ("d", 6, 60), ("e", 7, 70)
    ]  # fmt: skip


def test_a_drain_less_shutdown_runs_the_awaitables_handed_over() -> None:
    """Begun on their workers, they run on as on threads (the loop keeps its flights at a
    shutdown without a drain), while a coroutine entry due then does not start."""
    sim = Simulation(workers=1, start=T, max_coroutines=1)
    sim.schedule("a", OneTime(delay=0), action=returns_no_op, id="a", duration=fixed(50))
    sim.schedule("c", OneTime(delay=5), action=no_op, id="c", duration=fixed(10))
    sim.schedule("d", OneTime(delay=6), action=returns_no_op, id="d", duration=fixed(10))
    sim.run(T + 20)
    sim.shutdown(drain=False, timeout=None)
    records = [(r.task_id, r.started - T, r.finished - T) for r in sim.records()]
    assert records == [("a", 0, 50), ("d", 6, 60)]
    assert sim.task("c").next_run_at == T + 5


def test_at_one_instant_a_workers_start_goes_before_an_awaitable_handed_over() -> None:
    """Task b hands its awaitable over at 5, the instant c is due on the other worker: c
    starts first, as the threaded timer hands the workers their entries before the event
    loop its own; then the awaitable begins on the lane."""
    sim = Simulation(workers=2, start=T, max_coroutines=1)
    sim.schedule("co", OneTime(delay=1_000), action=no_op, id="co", duration=fixed(0))
    sim.schedule("b", OneTime(delay=5), action=returns_no_op, id="b", duration=fixed(10))
    sim.schedule("c", OneTime(delay=5), action=plain, id="c", duration=fixed(1))
    steps = [sim.step() for _ in range(3)]
    assert [(s.at - T, s.kind, s.task_id) for s in steps if s is not None] == [
        (5, "start", "b"),  # on a worker: its function returns the awaitable
        (5, "start", "c"),
        (5, "start", "b"),  # the awaitable, on the coroutine lane
    ]


def test_a_coroutine_entry_set_aside_then_cancelled_is_a_tombstone_as_on_threads(
    gate: Gate,
) -> None:
    """A coroutine task not due yet ("later") is set aside on the simulation's coroutine
    lane (its heap's head, the lane full); cancelled, it is a tombstone until it surfaces,
    as its entry in the threaded scheduler's heap is: ``queue_stats()`` counts it so on
    both, and ``metrics().queued`` not at all."""
    sim = Simulation(workers=1, start=T, max_coroutines=2)
    lane_state(sim, no_op)
    for name in ("c1", "c2", "c3", "later"):
        sim.model(name, duration=fixed(50))
    sim.run(T + 10)
    sim.cancel("later")
    simulated = (sim.queue_stats(), sim.metrics().queued)

    clock = FakeClock(T)
    with Scheduler(workers=1, clock=clock, max_coroutines=2) as scheduler:
        lane_state(scheduler, gate.held)
        clock.set(T + 10)
        wait_until(lambda: gate.begun == 2 and scheduler.metrics().coroutines == 3,
                   timeout=10, what="two coroutine runs and one waiting")  # fmt: skip
        scheduler.cancel("later")
        threaded = (scheduler.queue_stats(), scheduler.metrics().queued)
        gate.open()
        assert scheduler.wait_idle(10)
    assert simulated == threaded == ((1, 1), 0)


def test_a_thread_task_waiting_for_a_worker_beside_coroutine_tasks_is_late_as_on_threads() -> None:
    """A thread task's due entry set aside while the one worker is taken ("waits", due at
    5), with no coroutine entry waiting, is late in ``lag`` from its due instant, as the
    threaded scheduler reads the entry in its hand-off queue, and queued (the heap's, in
    the simulation's model: it has no hand-off queue)."""
    sim = Simulation(workers=1, start=T)
    sim.schedule("long", OneTime(delay=0), action=plain, duration=fixed(50), id="long")
    sim.schedule("waits", OneTime(delay=5), action=plain, duration=fixed(5), id="waits")
    sim.schedule("co", OneTime(delay=6), action=no_op, duration=fixed(5), id="co")
    sim.run(T + 20)  # "co" ran on the coroutine lane at 6, "long" still runs
    metrics = sim.metrics()
    assert (metrics.busy, metrics.coroutines, metrics.queued, metrics.lag) == (1, 0, 1, 15.0)
    assert sim.queue_stats() == (1, 0)

    clock, let_go = FakeClock(T), threading.Event()
    with Scheduler(workers=1, clock=clock) as scheduler:
        scheduler.schedule("long", lambda: let_go.wait(10), OneTime(delay=0), id="long")
        scheduler.schedule("waits", plain, OneTime(delay=5), id="waits")
        scheduler.schedule("co", no_op, OneTime(delay=6), id="co")
        try:
            clock.set(T + 20)
            wait_until(lambda: scheduler.metrics().handoff == 1, timeout=10,
                       what="'waits' handed out")  # fmt: skip
            wait_until(lambda: scheduler.task("co").run_count == 1, timeout=10, what="'co' run")
            threaded = scheduler.metrics()
        finally:
            let_go.set()
        assert scheduler.wait_idle(10)
    assert (threaded.busy, threaded.coroutines, threaded.lag) == (1, 0, 15.0)
