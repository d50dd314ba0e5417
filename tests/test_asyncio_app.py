"""A scheduler inside an asyncio application: started and shut down from coroutines without
blocking the application's loop, refusals that say what to do (a shutdown from one of its
own coroutine runs, an ``async def`` listener), and failures that say where a coroutine
run is (a coroutine that cancels itself, an object of the application's loop)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import inspect
import logging
import re
import threading
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from lldsched import (
    EventLog,
    FixedRate,
    OneTime,
    RetryPolicy,
    Scheduler,
    SchedulerStateError,
    Simulation,
    TaskEvent,
    TaskStatus,
    ValidationError,
)
from lldsched.core.context import RunContext
from lldsched.errors import CANCELLED_INSIDE, doc_url
from tests.waits import wait_until


def threads_of(scheduler: Scheduler) -> list[str]:
    prefix = f"lldsched-{scheduler.name}-"
    return [thread.name for thread in threading.enumerate() if thread.name.startswith(prefix)]


def test_aclose_waits_for_the_shutdown_while_the_event_loop_goes_on_serving() -> None:
    started, released = threading.Event(), threading.Event()

    def held() -> str:
        started.set()
        assert released.wait(10), "the application's loop never released the run"
        return "released"

    async def main() -> tuple[bool, bool, Scheduler]:
        scheduler = Scheduler(workers=1, name="aclose").start()
        scheduler.schedule("held", held, OneTime(delay=0))
        assert await asyncio.to_thread(started.wait, 10)
        closing = asyncio.create_task(scheduler.aclose(timeout=20))
        await asyncio.sleep(0)  # aclose() began: its shutdown waits for the held run
        pending = not closing.done()
        released.set()  # a coroutine the loop ran while the shutdown waited for the run
        return pending, await closing, scheduler

    pending, stopped, scheduler = asyncio.run(main())
    assert pending and stopped is True
    assert [record.result for record in scheduler.task("task-1").history] == ["'released'"]
    assert threads_of(scheduler) == []


def test_async_with_starts_the_scheduler_and_closes_it_leaving_no_thread() -> None:
    async def double(n: int) -> int:
        await asyncio.sleep(0)
        return 2 * n

    async def main() -> tuple[Scheduler, list[str]]:
        async with Scheduler(name="async-with") as scheduler:
            assert scheduler.running
            task = scheduler.schedule("double", double, OneTime(delay=0), args=(21,))
            assert await asyncio.to_thread(scheduler.wait_idle, 10)
        return scheduler, [record.result or "" for record in task.history]

    scheduler, results = asyncio.run(main())
    assert results == ["42"]
    assert not scheduler.running and threads_of(scheduler) == []


def test_aclose_raises_what_shutdown_refuses_in_the_awaiting_coroutine() -> None:
    async def main(scheduler: Scheduler) -> None:
        with pytest.raises(ValidationError, match=r"shutdown\(\) timeout .*got -1"):
            await scheduler.aclose(timeout=-1)
        assert scheduler.running  # nothing was stopped
        assert await scheduler.aclose() is True

    scheduler = Scheduler(name="aclose-bad").start()
    asyncio.run(main(scheduler))
    assert not scheduler.running


def test_aclose_raises_in_the_awaiting_coroutine_what_its_shutdown_raised_on_its_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Whatever the shutdown raises on aclose()'s own thread (a store's or a handler's
    # error, a signal) is the awaiting coroutine's, not a wait for ever.  (mutation15,
    # stopping.py: `outcome = exc` dropped, the thread died of an UnboundLocalError
    # and the future was never resolved.)
    scheduler = Scheduler(name="aclose-raised").start()
    shutdown = scheduler.shutdown

    def raises(**kwargs: Any) -> bool:
        raise OSError("the store's disk went away")

    async def main() -> None:
        monkeypatch.setattr(scheduler, "shutdown", raises)
        try:
            with pytest.raises(OSError, match="the store's disk went away"):
                await asyncio.wait_for(scheduler.aclose(timeout=1), 20)
        finally:
            monkeypatch.setattr(scheduler, "shutdown", shutdown)
        assert await scheduler.aclose() is True

    asyncio.run(main())
    assert not scheduler.running


def test_shutdown_from_one_of_its_own_coroutine_runs_is_refused_and_nothing_stops() -> None:
    refused: list[str] = []

    async def stops_it(verb: str) -> None:
        try:
            if verb == "shutdown":
                scheduler.shutdown()
            else:
                await scheduler.aclose()
        except SchedulerStateError as exc:
            refused.append(str(exc))

    scheduler = Scheduler(name="refuses").start()
    try:
        for verb in ("shutdown", "aclose"):
            scheduler.schedule(verb, stops_it, OneTime(delay=0), args=(verb,))
        assert scheduler.wait_idle(10)
        assert len(refused) == 2
        assert refused[0].startswith(
            "shutdown() was called from a coroutine run on this scheduler's own event loop "
            "or an asyncio.to_thread call of one (thread lldsched-refuses-loop)"
        )
        assert refused[1].startswith("aclose() was called from a coroutine run")
        assert "threading.Thread(target=scheduler.shutdown).start()" in refused[0]
        assert scheduler.running  # refused before anything changed
        after = scheduler.schedule("after", asyncio.sleep, OneTime(delay=0), args=(0, "ran"))
        assert scheduler.wait_idle(10) and after.history[0].result == "'ran'"
    finally:
        assert scheduler.shutdown(timeout=10)


@pytest.mark.parametrize("verb", ["shutdown", "wait_idle"])
def test_a_wait_from_a_to_thread_call_of_its_own_coroutine_run_is_refused_too(verb: str) -> None:
    """``await asyncio.to_thread(scheduler.shutdown)`` from one of its own coroutine runs
    waited for that very run: the whole timeout, then the run cancelled ("scheduler shut
    down", its task left to run again) and a warning of a to_thread call still going
    (the shutdown's own); ``wait_idle`` so waited out its timeout and said False.  Both
    are refused, as from the loop itself, before anything changes."""
    refused: list[str] = []

    async def waits() -> None:
        try:
            await asyncio.to_thread(getattr(scheduler, verb), timeout=10)
        except SchedulerStateError as exc:
            refused.append(str(exc))

    scheduler = Scheduler(name="to-thread").start()
    try:
        scheduler.schedule(verb, waits, OneTime(delay=0), id="waits")
        assert scheduler.wait_idle(20)
        (said,) = refused
        assert said.startswith(f"{verb}() was called from ")
        assert "lldsched-to-thread-loop-to-thread_0" in said and "to_thread call" in said
        assert scheduler.running and scheduler.task("waits").history[0].ok
    finally:
        assert scheduler.shutdown(timeout=10)


def test_the_recipe_a_coroutine_run_that_starts_the_shutdown_on_a_thread_stops_it() -> None:
    stoppers: list[threading.Thread] = []

    async def last_job() -> str:
        stopper = threading.Thread(target=scheduler.shutdown)
        stoppers.append(stopper)
        stopper.start()
        return "stopping"

    scheduler = Scheduler(name="recipe").start()
    task = scheduler.schedule("last", last_job, OneTime(delay=0))
    log = EventLog()
    scheduler.add_listener(log)
    assert log.wait_for(lambda event: event.task_id == task.id and event.record is not None, 10)
    stoppers[0].join(10)
    assert not stoppers[0].is_alive() and not scheduler.running
    assert [record.result for record in task.history] == ["'stopping'"]  # waited for, not cut
    assert threads_of(scheduler) == []


async def listens(event: TaskEvent) -> None:
    pass


class AsyncListener:
    async def on_event(self, event: TaskEvent) -> None:
        pass


class AsyncCallable:
    async def __call__(self, event: TaskEvent) -> None:
        pass


@pytest.mark.parametrize("listener", [listens, AsyncListener(), AsyncCallable()])
def test_an_async_listener_is_refused_naming_it_and_nothing_registered_is_lost(
    listener: object,
) -> None:
    said = re.escape(repr(listener))
    with pytest.raises(ValidationError, match=rf"never awaited.*got {said}.*call_soon_threadsafe"):
        Scheduler(listeners=[listener])  # type: ignore[list-item]
    with pytest.raises(ValidationError, match=rf"got {said}"):
        Simulation(listeners=[listener])  # type: ignore[list-item]
    log = EventLog()
    scheduler = Scheduler(listeners=[log]).start()
    try:
        with pytest.raises(ValidationError, match=rf"got {said}"):
            scheduler.add_listener(listener)  # type: ignore[arg-type]
        task = scheduler.schedule("after", lambda: None, OneTime(delay=0))
        assert scheduler.wait_idle(10)
        assert log.wait_for(lambda event: event.task_id == task.id and event.record is not None)
    finally:
        assert scheduler.shutdown(timeout=10)


async def hears(event: TaskEvent) -> None:
    pass


@pytest.mark.parametrize("runtime", ["scheduler", "simulation"])
def test_a_listener_that_returns_a_coroutine_is_said_to_fail_and_the_others_still_hear(
    runtime: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A plain function that calls an ``async def`` (``lambda event: hears(event)``)
    cannot be told from any other at registration.  Its coroutine was dropped unrun at
    each event, said by nothing but Python's "coroutine ... was never awaited" warning,
    on the events thread, when the collector found it; now the event's delivery closes it
    (no warning) and logs the listener's failure, as a listener that raises is."""
    made: list[Coroutine[Any, Any, None]] = []

    def wraps_a_coroutine(event: TaskEvent) -> Coroutine[Any, Any, None]:
        made.append(hears(event))
        return made[-1]

    log = EventLog()
    caplog.set_level(logging.ERROR, logger="lldsched.listeners")
    if runtime == "scheduler":
        with Scheduler(listeners=[wraps_a_coroutine, log]) as scheduler:
            task = scheduler.schedule("job", lambda: None, OneTime(delay=0))
            assert scheduler.wait_idle(10)
            assert log.wait_for(lambda e: e.task_id == task.id and e.record is not None, 10)
    else:
        with Simulation(listeners=[wraps_a_coroutine, log]) as sim:
            task = sim.schedule("job", OneTime(delay=0))
            sim.run_for(1)
    assert made and all(inspect.getcoroutinestate(c) == inspect.CORO_CLOSED for c in made)
    assert [event.task_id for event in log.events].count(task.id) == len(made)
    (first, *_) = [r for r in caplog.records if r.name == "lldsched.listeners"]
    assert first.getMessage().startswith(
        "listener test_a_listener_that_returns_a_coroutine_is_said_to_fail_and_the_others_"
        "still_hear.<locals>.wraps_a_coroutine raised on the event of task "
    )
    error = first.__dict__["error"]  # the line's field (extra=), its traceback's last line
    assert error.startswith(
        "TypeError: a listener is called, never awaited, and this one returned <coroutine "
        "object hears at 0x"
    )
    assert error.endswith(
        ", which was closed unrun: pass a plain function that hands the event to your "
        "event loop, e.g. lambda event: loop.call_soon_threadsafe(queue.put_nowait, event) "
        f"({doc_url('docs/ASYNCIO.md')})"
    )


async def cancels_itself() -> None:
    task = asyncio.current_task()
    assert task is not None
    task.cancel()
    await asyncio.sleep(3600)


def test_a_coroutine_that_cancels_itself_failed_is_retried_and_logged_as_a_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="lldsched")
    retry = RetryPolicy(max_attempts=2, initial_backoff=0.01)
    scheduler = Scheduler(name="self-cancel").start()
    try:
        task = scheduler.schedule("quits", cancels_itself, OneTime(delay=0), retry=retry)
        assert scheduler.wait_drained(10)
    finally:
        assert scheduler.shutdown(timeout=10)
    assert [record.error for record in task.history] == [CANCELLED_INSIDE, CANCELLED_INSIDE]
    assert task.status is TaskStatus.FAILED
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "lldsched.jobs"]
    assert [level for level, _ in lines] == [logging.WARNING, logging.ERROR]
    assert "dead-lettered" in lines[1][1] and CANCELLED_INSIDE in lines[1][1]


