"""A simulated cluster: N scheduler nodes over one lease table, on one virtual clock.

Each node is a process of docs/CLUSTER.md in miniature: its own
:class:`~lldsched.core.machine.SchedulerCore` and
:class:`~lldsched.core.duequeue.TaskQueue` (the registry and the heap of due
entries, the same state machine as every other runtime), its own clock (true time
plus its skew), a few workers, and a holder id.  What it shares with the others is
:mod:`lldsched.sim.leases`: the lease table, the task rows and the sink.

At a node's wake, for each due entry its queue hands out:

1. its copy of the task is behind (or, after an unfenced late write, ahead of)
   the task row: it adopts the row through the core's ``replan`` (how a process
   applies another's change) and looks again then;
2. someone holds a live lease on the task (judged on *this* node's clock): it
   looks again when that lease expires;
3. otherwise it **claims** the slot with a new fencing token (a *takeover* if an
   expired lease was there) and ``begin`` s the run on the core.

While a node has runs in flight it renews their leases every ``renewal`` seconds.
When a run finishes, the node writes to the sink with the run's token, hands the
outcome to ``SchedulerCore.finish`` (which decides the next slot, once, as
everywhere else) and **settles**: releases the lease and writes the task row,
conditional on the token when fencing is on.

Faults: a **pause** stops the world (no renewal, no claim; a run that would have
finished in the pause finishes, and writes, the moment the pause ends: the stale
write of the classic counterexample); a **crash** drops the node's runs unwritten
and leaves its leases to expire; a **restart** is a fresh process (a new core, a
new holder id) that reads the rows.  Skew offsets a node's clock: due instants,
lease expiries it writes and judges are on that clock too, unless the scenario's
``lease_clock`` is ``"database"`` (one true clock for every lease, as PostgreSQL's).

Events at one instant go in this order: finishes, renewals, faults, wakes; among
equals, in the order they were planned.  Durations are drawn from each task's
model with a generator seeded by the scenario's seed, the node and the task:
the same scenario gives the same result.
"""

from __future__ import annotations

import heapq
import itertools
import random
import threading
from dataclasses import dataclass, field
from typing import Literal

from lldsched import checks
from lldsched.cluster import ClusterResult, ClusterRun, NodeSpan
from lldsched.core.duequeue import TaskQueue
from lldsched.core.machine import SchedulerCore
from lldsched.core.task import Entry, Run
from lldsched.errors import ValidationError, shown
from lldsched.policies import OverrunPolicy
from lldsched.schedules.simple import FixedRate
from lldsched.sim.clock import VirtualClock
from lldsched.sim.cluster_scenario import ClusterScenario, Crash, Pause
from lldsched.sim.leases import LeaseTable, Sink, TaskRow
from lldsched.sim.models import drawn_duration

__all__ = ["simulate_cluster"]

# Event kinds, in their order at one instant.
_FINISH, _RENEW, _FAULT, _WAKE = 0, 1, 2, 3


class _SkewedClock:
    """A node's clock: the simulation's true time plus the node's skew."""

    __slots__ = ("_true", "skew")

    def __init__(self, true: VirtualClock, skew: float) -> None:
        self._true = true
        self.skew = skew

    def now(self) -> float:
        return self._true.now() + self.skew

    def wait(self, condition: threading.Condition, deadline: float | None) -> None:
        self._true.wait(condition, deadline)  # raises: nothing waits on virtual time


@dataclass(slots=True)
class _Flight:
    """A run in flight on a node."""

    run: Run
    token: int
    worker: int
    claimed: float  # true instant
    takeover: bool
    expires: float  # the lease's expiry as the last claim or renewal wrote it (true instant)


@dataclass(slots=True)
class _Node:
    """One scheduler process: its core, queue, clock, workers and runs in flight."""

    index: int
    clock: _SkewedClock
    core: SchedulerCore
    queue: TaskQueue
    free: list[int]
    incarnation: int = 0
    state: Literal["up", "paused", "down"] = "up"
    flights: dict[str, _Flight] = field(default_factory=dict)  # by task id
    armed: float | None = None  # the true instant of the wake planned, if any
    renewing: bool = False  # a renewal event is planned
    deferred: list[tuple[int, object]] = field(default_factory=list)  # events a pause held
    since: float = 0.0  # when the current pause or outage began
    until: float = 0.0  # when the current pause ends

    @property
    def name(self) -> str:
        return f"node-{self.index}"

    @property
    def holder(self) -> str:
        """The holder id the lease table knows this process by (new at each restart)."""
        return f"{self.name}#{self.incarnation}"


