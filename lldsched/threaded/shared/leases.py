"""The leases a :class:`~lldsched.threaded.shared.Coordinator` holds: renewed, found lost,
counted lost and trusted again (docs/CLUSTER.md).

:class:`HeldLeases` is mixed into the Coordinator: what it knows of the leases of its
claims not begun and of its runs in flight (``_pending``, ``_running``, and those counted
lost, ``_counted_lost``), and what a renewal's answer does to them.  Its methods run
under the scheduler's one lock, as every Coordinator's does (no lock of its own).

* The timer renews the leases when the renewal is due (every ``lease / 3``: one more
  deadline in the timer's wait, no thread of its own: :meth:`Coordinator.tick
  <lldsched.threaded.shared.Coordinator.tick>` calls :meth:`HeldLeases._renew`).  A
  token the store no longer holds raises its run's flag with ``lease_lost`` and stops
  its run; a lease counted lost in an outage is still sent, so a takeover meanwhile is
  learnt and a lease nobody took is trusted again (:meth:`HeldLeases._trusted_again`).
  A claim not begun for a whole renewal interval is given back
  (:meth:`HeldLeases._give_back_unbegun`).
* When no renewal vouches for the leases any more and the last one failed, they are
  counted lost (:meth:`HeldLeases._count_lost`); a lease found lost is said once, after
  a read of the change feed (:meth:`HeldLeases._say_lost`, :class:`Lost`).
* Their trust counts from a reading of the lease clock taken before the scheduler's
  clock is (:meth:`HeldLeases.looked`).

How long a renewal vouches for the leases is :mod:`lldsched.threaded.shared.leasewatch`'s rule,
and its :class:`~lldsched.threaded.shared.leasewatch.LeaseWatch` raises the runs' flags once
none does, on a thread of its own (the timer may be held in a store call by the outage).
That module is a clock, a lock and a thread that know nothing of a store; this one is
the Coordinator's state under the scheduler's lock, and the store's answers to it.

Once ``shutdown()`` has stopped the timer, the runs it waits for still hold leases:
:func:`leases_kept` renews them on a thread of its own until they are done, so no
other process takes over a run that is finishing here (docs/CLUSTER.md).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, NamedTuple

from lldsched.clock import Clock
from lldsched.coordination import Claim, CoordinatedStore
from lldsched.core.context import RunContext
from lldsched.core.machine import SchedulerCore
from lldsched.core.store.outage import Kind
from lldsched.core.task import Run
from lldsched.logs import CLUSTER
from lldsched.threaded.deadline import Deadline
from lldsched.threaded.shared.leasewatch import LeaseWatch, renewal_every
from lldsched.threadstarts import start

__all__ = ["HeldLeases", "Lost", "leases_kept"]

log = logging.getLogger(CLUSTER)


class Lost(NamedTuple):
    """A lease found lost, for :meth:`Coordinator._say_lost`: its task (``""``: a claim
    not begun) and token, whether it had been counted lost before (said then), and what
    this process was doing with it if not running it (``"deciding its misfire"``)."""

    task_id: str
    token: int
    counted: bool = False
    doing: str | None = None


class HeldLeases:
    """The leases of one scheduler's claims and runs on a shared store, mixed into its
    :class:`~lldsched.threaded.shared.Coordinator` (which sets what is declared here)."""

    store: CoordinatedStore
    _core: SchedulerCore
    _stop: Callable[[str], None]  # stops a run in flight the runtime can stop (shared.py)
    _pending: dict[str, Claim]  # task id -> claim handed out, not yet begun
    _unbegun: set[int]  # tokens of the claims not begun at the last renewal that succeeded
    _running: dict[int, tuple[str, RunContext | None]]  # token -> its run
    _counted_lost: dict[int, tuple[str, RunContext | None]]  # token -> its run
    _every: float  # seconds between renewals
    _renew_at: float | None  # None: no lease held or counted lost
    _trust: Clock  # the clock leases are trusted by
    _watch: LeaseWatch

    if TYPE_CHECKING:

        def _failed(self, error: Exception, kind: Kind, doing: str | None = None) -> None: ...

        def _succeeded(self, kind: Kind) -> None: ...

        def _drop_pending(self, task_ids: list[str]) -> list[Claim]: ...

        def _release(self, task_id: str, token: int) -> None: ...

    def looked(self) -> float:
        """A reading of the clock leases are trusted by, taken *before* the scheduler's
        clock is read for the ``now`` that :meth:`tick`, :meth:`claim` and
        :meth:`renew_held` are then given with it (as ``looked``).

        The rule: a claim's or a renewal's trust counts from no later than the instant its
        store's expiry counts from.  A shared SQLite store computes the expiry as ``now +
        lease``, from that clock reading, however long the calls before the statement
        took (a renewal waiting for the write lock, the change feed, the process
        descheduled); PostgreSQL computes it on the server, during the statement, later
        still.  A reading taken just before the statement, as it was, let a timer whose
        renewal and feed took more than ``lease / 6`` before its claim trust that claim
        (begin its run, keep its flag down) after the store let another process take it
        over.  One reading per wake, on the lease clock
        (:data:`~lldsched.threaded.shared.leasewatch.LEASE_CLOCK`): no correction between the
        store's clock and this one, so a scheduler's fake clock changes nothing."""
        return self._trust.now()

    def gone(self, run: Run) -> bool:
        """Whether ``run``, begun here on a claim and not settled yet, no longer holds its
        lease because a renewal found it gone (caller holds the lock).  A lease only
        counted lost is not gone: nobody may have taken it over, and its run goes on,
        its flag up, until a renewal the store answers settles it (:meth:`_renew`)."""
        token = run.token
        return token is not None and token not in self._running and token not in self._counted_lost

    def _held_none(self) -> None:
        """Nothing held any more: the next claim starts the trust's count again (from its
        own reading), and no renewal is due unless leases counted lost are left to check."""
        if not self._running and not self._pending:
            self._watch.held_none()
            if not self._counted_lost:
                self._renew_at = None

    def renew_held(self, now: float, looked: float) -> None:
        """Renew every lease held now, due or not (the timer is stopped: see
        :func:`leases_kept`; ``looked``: :meth:`looked`); a lease found lost raises its
        run's flag."""
        if self._running or self._pending or self._counted_lost:
            self._say_lost(self._renew(now, looked))

    def _renew(self, now: float, looked: float) -> list[Lost]:
        """Renew the leases held, and check those counted lost; each one found lost, or
        counted lost now, for :meth:`_say_lost`.

        A lease the store does not hold any more (taken over, or gone with its task) raises
        its run's flag and stops what only the runtime can stop (``stop``).  When no
        renewal vouches for the leases any more and this one fails too, the runs' leases
        are counted lost (their flags raised, nothing stopped: nobody may have taken them
        over) and kept to check: the renewals go on trying them, so once the store answers
        a takeover made meanwhile stops the run like any other, and a lease the store
        still holds for this process (nobody took it) is renewed and trusted again
        (:meth:`_trusted_again`)."""
        counted = self._counted_lost
        tokens = {claim.token for claim in self._pending.values()} | set(self._running)
        tokens |= set(counted)
        if not tokens:
            self._held_none()
            return []
        self._renew_at = now + self._every
        try:
            kept = self.store.renew(tokens=tokens, now=now)
        except Exception as exc:
            self._failed(exc, "renewal", "renewal of the leases held")
            if self._watch.trusted():
                return []
            return self._count_lost()  # no renewal vouches for them any more
        self._succeeded("renewal")
        self._watch.renewed(looked)
        lost = []
        for token in tokens - kept:  # gone for sure: the run stops, not only its flag
            self._watch.discard(token)
            said = token in counted  # counted lost before: said then
            run = self._running.pop(token, None) or counted.pop(token, None)
            task_id, context = ("", None) if run is None else run  # "": a claim not begun
            if context is not None:
                context.lose_lease()
            if task_id:
                self._stop(task_id)
            lost.append(Lost(task_id, token, counted=said))
        for token in kept & counted.keys():
            self._trusted_again(token, *counted.pop(token))
        self._drop_pending([t for t, claim in self._pending.items() if claim.token not in kept])
        self._give_back_unbegun()
        self._held_none()
        return lost

    def _give_back_unbegun(self) -> None:
        """After a renewal that succeeded: give back the claims that were not begun at the
        renewal before it either, and note those not begun now.  A claim handed out waits
        for a worker (or a coroutine slot) of this process; one that waited a whole
        renewal interval (``lease / 3``) waits behind runs that turned out long, its slot
        late, while another process may stand idle: the store has it claimed again,
        there or here, at once (this process claims again once a worker of its goes
        idle).  Its entry leaves the hand-off queue (:meth:`_drop_pending`): left there
        as a tombstone, it counted in ``metrics()`` as a run waiting here, its lag
        growing while another process ran the task's slots on time.  Rare: most claims
        are begun within milliseconds; with none waiting this is one test of an empty
        set."""
        unbegun = self._unbegun
        if unbegun:
            given = [task_id for task_id, claim in self._pending.items() if claim.token in unbegun]
            for task_id, claim in zip(given, self._drop_pending(given), strict=True):
                self._release(task_id, claim.token)
            if given:
                log.info(
                    "gave back %d claimed run(s) not begun for a renewal interval (%g s), "
                    "waiting behind longer runs here: the store hands them out again (%s)",
                    len(given),
                    self._every,
                    ", ".join(given),
                )
        pending = self._pending
        self._unbegun = {claim.token for claim in pending.values()} if pending else set()

    def _count_lost(self) -> list[Lost]:
        """No renewal vouches for the leases held and the last one failed: count them lost
        (each run's flag raised, the claims not begun dropped), the runs' kept for the
        renewals to check once the store answers; their (task id, token), for
        :meth:`_say_lost`."""
        lost = []
        for token, (task_id, context) in self._running.items():
            self._watch.discard(token)
            if context is not None:
                context.lose_lease()
            self._counted_lost[token] = (task_id, context)
            lost.append(Lost(task_id, token))
        lost.extend(Lost("", claim.token) for claim in self._drop_pending(list(self._pending)))
        self._running.clear()
        self._held_none()
        return lost

    def _trusted_again(self, token: int, task_id: str, context: RunContext | None) -> None:
        """A lease counted lost that a renewal found still this process's (nobody took it
        over meanwhile): renewed by that renewal, held and trusted again, its run's settle
        written as any other's.  Its flag stays up (a flag never comes down: the action
        may have stopped on it already)."""
        self._running[token] = (task_id, context)
        if context is not None:
            self._watch.add(token, context)
        log.info(
            "the store still holds the lease of task %s (token %d) for this process, counted "
            "lost while no renewal succeeded: nobody took it over, it is renewed and trusted "
            "again",
            task_id,
            token,
            extra={"task_id": task_id},
        )

    def _say_lost(self, lost: list[Lost]) -> None:
        """Log the leases :meth:`_renew` (or :meth:`_write_decided`, saying what it was
        doing) found lost; called after a read of the change feed.  A lease
        that went with its task (another process removed it: the delete takes the lease,
        and the registry, having read the change feed since, no longer has the task) is
        no fault: said at INFO, with why.  Any other (a takeover after a stall, an outage
        that outlasted the lease) is a WARNING, once: a lease counted lost (said then)
        that a renewal later finds taken over is said at INFO, its run stopped.  A cancel
        elsewhere keeps the lease: the run settles under it, and the cancel wins there."""
        tasks = self._core.tasks
        for task_id, token, counted, doing in lost:
            if task_id and task_id not in tasks:
                log.info(
                    "task %s was removed in another process%s: its lease (token %d) went with it",
                    task_id,
                    "" if doing is None else f" while this one was {doing}",
                    token,
                    extra={"task_id": task_id},
                )
            elif counted:
                log.info(
                    "the lease of task %s (token %d), counted lost while no renewal "
                    "succeeded, was taken over meanwhile: its run is stopped",
                    task_id,
                    token,
                    extra={"task_id": task_id},
                )
            else:
                log.warning(
                    "lost the lease of task %s (token %d)%s",
                    task_id or "?",
                    token,
                    "" if doing is None else f" while {doing}",
                    extra={"task_id": task_id or None},
                )