def test_in_the_simulation_a_coroutine_that_cancels_itself_is_recorded_alike() -> None:
    sim = Simulation()
    sim.schedule(
        "quits", OneTime(delay=0), action=cancels_itself, retry=RetryPolicy(max_attempts=1)
    )
    sim.run(60)
    assert [record.error for record in sim.records()] == [CANCELLED_INSIDE]


async def awaited(future: asyncio.Future[object]) -> object:
    return await future


async def waited_for(future: asyncio.Future[object]) -> object:
    return await asyncio.wait_for(future, 5)


async def gathered(future: asyncio.Future[object]) -> object:
    return await asyncio.gather(future)


OTHER_LOOP_HINT = (
    " (coroutine actions run on the scheduler's own event loop, thread "
    "lldsched-other-loop-loop, not on the application's: run what needs the "
    "application's loop there with asyncio.run_coroutine_threadsafe(coro, app_loop), "
    "or app_loop.call_soon_threadsafe(callback) for a call that does not wait, "
    f"{doc_url('docs/ASYNCIO.md')})"
)


@pytest.mark.parametrize("awaits", [awaited, waited_for, gathered])
def test_a_future_of_the_applications_loop_fails_with_where_the_run_is_and_what_to_do(
    awaits: Callable[[asyncio.Future[object]], Coroutine[Any, Any, object]],
) -> None:
    """Awaited as it is, or through ``wait_for`` or ``gather``: asyncio refuses it
    (``... attached to a different loop``; ``wait_for`` and ``gather``: a ValueError,
    ``The future belongs to a different loop ...``), and the record says where the run
    is and what to do, as docs/ASYNCIO.md says.  The ValueError's text had no hint."""

    async def main() -> list[str | None]:
        app_future = asyncio.get_running_loop().create_future()

        async def awaits_it() -> object:
            return await awaits(app_future)

        async with Scheduler(name="other-loop") as scheduler:
            task = scheduler.schedule(
                "awaits", awaits_it, OneTime(delay=0), retry=RetryPolicy(max_attempts=1)
            )
            assert await asyncio.to_thread(scheduler.wait_idle, 10)
        app_future.cancel()
        return [record.error for record in task.history]

    (error,) = asyncio.run(main())
    assert error is not None and "to a different loop" in error  # asyncio's words
    assert error.endswith(OTHER_LOOP_HINT)


