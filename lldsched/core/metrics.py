"""Metrics: what a runtime says of itself to a dashboard and a health check, in one read.

:class:`Metrics` is the snapshot both runtimes' ``metrics()`` return: the timer's
liveness, the pool's load, the backlog and how late it is, the registry's size, the
dead letter's, the records counted by outcome since the runtime was built
(:mod:`lldsched.core.tally`) and whether the store is writing.  :func:`take` builds
it from the core and the queue; the runtime gives what only it knows (its state, its
threads, its hand-off queue).

**What it promises** (docs/decisions/metrics.md, "Metrics and health"): every field is read
in one hold of the runtime's lock, so the fields agree with each other (``busy`` plus
``handoff`` plus ``coroutines`` is the count of runs handed out and not yet settled,
at one instant, less the entries a verb stopped or moved after they were handed out,
which no run waits for); taking it costs O(1) in the number of tasks and records (no
list of tasks or records is built; the entries waiting for a worker or a coroutine
slot are read, O(waiting)); and nothing is computed on the run path for it but
the one increment a successful run makes in the :class:`~lldsched.core.tally.Tally`.
Distributions (how long runs take, how late each started) are the records'
(``record.duration``, ``record.lateness``): a listener observes them, at the cost of
an event per transition; the snapshot does not keep them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from lldsched.core.duequeue import TaskQueue
from lldsched.core.reads import RegistryReads
from lldsched.logs import instants_repr
from lldsched.model import Outcome

__all__ = ["Metrics", "take"]


class Metrics(NamedTuple):
    """One read of a runtime's health and load (see the module docstring).

    * ``at``: the runtime's clock when it was taken (epoch seconds);
    * ``state``: ``"new"`` (built, not started), ``"running"``, ``"dead"`` (started,
      but its timer thread died: nothing is dispatched any more, the log said "the
      timer thread died", and the scheduler's ``running`` is False) or ``"stopped"``;
    * ``timer_alive``: the timer thread runs (False before ``start()``, after
      ``shutdown()``, and once it died);
    * ``timer_woke``: the clock instant the timer last woke (it wakes when something
      falls due, when a push makes a new head, and at least every ``max_wait``
      seconds, 60 by default), ``None`` before it first did;
    * ``workers``: the worker threads; ``busy``: how many are taken by a run (running
      its action, waiting for its child process, or logging its failure);
    * ``handoff``: due entries the timer handed out that no worker took yet (the
      hand-off queue; above 0 for long, the pool is saturated), live ones only: the
      entry of a task paused, cancelled, removed or moved since is no run waiting;
    * ``coroutines``: coroutine runs on the event loop, running or waiting for a slot
      (``max_coroutines``), live ones only as ``handoff``'s;
    * ``queued``: tasks waiting in the heap for their due instant (live entries);
    * ``lag``: seconds the oldest due entry waiting for a place is past its due instant
      (the head of the heap, the oldest live entry of the hand-off queue, or of those
      waiting for a coroutine slot while the event loop's are all taken): 0.0 when
      nothing due is waiting; the "are jobs late now" gauge, for either lane;
    * ``tasks``: tasks registered (finished ones until they retire); ``dead_letter``:
      FAILED tasks (:meth:`dead_letter`'s length);
    * ``outcomes``: records made since the runtime was built, by
      :class:`~lldsched.model.Outcome` (every outcome present, each only growing):
      ``ok``, ``failed``, ``timed_out``, ``given_up`` and ``cancelled`` are runs,
      ``missed``, ``coalesced``, ``skipped`` and ``blocked`` slots decided without one;
    * ``dropped_events``: events the listeners' backlog dropped;
    * ``store_ok``: False while the store fails (an outage, logged once at its start)
      or after a write found it closed; True without a store.

    In the :class:`~lldsched.sim.simulation.Simulation`, whose clock is its timer,
    ``state`` is ``"running"`` and ``timer_alive`` True until its shutdown (then
    ``"stopped"`` and False, as here), ``timer_woke`` the simulated instant, and
    ``handoff`` and ``dropped_events`` are 0 (a due entry waits in the heap for a
    worker there: it has no hand-off queue); ``coroutines`` counts as here, and
    after a shutdown a coroutine task left due counts in ``queued`` (and ``lag``) as a
    thread task left due does (docs/decisions/simulation.md, "What a simulation's metrics read
    after its shutdown").
    """

    at: float
    state: str
    timer_alive: bool
    timer_woke: float | None
    workers: int
    busy: int
    handoff: int
    coroutines: int
    queued: int
    lag: float
    tasks: int
    dead_letter: int
    outcomes: Mapping[Outcome, int]
    dropped_events: int
    store_ok: bool

    def __repr__(self) -> str:
        """Its fields, ``at`` and ``timer_woke`` as ISO 8601 instants in UTC to the
        millisecond (what a notebook shows for ``metrics()``); the fields themselves stay
        epoch seconds, and ``lag`` is seconds."""
        return instants_repr(self, instants=_INSTANTS)

    @property
    def alive(self) -> bool:
        """Running, with its timer thread alive: what a liveness probe asks (what the
        scheduler's ``running`` says as well)."""
        return self.state == "running" and self.timer_alive

    @property
    def runs(self) -> int:
        """Runs recorded since the runtime was built (the outcomes that ran)."""
        return sum(count for outcome, count in self.outcomes.items() if outcome.ran)


_INSTANTS = frozenset({"at", "timer_woke"})


def take(
    core: RegistryReads,
    queue: TaskQueue,
    *,
    at: float,
    state: str,
    timer_alive: bool,
    timer_woke: float | None,
    workers: int,
    busy: int,
    handoff: int,
    coroutines: int,
    handed_out_due: float | None,
    dropped_events: int,
    aside: int = 0,
) -> Metrics:
    """The snapshot, from the core and the queue and what the runtime gives (caller
    holds the runtime's lock, if it has one).  ``handed_out_due`` is the due instant of
    the oldest live entry handed out (or set aside) and not yet begun, for a worker or a
    coroutine slot (None: none waits); ``aside``, the
    live entries the simulation set aside from the heap that count as queued in it
    (:mod:`lldsched.sim.lanes`)."""
    oldest = queue.next_due()  # the heap's live head
    if handed_out_due is not None and (oldest is None or handed_out_due < oldest):
        oldest = handed_out_due
    return Metrics(
        at=at,
        state=state,
        timer_alive=timer_alive,
        timer_woke=timer_woke,
        workers=workers,
        busy=busy,
        handoff=handoff,
        coroutines=coroutines,
        queued=len(queue) + aside,
        lag=0.0 if oldest is None or oldest >= at else at - oldest,
        tasks=len(core.tasks),
        dead_letter=core.dead_letter_size(),
        outcomes=core.outcomes(),
        dropped_events=dropped_events,
        store_ok=core.store_ok,
    )
