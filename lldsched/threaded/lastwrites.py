"""The writes a scheduler leaves for the interpreter's exit, and the exit hook that makes them.

A scheduler never started whose verbs left rows stale in a store outage
(:meth:`SharedVerbs._say_stale_unwatched
<lldsched.threaded.sharedverbs.SharedVerbs._say_stale_unwatched>`), or whose first
``shutdown()`` a signal cut short before its last writes (:func:`unfinished`), is kept
here until a shutdown lets its store go (:func:`watched`); at the interpreter's exit
:func:`_shut_unwatched` makes those writes.  The set takes no lock of its own: each
change is one ``set.add`` or ``set.discard`` (atomic under the interpreter's lock), and
the exit hook pops it one scheduler at a time.
"""

from __future__ import annotations

import atexit
import logging
from typing import Any

from lldsched.logs import STORE
from lldsched.threaded.parts import NEW, STOPPED, SchedulerParts
from lldsched.threadstarts import at_exit

__all__ = ["unfinished", "watched"]

log = logging.getLogger(STORE)

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


def unfinished(scheduler: SchedulerParts) -> None:
    """``scheduler``'s first ``shutdown()`` ended before its last writes (a signal cut
    it short): they are made at the interpreter's exit, unless a second ``shutdown()``
    makes them first (:meth:`Stopping._finish_at_exit
    <lldsched.threaded.stopping.Stopping._finish_at_exit>`)."""
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
    threads not waited for (:meth:`Stopping._finish_at_exit
    <lldsched.threaded.stopping.Stopping._finish_at_exit>`).
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