@contextlib.contextmanager
def leases_kept(
    coordinator: HeldLeases | None,
    lock: threading.Lock,
    now: Callable[[], float],
    *,
    name: str = "lldsched-lease-keeper",
    deadline: Deadline | None = None,
) -> Iterator[None]:
    """While the block runs (``shutdown()`` waiting for the runs in flight, its timer
    stopped), renew ``coordinator``'s leases every ``lease / 3`` seconds on a thread of
    its own, under ``lock`` (the scheduler's, as the timer renews); the thread ends with
    the block (``name``: its name), joined within ``deadline`` (a keeper still waiting
    for a lock a store call holds renews nothing once it has it, and ends).  A renewal
    that raises (an injected clock's ``now()``) is logged, and the next one goes on, as
    after a store's failure (a store's own exception is one: :meth:`Coordinator._failed
    <lldsched.threaded.shared.Coordinator._failed>`).
    Nothing to do without a shared store."""
    if coordinator is None:
        yield
        return
    done = threading.Event()  # set when the block ends: the keeper stops

    def keep() -> None:
        while not done.wait(renewal_every(coordinator.store.lease)):
            try:
                with lock:
                    if not done.is_set():
                        looked = coordinator.looked()  # first: what the trust counts from
                        coordinator.renew_held(now(), looked)
            except Exception:  # (rare) an injected clock that raised: logged, lock let go
                log.exception(
                    "a renewal of the leases a shutdown waits for raised; the next one, "
                    "%s s later, tries again",
                    renewal_every(coordinator.store.lease),
                )

    keeper = threading.Thread(target=keep, name=name, daemon=True)
    if not start(keeper):  # the interpreter's exit on Python 3.12.0-3.12.2: not renewed
        yield
        return
    try:
        yield
    finally:
        done.set()
        keeper.join(None if deadline is None else deadline.remaining())
