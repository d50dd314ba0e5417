"""The timer thread: wait exactly until the head of the heap is due, then hand out.

The timer waits on the scheduler's ``_wake`` condition exactly until the head of the
heap is due (``Clock.wait``), pops every due entry that fits in the hand-off queue,
and submits them to the pool (and a coroutine task's entries to the event loop).
Nothing polls: a push that makes a new head notifies the condition, so a task due
sooner than the one the timer is parked on re-arms it at once.  It also flags the
runs whose timeout passed (the deadline heap, one more thing to wake for).

**The lock.**  The timer works under the scheduler's one lock, and its wait is the one
place where it lets it go: a verb from another thread (``pause``, ``schedule``,
``shutdown``), a worker that records a run, waits for it.  A wake whose instant to
wait for passed while it worked (a store's ``poll`` shorter than one wake's calls to a
distant server, a ``max_wait`` of a few microseconds) finds a wait that returns at once:
the timer went round again, the lock held, for as long as that lasted, and every verb
with it (a shared store on a 2 ms round trip with ``poll=0.001``: no ``pause()`` returned
in 22 s, ``shutdown(timeout=10)`` gave up).  So the clock's wait returns at once at most
once in a row: what came due meanwhile is handed out at the next wake, and if that one's
instant has passed too the timer waits :data:`LET_GO` (a millisecond) on the condition
all the same, past the clock.  A wait, not a release and a take back with none between
(``cond.wait(0)``): CPython's ``Lock`` is not fair, so a waiter gets in only when it wins
the race against the thread that let it go, and the timer goes round meanwhile as fast
as it can, a core and the GIL taken (docs/decisions/threaded.md, "The timer lets the
lock go at every other wake at least").  A wake that hands entries out
goes round without a wait, as before, and that ends: a worker's batches are bounded by
the room of the hand-off queue, which only the workers free (under the lock), and the
event loop's by the heap's due entries, which nobody else can push to meanwhile.

**Wall-clock jumps.**  Due instants are wall-clock instants, and the timer
waits on a monotonic timeout.  When the clock has a ``monotonic()`` (the
:class:`~lldsched.clock.SystemClock` does; a ``FakeClock`` *is* time and has
none), the timer compares the two each time it wakes; a gap of more than 1 s
(plus 0.1% of the time waited, for NTP slewing) is a jump
(:mod:`lldsched.threaded.jumps`), and
:func:`lldsched.core.recovery.after_clock_jump` re-evaluates the heap: forward, the
misfire policy applies as after downtime; backward, elapsed-time schedules move
back with the clock.  A jump is noticed when the timer next wakes: when the head
of the heap falls due by the monotonic clock, and at the latest ``max_wait``
seconds (default 60) after it went to sleep.  That bound is what notices a
suspend: ``Condition.wait`` counts monotonic time, which stops while the machine
sleeps, so an unbounded wait for a task due in an hour would end an hour *after*
resume.  One wake a minute costs nothing measurable (``benchmarks/bench_idle.py``);
``max_wait=None`` waits exactly until the head is due.  A worker also looks before
it records a run that read its finish after the clock was set back since the timer's
last look: that run computes its next due time from the moved clock, so the jump is
handled first (``_look_at_clock``); a finish read before a backward jump that a
look saw before the run was recorded is moved by it.  Those tests are one monotonic
reading and two comparisons, with numbers kept ready in
:class:`~lldsched.threaded.jumps.LastLook`, where the look's readings are
(``LastLook.jumped_lag``).

**A shared store** (``SqliteTaskStore(path, shared=True)``, docs/CLUSTER.md): the
timer claims what runs from the store instead of popping the heap (the heap
stays, as the hint of when to wake), renews its leases as one more deadline,
and applies other processes' changes at every wake, at least every ``poll``
seconds (:class:`~lldsched.threaded.shared.Coordinator`).  A jump there renews the
leases held at once, and re-evaluates no due instant: forward, it cuts the leases'
trust by as much of the jump as the lease clock did not count (a suspend it counted
is no step: :func:`~lldsched.threaded.shared.leasewatch.suspend_counting`) and marks the
slots jumped over as passed while this process was not there, and whichever process
claims one applies the misfire policy
(:meth:`Coordinator.clock_jumped <lldsched.threaded.shared.Coordinator.clock_jumped>`);
backward, the rows keep their due instants.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Collection

from lldsched.core.context import RunContext
from lldsched.core.recovery import after_clock_jump
from lldsched.core.runs import rearmed
from lldsched.core.store.stalerows import STALE_RETRY
from lldsched.core.task import Entry, Run
from lldsched.errors import DEAD_TIMER, DEAD_TIMER_ADVICE, SchedulerStateError
from lldsched.logs import TIMER
from lldsched.threaded.parts import DEAD, RUNNING, SchedulerParts

__all__ = ["DEADLINE_SLACK", "LET_GO", "MAX_WAIT", "TimerThread"]

log = logging.getLogger(TIMER)

DEADLINE_SLACK = 64
"""Void entries the deadline heap may hold beyond as many as it has armed ones."""

MAX_WAIT = 60.0
"""The longest the timer sleeps before it looks at the clock again, by default (seconds)."""

LET_GO = 0.001
"""Seconds the timer waits on its condition, whatever is due, when it comes to its wait
with the instant to wait for already passed for the second wake in a row: the wait is
the one place where it lets the scheduler's lock go (module docstring, "The lock")."""