class _Cluster:
    """The event loop over the nodes (see the module docstring)."""

    def __init__(self, scenario: ClusterScenario) -> None:
        self.scenario = scenario
        self.clock = VirtualClock(scenario.first)
        self.horizon = scenario.first + scenario.horizon
        self.table = LeaseTable(fencing=scenario.fencing)
        self.sink = Sink(fencing=scenario.fencing)
        # (when, kind, sequence, node index, payload): kind orders one instant, sequence ties
        self.events: list[tuple[float, int, int, int, object]] = []
        self.sequence = itertools.count()
        self.tasks = {task.name: task for task in scenario.tasks}
        self.runs: list[ClusterRun] = []
        self.spans: list[NodeSpan] = []
        for task in scenario.tasks:
            first = scenario.first + task.every
            self.table.rows[task.name] = TaskRow(slot=first, due=first, grid=first)
        self.nodes = [self._boot(index, incarnation=0) for index in range(scenario.nodes)]
        for pause in scenario.pauses:
            self._plan(scenario.first + pause.at, _FAULT, pause.node, pause)
        for crash in scenario.crashes:
            self._plan(scenario.first + crash.at, _FAULT, crash.node, crash)

    # -- nodes ---------------------------------------------------------------------------

    def _boot(self, index: int, *, incarnation: int) -> _Node:
        """A fresh process: a core with every task, each at the slot its row names."""
        queue = TaskQueue()
        clock = _SkewedClock(self.clock, self.scenario.skew_of(index))
        core = SchedulerCore(clock=clock, queue=queue, seed=self.scenario.seed)
        node = _Node(index, clock, core, queue, list(range(self.scenario.workers)))
        node.incarnation = incarnation
        for task in self.scenario.tasks:
            every = FixedRate(task.every, on_overrun=OverrunPolicy.CATCH_UP)  # no slot skipped
            registered = core.add(task.name, None, every, task_id=task.name)
            row = self.table.rows[task.name]
            core.replan(registered, due=row.due, slot=row.slot, grid=row.grid)
        self._arm(node)
        return node

    def _arm(self, node: _Node) -> None:
        """Plan the node's next wake, at its queue's head (converted to true time)."""
        head = node.queue.next_due()
        if head is None or node.state != "up" or not node.free:
            return
        when = max(head - node.clock.skew, self.clock.now())
        if node.armed is None or when < node.armed:
            node.armed = when
            self._plan(when, _WAKE, node.index, node.incarnation)

    def _plan(self, when: float, kind: int, node: int, payload: object) -> None:
        heapq.heappush(self.events, (when, kind, next(self.sequence), node, payload))

    # -- the loop ------------------------------------------------------------------------

    def run(self) -> ClusterResult:
        while self.events:
            when, kind, _, index, payload = heapq.heappop(self.events)
            self.clock.advance_to(when)
            node = self.nodes[index]
            if kind == _FAULT:
                self._fault(node, payload)
            elif node.state == "paused":
                node.deferred.append((kind, payload))
            elif node.state == "up":
                self._dispatch(node, kind, payload)
        end = max(self.clock.now(), self.horizon)
        for node in self.nodes:
            if node.state != "up":
                self.spans.append(NodeSpan(node.name, _span_kind(node), node.since, end))
        return self._result()

    def _dispatch(self, node: _Node, kind: int, payload: object) -> None:
        if kind == _FINISH:
            assert isinstance(payload, _Done)
            flight = node.flights.get(payload.task_id)
            if flight is not None and flight.token == payload.token:
                self._finish(node, flight)
        elif kind == _RENEW:
            if payload == node.incarnation:
                self._renew(node)
        elif kind == _WAKE and payload == node.incarnation and node.armed == self.clock.now():
            node.armed = None
            self._wake(node)
            self._arm(node)

    def _lease_now(self, node: _Node) -> float:
        """The instant a node's lease operations use: its own clock, or the database's."""
        return node.clock.now() if self.scenario.lease_clock == "node" else self.clock.now()

    def _true(self, node: _Node, instant: float) -> float:
        """A lease instant (on the lease clock) as a true instant."""
        return instant - node.clock.skew if self.scenario.lease_clock == "node" else instant

    def _wake(self, node: _Node) -> None:
        local = node.clock.now()
        for entry in node.queue.pop_due(local, len(node.free)):
            self._consider(node, entry, local)

    def _consider(self, node: _Node, entry: Entry, local: float) -> None:
        """Adopt the row, wait for a live lease, or claim (see the module docstring)."""
        task = node.core.tasks[entry[3]]
        row = self.table.rows[task.id]
        if task.slot != row.slot:  # another node moved the task on: apply its row
            node.core.replan(task, due=row.due, slot=row.slot, grid=row.grid)
            return
        if task.slot > self.horizon:  # past the horizon: nothing more to claim
            return
        lease_now = self._lease_now(node)
        held = self.table.holder_of(task.id, now=lease_now)
        if held is not None:  # look again when it expires (on this node's clock)
            expiry = held.expires_at + (local - lease_now)
            node.core.replan(task, due=expiry)
            return
        lease, takeover = self.table.claim(
            task.id, slot=task.slot, holder=node.holder, now=lease_now, lease=self.scenario.lease
        )
        worker = heapq.heappop(node.free)
        run = node.core.begin(entry, worker)
        assert run is not None  # pop_due hands out live entries, and nothing ran since
        now = self.clock.now()
        expires = self._true(node, lease.expires_at)
        node.flights[task.id] = _Flight(run, lease.token, worker, now, takeover, expires)
        duration = self._duration(node, task.id)
        self._plan(now + duration, _FINISH, node.index, _Done(task.id, lease.token))
        if not node.renewing:
            node.renewing = True
            self._plan(now + self.scenario.renewal, _RENEW, node.index, node.incarnation)

    def _duration(self, node: _Node, task_id: str) -> float:
        """How long this claim's run takes: the task's model, drawn from a generator
        seeded by (seed, node, task, token), so draws never depend on event order."""
        model = self.tasks[task_id].duration
        if not callable(model):
            return model
        token = self.table.leases[task_id].token
        drawn = model(random.Random(f"{self.scenario.seed}:{node.index}:{task_id}:{token}"), 1)
        try:
            return checks.seconds(drawn, name="duration", at_least=0)
        except ValidationError:
            return drawn_duration(drawn, model=model, task=task_id)

    def _renew(self, node: _Node) -> None:
        local = self._lease_now(node)
        for task_id, flight in node.flights.items():
            if self.table.renew(task_id, token=flight.token, now=local, lease=self.scenario.lease):
                flight.expires = self._true(node, local + self.scenario.lease)
        node.renewing = bool(node.flights)
        if node.renewing:
            self._plan(
                self.clock.now() + self.scenario.renewal, _RENEW, node.index, node.incarnation
            )

    def _finish(self, node: _Node, flight: _Flight) -> None:
        """Write to the sink, let the core decide what follows, then settle."""
        run = flight.run
        task = run.task
        del node.flights[task.id]
        landed = self.sink.write(task.id, token=flight.token)
        local = node.clock.now()
        started = flight.claimed + node.clock.skew
        node.core.finish(run, started, local, None)
        slot = task.slot  # the core moved the task to its next slot
        due = task.next_run_at if task.next_run_at is not None else slot
        # The grid never moves here (no resume, no reschedule; CATCH_UP skips no slot).
        row = TaskRow(slot=slot, due=due, grid=self.table.rows[task.id].grid)
        settled = self.table.settle(task.id, token=flight.token, row=row)
        heapq.heappush(node.free, flight.worker)
        self.runs.append(
            ClusterRun(
                node=node.name,
                task_id=task.id,
                slot=run.slot,
                token=flight.token,
                claimed=flight.claimed,
                finished=self.clock.now(),
                write="landed" if landed else "rejected",
                settled=settled,
                takeover=flight.takeover,
                lease_until=min(self.clock.now(), flight.expires),
            )
        )
        self._arm(node)

    # -- faults --------------------------------------------------------------------------

    def _fault(self, node: _Node, fault: object) -> None:
        now = self.clock.now()
        if isinstance(fault, Pause) and node.state != "down":
            if node.state == "up":
                node.state, node.since = "paused", now
            node.until = max(node.until, now + fault.seconds)  # overlapping pauses merge
            self._plan(now + fault.seconds, _FAULT, node.index, _Resume(node.incarnation))
        elif isinstance(fault, _Resume) and fault.incarnation == node.incarnation:
            if node.state == "paused" and now >= node.until:
                node.state = "up"
                self.spans.append(NodeSpan(node.name, "pause", node.since, now))
                held, node.deferred = node.deferred, []
                for kind, payload in held:  # in the order they fell due
                    if kind != _WAKE:  # a held wake is planned afresh below
                        self._plan(now, kind, node.index, payload)
                node.armed = None  # the wake planned before the pause, if any, is gone
                self._arm(node)
        elif isinstance(fault, Crash) and node.state != "down":
            self._crash(node, fault)
        elif isinstance(fault, _Restart) and node.state == "down":
            self.spans.append(NodeSpan(node.name, "down", node.since, now))
            self.nodes[node.index] = self._boot(node.index, incarnation=node.incarnation + 1)

    def _crash(self, node: _Node, crash: Crash) -> None:
        now = self.clock.now()
        if node.state == "paused":
            self.spans.append(NodeSpan(node.name, "pause", node.since, now))
        node.state, node.since, node.deferred, node.armed = "down", now, [], None
        for task_id, flight in node.flights.items():
            self.runs.append(
                ClusterRun(
                    node=node.name,
                    task_id=task_id,
                    slot=flight.run.slot,
                    token=flight.token,
                    claimed=flight.claimed,
                    finished=None,
                    write="none",
                    settled=False,
                    takeover=flight.takeover,
                    lease_until=flight.expires,
                )
            )
        node.flights.clear()
        if crash.restart_after is not None:
            self._plan(now + crash.restart_after, _FAULT, node.index, _Restart())

    # -- the result ----------------------------------------------------------------------

    def _result(self) -> ClusterResult:
        scenario = self.scenario
        expected = []
        for task in scenario.tasks:
            rate, first = FixedRate(task.every), scenario.first + task.every
            k = 0  # the grid's slots, the very floats the nodes count (TaskRow.grid)
            while (slot := rate.slot_at(first, k)) <= self.horizon:
                expected.append((task.name, slot))
                k += 1
        return ClusterResult(
            nodes=tuple(node.name for node in self.nodes),
            fencing=scenario.fencing,
            lease=scenario.lease,
            renewal=scenario.renewal,
            skews=tuple(scenario.skew_of(i) for i in range(scenario.nodes)),
            start=scenario.first,
            horizon=self.horizon,
            runs=tuple(sorted(self.runs, key=lambda run: (run.claimed, run.token))),
            spans=tuple(sorted(self.spans, key=lambda span: (span.start, span.node))),
            expected=tuple(expected),
        )


@dataclass(frozen=True, slots=True)
class _Done:
    """A run's planned finish (its token tells it from a later run of the same task)."""

    task_id: str
    token: int


@dataclass(frozen=True, slots=True)
class _Resume:
    """The end of a pause (of the node's incarnation that paused)."""

    incarnation: int


@dataclass(frozen=True, slots=True)
class _Restart:
    """A crashed node comes back."""


def _span_kind(node: _Node) -> Literal["pause", "down"]:
    return "pause" if node.state == "paused" else "down"


def simulate_cluster(scenario: ClusterScenario) -> ClusterResult:
    """Run ``scenario`` until every slot due by its horizon has been run (or nobody is
    left to run it) and every fault has played out; returns what happened."""
    if not isinstance(scenario, ClusterScenario):
        raise ValidationError(f"simulate_cluster takes a ClusterScenario, got {shown(scenario)}")
    return _Cluster(scenario).run()