def test_each_attempt_that_awaits_a_future_of_the_applications_loop_says_what_to_do() -> None:
    """asyncio words a future of another loop awaited a second time differently: the
    first refusal leaves the future marked as awaited, and each later ``await`` of it
    says ``await wasn't used with future``, naming no loop.  Every retry, and so the
    dead letter's record and its ERROR line, had only that; the hint was on the first
    attempt's record alone."""

    async def main() -> list[str | None]:
        app_future = asyncio.get_running_loop().create_future()

        async def awaits_it() -> object:
            return await app_future

        async with Scheduler(name="other-loop") as scheduler:
            task = scheduler.schedule(
                "awaits",
                awaits_it,
                OneTime(delay=0),
                retry=RetryPolicy(max_attempts=3, initial_backoff=0),
            )
            assert await asyncio.to_thread(scheduler.wait_idle, 10)
        app_future.cancel()
        return [record.error for record in task.history]

    first, *retries = asyncio.run(main())
    assert first is not None and "attached to a different loop" in first
    assert first.endswith(OTHER_LOOP_HINT)
    assert len(retries) == 2
    for error in retries:
        assert error is not None and error.startswith("RuntimeError: await wasn't used with future")
        assert error.endswith(OTHER_LOOP_HINT)


def test_a_call_made_on_the_applications_loop_from_a_job_in_debug_mode_says_what_to_do() -> None:
    """``app_loop.call_soon`` (not ``call_soon_threadsafe``), or a call that wakes a waiter
    of that loop (``queue.put_nowait``, ``event.set()``), made from a job: the waiter wakes
    only when something else wakes the application's loop.  asyncio's debug mode on that
    loop refuses it (``Non-thread-safe operation invoked on an event loop other than the
    current one``), and the record now adds where the run was and what to do, as for an
    object of another loop awaited."""

    async def main() -> tuple[list[str | None], bool]:
        app_loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str] = asyncio.Queue()

        async def produces() -> None:
            app_loop.call_soon(queue.put_nowait, "made by a job")

        async with Scheduler(name="other-loop") as scheduler:
            task = scheduler.schedule(
                "produces", produces, OneTime(delay=0), retry=RetryPolicy(max_attempts=1)
            )
            assert await asyncio.to_thread(scheduler.wait_idle, 10)
        return [record.error for record in task.history], queue.empty()

    (error,), empty = asyncio.run(main(), debug=True)
    assert empty
    assert error is not None and error.startswith(
        "RuntimeError: Non-thread-safe operation invoked on an event loop other than the "
        "current one"
    )
    assert error.endswith(OTHER_LOOP_HINT)