class TimerThread(SchedulerParts):
    """Mixed into Scheduler: the timer thread's loop and what it calls."""

    def _run_timer(self) -> None:
        """The timer thread's target: :meth:`_timer_loop`, its death logged and the
        scheduler marked ``"dead"`` (``running`` False; see :meth:`_refuse_if_dead`).

        What killed it is logged once, with its traceback, and not raised again: the
        thread ends either way, and a re-raise only had ``threading.excepthook`` print
        the same traceback a second time, to stderr, past the logging a service set up."""
        try:
            self._timer_loop()
        except BaseException:
            with self._lock:
                if self._state is RUNNING:  # else a shutdown() began: it stays STOPPED
                    self._state = DEAD
                self._wake_idle()  # a wait_idle() under way raises now, not at its timeout
            log.exception("the timer thread died; no further task will be dispatched")

    def _refuse_if_dead(self, verb: str) -> None:
        """Raise for ``verb``, which needs the timer, if the timer thread died (caller
        holds the lock): it would wait, or promise a run, for ever."""
        if self._state is DEAD:
            raise SchedulerStateError(
                f"cannot {verb}: {DEAD_TIMER}, so nothing is dispatched any more; "
                f"{DEAD_TIMER_ADVICE}"
            )

    def _timer_loop(self) -> None:
        """Until shutdown, under the lock but while it waits: notice a clock jump, flag
        the runs whose timeout passed, hand out what is due (:meth:`_hand_out`), then
        wait on ``_wake`` until the next due instant or deadline; an instant passed
        already at two wakes in a row has the second wait :data:`LET_GO` all the same
        (module docstring, "The lock")."""
        queue = self._queue
        cond = self._wake
        clock = self._clock
        pool = self._pool
        deadlines = self._deadlines
        last_look = self._last_look
        monotonic = last_look.monotonic  # jump detection (none on a FakeClock)
        coordinator = self._coordinator
        # Shared stores only: the tasks a claim takes only, or leaves (_claim_room).
        among: Collection[str] | None = None
        leaving: Collection[str] = ()
        with cond:  # the first look was start()'s (_first_look)
            looked = 0.0  # the lease trust clock's reading before `now` (shared stores only)
            handed = False  # at this wake: their begins write first (no stale rows tried)
            passed = False  # the last wake's instant had passed when it came to wait (LET_GO)
            while self._state is RUNNING:
                if coordinator is not None:
                    looked = coordinator.looked()  # first: Coordinator.looked says why
                now = clock.now()
                last_look.woke = now  # what metrics() reports as timer_woke
                if monotonic is not None:
                    self._look_at_clock(now)
                if deadlines and deadlines[0][0] <= now:
                    self._flag_timeouts(now)
                if coordinator is not None:
                    coordinator.tick(now, looked)
                room = pool.room
                if room and coordinator is not None:
                    room, among, leaving = self._claim_room(room)
                if room:
                    if coordinator is None:
                        batch = queue.pop_due(now, room)
                    else:
                        batch = coordinator.claim(now, room, looked, among, leaving)
                        if batch and (among is not None or leaving):
                            batch = self._startable(batch, loops=among is not None)
                            if not batch:
                                continue  # all given back: claim again, narrowed by their kinds
                    if batch:
                        self._in_flight += len(batch)
                        self._hand_out(batch)
                        handed = True
                        continue
                    if self._idle_waiters and self._in_flight == 0:
                        self._wake_idle()  # only tombstones were due: idle
                    wake = queue.next_due()
                else:
                    wake = None  # the hand-off queue is full: wait for a worker to make room
                    if coordinator is not None:
                        self._unheld(now)
                wake = self._wake_at(now, wake, handed=handed)
                handed = False
                if wake is not None and wake <= clock.now():  # passed while it worked
                    if passed:  # twice in a row: let the lock go all the same
                        passed = False
                        cond.wait(LET_GO)
                        continue
                    passed = True  # once: what came due is handed out at the next wake
                else:
                    passed = False
                clock.wait(cond, wake)

    def _flag_timeouts(self, now: float) -> None:
        """Flag the runs whose deadline passed by ``now`` (under the lock): each one's
        context is cancelled ("timeout"), unless its run ended before its deadline or a
        modify re-armed it."""
        deadlines, armed = self._deadlines, self._armed
        while deadlines and deadlines[0][0] <= now:
            deadline, _, context = heapq.heappop(deadlines)
            if armed.get(context) == deadline:
                del armed[context]
                context.cancel("timeout")

    def _wake_at(self, now: float, wake: float | None, *, handed: bool) -> float | None:
        """When the timer wakes next, given ``wake``, the next due instant (None: none,
        or no room for it): earlier for a store outage's stale rows to try again (a
        store of one process; soon after a wake that ``handed`` runs out, whose begins
        write first), for a run's deadline, for ``max_wait``, and for a shared store's
        renewal and poll."""
        writes = self._core.store_writes if self._coordinator is None else None
        if writes is not None and writes.outage is not None:
            # the store back, the outage ends then, not at a task's next write
            retry = now + STALE_RETRY if handed else writes.retry_due(now)
            if retry is not None and (wake is None or retry < wake):
                wake = retry
        deadlines = self._deadlines
        if deadlines and (wake is None or deadlines[0][0] < wake):
            wake = deadlines[0][0]
        max_wait = self._max_wait
        if max_wait is not None and (wake is None or wake - now > max_wait):
            wake = now + max_wait  # look again soon: a jump or a suspend shows then
        if self._coordinator is not None:
            wake = self._coordinator.wake(now, wake)  # renewal, and the poll bound
        return wake

    def _first_look(self) -> None:
        """The reading the timer's looks for a jump start from, taken by ``start()``
        under the lock (not by the timer thread when it first gets the lock: a jump
        before that was its starting point, and went unnoticed)."""
        last_look = self._last_look
        if last_look.monotonic is not None:
            last_look.took(self._clock.now(), last_look.monotonic())

    def _look_at_clock(self, now: float) -> None:
        """Compare the wall clock's move since the last look with the monotonic clock's,
        and re-evaluate the due times if it jumped (caller holds the lock; the clock has
        a ``monotonic()``).

        The timer looks each time it wakes, and a worker (or the event loop) before it
        records a run that read its finish after the clock went back since the timer's
        last look (:meth:`LastLook.set_back_since
        <lldsched.threaded.jumps.LastLook.set_back_since>`): such a run computes its
        next due time from a clock already moved, so the jump must be handled first, or
        a fixed delay's next run (a retry's backoff) would move back twice."""
        last_look = self._last_look
        monotonic = last_look.monotonic
        assert monotonic is not None
        jump = last_look.look(now, monotonic())
        if jump:
            self._clock_jumped(jump, now)

    def _clock_jumped(self, jump: float, now: float) -> None:
        """The wall clock jumped by ``jump`` seconds: re-evaluate the due times (or tell
        the shared store's coordinator), and say so once (caller holds the lock)."""
        coordinator = self._coordinator
        if coordinator is None:
            after_clock_jump(self._core, jump, now)
            done = "the due times re-evaluated"
        else:  # shared: leases renewed now; whoever claims a jumped-over slot decides
            coordinator.clock_jumped(jump, now)
            if jump > 0:
                done = "the slots it passed are decided as they are claimed"
            else:
                done = "the shared rows keep their due times"
        # Forward, the timer cannot tell a clock set ahead from a suspend (the wall clock
        # moved, time.monotonic did not): both are downtime for the slots it passed.
        either = " (set ahead, or the machine was suspended)" if jump > 0 else ""
        log.warning("the wall clock jumped by %+.3f s%s: %s", jump, either, done)

    def _claim_room(self, room: int) -> tuple[int, Collection[str] | None, Collection[str]]:
        """On a shared store: how many runs to claim, of the ``room`` the hand-off queue
        has, and of which tasks: ``(room, among, leaving)`` for :meth:`Coordinator.claim
        <lldsched.threaded.shared.Coordinator.claim>` (caller holds the lock).

        A process claims a run only when it has room to start it: a thread task's (or a
        process-isolated one's) while a worker here is idle (more idle workers than
        entries already waiting for one), a loop task's while a coroutine slot is free
        (:attr:`CoroutineRunner.free <lldsched.threaded.coroutines.CoroutineRunner.free>`:
        ``max_coroutines`` less the runs started and those waiting for a slot).  A run
        claimed without that room would wait here behind the runs in flight, its lease
        renewed, while an idle process could start it.  With room for both kinds, the
        whole ``room`` of any task; for one kind only, the claim is narrowed by the
        store to this process's loop tasks (``among``: every worker busy) or away from
        them (``leaving``: every slot taken), so the other kind's due runs stay
        unclaimed; for neither, nothing (docs/decisions/persistence.md, "A process claims only what
        it can start").  Either way the whole ``room``: one claim for a batch, since a
        claim costs a commit whatever it takes.  A kind left without room marks the
        coordinator ``starved``: the first worker to go idle or coroutine slot to free
        wakes the timer (:meth:`_room_freed`), which claims again.  A run of a batch
        left waiting behind one that turned out long is given back a renewal interval on
        (:meth:`Coordinator._give_back_unbegun
        <lldsched.threaded.shared.Coordinator._give_back_unbegun>`); one of a kind with no
        room, written by another process after this wake's read of the feed (so not known
        to the narrowing), at once (:meth:`_startable`)."""
        pool = self._pool
        worker = pool.idle > pool.queued  # room for a thread task's run
        loop_ids = self._loop_ids
        # Room for a loop task's run (with none registered, nothing to narrow the claim by).
        slot = not loop_ids or self._coroutines.free > 0
        if worker and slot:  # the usual case: the claim as it always was
            return room, None, ()
        assert self._coordinator is not None
        self._coordinator.starved = True
        if worker:  # every coroutine slot taken: no loop task's run
            return room, None, loop_ids
        if loop_ids and slot:  # every worker busy: loop tasks' runs only
            return room, loop_ids, ()
        return 0, None, ()

    def _startable(self, batch: list[Entry], *, loops: bool) -> list[Entry]:
        """The entries of a narrowed claim's ``batch`` this process has room to start: its
        loop tasks' if ``loops`` (every worker busy), else the others' (every coroutine
        slot taken); the claims of the rest are given back at once (caller holds the
        lock).

        The claim was narrowed by the kinds of the tasks this process knew, read from the
        change feed before it: a task another process registered (or replaced) between
        that read and the claim is taken by kind unknown, and the claim's own read of the
        feed (:meth:`Coordinator.claim <lldsched.threaded.shared.Coordinator.claim>`)
        learnt its kind.  Of the kind with no room, it would wait here, its lease renewed,
        until the give-back a renewal interval on, while an idle process could start it
        now.  Known now, the next claim's narrowing leaves it out: given back once, not
        again (docs/decisions/persistence.md, "A run of a kind with no room, written elsewhere after
        the feed's read, is given back at once")."""
        loop_ids = self._loop_ids
        unfit = [entry[3] for entry in batch if (entry[3] in loop_ids) is not loops]
        if not unfit:  # the usual case: the narrowing knew every task it took
            return batch
        assert self._coordinator is not None
        self._coordinator.give_back(unfit)
        return [entry for entry in batch if (entry[3] in loop_ids) is loops]

    def _room_freed(self) -> None:
        """A worker is about to wait for work (the pool's ``on_idle``), or coroutine
        places freed (the runner's ``on_free``), on a shared store, under the lock: wake
        the timer if it left due runs unclaimed for want of room to start them
        (:meth:`_claim_room`)."""
        coordinator = self._coordinator
        if coordinator is not None and coordinator.starved:
            coordinator.starved = False
            self._wake.notify_all()

    def _hand_out(self, batch: list[Entry]) -> None:
        """Give due entries to the workers, and loop tasks' entries to the event loop:
        the workers' first, so that an event loop that cannot start (its thread or its
        selector refused: the timer dies of it) leaves none of them counted in flight
        and never handed out (:meth:`CoroutineRunner.put
        <lldsched.threaded.coroutines.CoroutineRunner.put>` settles its own)."""
        loop_ids = self._loop_ids
        if self._core.overdue_slots:  # a CANCEL_OTHER task's slot may be among them
            self._overdue(batch, loop_ids)
        if loop_ids:  # no coroutine task registered: no per-entry test at all
            to_loop = [entry for entry in batch if entry[3] in loop_ids]
            if to_loop:
                if len(to_loop) != len(batch):  # some for the workers
                    self._pool.put([entry for entry in batch if entry[3] not in loop_ids])
                self._coroutines.put(to_loop)
                return
        self._pool.put(batch)

    def _overdue(self, batch: list[Entry], loop_ids: Collection[str]) -> None:
        """Of ``batch``, about to be handed out, the slots CANCEL_OTHER tasks queued
        behind their runs in flight (``SchedulerCore.overdue_slots``) that will wait for
        a place (no idle worker left for them, or no free coroutine slot) are due all the
        same: the core cancels the runs in flight each finds (``SchedulerCore.overdue``),
        as the simulation does at the slot's instant, rather than when a place frees; one
        that finds a place begins beside them at once, and cancels them there (caller
        holds the lock).  A slot is known by its task and instant (a ``modify(priority=)``
        queues it again); those due before the batch's last entry leave
        ``overdue_slots``: each was handed out, now or before, or died."""
        slots = self._core.overdue_slots
        due = batch[-1][0]
        found = {entry[3] for entry in slots if entry[0] <= due}
        while slots and slots[0][0] < due:
            heapq.heappop(slots)
        if not found:
            return
        overdue = self._core.overdue
        pool = self._pool
        workers = pool.idle - pool.queued  # idle workers no entry waits for yet
        places = self._coroutines.free if loop_ids else 0
        for entry in batch:
            if loop_ids and entry[3] in loop_ids:
                places -= 1
                waits = places < 0
            else:
                workers -= 1
                waits = workers < 0
            if waits and entry[3] in found:
                overdue(entry)  # (it checks the slot is the task's pending one)

    def _arm_deadline(self, deadline: float, context: RunContext) -> None:
        """Raise ``context``'s flag at ``deadline`` unless its run ends first (caller
        holds the lock)."""
        deadlines = self._deadlines
        heapq.heappush(deadlines, (deadline, next(self._deadline_sequence), context))
        self._armed[context] = deadline
        if deadlines[0][2] is context:
            self._wake.notify_all()

    def _disarm_deadline(self, context: RunContext) -> None:
        """``context``'s run ended: its deadline is void (caller holds the lock).

        Its heap entry is left where it is and skipped when it surfaces, unless void
        entries outnumber the armed ones (plus :data:`DEADLINE_SLACK`): then the heap is
        rebuilt from the armed ones.  Without this, every run of a task with a timeout
        kept its context (about 700 bytes with its ``Event``) until the deadline
        passed: a task run ten times a second with ``timeout=3600`` held 36,000.  The
        rebuild is O(heap) once per that many finished runs: O(1) a run.
        """
        armed = self._armed
        armed.pop(context, None)
        deadlines = self._deadlines
        if len(deadlines) > 2 * len(armed) + DEADLINE_SLACK:
            deadlines[:] = [entry for entry in deadlines if armed.get(entry[2]) == entry[0]]
            heapq.heapify(deadlines)

    def _retime(self, run: Run) -> None:
        """The core's ``on_retime`` (caller holds the lock): a modify or a replace changed
        the timeout of ``run``'s task while it is in flight, and its deadline is re-armed
        from its begin by :func:`~lldsched.core.runs.rearmed` (docs/decisions/changing-a-task.md, "A
        run in flight is held to its task's timeout now").  A coroutine run's cancellation is
        the event loop's (:meth:`CoroutineRunner.retime
        <lldsched.threaded.coroutines.CoroutineRunner.retime>`); a thread run's flag is
        this deadline heap's: its old entry voided, a new one armed (none for no
        timeout), or the flag raised at once if the new deadline has passed.  A run
        without a context has no flag, and one whose flag is up keeps it; either is
        judged at its finish by the timeout in force then, as before.  A thread run begun
        without a timeout kept no begin instant (reading the clock for it would cost
        every such dispatch): its deadline counts from its first re-arm.  A
        process-isolated run's kill is its pool's (:meth:`ProcessPool.retime
        <lldsched.threaded.processes.ProcessPool.retime>`, from its child's start)."""
        if self._coroutines.retime(run):
            return
        if run.options.isolation != "thread":  # the definition the run began with
            self._processes.retime(run.task.id, run.task._options.timeout)
            return
        context = run.context
        if context is None or context.cancelled:
            return
        armed = self._armed
        now = self._clock.now()
        before = context._rearmed()
        if before is None:  # the first re-arm: from the deadline _prepare armed, if any
            deadline = armed.get(context)
            begun = now if deadline is None else deadline - (run.options.timeout or 0.0)
        else:
            begun = before.begun
        timeout = run.task._options.timeout
        context._rearm(begun, timeout)
        deadline = rearmed(begun, timeout=timeout, now=now)
        if deadline is None:
            self._disarm_deadline(context)
        elif deadline <= now:
            self._disarm_deadline(context)
            context.cancel("timeout")
        else:
            self._arm_deadline(deadline, context)

    def _unheld(self, now: float) -> None:
        """Shared mode, no room to claim: drop the due entries (hints) of the tasks another
        process holds a live lease on, so that ``metrics()`` counts as waiting (``queued``,
        ``lag``) only the runs no process has claimed.  Before, a process whose workers
        were all busy kept them, and its ``lag`` grew from the slot of every run in flight
        elsewhere (docs/CLUSTER.md, "Limits").  The store is read only while one is due."""
        queue = self._queue
        due = queue.next_due()
        if due is None or due > now:
            return
        coordinator = self._coordinator
        assert coordinator is not None
        held = coordinator.held_elsewhere(now)
        if held:
            entries = queue.pop_due(now, len(queue))
            queue.put_back([entry for entry in entries if entry[3] not in held])

    def _drop_due(self, now: float) -> None:
        """Shared mode: the heap's due entries are hints, dropped; the store decides."""
        self._queue.pop_due(now, len(self._queue))

    def _unclaimed(self, task_ids: set[str]) -> None:
        """Shared mode: the claims of ``task_ids`` were dropped before a worker began them
        (given back, or their leases lost; under the lock): their entries leave the
        hand-off queue, settled, rather than wait there as tombstones that ``metrics()``
        counted as runs waiting (``handoff``, ``lag``); loop tasks' entries leave the
        event loop's line waiting for a slot the same way
        (:meth:`CoroutineRunner.discard
        <lldsched.threaded.coroutines.CoroutineRunner.discard>`: ``coroutines``)."""
        gone = self._pool.discard(lambda entry: entry[3] in task_ids)
        if gone:
            self._settle(gone)
        self._coroutines.discard(task_ids)

    def _wake_from_store(self) -> None:
        """The store heard of another process's change (any thread, no lock held)."""
        with self._lock:
            self._wake.notify_all()
