"""A coroutine run on the scheduler's loop, and how its record says it ended.

:class:`Flight` is one run of the :class:`~lldsched.threaded.coroutines.CoroutineRunner`:
begun, started on the loop, over, recorded.  This module also owns the words its
record ends with: what a run that returned, raised or never began leaves
(:data:`UNFINISHED`, :data:`RETURNED_NONE`, :data:`NEVER_BEGUN`), the error text of a
run the scheduler cancelled, by reason (:func:`cancelled_outcome`), whether such a run
ended on its own first and is recorded as it ended (:func:`ended_first`), the text of
a run that raised, which says where coroutine runs are when asyncio refused an object
of another event loop (:func:`failure_text`), and a coroutine closed that will never
run (:func:`close_unrun`).  It holds no state and takes no lock: the runner's
fields of a flight are guarded as the runner says.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from lldsched.core.results import must_await
from lldsched.core.runs import cancelled_error
from lldsched.core.task import Run
from lldsched.errors import CANCELLED_INSIDE, NEVER_STARTED_OVERLAP, doc_url, error_text

if TYPE_CHECKING:
    import asyncio
    from asyncio import Task

__all__ = [
    "NEVER_BEGUN",
    "RETURNED_NONE",
    "UNFINISHED",
    "Flight",
    "Outcome",
    "cancelled_outcome",
    "close_unrun",
    "ended_first",
    "failure_text",
]

Outcome = tuple["str | None", "str | None"]
UNFINISHED: Outcome = ("CancelledError: scheduler shut down", None)
RETURNED_NONE: Outcome = (None, None)
NEVER_BEGUN: Outcome = ("CancelledError: never started", None)  # reason says which

LEASE_GONE = (
    "the store no longer holds its lease (another process took the slot over, or removed the task)"
)
"""Why the runtime stopped a coroutine or an isolated run on a shared store: the renewal
found its lease gone (docs/CLUSTER.md, "What the shared mode guarantees")."""

_REASONS = {
    "cancelled": "CancelledError: task cancelled",
    "lease": f"CancelledError: {LEASE_GONE}",
    "paused": "CancelledError: task paused",
    "shutdown": "CancelledError: scheduler shut down",
    # The core's record of such a run replaces it with its own, naming the slot
    # (core/overlapping.py, the one rule); this is what the runner hands it.
    "overlap": "CancelledError: cancelled by a newer run (Overlap.CANCEL_OTHER)",
}
"""The error text of a run the scheduler cancelled, by reason (not the timeout's)."""


class Flight:
    """One coroutine run: begun, started on the loop, over, recorded."""

    __slots__ = (
        "active", "awaitable", "begun", "budget", "finished", "future", "outcome", "raised",
        "reason", "run", "started", "timer",
    )  # fmt: skip

    # The timeout its timer was last armed with (at its start, or re-armed by a modify or
    # a replace: CoroutineRunner._rearm): its record says it.  Set on the loop thread as
    # the timer is armed, so set before its readers (a flight cancelled for "timeout",
    # a timer that fires) can run; left unset otherwise, as an assignment in __init__
    # is a cost every coroutine run would pay.
    budget: float
    # The loop-clock instant its timer counts from, kept at its first re-arm (a modify
    # or a replace changed its task's timeout during the run); unset before, likewise.
    begun: float

    def __init__(self, run: Run, started: float, awaitable: Any) -> None:
        self.run = run
        self.started = started
        self.awaitable = awaitable  # None for a loop task until its action is called
        self.active = False  # holds one of the ``limit`` slots
        self.future: Task[None] | None = None  # its driver task, on the loop
        self.timer: asyncio.TimerHandle | None = None  # the timeout, on the loop thread
        self.reason: str | None = None  # why the scheduler cancelled it: timeout, paused...
        self.finished = 0.0
        self.outcome: Outcome = UNFINISHED  # (error text, result text), set when over
        self.raised: BaseException | None = None  # what it raised, for its log line


def ended_first(flight: Flight) -> bool:
    """True when a flight the scheduler meant to cancel ended on its own first: it
    returned or raised before the cancellation reached its task (a coroutine that paused
    or cancelled its own task and returned without awaiting again, or a verb that
    crossed its end).  It is recorded as it ended, as a thread run is: its result kept,
    and a paused task not retried for work it finished."""
    outcome = flight.outcome
    if outcome is UNFINISHED or outcome is NEVER_BEGUN or outcome[0] == CANCELLED_INSIDE:
        return False
    # Task.cancel() on a task not yet done counts a request, and nothing but uncancel()
    # takes it back (asyncio.timeout and TaskGroup do, for their own): none was counted,
    # so none reached it.  Read here, on the cold path, not flagged on every run.
    task = flight.future
    return task is None or task.cancelling() == 0


def cancelled_outcome(flight: Flight) -> tuple[str | None, str | None, bool]:
    """(error text, result text, timed out) of a flight the scheduler cancelled, which
    ends as the cancellation says, whatever the coroutine did; but one that raised an
    error of its own on its way out of its timeout (a rollback that failed) is recorded
    timed out with that error, as a thread run that raises once its deadline's flag is up
    is (the core keeps a run's error, and words the timeout only for a run that raised
    nothing)."""
    reason = flight.reason
    assert reason is not None  # cancelled by the scheduler
    if reason == "timeout":  # at the timeout its timer was armed with, not the task's now
        if flight.raised is not None:  # not the CancelledError: its own (_drive)
            return flight.outcome[0], None, True
        return cancelled_error(flight.budget), None, True
    if reason == "overlap" and flight.outcome is NEVER_BEGUN:  # the core words its record
        return NEVER_STARTED_OVERLAP, None, False
    return _REASONS.get(reason) or f"CancelledError: {reason}", None, False


_OTHER_LOOP = (
    "attached to a different loop",
    "bound to a different event loop",
    "belongs to a different loop",
    "await wasn't used with future",
    "Non-thread-safe operation invoked on an event loop other than the current one",
)
"""What asyncio says when a coroutine awaits a future, or uses a lock, event, queue or
semaphore, that belongs to another event loop (3.11's texts; the third is the
ValueError of ``wait_for``, or ``ensure_future(..., loop=...)``, given such a future).
The fourth is what every later ``await`` of such a future says: the first refusal leaves
it marked as awaited (``_asyncio_future_blocking``), so a retry of a job that awaits
the application's future, and the dead letter's record, had only those words.  The
last is asyncio's debug mode on the application's loop refusing a call made on it
from another thread (``app_loop.call_soon``, or a ``queue.put_nowait`` that wakes a
waiter there): without debug mode that waiter wakes only when something else wakes
its loop."""

_CLOSED_LOOP = "RuntimeError: Event loop is closed"
"""What asyncio says of a closed loop's use; in a coroutine run, never the scheduler's
own loop, which runs it (the application's loop, ended before the scheduler was)."""


def failure_text(exc: BaseException, thread: str) -> str:
    """The error text of a coroutine run that raised ``exc``; when asyncio refused an
    object of another event loop (the application's aiohttp session, lock or queue), the
    text says where coroutine runs are and what to do, and when a loop the run used is
    closed, that it is not the scheduler's: asyncio's own message names neither."""
    text = error_text(exc)
    if not isinstance(exc, RuntimeError | ValueError):
        return text
    if any(said in text for said in _OTHER_LOOP):
        text += (
            f" (coroutine actions run on the scheduler's own event loop, thread {thread}, "
            "not on the application's: run what needs the application's loop there with "
            "asyncio.run_coroutine_threadsafe(coro, app_loop), or "
            "app_loop.call_soon_threadsafe(callback) for a call that does not wait, "
            f"{doc_url('docs/ASYNCIO.md')})"
        )
    elif text == _CLOSED_LOOP:
        text += (
            f" (not the scheduler's, which runs coroutine actions on thread {thread}: one "
            "the job used, such as the application's, was closed; shut the scheduler down "
            "before the application's loop ends: await scheduler.aclose(), "
            f"{doc_url('docs/ASYNCIO.md')})"
        )
    return text


def close_unrun(awaitable: object) -> None:
    """Close a coroutine that will never run (no "never awaited" warning), or cancel a
    thread's future that will never be awaited (the call ``run_coroutine_threadsafe``
    made on the application's loop is cancelled with it, as if the run were); an async
    generator object, which no run would have iterated, is left as it is."""
    if inspect.iscoroutine(awaitable):
        awaitable.close()
    elif inspect.isasyncgen(awaitable):  # refused when awaited (results.as_awaitable)
        pass  # never started: nothing of it runs, and dropping it says nothing
    elif not inspect.isawaitable(awaitable) and must_await(awaitable):
        awaitable.cancel()  # type: ignore[attr-defined]  # a concurrent.futures.Future