def test_a_job_that_uses_the_applications_loop_once_it_closed_says_which_loop_is_closed() -> None:
    """``RuntimeError: Event loop is closed``, read in the scheduler's record, seemed to
    say the scheduler's loop had died; it is the application's (asyncio.run ended before
    the scheduler was shut down), and the record now says so."""
    scheduler = Scheduler(name="other-loop")
    loops: list[asyncio.AbstractEventLoop] = []

    async def calls_the_app() -> None:  # as run_coroutine_threadsafe(coro, app_loop) does
        loops[0].call_soon_threadsafe(print, "never printed")

    async def app() -> None:
        loops.append(asyncio.get_running_loop())

    asyncio.run(app())  # the application's loop, closed: its lifespan forgot aclose()
    with scheduler:
        task = scheduler.schedule(
            "calls", calls_the_app, OneTime(delay=0), retry=RetryPolicy(max_attempts=1)
        )
        assert scheduler.wait_idle(10)
    (error,) = [record.error for record in task.history]
    assert error == (
        "RuntimeError: Event loop is closed (not the scheduler's, which runs coroutine "
        "actions on thread lldsched-other-loop-loop: one the job used, such as the "
        "application's, was closed; shut the scheduler down before the application's "
        f"loop ends: await scheduler.aclose(), {doc_url('docs/ASYNCIO.md')})"
    )


