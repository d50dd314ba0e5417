"""A shutdown's last writes, and those a scheduler leaves for the interpreter's exit.

A shutdown's last writes, made once every other thread is stopped
(:class:`LastWrites`, mixed into :class:`~lldsched.threaded.stopping.Stopping`): the rows
a store outage left stale (:meth:`~LastWrites._write_stale`), then a shared store's
settles held back (:meth:`~LastWrites._flush_store`), each on a thread of its own within
the time the shutdown has left; then the store is let go for another scheduler
(:meth:`~LastWrites._let_store_go`).

A scheduler never started whose verbs left rows stale in a store outage
(:meth:`SharedVerbs._say_stale_unwatched
<lldsched.threaded.sharedverbs.SharedVerbs._say_stale_unwatched>`), or whose first
``shutdown()`` a signal cut short before its last writes (:func:`unfinished`), is kept
here until a shutdown lets its store go (:func:`watched`); at the interpreter's exit
:func:`_shut_unwatched` makes those writes (the first shuts down, the second gets
:data:`EXIT_WRITES` for them).  The set takes
no lock of its own: each change is one ``set.add`` or ``set.discard`` (atomic under the
interpreter's lock), and the exit hook pops it one scheduler at a time.  The writes
take the scheduler's lock within the shutdown's time
(:class:`~lldsched.threaded.deadline.Deadline`).
"""

from __future__ import annotations

import atexit
import functools
import logging
from typing import Any

from lldsched.core.store import use as storeuse
from lldsched.core.store.stalerows import say_left_stale
from lldsched.logs import SCHEDULER
from lldsched.threaded.deadline import Deadline
from lldsched.threaded.parts import NEW, STOPPED, SchedulerParts
from lldsched.threadstarts import at_exit

__all__ = ["EXIT_WRITES", "LastWrites", "unfinished", "watched"]

log = logging.getLogger(SCHEDULER)  # a shutdown at exit that raised: the scheduler's life

EXIT_WRITES = 2.0
"""Seconds the interpreter's exit gives the last writes of a shutdown a signal cut short
(:meth:`LastWrites._finish_at_exit`): the rows a store outage left stale, a shared store's
settles held back; a store that hangs holds the exit no longer."""

_unwatched: set[SchedulerParts] = set()
"""The schedulers with writes left for the interpreter's exit (:func:`_shut_unwatched`):
never started, whose verbs left rows stale (:meth:`SharedVerbs._say_stale_unwatched
<lldsched.threaded.sharedverbs.SharedVerbs._say_stale_unwatched>`);
or whose first ``shutdown()`` a signal cut short before its last writes
(:func:`unfinished`).  Held strongly, so that one a script dropped still writes; one
whose shutdown let its store go is let go (:func:`watched`)."""


def watched(scheduler: SchedulerParts) -> None:
    """``scheduler`` shut down: nothing of it is left for the interpreter's exit."""
    _unwatched.discard(scheduler)


def left_stale(scheduler: SchedulerParts) -> None:
    """``scheduler``, never started, had verbs that left rows stale: they are written at
    the interpreter's exit, unless it starts or shuts down first
    (:meth:`SharedVerbs._say_stale_unwatched
    <lldsched.threaded.sharedverbs.SharedVerbs._say_stale_unwatched>`)."""
    _unwatched.add(scheduler)


def unfinished(scheduler: SchedulerParts) -> None:
    """``scheduler``'s first ``shutdown()`` ended before its last writes (a signal cut
    it short): they are made at the interpreter's exit, unless a second ``shutdown()``
    makes them first (:meth:`LastWrites._finish_at_exit`)."""
    _unwatched.add(scheduler)


@atexit.register
def _shut_unwatched() -> None:
    """At the interpreter's exit, ``shutdown()`` each scheduler never started whose verbs
    left rows stale and that nothing shut down or started since: its last write of those
    rows (those still refused said at WARNING), as the verb's WARNING promised.  A script
    that only calls verbs (an admin process) ends without ``shutdown()``, as scripts do,
    and a verb made in an outage was lost for good, the verb having returned as done.
    And each one whose first ``shutdown()`` a signal cut short before its last writes
    (a Ctrl-C that ends the script): those writes, within a bound of their own, its
    threads not waited for (:meth:`LastWrites._finish_at_exit`).
    Not for a crash, ``os._exit`` or a signal's default action, which run no exit hook;
    a forked child's copy stops nothing (:mod:`lldsched.threaded.forked`)."""
    at_exit()  # Python 3.12.0-3.12.2 start no thread from here on
    while _unwatched:
        scheduler: Any = _unwatched.pop()  # a Scheduler: Stopping's methods mixed in
        try:
            if scheduler._state is NEW:
                scheduler.shutdown()
            elif scheduler._state is STOPPED:
                scheduler._finish_at_exit()
        except Exception:  # (not met) the next one is still shut down
            log.exception("the shutdown at exit of scheduler %r raised", scheduler.name)


