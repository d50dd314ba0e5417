"""WorkerPool: a fixed set of worker threads fed through a bounded hand-off queue.

The timer is the producer, the workers are the consumers, and the queue between
them is *bounded*: when it is full the timer stops taking entries off the heap
(backpressure), so entries that wait keep their heap order until a slot frees.

The pool runs under its owner's lock, the same lock that guards the scheduler's
state machine, so that taking an item, starting it and settling it costs one
acquisition per item.  Each item goes through three callbacks:

* ``prepare(item, worker)`` under the lock: returns a job, or None to skip the
  item (the scheduler drops tombstones here);
* ``execute(job)`` *without* the lock: the user's code runs here;
* ``complete(job, result)`` under the lock: the outcome is recorded.  What the
  user's code raised, ``SystemExit`` and ``KeyboardInterrupt`` included, is part of
  the result (the scheduler records it as a failed run); the worker goes on.  It
  may release the lock for a while and take it back before it returns (the
  scheduler does, to log a failed run).

What ``prepare`` or ``complete`` raise themselves, a ``BaseException`` too (a logging
handler's ``SystemExit``), is logged ("could not start", "could not settle") and the
worker goes on: a worker that died of it left the pool one thread short for good (none,
with one worker).  Accounting for the item is the owner's: the scheduler catches what
its begin or record raised, settles the entry and fails the task it left stuck
(:meth:`RunExecution._step_raised <lldsched.threaded.running.RunExecution._step_raised>`).

Shutdown follows ``concurrent.futures.thread``: close, then put one sentinel per
worker behind what is queued (``drain=True``) or instead of it (``drain=False``,
and the dropped items are returned), then join.  A run in flight always
finishes: Python cannot stop a thread.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from lldsched.checks import whole
from lldsched.errors import SchedulerStateError
from lldsched.logs import WORKERS
from lldsched.threaded.deadline import Deadline

__all__ = ["MAX_WORKERS", "WorkerPool"]

log = logging.getLogger(WORKERS)
T = TypeVar("T")  # an item queued by the producer
J = TypeVar("J")  # a job prepared from it
R = TypeVar("R")  # what executing the job returned
_SENTINEL = object()

MAX_WORKERS = 10_000
"""The most worker threads a pool starts: each is an OS thread with its own stack, and
Linux refuses new threads past a few tens of thousands (``workers=10**400`` was
accepted, to fail in ``start()``).  A service that needs more concurrency than this
runs coroutines (``max_coroutines``), not threads."""


class WorkerPool(Generic[T, J, R]):
    """``workers`` threads that prepare, execute and complete each submitted item.

    :attr:`condition_type` is the seam the design lab (:mod:`lldsched.lab`) uses to
    swap the workers' condition; it is read once, in the constructor.
    """

    condition_type: type[threading.Condition] = threading.Condition
    """The class of the workers' condition, built on the owner's lock."""

    def __init__(
        self,
        workers: int,
        *,
        prepare: Callable[[T, int], J | None],
        execute: Callable[[J], R],
        complete: Callable[[J, R], None],
        lock: threading.Lock | None = None,
        capacity: int | None = None,
        on_room: Callable[[], None] | None = None,
        name: str = "lldsched-worker",
    ) -> None:
        whole(workers, name="workers", at_least=1, at_most=MAX_WORKERS)
        capacity = 16 * workers if capacity is None else capacity
        whole(capacity, name="hand-off capacity", at_least=1)
        self.workers = workers
        self.capacity = capacity
        self._low_water = capacity // 2
        self._prepare = prepare
        self._execute = execute
        self._complete = complete
        self._on_room = on_room
        self._name = name
        # The owner's lock: guards _items and _closed (and, for the scheduler, all
        # of its state).  _not_empty is notified when items are queued and at
        # shutdown; workers are its only waiters.  Released around execute().
        self._lock = lock if lock is not None else threading.Lock()
        self._not_empty = self.condition_type(self._lock)
        self._items: collections.deque[object] = collections.deque()
        self._closed = False
        self._threads: list[threading.Thread] = []
        self.idle = workers
        """Workers not busy with an item, those whose thread has not reached its first wait
        included (caller holds the lock).  Counting a worker idle only once its thread
        waited made a shared store's timer, whose first wake came first, skip its first
        claim and claim at a later wake, from a later reading (timer._claim_room)."""
        self.on_idle: Callable[[], None] | None = None
        """Called under the lock by a worker about to wait for an item (set before
        :meth:`start`): a shared store's timer claims only while a worker is idle."""

    def start(self) -> None:
        for index in range(self.workers):
            thread = threading.Thread(
                target=self._work, args=(index,), name=f"{self._name}-{index}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    @property
    def room(self) -> int:
        """Free places in the hand-off queue (0 once shut down, or when entries the
        loop passed on filled it past its capacity).  Caller holds the lock."""
        if self._closed:
            return 0
        room = self.capacity - len(self._items)
        return room if room > 0 else 0

    @property
    def queued(self) -> int:
        """Items waiting for a worker.  Caller holds the lock."""
        return len(self._items)

    @property
    def waiting(self) -> int:
        """Items waiting for a worker, the shutdown's sentinels not counted (they are
        no work).  Caller holds the lock."""
        items = self._items
        if self._closed:
            return sum(item is not _SENTINEL for item in items)
        return len(items)

    def count(self, wanted: Callable[[T], bool]) -> tuple[int, T | None]:
        """How many items waiting for a worker ``wanted`` says so of, and the first of
        them (None: none); the shutdown's sentinels are never counted.  O(queued), at
        most the capacity: for ``metrics()``, which counts the live entries only (a
        tombstone waiting here is no run).  Caller holds the lock."""
        found = 0
        first: T | None = None
        for item in self._items:
            if item is not _SENTINEL and wanted(item):  # type: ignore[arg-type]
                if not found:
                    first = item  # type: ignore[assignment]
                found += 1
        return found, first

    def put(self, items: Iterable[T]) -> None:
        """Queue ``items`` (caller holds the lock and has checked :attr:`room`; entries
        the event loop passes on, whose tasks a replace made thread tasks, may go past
        the capacity by their few).

        Raises :class:`SchedulerStateError` once the pool is shut down.
        """
        if self._closed:
            raise SchedulerStateError("the worker pool is shut down and takes no work")
        before = len(self._items)
        self._items.extend(items)
        self._not_empty.notify(len(self._items) - before)

    def shutdown(
        self,
        drain: bool = True,
        timeout: float | None = None,
        *,
        on_drop: Callable[[list[T]], None] | None = None,
    ) -> list[T]:
        """Stop taking work, finish (``drain``) or drop what is queued, join the workers.

        Returns the items dropped; ``on_drop`` is called with them (if any) under the
        lock, in the acquisition that dropped them.  Idempotent.  With a ``timeout``,
        returns when it runs out even if a worker is still busy with a long run, or
        the lock is held by another thread all that time (then nothing is closed, or
        dropped).  Caller must not hold the lock.
        """
        dropped: list[T] = []
        deadline = Deadline(timeout)
        with deadline.holding(self._lock) as hold:
            if hold.held and not self._closed:
                self._closed = True
                if not drain:
                    dropped = self.drop(on_drop=on_drop)
                self._items.extend([_SENTINEL] * len(self._threads))
                self._not_empty.notify_all()
        for thread in self._threads:
            if thread is threading.current_thread():
                continue
            thread.join(deadline.remaining())
        return dropped

    def drop(self, *, on_drop: Callable[[list[T]], None] | None = None) -> list[T]:
        """Take back what waits for a worker, unrun, and return it; ``on_drop`` is called
        with it (if any).  Caller holds the lock: a drain out of time drops it so that
        no worker starts it (it is closed just after), and :meth:`shutdown` without a
        drain."""
        dropped: list[T] = list(self._items)  # type: ignore[arg-type]
        self._items.clear()
        if dropped and on_drop is not None:
            on_drop(dropped)
        return dropped

    def discard(self, unwanted: Callable[[T], bool]) -> int:
        """Take out of the hand-off queue, unrun, the items ``unwanted`` says so of, the
        others kept in their order; how many went.  Caller holds the lock and settles
        them: a shared store's claims given back before a worker took them
        (:meth:`Coordinator._give_back_unbegun
        <lldsched.threaded.shared.Coordinator._give_back_unbegun>`), which left in the
        queue were counted as work waiting (``metrics()``: ``handoff`` and ``lag``)
        until a worker got to them.  O(queued); rare, off the dispatch path."""
        items = self._items
        kept = [item for item in items if item is _SENTINEL or not unwanted(item)]  # type: ignore[arg-type]
        gone = len(items) - len(kept)
        if gone:
            items.clear()  # in place: the workers hold this deque
            items.extend(kept)
        return gone

    def is_worker(self, thread: threading.Thread) -> bool:
        """True when ``thread`` is one of this pool's workers."""
        return thread in self._threads

    @property
    def alive(self) -> int:
        """How many worker threads are running."""
        return sum(thread.is_alive() for thread in self._threads)

    def _work(self, index: int) -> None:
        """Worker ``index``'s loop, holding the lock but around ``execute``: take an
        item, prepare, execute and complete it; return at its sentinel."""
        lock = self._lock
        items = self._items
        not_empty = self._not_empty
        prepare, execute, complete = self._prepare, self._execute, self._complete
        low_water = self._low_water
        on_room = self._on_room
        on_idle = self.on_idle
        lock.acquire()
        try:
            while True:
                while not items:
                    if on_idle is not None:
                        on_idle()
                    not_empty.wait()
                item = items.popleft()
                if item is _SENTINEL:
                    return
                if on_room is not None and len(items) == low_water:
                    on_room()  # wake the producer once per half-emptied queue, not per item
                self.idle -= 1  # busy with the item until it is settled (or refused)
                try:
                    job = prepare(item, index)  # type: ignore[arg-type]
                except BaseException:  # a KeyboardInterrupt too: the worker goes on
                    log.exception("worker %d: could not start %r", index, item)
                    job = None
                if job is not None:
                    lock.release()
                    try:
                        result = execute(job)
                    finally:
                        lock.acquire()
                    try:
                        complete(job, result)
                    except BaseException:  # complete() records user failures itself: our bug
                        log.exception("worker %d: could not settle %r", index, job)
                    # Not held while this worker waits: a failed run's result holds its
                    # exception, whose traceback holds the job's locals (a frame, a buffer).
                    del result
                self.idle += 1
        finally:
            lock.release()