def test_an_event_the_applications_loop_made_is_taken_by_the_job_that_waits_on_it_first() -> None:
    """docs/ASYNCIO.md said an ``asyncio.Lock`` or ``Queue`` made on the application's
    loop is refused in a job ("asyncio refuses it").  Such a primitive is bound to the
    first loop that waits on it: one the application made and has not waited on is
    taken by the job without a word, and the application's own wait on it is then what
    is refused.  The recipe the page gives (the wait run on the application's loop,
    awaited through ``run_coroutine_threadsafe``) is woken by the application's set."""

    async def main() -> tuple[list[str | None], list[str | None]]:
        app_loop = asyncio.get_running_loop()
        taken, handed = asyncio.Event(), asyncio.Event()
        job_loops: list[asyncio.AbstractEventLoop] = []

        async def waits_on_it() -> str:
            job_loops.append(asyncio.get_running_loop())
            await taken.wait()
            return "woken"

        async def waits_through_the_app() -> str:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(handed.wait(), app_loop))
            return "woken"

        one = RetryPolicy(max_attempts=1)
        async with Scheduler(name="other-loop") as scheduler:
            direct = scheduler.schedule("direct", waits_on_it, OneTime(delay=0), retry=one)
            recipe = scheduler.schedule(
                "recipe", waits_through_the_app, OneTime(delay=0), retry=one
            )
            await asyncio.to_thread(
                wait_until,
                lambda: len(taken._waiters) == 1,
                timeout=10,
                what="the job waiting on the event",
            )
            assert not direct.history  # waiting, not refused
            with pytest.raises(RuntimeError, match="is bound to a different event loop"):
                await taken.wait()
            handed.set()
            job_loops[0].call_soon_threadsafe(taken.set)  # set where it is bound
            assert await asyncio.to_thread(scheduler.wait_idle, 10)
        return (
            [record.result for record in direct.history],
            [record.result for record in recipe.history],
        )

    direct, recipe = asyncio.run(main())
    assert direct == ["'woken'"]
    assert recipe == ["'woken'"]