class LastWrites(SchedulerParts):
    """Mixed into Stopping: the shutdown's last writes, and the store let go."""

    def _writes_left(self) -> bool:
        """The first shutdown() ended before its last writes (:meth:`_last_writes`: a
        signal, Ctrl-C or a SIGTERM handler's ``sys.exit``, cut it short) and there is
        something for them to write: the rows a store outage left stale, a shared
        store's settles held back.  The store is not let go then: a second shutdown()
        makes them first, or else the interpreter's exit (:meth:`_finish_at_exit`); and
        another scheduler given the store meanwhile is refused, as while this one ran
        (:mod:`lldsched.core.store.use`)."""
        if self._last_written:
            return False
        writes = self._core.store_writes
        outage = None if writes is None else writes.outage
        return outage is not None or self._coordinator is not None

    def _last_writes(self, deadline: Deadline) -> bool:
        """The shutdown's last writes, with every other thread stopped: the rows a store
        outage left stale (:meth:`_write_stale`), then a shared store's settles held back
        (:meth:`_flush_store`).  True if that flush is still going."""
        self._write_stale(deadline)
        flushing = self._flush_store(deadline)
        self._last_written = True
        return flushing

    def _finish_at_exit(self) -> None:
        """At the interpreter's exit (:func:`~lldsched.threaded.lastwrites._shut_unwatched`),
        the last writes a signal kept the first shutdown() from, when no second one made
        them (:meth:`_writes_left`): a script a Ctrl-C ended in its shutdown.  Within
        :data:`EXIT_WRITES` seconds, the threads not waited for (a run still in flight
        ends with the process, as without a shutdown: a durable store runs it again at
        the next start), then the store let go.  Nothing if the first is still going
        (on another thread) or the writes were made."""
        if not self._first_over or not self._writes_left():
            return
        self._last_writes(Deadline(EXIT_WRITES))
        self._let_store_go()

    def _let_store_go(self) -> None:
        """Another scheduler may run on the store now (:mod:`lldsched.core.store.use`).
        Idempotent."""
        writes = self._core.store_writes
        if writes is not None:
            storeuse.let_go(writes.store, self)
            watched(self)  # its rows left stale were written now, or said

    def _flush_store(self, deadline: Deadline) -> bool:
        """Have a shared store write the settles it holds back for a batch, on a thread
        of its own joined within the time left (the store's lock is taken inside the
        scheduler's: a store call that hangs holds both).  True if it is still going."""
        coordinator = self._coordinator
        if coordinator is None:
            return False
        flush = functools.partial(coordinator.flush, lock=self._lock)  # its bookkeeping's
        return not deadline.run(flush, name=f"{self._thread_prefix}flush")

    def _write_stale(self, deadline: Deadline) -> None:
        """Write the rows a store outage left stale, the shutdown's last write: no
        transition follows to write them again (:meth:`StoreWrites.rewrite_stale
        <lldsched.core.store.writes.StoreWrites.rewrite_stale>`), else the next start reads
        a one-off that finished as still to run.  On a thread of its own under the
        lock, waited for within the time left, as the shutdown's other store calls are;
        the rows still stale then are said in a warning
        (:func:`~lldsched.core.store.stalerows.say_left_stale`, as the simulation's says
        them).  The first shutdown's only, or the second's if a signal cut the first
        short before it (:meth:`_writes_left`): a later one no longer holds the store
        (:mod:`lldsched.core.store.use`)."""
        writes = self._core.store_writes
        if writes is None or writes.outage is None:  # read unlocked: the common case, no thread
            return
        left: list[str] = []

        def rewrite() -> None:
            with deadline.holding(self._lock) as hold:
                if hold.held:
                    left.extend(writes.rewrite_stale())

        if deadline.run(rewrite, name=f"{self._thread_prefix}rewrite"):
            say_left_stale(writes.store, left)
