"""The event loop: virtual time moved from event to event, each processed whole.

``step``, ``run``, ``run_for`` and ``shutdown``'s drain all come to one loop,
``_advance``: at each instant a run **finishes**, then an **intervention** runs, then a
due entry **starts** (:mod:`lldsched.sim.simulation`'s docstring says the order and what
each means; :mod:`lldsched.sim.starts`, what a start does).  Once a coroutine task is
registered, the next start is picked by lane (``_next_start``): a head whose lane is
full is set aside (:mod:`lldsched.sim.lanes`) so it holds back no entry of the other
lane.  What the loop heard in an event (a listener's or a store's Ctrl-C, a shutdown
made inside it) stops it once the event is whole (``_stop_heard``); a Ctrl-C that
landed mid-step tears the simulation (:mod:`lldsched.sim.interrupts`).  One
:class:`SimStep` says what the last event was.
"""

from __future__ import annotations

import heapq
import math
from typing import NamedTuple

from lldsched.coordination import is_shared
from lldsched.core.isolation import is_loop_action
from lldsched.core.store import use as storeuse
from lldsched.core.task import Entry, ScheduledTask
from lldsched.model import ExecutionRecord
from lldsched.sim.clock import LAST_INSTANT
from lldsched.sim.interrupts import SHUT_DOWN_INSIDE
from lldsched.sim.parts import SimulationParts
from lldsched.sim.sharedstore import runs_unclaimed

__all__ = ["SimStep", "SimulationEventLoop"]

_INF = math.inf  # "no such event"
_HANDED = "handed"  # _next_start picked the first awaitable waiting in _handed


class SimStep(NamedTuple):
    """What one :meth:`Simulation.step` did: ``kind`` is "finish", "intervention", "start"
    or "blocked" (a dependent came due and the core held it BLOCKED: no run started, no
    worker was taken; it is queued again when its upstreams succeed)."""

    at: float
    kind: str
    task_id: str | None
    record: ExecutionRecord | None = None