@pytest.mark.parametrize("returns_the_future", [False, True])
def test_the_recipe_for_the_applications_loop_cancels_the_call_there_at_the_timeout(
    returns_the_future: bool,
) -> None:
    """The recipe, and a plain function that returns the call's future (awaited too: a
    run of it was recorded a success with ``'<Future at 0x... state=pending>'``)."""

    async def main() -> tuple[list[tuple[bool, str | None]], bool]:
        app_loop = asyncio.get_running_loop()
        cancelled_there = asyncio.Event()

        async def on_the_app_loop() -> None:
            assert asyncio.get_running_loop() is app_loop
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled_there.set()
                raise

        async def job() -> None:
            call = asyncio.run_coroutine_threadsafe(on_the_app_loop(), app_loop)
            await asyncio.wrap_future(call)

        def hands_over() -> concurrent.futures.Future[None]:
            return asyncio.run_coroutine_threadsafe(on_the_app_loop(), app_loop)

        async with Scheduler(name="app-loop") as scheduler:
            task = scheduler.schedule(
                "calls",
                hands_over if returns_the_future else job,
                OneTime(delay=0),
                timeout=0.05,
                retry=RetryPolicy(max_attempts=1),
            )
            await asyncio.wait_for(cancelled_there.wait(), 10)
            assert await asyncio.to_thread(scheduler.wait_idle, 10)
        return [(r.timed_out, r.error) for r in task.history], cancelled_there.is_set()

    history, cancelled = asyncio.run(main())
    assert cancelled and history == [(True, "TimeoutError: cancelled at its 0.05 s timeout")]


def test_a_job_that_returns_the_future_of_run_coroutine_threadsafe_has_it_awaited() -> None:
    """The recipe without its ``await``: a plain function that hands a coroutine to the
    application's loop and returns the ``concurrent.futures.Future``, or a coroutine
    that returns it.  Such a run was recorded a success with ``'<Future at 0x...
    state=pending>'`` while the work went on unwatched, its error and its value lost."""

    async def main() -> list[tuple[str | None, str | None]]:
        app_loop = asyncio.get_running_loop()

        async def on_the_app_loop(n: int) -> int:
            assert asyncio.get_running_loop() is app_loop
            await asyncio.sleep(0)
            if n < 0:
                raise LookupError(n)
            return 2 * n

        def hands_over(n: int) -> concurrent.futures.Future[int]:
            return asyncio.run_coroutine_threadsafe(on_the_app_loop(n), app_loop)

        async def forgets_its_await(n: int) -> concurrent.futures.Future[int]:
            return hands_over(n)

        async with Scheduler(name="thread-future") as scheduler:
            tasks = [
                scheduler.schedule(
                    f"{action.__name__} {n}",
                    action,
                    OneTime(delay=0),
                    args=(n,),
                    retry=RetryPolicy(max_attempts=1),
                )
                for action in (hands_over, forgets_its_await)
                for n in (21, -1)
            ]
            assert await asyncio.to_thread(scheduler.wait_idle, 10)
        return [(record.result, record.error) for task in tasks for record in task.history]

    assert asyncio.run(main()) == [
        ("42", None),
        (None, "LookupError: -1"),
        ("42", None),
        (None, "LookupError: -1"),
    ]


def test_in_the_simulation_a_future_an_action_returned_is_awaited() -> None:
    with concurrent.futures.ThreadPoolExecutor(1) as pool, Simulation() as sim:
        task = sim.schedule("submits", OneTime(delay=0), action=lambda: pool.submit(pow, 6, 2))
        sim.run_for(1)
    assert [record.result for record in task.history] == ["36"]


