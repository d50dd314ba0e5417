"""Coordinator: the threaded runtime's side of a shared store (docs/CLUSTER.md).

Owns what one process knows of the claims it holds: the claims handed to the
workers and not yet begun, the leases of the runs in flight (token -> context),
and when to renew them.  Every method runs under the scheduler's one lock (the
Coordinator has no lock of its own; lock order: the scheduler's, then the
store's), on the timer thread or on a worker; :meth:`flush` alone is called
without it, and takes it for its bookkeeping.

``Coordinator`` is one class written in four modules: this one holds its construction,
the claims (made, handed out, begun, given back, settled) and the change feed; mixed
into it are the leases held (:mod:`~lldsched.threaded.shared.leases`: renewed, counted lost,
trusted again, and kept renewing through a shutdown), what it decides for a slot it
claimed without running it (:mod:`~lldsched.threaded.shared.decisions`: a misfire, a
slot held for its upstreams) and the rows it loads as they are
(:mod:`~lldsched.threaded.shared.load`: at start, and a row left out, taken over).

What the timer does with it, at every wake:

* :meth:`tick`: renew the leases when the renewal is due (every ``lease / 3``: one
  more deadline in the timer's wait, no thread of its own; a token the store no
  longer holds raises its run's flag with ``lease_lost`` and stops its run; a lease
  counted lost in an outage is still sent, so a takeover meanwhile is learnt and a
  lease nobody took is trusted again: :meth:`Coordinator._renew
  <lldsched.threaded.shared.leases.HeldLeases._renew>`), then apply what other processes wrote
  (:mod:`lldsched.core.follow`) if the store says anything changed;
* :meth:`claim`: the heap's due entries are hints of when to wake, dropped here;
  the store picks what runs, up to the room in the hand-off queue, and each claim
  becomes a live entry carrying its token to :meth:`begin`.  A claim whose first
  slot to decide (the slot claimed; for an owed attempt, a retry or a takeover, the
  slot after the one it runs: :func:`~lldsched.core.misfires.apply.first_decided`) was due
  before this process was there (before it was built, or jumped over by the wall
  clock) and is late beyond its grace meets its misfire policy here, in the one
  process that holds the claim (:meth:`Coordinator._misfire
  <lldsched.threaded.shared.decisions.ClaimDecisions._misfire>`), as at a restart;
* :meth:`wake`: the instant to wake by, bounded by the store's ``poll``: the
  bound on how late a lease that expired elsewhere, or another process's change,
  is noticed.  A store that can notify (PostgreSQL) wakes the timer sooner.  After a
  wake at which a store call failed, ``poll`` from when the calls returned: in an outage
  the timer lets its lock go between one wake's calls and the next's.

How long a renewal vouches for the leases is :mod:`lldsched.threaded.shared.leasewatch`'s
rule; its :class:`~lldsched.threaded.shared.leasewatch.LeaseWatch` raises the runs' flags once
none does, on a thread of its own (the timer may be held in a store call by the outage).
A claim handed out but not begun by then is not begun, and is released at once; and
while it lasts (until a renewal succeeds, or the leases are counted lost) nothing is
claimed (:meth:`LeaseWatch.trusted <lldsched.threaded.shared.leasewatch.LeaseWatch.trusted>`).  A
wall-clock jump the timer sees renews the leases at that wake; forward, it first cuts
their trust by the jump (:meth:`Coordinator.clock_jumped`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Collection

from lldsched.coordination import Claim, CoordinatedStore
from lldsched.core.context import RunContext
from lldsched.core.duequeue import queued_entry
from lldsched.core.follow import claimed_entry, follow
from lldsched.core.machine import SchedulerCore
from lldsched.core.names import RUNNABLE
from lldsched.core.store.outage import Kind
from lldsched.core.task import Entry, Run, ScheduledTask
from lldsched.logs import CLUSTER, instant_text
from lldsched.model import TaskStatus
from lldsched.storecalls import settles_waiting, verb_call
from lldsched.threaded.shared.decisions import ClaimDecisions
from lldsched.threaded.shared.leases import HeldLeases, Lost
from lldsched.threaded.shared.leasewatch import LEASE_CLOCK, LeaseWatch, renewal_every, trusted_for
from lldsched.threaded.shared.load import SharedLoad

__all__ = ["Coordinator", "said_taken_over"]

log = logging.getLogger(CLUSTER)


def said_taken_over(claim: Claim) -> None:
    """The WARNING of a claim that took an expired lease over (``claim.taken_over``): a run
    repeated, the one place an operator sees it (no record says so), naming the process
    whose lease expired (``claim.taken_from``) so it can be found: dead, or stalled and
    maybe still running the job."""
    log.warning(
        "took over task %s (slot %s, attempt %d) with token %d: the lease of the process "
        "that held it (%s) expired unsettled (it died, stalled or lost the store); its run, "
        "if it started, runs again here",
        claim.task_id,
        instant_text(claim.slot),
        claim.attempt + 1,  # the run's attempt, as its record will say
        claim.token,
        claim.taken_from or "a holder the store did not name",
        extra={"task_id": claim.task_id, "attempt": claim.attempt + 1},
    )


class Coordinator(HeldLeases, ClaimDecisions, SharedLoad):
    """Claims, leases in flight and the change feed of one scheduler on a shared store."""

    def __init__(
        self,
        store: CoordinatedStore,
        core: SchedulerCore,
        *,
        drop_due: Callable[[float], object],
        wake: Callable[[], None],
        followed: Callable[[list[ScheduledTask]], None],
        stop: Callable[[str], None],
        unclaimed: Callable[[set[str]], None],
        thread_prefix: str,
    ) -> None:
        self.store = store
        self._core = core
        core.node = store.node  # every run's record here names this process
        # Stops the task's run in flight here that the runtime can stop (a coroutine, a
        # worker process), once the store said its lease is gone: neither can be asked to
        # look at a flag, and each would run the slot again beside its new holder.
        self._stop = stop
        self._drop_due = drop_due  # pops the heap's due entries (hints) at an instant
        # The runtime's bookkeeping for the tasks a read of the feed touched (loop-task
        # ids, a run here stopped by a pause or cancel made elsewhere): told by sync(),
        # whoever reads (a tick, a verb's follow, a claim of a task registered elsewhere).
        self._followed = followed
        self._pending: dict[str, Claim] = {}  # task id -> claim handed out, not yet begun
        # Takes the entries of claims dropped unbegun out of the hand-off queue, settled
        # (_drop_pending): left there, they counted as work waiting in metrics().
        self._unclaimed = unclaimed
        # The tokens of the claims not begun at the last renewal that succeeded: one still
        # not begun at the next is given back (_give_back_unbegun).
        self._unbegun: set[int] = set()
        self._running: dict[int, tuple[str, RunContext | None]] = {}  # token -> its run
        # Runs in flight whose leases were counted lost (no renewal succeeded for a whole
        # lease): not held any more, yet still renewed, so that once the store answers a
        # takeover meanwhile stops the run and a lease nobody took is trusted again
        # (_renew).  Token -> its run, as _running.
        self._counted_lost: dict[int, tuple[str, RunContext | None]] = {}
        self._every = renewal_every(store.lease)
        self._renew_at: float | None = None  # None: no lease held or counted lost
        # The clock leases are trusted by, one that counts a suspend where the platform
        # has one (leasewatch.suspend_counting): the store's expiry counts real time (its
        # server's clock), never the scheduler's injected clock (a fake clock advanced an
        # hour in one step has not let any lease expire).
        self._trust = LEASE_CLOCK
        # Keeps how long the leases are trusted (from when the last renewal that succeeded
        # began: see looked()), and raises the runs' flags once they are not, whatever the
        # timer is doing (held up in a store call by the outage itself): leasewatch.py.
        # Its thread is named after the scheduler's (thread_prefix: "lldsched-<name>-").
        self._watch = LeaseWatch(self._trust, lease=store.lease, name=f"{thread_prefix}lease-watch")
        self._held_back = False  # claims held back for want of trust (said once a lapse)
        # The timer left due runs unclaimed for want of room to start them, every worker
        # busy or every coroutine slot taken (timer._claim_room): the first worker to go
        # idle, or slot to free, wakes it (timer._room_freed). Under the scheduler's lock.
        self.starved = False
        # A store call failed since the timer last waited: its next wait is ``poll`` from
        # when the calls returned, the lock let go (wake), however overdue its next instant.
        self._failed_since_wait = False
        # Leases found lost by the write of what a claim decided without a run (a misfire,
        # a slot held for a dependency wait): said at the next tick, after its read of the
        # feed, which knows by then whether a removal took them.
        self._lost_deciding: list[Lost] = []
        # Slots due before this instant passed while this process was not there (not
        # started yet: started(), or a forward wall-clock jump): a claim of one is a
        # misfire candidate.
        looked = self._trust.now()
        self._since = core.clock.now()
        # (the lease clock, the wall clock) read at the last wake, or at the last jump:
        # how much of a forward jump the lease clock did not count (clock_jumped).
        self._paired = (looked, self._since)
        self._taken: ScheduledTask | None = None  # taken over in a taking_over() block
        self._raised: Claim | None = None  # the claim whose begin raised, for broke()
        self._rejected = store.rejected  # the store's refused settles, as done() last saw
        store.subscribe(wake)

    # -- the timer ------------------------------------------------------------------------

    def tick(self, now: float, looked: float) -> None:
        """Renew leases if due, or at every wake while leases counted lost are left to
        check; apply other processes' changes if any (``looked``: see :meth:`looked`; the
        runtime hears of the tasks they touched: :meth:`sync`)."""
        lost: list[Lost] = []
        self._paired = (looked, now)
        # Leases counted lost are checked at every wake, before the claim: once the store
        # answers, a claim made first found this process's own lease expired (nobody took
        # it) and took it over, the renewal then stopping the run it held (run twice).
        if self._renew_at is not None and (now >= self._renew_at or self._counted_lost):
            lost = self._renew(now, looked)
        self.sync()
        self._say_lost(lost)  # after the feed: a removal that took the lease is known then
        if self._lost_deciding:
            self._say_lost(self._lost_deciding)
            self._lost_deciding = []

    def _failed(self, error: Exception, kind: Kind, doing: str | None = None) -> None:
        """A call of ``kind`` failed (``doing``: what, if more than its kind): logged by
        the core's :class:`~lldsched.core.store.writes.StoreWrites`, the one rule (a
        shared store that is down or closed fails at every wake: said once an outage).

        Whatever it raised: every store call here (the feed, a claim, a renewal, a
        release, a flush, a misfire's read and write) catches ``Exception``, not only
        :class:`~lldsched.errors.StoreError`, as the core's own writes do
        (docs/decisions/store-failures.md, "A coordinated store's call that raises anything").  A
        user's store that raises its driver's error or a bug's is a failed call, said with its
        traceback at the outage's start, instead of killing the thread it ran on (the
        timer, or shutdown's lease keeper) or raising out of ``wait_idle``."""
        writes = self._core.store_writes
        assert writes is not None  # a core with a store has one
        writes.call_failed(error, kind, doing or kind)
        self._failed_since_wait = True

    def _succeeded(self, kind: Kind) -> None:
        """A call of ``kind`` succeeded: it may end an outage (said there: which kinds end
        which is :data:`~lldsched.core.store.outage.ENDED_BY`'s)."""
        writes = self._core.store_writes
        if writes is not None and writes.outage is not None:
            writes.succeeded(kind)

    def sync(self) -> None:
        """Apply what other processes wrote since the last call (one cheap check when
        nothing changed), and tell the runtime the tasks it touched (``followed``, given
        at construction): every read does, wherever it is made, since the feed says each
        change once (a claim's read whose tasks were dropped left a coroutine paused
        elsewhere running here)."""
        store = self.store
        try:
            if not store.changed():
                self._succeeded("read of the change feed")
                return
            changes = store.changes()
        except Exception as exc:  # tried again at the next wake
            self._failed(exc, "read of the change feed")
            return
        touched = []
        with store.muted():
            for change in changes:
                try:
                    task = follow(self._core, change, records_of=store.records)
                except Exception:  # one unreadable change must not stop the timer
                    log.exception("cannot apply the change to %s from another process", change)
                    continue
                if task is not None:
                    touched.append(task)
        for task in touched:  # unmuted: a wait that ends here is written from here
            if task.status is TaskStatus.BLOCKED:
                self._core.wait_followed(task)
        # Once the changes read are applied: a row an outage left stale is written again
        # then (core/store/outage.py), only while the store has nothing newer of it than
        # the registry does; before, a row just read was "known" but not yet followed.
        self._succeeded("read of the change feed")
        if touched:
            self._followed(touched)

    def claim(
        self,
        now: float,
        room: int,
        looked: float,
        among: Collection[str] | None = None,
        leaving: Collection[str] = (),
    ) -> list[Entry]:
        """Claim up to ``room`` due runs, only of the tasks ``among`` if given and none of
        ``leaving`` (the timer's ``_claim_room``: the kinds of run this process has room
        to start); their entries, ready for the workers (``looked``: the reading taken
        before ``now``, which their trust counts from: :meth:`looked`).  None while
        leases are held that no renewal vouches for (their flags are up): a claim would
        only be refused at its begin and given back."""
        self._drop_due(now)
        if not self._watch.trusted():  # leases held that no renewal vouches for any more
            if not self._held_back:
                self._held_back = True
                log.warning(
                    "no renewal of the leases held here succeeded for %g s: claiming nothing "
                    "until one does, or until they are counted lost",
                    trusted_for(self.store.lease),
                )
            return []
        self._held_back = False
        try:
            if among is None and not leaving:  # the usual claim, as any store takes it
                claims = self.store.claim(now=now, limit=room)
            else:
                claims = self.store.claim(now=now, limit=room, among=among, leaving=leaving)
        except Exception as exc:  # tried again at the next wake
            self._failed(exc, "claim")
            return []
        self._succeeded("claim")
        if any(claim.stale for claim in claims):  # written elsewhere since the feed's read:
            self.sync()  # ...its new definition, if any, is the one the run is made with
        entries: list[Entry] = []
        for claim in claims:
            if claim.taken_over:  # no record says so: the log is where an operator sees it
                said_taken_over(claim)
            entry = claimed_entry(self._core, claim)
            if entry is None and claim.task_id not in self._core.tasks:
                self.sync()  # registered elsewhere after the last sync
                entry = claimed_entry(self._core, claim)
            if entry is None:  # paused or cancelled here meanwhile: give it back
                self._release(claim.task_id, claim.token)
                continue
            if claim.slot < self._since or claim.attempt or claim.taken_over:  # maybe unseen
                owed = claim.taken_over or claim.attempt > 0  # runs first, as at a restart
                if self._unseen(claim.task_id, owed):
                    entry = self._misfire(claim, entry, now, owed=owed)
                    if entry is None:
                        continue
            self._pending[claim.task_id] = claim
            entries.append(entry)
        if entries:
            if self._renew_at is None:
                self._renew_at = now + self._every
            self._watch.claimed(looked)
        return entries

    def held_elsewhere(self, now: float) -> set[str]:
        """The ids of the tasks whose lease another process holds, live at ``now`` (the
        timer, with no room to claim, drops their due entries: :meth:`TimerThread._unheld
        <lldsched.threaded.timer.TimerThread._unheld>`).  Empty if the store cannot say (an
        outage: the wake's other calls say it), and without asking it once a call of this
        wake failed: in a black hole each call takes the store's ``timeout``, the scheduler's
        lock held meanwhile (:meth:`wake`)."""
        if self._failed_since_wait:
            return set()
        try:
            leases = self.store.leases()
        except Exception as exc:  # a read for metrics only: the entries are kept
            log.debug("could not read the leases held elsewhere: %r", exc)
            return set()
        node = self.store.node
        return {
            lease.task_id for lease in leases if lease.holder != node and lease.expires_at > now
        }

    def give_back(self, task_ids: list[str]) -> None:
        """Give back at once the claims of ``task_ids`` just made by :meth:`claim`, before
        their entries were handed out: runs of a kind this process has no room to start,
        written by another process after the feed's read that narrowed the claim (the
        timer's ``_startable``).  The store hands them out again, to whichever process
        claims first; this one's next claim leaves them out."""
        pending = self._pending
        for task_id in task_ids:
            self._release(task_id, pending.pop(task_id).token)
        log.info(
            "gave back %d claimed run(s) of a kind with no room here, written by another "
            "process after this one read the change feed: the store hands them out again (%s)",
            len(task_ids),
            ", ".join(task_ids),
        )

    def clock_jumped(self, jump: float, now: float) -> None:
        """The wall clock jumped by ``jump`` seconds, to ``now`` (the timer saw it at this
        wake, before :meth:`tick`).

        The leases are renewed at this wake, either way: the renewal is due on this clock,
        the one a shared SQLite store's expiries are on, so set back it would wait for the
        jump while the trust (the lease clock) ran out and raised every run's flag on
        leases no one could take.  Forward, the store's expiries came ``jump`` seconds
        closer in real time, for every process of the host, while their holder's trust
        did not: it is cut first by as much of the jump as the lease clock did not count
        since the last wake (so a renewal that then fails leaves the runs flagged ``lease
        / 6`` before the store's expiry as it is now, or at once), and the slots the jump
        passed were passed while this process was not there, as during downtime (their
        claims meet the policy).  A suspend is such a jump to the timer (the wall clock
        moved, ``time.monotonic`` did not) and is downtime for the slots; but the lease
        clock counted it where the platform has a clock that does
        (:func:`~lldsched.threaded.shared.leasewatch.suspend_counting`): the trust ran out by
        itself, and a cut by the whole jump counted the suspend twice (a renewal failing
        at the wake after a short suspend flagged runs whose leases were still good).  The
        lease clock is read here, just after ``now``: the cut errs by the instants between
        the two readings, towards less.  On PostgreSQL (expiry on the server's clock) the
        cut errs early at worst: with a client's clock stepped alone, flags go up on
        leases still good only if the renewal at this wake fails."""
        if self._renew_at is not None:
            self._renew_at = now
        looked, then = self._paired
        trust = self._trust.now()
        self._paired = (trust, now)
        if jump > 0:
            self._since = max(self._since, now)
            # The wall's move the lease clock missed; never more than the jump itself (the
            # lease clock runs at least as the monotonic one does: equal on real clocks).
            uncounted = min(jump, (now - then) - (trust - looked))
            if uncounted > 0:
                self._watch.cut(uncounted)

    def started(self, now: float) -> None:
        """``start()`` ran at ``now``: the slots due before it passed while this process
        was not there to claim them (built, not started: nothing ran), as those due
        before its construction did, and a claim of one meets its task's policy
        (:meth:`_unseen`, :meth:`_misfire`), as a restart's recovery and an unshared
        ``start()`` decide them (:func:`~lldsched.core.recovery.at_start`).  Before,
        only a slot due before the construction did: one due between it and the start
        ran late at the start, and the slots after it were recorded ``skipped`` (the
        overrun rule), whatever the policy.  Jumps are measured from here, as the
        timer's are (``_first_look``): the lease clock read with ``now``."""
        self._since = max(self._since, now)
        self._paired = (self._trust.now(), now)

    def wake(self, now: float, wake: float | None) -> float:
        """The instant to wake by: ``wake``, the renewal, and at most ``poll`` from now.

        After a wake at which a store call failed, ``poll`` after the calls returned,
        whatever was due sooner: in an outage each call fails only once its ``timeout``
        passed (a black hole), so one wake's calls (a renewal, the feed, a claim) outlast
        ``poll`` and the renewal's interval, the next instant is overdue when they return,
        and the timer went on to the next wake's calls without ever waiting, holding the
        scheduler's lock for the whole outage: every verb, a read included, waited for it.
        The wait lets the lock go, so a verb waits for one wake's calls at most."""
        poll = self.store.poll
        if self._failed_since_wait:
            self._failed_since_wait = False
            return self._core.clock.now() + poll
        bound = now + poll
        if self._renew_at is not None and self._renew_at < bound:
            bound = self._renew_at
        return bound if wake is None or wake > bound else wake

    # -- the workers ----------------------------------------------------------------------

    def begin(self, entry: Entry, worker: int) -> Run | None:
        """Begin a claimed entry with its token; a claim that cannot begin is given back,
        with the task's row if the readiness check held its slot (:meth:`_give_back_held`).
        An entry that died only because this process followed another's write since the
        claim, a write that left the task due at the claimed slot, begins as it stands now
        (:meth:`_still_claimed`)."""
        claim = self._pending.pop(entry[3], None)
        if claim is None:  # dropped while its entry was not in the hand-off queue: not ours
            return None
        trusted = self._watch.trusted()  # else no renewal vouches for its lease: not ours
        try:  # free until it raises (3.11)
            run = self._core.begin(entry, worker, token=claim.token) if trusted else None
            if run is None and trusted:
                again = self._still_claimed(entry, claim)
                if again is not None:
                    run = self._core.begin(again, worker, token=claim.token)
        except BaseException:  # (rare) the runtime calls broke() next, with this claim
            self._raised = claim
            raise
        if run is None:  # handed back now, not left to block its task until it expires
            held = self._core.claim_held(claim.token)
            if held is None:
                self._release(claim.task_id, claim.token)
            else:
                self._give_back_held(claim.task_id, claim.token, held)
            self._held_none()
        else:
            self._running[claim.token] = (claim.task_id, run.context)
            if run.context is not None:
                self._watch.add(claim.token, run.context)
        return run

    def _still_claimed(self, entry: Entry, claim: Claim) -> Entry | None:
        """The live entry of ``claim``'s task when ``entry``, handed to a worker with the
        claim, died before the worker began it only because the registry took a change
        another process wrote meanwhile (the change feed, read at a wake between the
        claim and its begin: a NOTIFY of a verb on the leased row comes at once) that
        left the task due at the claimed slot and attempt: a ``modify``, a replacement
        with the same schedule.  Following it queued the task
        again, which kills the entry handed out; but the claim holds that slot, and the
        run's settle decides after any write made during it (as for a write made once
        the run began).  Before, the claim was given back and the slot claimed again
        under another token, here or elsewhere: one slot, two claims.  None when the
        entry is live (refused for another reason) or the change moved the task (a
        pause, a cancel, a reschedule, a run_now): the claim is given back, as one
        process drops a run such a verb made before it began."""
        task = self._core.tasks.get(claim.task_id)
        if (
            task is None
            or task.generation in (0, entry[2])  # not queued, or the entry lives
            or task.running
            or task.status not in RUNNABLE
            or task.next_run_at != claim.slot
            or task.attempt != claim.attempt
        ):
            return None
        return queued_entry(task, claim.slot)

    def broke(
        self, task_id: str, run: Run | None, exc: BaseException, *, due: float | None
    ) -> None:
        """The runtime's :meth:`begin` of task ``task_id``'s entry due at ``due`` (``run``
        None) or its record of ``run`` raised ``exc`` (caller holds the lock; rare).  The
        core decides as in one process (:meth:`SchedulerCore.broke
        <lldsched.core.runs.RunTransitions.broke>`: a task the step left stuck fails,
        its dependents are told), given the claim's token; a failure it decided is
        written here, fenced by that token, the lease dropped in the same transaction
        (:meth:`_give_back_held`), so that the other processes hear it from the change
        feed; its dependents are told once it is written (there, as a readiness check's
        failure's are), and not where the lease was lost before: the slot is then
        another process's, whose run decides for them.  A begin that raised and failed
        nothing gives its claim back at once, for the store to hand the slot out again;
        a record that raised forgets its lease (:meth:`done`): a settle written before
        the step raised dropped it, and one that was not, of a task the step failed
        nothing of (a verb moved it meanwhile), is let lapse."""
        claim, self._raised = self._raised, None
        if run is not None:
            token = run.token
        elif claim is not None and claim.task_id == task_id:
            token = claim.token
        else:  # (not met) no claim known: decided as ever, the core's own write
            token = None
        core = self._core
        core.broke(task_id, run, exc, due=due, token=token)
        if run is not None:
            self.done(run)
        if token is None:
            return
        held = core.claim_held(token)  # the failure decided, or a held slot's end
        if held is not None and task_id in core.tasks:
            self._give_back_held(
                task_id, token, held, doing="writing what it decided after the scheduler raised"
            )
        elif run is None or held is not None:
            self._release(task_id, token)
        self._held_none()

    def done(self, run: Run) -> bool:
        """The run is settled (its store write was fenced by its token): forget its lease.
        True when the timer should read the change feed now: the run's task has
        dependents, and its end may decide a wait (:meth:`SchedulerCore.decides_waits
        <lldsched.core.waiting.DependencyWaits.decides_waits>`); or the store refused a
        settle since the last run here (``rejected`` moved: a lease taken over), whose
        task's row the feed now gives again, the state of the run that took it over, for
        the registry to follow instead of what the refused run decided.  A PostgreSQL
        store writes its settles on a thread of its own, and wakes the timer itself once
        it finds one refused."""
        if run.token is not None:
            self._running.pop(run.token, None)
            self._counted_lost.pop(run.token, None)
            self._watch.discard(run.token)
            self._held_none()
        rejected = self.store.rejected
        if rejected != self._rejected:
            self._rejected = rejected
            return True
        return self._core.decides_waits(run.task)

    def flush(self, *, lock: contextlib.AbstractContextManager[object]) -> None:
        """Have the store write the settles it holds back for a batch; a failure is
        logged, and those runs are taken over when their leases expire.

        The one method called without the scheduler's lock: the write needs only the
        store's own, and may wait on a server.  ``lock`` is the scheduler's, taken for
        the outage bookkeeping after it: the core's :class:`~lldsched.core.store.writes.
        StoreWrites` is counted into by the timer and the workers under that lock, and
        counted into beside them a claim failing at the same time could begin a second
        outage (said twice), or be counted into one this flush's success had just ended
        (missing from the recovery's count).

        A store that says what it holds (:func:`~lldsched.storecalls.settles_waiting`:
        PostgreSQL) and had nothing to send, or held its settles again (an outage: it
        logs that itself), returns no success: counted one, it ended an outage in which a
        flush failed and wrote the rows the outage left stale once more, another
        ``timeout`` in a black hole (a shutdown's, a ``wait_idle()``'s)."""
        store = self.store
        sending = settles_waiting(store)  # None: the store does not say
        try:
            store.flush()
        except Exception as exc:
            with lock:  # the scheduler's: guards the core's StoreWrites (its outage)
                self._failed(exc, "flush", "flush of the settles held back for a batch")
            return
        if sending is False or (sending and settles_waiting(store)):
            return  # nothing sent, or held again (the store said so): no sign it answers
        with lock:  # likewise
            self._succeeded("flush")

    def release_pending(self) -> None:
        """Give back the claims handed out and never begun (dropped at shutdown), so the
        other processes need not wait for their expiry.  One call of the store's
        (:func:`~lldsched.storecalls.verb_call`): in an outage the releases wait one
        ``timeout`` in all, and the claims not given back expire on their own.  Each
        waited its own before, the scheduler's lock held throughout, and a ``close()``
        after the shutdown waited behind them (docs/decisions/store-failures.md, "One timeout a
        PostgreSQL call, and a verb's")."""
        pending = list(self._pending.items())
        self._pending.clear()
        if pending:
            with verb_call(self.store):
                for task_id, claim in pending:
                    self._release(task_id, claim.token)

    # -- internals -------------------------------------------------------------------------

    def _drop_pending(self, task_ids: list[str]) -> list[Claim]:
        """Forget the claims of ``task_ids`` handed out and not begun (their leases lost,
        or given back), and have the runtime take their entries out of the hand-off
        queue, settled (``unclaimed``): a worker would find no claim for them
        (:meth:`begin`), and until one did ``metrics()`` counted them as runs waiting
        here (``handoff``, and a ``lag`` growing from their due time).  Their claims, in
        that order (caller holds the lock)."""
        if not task_ids:
            return []
        pending = self._pending
        claims = [pending.pop(task_id) for task_id in task_ids]
        self._unclaimed(set(task_ids))
        return claims

    def _release(self, task_id: str, token: int) -> None:
        try:
            self.store.release(task_id=task_id, token=token)
        except Exception as exc:  # the claim expires on its own
            self._failed(exc, "release", f"release of the claim of {task_id}")
        else:
            self._succeeded("release")
