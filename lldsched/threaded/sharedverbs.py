"""A verb on a shared store: other processes' changes applied first, its task's row held.

:class:`SharedVerbs` is the part of :class:`~lldsched.threaded.control.ControlVerbs` a
shared store (docs/CLUSTER.md) adds to a verb, under the scheduler's lock: what other
processes wrote is read first (:meth:`~SharedVerbs._follow_others`), and the verb runs
inside a hold of its row (:meth:`~SharedVerbs._acting_on`), so it never writes back one
older than another process's; a hold whose end fails is written again
(:meth:`~SharedVerbs._hold_not_committed`); a task another process paused or cancelled
has its runs here stopped (:meth:`~SharedVerbs._followed`); and a scheduler not running
says the rows its verbs left stale in an outage, written at its next verb, its shutdown
or the interpreter's exit (:meth:`~SharedVerbs._say_stale_unwatched`).  Unshared, only
``_acting_on``'s refusal after shutdown applies.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from lldsched.core.isolation import is_loop_action
from lldsched.core.names import RefusedVerb
from lldsched.core.store import use as storeuse
from lldsched.core.store.outage import Outage
from lldsched.core.store.stalerows import STALE_SHOWN
from lldsched.core.task import ScheduledTask
from lldsched.logs import STORE, counted
from lldsched.model import TaskStatus
from lldsched.storecalls import HoldNotCommitted, not_committed, verb_held
from lldsched.threaded.lastwrites import left_stale
from lldsched.threaded.parts import NEW, RUNNING, SchedulerParts

__all__ = ["SharedVerbs"]

log = logging.getLogger(STORE)  # a verb that could not hold its row


class SharedVerbs(SchedulerParts):
    """Mixed into ControlVerbs: a verb on a shared store, on its row as it is now."""

    # The outage whose stale rows a verb of this scheduler, not running, said at WARNING
    # (_say_stale_unwatched): once an outage.  Under the scheduler's lock.
    _stale_said: Outage | None = None

    if TYPE_CHECKING:  # the verbs' (lldsched.threaded.control)

        def _check_open(self, verb: RefusedVerb, task_id: str) -> None: ...

        def _stop_running(self, task_id: str, why: str) -> None: ...

    def _follow_others(self) -> None:
        """Shared mode: apply what other processes wrote before a verb changes a task, so
        the row this process writes starts from the latest one (under the lock).  Not
        while another running scheduler holds the store object: the feed says each change
        once, to whoever reads it through that object, and that scheduler would miss
        what this one read (the core refuses the verb then: ``StoreWrites.check_open``)."""
        coordinator = self._coordinator
        if coordinator is not None and not storeuse.held_by_another(coordinator.store, self):
            coordinator.sync()  # tells _followed

    @contextlib.contextmanager
    def _acting_on(
        self, task_id: str, also: Sequence[str] = (), *, refused: RefusedVerb | None = None
    ) -> Iterator[None]:
        """Shared mode: a verb on ``task_id`` runs inside, under the lock, from its read of
        what other processes wrote (:meth:`_follow_others`) to its last write, with the
        store holding the row for it (:func:`~lldsched.storecalls.verb_held`): no other
        process's write lands between the two, so the verb acts on the row as it is and
        never writes back one older than another process's (a run settled there meanwhile,
        whose slot ran again).  Nothing is held unshared, nor while another running
        scheduler holds the store object (the core refuses the verb then).  ``also``: the
        other tasks whose rows the verb may write (a ``cancel``'s dependents), held with
        its own, all at once (:func:`~lldsched.storecalls.verb_held`).

        A store that cannot be held (closed, or failing: an outage) lets the verb run
        unheld, as before: its own calls meet the same failure and say it as ever (a
        closed store's verb is refused naming the verb; in an outage a pause or cancel
        carries on, its row written again once the store answers).  A hold whose end
        fails (its commit: the connection lost, the disk full) stored none of the verb's
        writes: the task's row is a failed write, written again as any
        (:meth:`StoreWrites.failed <lldsched.core.store.writes.StoreWrites.failed>`),
        and the verb, already done in the registry, returns as it would have; so is every
        other row it wrote inside (a ``cancel``'s dependents, a retirement's purge: what
        :class:`~lldsched.storecalls.HoldNotCommitted` names), and a verb that raised
        raises its own error, those rows failed writes as well (the store raises it, the
        ``HoldNotCommitted`` its ``__context__``, by that error's rule; a StoreError of
        the verb's, which the rule lets the hold's error replace, is raised again here).
        An interrupt out of the hold's end, the verb's block whole, leaves the verb whole
        (the scheduler takes the next verb): its rows stored, or named by the
        ``HoldNotCommitted`` under it and written again.  Before, one with no
        ``HoldNotCommitted`` under it (one that landed in the COMMIT) tore the scheduler.

        ``refused``: the verb, one refused once the scheduler is shut down
        (:meth:`_check_open`), checked first, in any mode: a refused verb makes no store
        call.  Before, it was checked inside, after the hold and the read of the feed,
        which applied other processes' changes to a scheduler that was shut down."""
        if refused is not None:
            self._check_open(refused, task_id)
        coordinator = self._coordinator
        if coordinator is None or storeuse.held_by_another(coordinator.store, self):
            yield
            return
        own: BaseException | None = None
        done = False  # the verb's block ran to its end, or raised an Exception (whole)
        try:
            with contextlib.ExitStack() as holding:
                try:
                    holding.enter_context(verb_held(coordinator.store, task_id, also))
                except Exception:  # closed or failing: unheld, as the docstring says
                    log.debug("no hold of task %s's row for a verb", task_id, exc_info=True)
                coordinator.sync()  # tells _followed
                try:
                    yield
                    done = True
                except BaseException as exc:
                    own = exc
                    done = isinstance(exc, Exception)
                    raise
        except BaseException as exc:
            # The hold's failed end: under what the block raised (the verb's own error, an
            # interrupt that landed inside the hold), or raised itself.
            ended: Exception | None = not_committed(exc)
            if ended is None and exc is not own and isinstance(exc, Exception):
                ended = exc  # a hold's end that failed with another error, as before
            if ended is not None:
                self._hold_not_committed(task_id, ended)
            if done and exc is not own and not isinstance(exc, Exception):
                # An interrupt out of the hold's end, the verb's block whole: the verb is
                # whole, as after any store call's interrupt (left_whole), its rows stored
                # or, not known to be, named by the HoldNotCommitted under it (the rule
                # of the stores' holds: HeldWrites.cut) and written again just above.
                writes = self._core.store_writes
                assert writes is not None  # a coordinator's scheduler has a store
                writes.refused = id(exc)
            if exc is own or not isinstance(exc, Exception):
                raise  # the verb's own error, or an interrupt: the caller's
            if own is not None:  # a StoreError of the verb's, which the hold's error took
                raise own from None  # the place of (its rule), or a store of one's own's
        finally:
            self._say_stale_unwatched()

    def _say_stale_unwatched(self) -> None:
        """Shared mode, after a verb (caller holds the lock): a scheduler that is not
        running (never started, or shut down) has no timer, whose store calls write the
        rows an outage left stale again within ``poll``; this one writes them at its next
        verb (its read of the feed) or at ``shutdown()``.  Until then the other
        processes go on with those rows as they were (a pause not heard, a task they
        run): said at WARNING, once an outage (docs/CLUSTER.md, the store-restart row of
        the failure matrix).  A process that ends without either writes them at the
        interpreter's exit (:func:`~lldsched.threaded.lastwrites._shut_unwatched`); one that
        crashes leaves them so."""
        writes = self._core.store_writes
        if writes is None or self._state is RUNNING:
            return
        outage = writes.outage
        if outage is None or not outage.stale or outage is self._stale_said:
            return
        self._stale_said = outage
        if self._state is NEW:
            left_stale(self)  # written at the interpreter's exit, if not before
        left = list(outage.stale)
        shown = ", ".join(left[:STALE_SHOWN])
        more = f" and {len(left) - STALE_SHOWN} more" if len(left) > STALE_SHOWN else ""
        log.warning(
            "scheduler %r is not running: the rows of %s (%s%s) whose writes store %r "
            "failed are written again at its next verb or its shutdown() (at the "
            "interpreter's exit, if neither), not by a timer; until then the other "
            "processes go on with them as they were, and a process that crashes leaves "
            "them so",
            self.name,
            counted(len(left), "task"),
            shown,
            more,
            writes.store,
        )

    def _hold_not_committed(self, task_id: str, error: Exception) -> None:
        """The end of a verb's hold on ``task_id``'s row raised ``error``: its writes are
        not stored (or not known to be: written again conditionally, a row its COMMIT did
        store left as it is), so each row it wrote (``task_id``'s, and every other one a
        :class:`~lldsched.storecalls.HoldNotCommitted` names) is a failed write of the
        task as the registry has it now, or, for one no longer registered (removed,
        retired), as the hold last wrote it (a delete: deleted again, as a purge)."""
        writes = self._core.store_writes
        assert writes is not None  # a coordinator's scheduler has a store
        written = error.written if isinstance(error, HoldNotCommitted) else {}
        for written_id in (task_id, *(other for other in written if other != task_id)):
            task = self._core.tasks.get(written_id)
            snapshot = written.get(written_id) if task is None else self._core.snapshot(task)
            if snapshot is None:
                writes.failed(error, "delete", written_id)
            else:
                writes.failed(error, "save", written_id, snapshot)

    def _followed(self, tasks: list[ScheduledTask]) -> None:
        """Tasks another process changed (the coordinator tells every read of the feed,
        :meth:`Coordinator.sync <lldsched.threaded.shared.Coordinator.sync>`): keep the
        loop-task ids, and stop the running coroutine or isolated run of a task paused or
        cancelled elsewhere (as pause() and cancel() do)."""
        for task in tasks:
            if is_loop_action(task.action, task._options.isolation):
                self._loop_ids.add(task.id)
            else:
                self._loop_ids.discard(task.id)
            if task.running and task.status in (TaskStatus.PAUSED, TaskStatus.CANCELLED):
                self._stop_running(task.id, task.status.value)