def test_a_cancelled_aclose_leaves_the_loop_free_and_the_shutdown_goes_on() -> None:
    started, released = threading.Event(), threading.Event()

    def held() -> None:
        started.set()
        assert released.wait(10)

    scheduler = Scheduler(workers=1, name="aclose-cancelled").start()
    scheduler.schedule("held", held, OneTime(delay=0))

    async def main() -> None:
        assert await asyncio.to_thread(started.wait, 10)
        closing = asyncio.create_task(scheduler.aclose(timeout=20))
        await asyncio.sleep(0)
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing  # returns at once: the loop is not held for the shutdown

    asyncio.run(main())
    (stopper,) = [
        t for t in threading.enumerate() if t.name == "lldsched-aclose-cancelled-shutdown"
    ]
    assert stopper.is_alive() and scheduler.task("task-1").history == ()  # the run still held
    released.set()
    stopper.join(20)
    assert not stopper.is_alive() and not scheduler.running
    assert [record.ok for record in scheduler.task("task-1").history] == [True]


@pytest.mark.parametrize(
    ("verb", "status"), [("pause", TaskStatus.PAUSED), ("cancel", TaskStatus.CANCELLED)]
)
def test_a_coroutine_that_stops_its_own_task_and_returns_is_recorded_as_it_ended(
    verb: str, status: TaskStatus
) -> None:
    scheduler = Scheduler(name=f"stops-itself-{verb}").start()

    async def last_run(ctx: RunContext) -> str:
        getattr(scheduler, verb)(ctx.task_id)  # its cancellation comes after the return
        return "work done"

    async def then_awaits(ctx: RunContext) -> str:
        getattr(scheduler, verb)(ctx.task_id)
        await asyncio.sleep(3600)  # reached by the cancellation
        return "not reached"

    try:
        done = scheduler.schedule("done", last_run, FixedRate(3600))
        cut = scheduler.schedule("cut", then_awaits, FixedRate(3600))
        assert scheduler.wait_idle(10)
        assert [(r.ok, r.result) for r in done.history] == [(True, "'work done'")]
        assert [r.error for r in cut.history] == [f"CancelledError: task {status.value}"]
        assert done.status is status and cut.status is status
        if verb == "pause":  # the finished slot is not run again; the cut one is retried
            assert scheduler.resume(done.id) and scheduler.resume(cut.id)
            assert done.next_run_at is not None and done.next_run_at > scheduler.now + 3000
            assert cut.status is TaskStatus.RETRYING
    finally:
        assert scheduler.shutdown(timeout=10)


class Spawner:
    """A coroutine action (:meth:`spawns`) that starts a background task and returns."""

    def __init__(self) -> None:
        self.started, self.cleaned_up = threading.Event(), threading.Event()
        self.spawned: list[asyncio.Task[None]] = []

    async def background(self) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()  # nothing sets it: it ends only when cancelled
        finally:
            self.cleaned_up.set()

    async def spawns(self) -> str:
        self.spawned.append(asyncio.get_running_loop().create_task(self.background()))
        return "spawned"


def test_a_task_a_coroutine_run_started_and_left_is_cancelled_at_shutdown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A run that starts a background task and returns: the shutdown cancels that task
    and lets it run its ``finally`` before the loop closes, as ``asyncio.run`` does,
    rather than dropping it pending with the closed loop."""
    left = Spawner()
    scheduler = Scheduler(name="left-behind").start()
    task = scheduler.schedule("spawns", left.spawns, OneTime(delay=0))
    assert left.started.wait(10) and scheduler.wait_idle(10)
    assert not left.cleaned_up.is_set()  # still running after its run was recorded
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        assert scheduler.shutdown(timeout=10)
        assert left.cleaned_up.is_set() and left.spawned[0].cancelled()
        left.spawned.clear()
        gc.collect()
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []
    assert [(r.ok, r.result) for r in task.history] == [(True, "'spawned'")]
    assert threads_of(scheduler) == []


class SlowToEnd(Spawner):
    """A :class:`Spawner` whose background task, once cancelled, holds the loop thread
    until ``release`` is set: the stopped loop is inside ``end_left_tasks`` meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.cancelled, self.release = threading.Event(), threading.Event()

    async def background(self) -> None:
        try:
            await super().background()
        except asyncio.CancelledError:
            self.cancelled.set()
            self.release.wait(30)  # blocks the loop thread, on purpose: see the test
            raise