class SimulationEventLoop(SimulationParts):
    """The one event loop, and the pick of each start by lane: mixed into the simulation."""

    def _advance(self, end: float, *, events: int, due_by: float = LAST_INSTANT) -> SimStep | None:
        """Process events in order (see the module docstring) until the next one is
        after ``end`` or ``events`` have been processed (``-1``: no limit); returns the
        last event processed, or None if there was none.  An entry due after ``due_by``
        does not start (a shutdown's drain: :meth:`shutdown`).

        The one event loop of the simulation: ``step``, ``run`` and ``run_for`` all come
        here.  Its body reads the queues through local names and keeps the step it
        describes in three locals, so a day of events costs no per-event objects.
        """
        if self._interrupts.torn_at is not None:  # (one test a call, none an event)
            self._interrupts.refuse_torn()
        if self._store is not None:  # its runs write: refused while a scheduler runs on it
            storeuse.check(self._store, self)
            if is_shared(self._store):
                raise runs_unclaimed(self._store)
        clock = self._clock
        advance_to = clock.advance_to
        now = clock.now()
        peek = self._queue.peek
        take = self._queue.take
        finishes = self._finishes
        interventions = self._interventions
        free = self._free
        overdue = self._core.overdue_slots  # CANCEL_OTHER's queued slots (core: overdue)
        lane = self._workers  # a coroutine run's worker: the coroutine lane
        finish_run = self._core.finish
        heappop, heappush = heapq.heappop, heapq.heappush
        kind: str | None = None  # the last event processed, described
        task_id: str | None = None  # of a start or an intervention; a record names its own
        record: ExecutionRecord | None = None
        heard = self._heard  # a Ctrl-C heard in an event: the loop stops once it is whole
        writes = self._core.store_writes  # a store's Ctrl-C in a save is heard there too
        outer, self._advancing = self._advancing, True  # see _emit
        if writes is not None:
            collecting, writes.collecting = writes.collecting, heard
        try:
            while events and not heard:  # (events -1: no limit)
                events -= 1
                finish = finishes[0][0] if finishes else _INF
                intervention = interventions[0][0] if interventions else _INF
                lanes = self._loop_tasks
                if lanes:  # two lanes: the next start is picked by lane
                    start, head = self._next_start(now, due_by)
                    if overdue and overdue[0][0] < start and overdue[0][0] <= due_by:
                        start, head = max(overdue[0][0], now), None  # (below)
                else:
                    start = _INF
                    head = peek() if free else None  # the next start needs a free worker
                    if head is not None:
                        due = head[0]
                        start = due if due > now else now
                        if due > due_by:  # a shutdown's drain: none due later starts (heap order)
                            start = _INF
                    elif overdue and not free and overdue[0][0] <= due_by:
                        # A CANCEL_OTHER slot that found no place comes due: after the
                        # finishes and interventions of its instant, and its starts, it cuts
                        # the runs it finds (SchedulerCore.overdue; not an event of its own,
                        # below).  (A drain leaves the slots due after its instant alone.)
                        over = overdue[0][0]
                        start = over if over > now else now
                if finish <= intervention and finish <= start:
                    if finish > end:
                        break
                    advance_to(finish)
                    now = finish
                    _, _, worker, run, started, error, result, timed_out = heappop(finishes)
                    record = finish_run(run, started, finish, error, result, timed_out)
                    if lanes and worker >= lane:  # (lanes never goes back to False)
                        if worker == lane:  # a place on the coroutine lane is free
                            self._coroutines -= 1
                        # (worker > lane: an awaitable cut while it waited held nothing)
                    else:
                        heappush(free, worker)
                    kind = "finish"  # the record names the task (below)
                elif intervention <= start:
                    if intervention > end:
                        break
                    advance_to(intervention)
                    now = intervention
                    kind, task_id, record = "intervention", None, None
                    intervene = heappop(interventions)[2]
                    try:
                        intervene()
                    except BaseException as exc:  # its own: the loop's event is whole
                        self._interrupts.whole = exc
                        raise
                else:
                    if start > end:
                        break
                    advance_to(start)
                    now = start
                    if head is None:  # an overdue CANCEL_OTHER slot (above): its runs cut
                        self._core.overdue(heappop(overdue))  # ... finish at `now`
                        events += 1  # not an event of its own
                        continue
                    if lanes:
                        begun = self._start_picked(head, start)
                    else:
                        take(head)  # the head peeked at above
                        begun = self._start(head, start, heappop(free))  # the lowest free
                    task_id = head[3]
                    if begun is None:
                        kind, record = "start", None
                    elif isinstance(begun, str):  # _HELD: the core held it BLOCKED
                        kind, record = begun, None
                    else:  # a run that takes no time finishes at once
                        kind, record = "finish", begun
        except BaseException as exc:
            if exc is not self._interrupts.whole:  # landed mid-step (a real Ctrl-C): torn
                self._interrupts.mark_torn(exc, self.now)
            self._interrupts.whole = None
            raise
        finally:
            self._advancing = outer  # (a listener may call run() inside a run())
            if writes is not None:
                writes.collecting = collecting
        if heard:  # heard in the last event, now whole: raised by this call, the first
            self._stop_heard()
        if kind is None:
            return None
        return SimStep(now, kind, task_id if record is None else record.task_id, record)

    def _stop_heard(self) -> None:
        """What :meth:`_advance` heard in its last event stopped it: the first Ctrl-C (a
        listener's, or a store save's) is raised; a :meth:`shutdown` made inside the loop
        ends it there, and the runs still in flight then finish, nothing more starting (an
        action's own run, which made the shutdown, was not in flight yet for its drain)."""
        heard = self._heard
        raised = [caught for caught in heard if caught is not SHUT_DOWN_INSIDE]
        shut_down = len(raised) != len(heard)
        heard.clear()
        if shut_down and not raised:
            self._advance(LAST_INSTANT, events=-1, due_by=-_INF)
        if raised:
            raise raised[0]

    def _next_start(self, now: float, due_by: float) -> tuple[float, Entry | None]:
        """The next start once coroutine tasks are registered: its instant and its entry,
        ``(_INF, None)`` when none can start; :meth:`_start_picked` starts it.

        The queue's head is set aside (:mod:`lldsched.sim.lanes`) while it is a
        coroutine's entry, or a thread task's with no worker free, so that no entry holds
        back the other lane's; what stays at the head is one a free worker can start.  Of
        the lanes' heads that can start, the earliest starts; at one instant a worker's
        first, as the threaded timer hands the workers their entries before it hands the
        event loop its own (``TimerThread._hand_out``); on one lane, heap order."""
        queue, waiting = self._queue, self._waiting
        workers_free = bool(self._free)
        head = queue.peek()
        while head is not None:
            on_loop = self._on_loop(head)
            if workers_free and not on_loop:
                break
            queue.take(head)
            waiting.set_aside(head, on_loop)
            head = queue.peek()
        # The workers' next start: the first entry in heap order, the queue's or set aside.
        thread, waited = head, None
        if workers_free:
            first = waiting.head(waiting.threads)
            if first is not None and (thread is None or first < thread):
                thread, waited = first, waiting.threads
        start = _INF  # (a shutdown's drain: none due after due_by starts)
        if thread is not None and thread[0] <= due_by:
            start = max(thread[0], now)
        # The coroutine lane's next start, first only if earlier (at one instant, workers'):
        # a coroutine entry, or the first awaitable a plain function handed over, which
        # waits behind an entry due at or before it was handed over and pushed before it
        # (on threads the timer gave that one to the event loop first; one pushed later,
        # due already, a finish's CATCH_UP slot or retry, reaches the loop after it) and
        # starts in a drain too (begun).
        if self._coroutines < self._max_coroutines:
            first = waiting.head(waiting.coroutines)
            if first is not None and first[0] > due_by:  # a shutdown's drain
                first = None
            handed = self._handed
            if handed and (first is None or handed[0][0] < first[0] or first[2] > handed[0][6]):
                if now < start:
                    self._picked = (None, _HANDED)
                    handed_at, run = handed[0][0], handed[0][1]
                    return now, (handed_at, int(run.task.priority), 0, run.task.id)
            elif first is not None and max(first[0], now) < start:
                self._picked = (waiting.coroutines, True)
                return max(first[0], now), first
        self._picked = (waited, False)
        return start, thread

    def _start_picked(self, entry: Entry, now: float) -> ExecutionRecord | str | None:
        """Start ``entry``, which :meth:`_next_start` just picked, on its lane: taken from
        the queue's head or its lane's waiting heap; what :meth:`_start` returns."""
        waited, on_loop = self._picked
        if on_loop is _HANDED:
            self._hand_on(now)
            return None
        if waited is None:
            self._queue.take(entry)
        else:
            heapq.heappop(waited)
        if not on_loop:
            return self._start(entry, now, heapq.heappop(self._free))  # the lowest free
        self._coroutines += 1
        return self._start(entry, now, self._workers)  # the coroutine lane's number

    def _on_loop(self, entry: Entry) -> bool:
        """True when live ``entry``'s task runs on the coroutine lane (an ``async def``
        action run on a thread: :func:`~lldsched.core.isolation.is_loop_action`, the
        threaded runtime's rule)."""
        task = self._queue.tasks[entry[3]]
        return is_loop_action(task.action, task._options.isolation)

    def _note_lane(self, task: ScheduledTask) -> None:
        """``task`` was registered: from a coroutine task on, the loop picks starts by
        lane; from a process-isolated one on, a start asks whether its run is one."""
        isolation = task._options.isolation
        if not self._loop_tasks and is_loop_action(task.action, isolation):
            self._loop_tasks = True
        if isolation != "thread":
            self._isolation = True