def test_a_shutdown_called_again_while_the_loop_ends_its_left_tasks_does_not_stop_it_twice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A shutdown out of time returns while its loop-closer thread goes on; a second
    call (the usual retry) stopped the loop again.  When that second stop reached the
    loop while it ran the left tasks' ends (``end_left_tasks``, after the first stop),
    the loop thread died with "Event loop stopped before Future completed" and skipped
    the async generators' close (seen about once in four full runs of the suite, in
    tests/test_shutdown_bounded.py).  The loop is stopped once, whatever the calls."""
    died: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: died.append(args.exc_value))
    left = SlowToEnd()
    scheduler = Scheduler(name="stopped-once").start()
    scheduler.schedule("spawns", left.spawns, OneTime(delay=0))
    assert left.started.wait(10) and scheduler.wait_idle(10)
    try:
        assert not scheduler.shutdown(timeout=0.2)  # the loop thread is held: out of time
        assert left.cancelled.wait(10)  # the first stop came: the left task is being ended
        assert not scheduler.shutdown(timeout=0.2)  # called again, the loop still held
        # Both loop-closer threads are over: a second stop, if sent, waits on the loop.
        wait_until(lambda: not [n for n in threads_of(scheduler) if n.endswith("loop-closer")],
                   timeout=10, what="the loop-closer threads to end")  # fmt: skip
    finally:
        left.release.set()
    assert scheduler.shutdown(timeout=10)
    assert left.cleaned_up.is_set() and left.spawned[0].cancelled()
    left.spawned.clear()
    gc.collect()
    assert died == []
    assert threads_of(scheduler) == []


def test_in_asyncio_debug_mode_a_coroutine_runs_task_is_named_after_its_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """asyncio's debug mode warns of a step that held the loop by its task's name: the
    run's, so that a job blocking the scheduler's loop is named, not "Task-2"."""
    monkeypatch.setenv("PYTHONASYNCIODEBUG", "1")  # read as the scheduler's loop is made

    async def named() -> str | None:
        current = asyncio.current_task()
        return None if current is None else current.get_name()

    scheduler = Scheduler(name="debug-names").start()
    try:
        task = scheduler.schedule("report", named, OneTime(delay=0))
        assert scheduler.wait_idle(10)
        assert [record.result for record in task.history] == [
            repr(f"lldsched run of {task.id} 'report'")
        ]
    finally:
        assert scheduler.shutdown(timeout=10)


@pytest.mark.parametrize("in_a_loop", [False, True], ids=["script", "in-asyncio-run"])
def test_in_the_simulation_a_task_a_coroutine_action_left_is_cancelled_at_shutdown(
    in_a_loop: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """Alike on both of the simulation's loops: its own on the caller's thread (a
    script), and its helper thread's (driven from a running loop)."""
    left = Spawner()

    def simulate() -> Simulation:
        sim = Simulation()
        sim.schedule("spawns", OneTime(delay=0), action=left.spawns)
        sim.run_for(10)
        assert not left.cleaned_up.is_set()
        assert sim.shutdown()
        return sim

    async def in_loop() -> Simulation:
        return simulate()

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        sim = asyncio.run(in_loop()) if in_a_loop else simulate()
        assert left.cleaned_up.is_set() and left.spawned[0].cancelled()
        left.spawned.clear()
        gc.collect()
    assert [r.getMessage() for r in caplog.records if r.name == "asyncio"] == []
    assert [(r.ok, r.result) for r in sim.records()] == [(True, "'spawned'")]
