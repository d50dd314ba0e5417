"""What a simulated cluster is made of: its tasks, its nodes' faults, and its settings.

:class:`ClusterScenario` is the input of :func:`lldsched.sim.cluster.simulate_cluster`:
N scheduler nodes over one lease table, each running every task's schedule, with
a lease of ``lease`` seconds renewed every ``renewal`` seconds, each node's clock
offset by its ``skews`` entry, and the faults given (stop-the-world
:class:`Pause` s and :class:`Crash` es, at seconds after ``start``).  Every duration
and offset is a number of seconds or a ``timedelta`` (kept as its seconds), as in the
rest of the package.  Every value is checked at construction: a bad one raises
:class:`~lldsched.errors.ValidationError` naming it.  Frozen: derive variants with
:func:`dataclasses.replace` (with and without fencing, another seed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, Never

from lldsched import checks
from lldsched.clock import to_timestamp
from lldsched.core.registration import check_task_id
from lldsched.deprecated import keyword_only_now
from lldsched.errors import ValidationError, shown
from lldsched.sim.models import DurationModel, check_duration

__all__ = [
    "MAX_NODES",
    "MAX_NODE_WORKERS",
    "ClusterScenario",
    "ClusterTask",
    "Crash",
    "LeaseClock",
    "Pause",
]

MAX_NODES = 1_000
"""The most nodes a scenario simulates: each is built at once (its own core, queue and
workers), so a count of 10**9 would hang and fill memory before the first event."""
MAX_NODE_WORKERS = 1_000
"""The most workers a node of a scenario has (each node lists its own)."""

LeaseClock = Literal["node", "database"]
"""Whose clock writes and judges lease expiries: each node's own (``"node"``, as with
SQLite, where every process passes its time), or the database's, one true clock for
all (``"database"``, PostgreSQL's ``clock_timestamp()``)."""


def _seconds(value: object, name: str, checked: object) -> None:
    """Keep a checked duration as :func:`lldsched.checks.seconds` returned it: a
    ``timedelta`` given for one becomes its seconds (the fields are typed as the seconds
    they hold), so every reader sees a number."""
    object.__setattr__(value, name, checked)


def _kept(given: object) -> object:
    """A list or tuple given for a sequence field, as the tuple the frozen value keeps
    (anything else as given, for ``_check`` to refuse)."""
    return tuple(given) if isinstance(given, list | tuple) else given


def _set(value: object, **fields: object) -> None:
    """Set a frozen value's fields as given (its ``_check`` then checks them)."""
    for name, given in fields.items():
        object.__setattr__(value, name, given)


# Each class below takes its durations as seconds or timedelta values: its own
# ``__init__`` (the fields hold the seconds) sets what it is given and checks it, in
# ``_check``.  ``dataclasses.replace`` calls that ``__init__`` with every field.


@dataclass(frozen=True, slots=True, init=False)
class ClusterTask:
    """A task every node registers: due every ``every`` seconds (a fixed-rate grid
    from ``start + every``), each run taking ``duration`` (a model of
    :mod:`lldsched.sim.models`, drawn per node from the scenario's seed).

    Nothing more: an option of ``Scheduler.schedule`` (``depends_on=``, ``retry=``, ...)
    is refused naming it and its value, since the cluster simulation models none of them
    (docs/CLUSTER.md lists what it leaves out); the one-node simulation does."""

    name: str
    every: float
    duration: DurationModel = 1.0

    def __init__(
        self,
        name: str,
        every: float | timedelta,
        duration: DurationModel | timedelta = 1.0,
        **unmodelled: Never,
    ) -> None:
        if unmodelled:
            options: dict[str, object] = dict(unmodelled)
            given = ", ".join(f"{key}={shown(value)}" for key, value in options.items())
            raise ValidationError(
                f"cluster task {shown(name)} was given {given}: a ClusterTask takes name, "
                "every and duration only, as the cluster simulation models leases over "
                "fixed-rate runs, not a task's dependencies, retries or other options of "
                "Scheduler.schedule; simulate those on one node (lldsched.sim.Simulation)"
            )
        _set(self, name=name, every=every, duration=duration)
        self._check()

    def _check(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValidationError(
                f"a cluster task's name must be a non-empty str, got {shown(self.name)}"
            )
        # The name is the task's id on every node: refused here by the id's rule, not by
        # simulate_cluster's registration after the scenario around it was taken.
        object.__setattr__(self, "name", check_task_id(self.name, who="a cluster task's name"))
        every = checks.step(self.every, name=f"task {self.name!r} every")  # as FixedRate's
        _seconds(self, "every", every)
        object.__setattr__(self, "duration", check_duration(self.duration))


@dataclass(frozen=True, slots=True, init=False)
class Pause:
    """Node ``node`` stops the world at ``at`` seconds after the start for ``seconds``:
    no renewal, no claim, and its runs are frozen (one due to finish in the pause
    finishes, and writes, the moment the pause ends).  Pauses of one node that
    overlap make one pause, to the later end; a pause of a node that is down does
    nothing."""

    node: int
    at: float
    seconds: float

    def __init__(self, node: int, at: float | timedelta, seconds: float | timedelta) -> None:
        _set(self, node=node, at=at, seconds=seconds)
        self._check()

    def _check(self) -> None:
        checks.whole(self.node, name="pause node", at_least=0)
        _seconds(self, "at", checks.seconds(self.at, name="pause at", at_least=0))
        _seconds(self, "seconds", checks.seconds(self.seconds, name="pause seconds", above=0))


@dataclass(frozen=True, slots=True, init=False)
class Crash:
    """Node ``node`` dies at ``at`` seconds after the start: its runs in flight vanish
    unwritten and its leases are left to expire.  It restarts ``restart_after``
    seconds later (a fresh process: new holder id, state read from the task rows),
    or never if None."""

    node: int
    at: float
    restart_after: float | None = None

    def __init__(
        self, node: int, at: float | timedelta, restart_after: float | timedelta | None = None
    ) -> None:
        _set(self, node=node, at=at, restart_after=restart_after)
        self._check()

    def _check(self) -> None:
        checks.whole(self.node, name="crash node", at_least=0)
        _seconds(self, "at", checks.seconds(self.at, name="crash at", at_least=0))
        if self.restart_after is not None:
            after = checks.seconds(self.restart_after, name="crash restart_after", above=0)
            _seconds(self, "restart_after", after)


@dataclass(frozen=True, slots=True, init=False)
class ClusterScenario:
    """N nodes, their tasks, lease settings, clock skews and faults (see the module docstring).

    ``skews`` is empty (every clock true) or one offset per node, in seconds
    (positive: ahead); with ``lease_clock="node"`` they bend lease expiries too.
    ``horizon`` is in seconds after ``start``: slots due by then are claimed and
    must run; the simulation goes on until they have.
    """

    nodes: int = 3
    tasks: tuple[ClusterTask, ...] = (ClusterTask("report", every=60.0, duration=5.0),)
    lease: float = 30.0
    renewal: float = 10.0
    horizon: float = 600.0
    start: float | datetime = 0.0
    skews: tuple[float, ...] = ()
    pauses: tuple[Pause, ...] = ()
    crashes: tuple[Crash, ...] = ()
    fencing: bool = True
    lease_clock: LeaseClock = "node"
    workers: int = 2
    seed: int = 0
    first: float = field(init=False, default=0.0)
    """``start`` as epoch seconds (derived)."""

    @keyword_only_now(
        kept=1,
        moved=("tasks", "lease", "renewal", "horizon", "start", "skews", "pauses", "crashes",
               "fencing", "lease_clock", "workers", "seed"),
    )  # fmt: skip
    def __init__(
        self,
        nodes: int = 3,
        *,
        tasks: Sequence[ClusterTask] = (ClusterTask("report", every=60.0, duration=5.0),),
        lease: float | timedelta = 30.0,
        renewal: float | timedelta = 10.0,
        horizon: float | timedelta = 600.0,
        start: float | datetime = 0.0,
        skews: Sequence[float | timedelta] = (),
        pauses: Sequence[Pause] = (),
        crashes: Sequence[Crash] = (),
        fencing: bool = True,
        lease_clock: LeaseClock = "node",
        workers: int = 2,
        seed: int = 0,
    ) -> None:
        _set(
            self, nodes=nodes, tasks=_kept(tasks), lease=lease, renewal=renewal,
            horizon=horizon, start=start, skews=_kept(skews), pauses=_kept(pauses),
            crashes=_kept(crashes), fencing=fencing, lease_clock=lease_clock,
            workers=workers, seed=seed,
        )  # fmt: skip
        self._check()

    def _check(self) -> None:
        checks.whole(self.nodes, name="nodes", at_least=1, at_most=MAX_NODES)
        _seconds(self, "lease", checks.seconds(self.lease, name="lease", above=0))
        _seconds(self, "renewal", checks.seconds(self.renewal, name="renewal", above=0))
        if self.renewal >= self.lease:
            raise ValidationError(
                f"renewal must be shorter than the lease ({self.lease!r} s), got {self.renewal!r}"
            )
        _seconds(self, "horizon", checks.seconds(self.horizon, name="horizon", above=0))
        checks.whole(self.workers, name="workers", at_least=1, at_most=MAX_NODE_WORKERS)
        checks.whole(self.seed, name="seed")
        if self.lease_clock not in ("node", "database"):
            raise ValidationError(
                f"lease_clock must be 'node' or 'database', got {shown(self.lease_clock)}"
            )
        checks.flag(self.fencing, name="fencing")
        object.__setattr__(self, "first", to_timestamp(self.start, name="start"))
        self._check_tasks()
        self._check_skews()
        for name in ("pauses", "crashes"):
            if not isinstance(getattr(self, name), tuple):
                raise ValidationError(
                    f"{name} must be a list or tuple, got {shown(getattr(self, name))}"
                )
        for fault in (*self.pauses, *self.crashes):
            if not isinstance(fault, Pause | Crash):
                raise ValidationError(f"a fault must be a Pause or a Crash, got {shown(fault)}")
            if fault.node >= self.nodes:
                raise ValidationError(
                    f"{fault!r} names node {fault.node}, but there are {self.nodes} "
                    f"(0 to {self.nodes - 1})"
                )

    def _check_tasks(self) -> None:
        if not isinstance(self.tasks, tuple) or not self.tasks:
            raise ValidationError(
                f"tasks must be a non-empty list or tuple of ClusterTask, got {shown(self.tasks)}"
            )
        names = [task.name for task in self.tasks if isinstance(task, ClusterTask)]
        if len(names) != len(self.tasks):
            raise ValidationError(f"tasks must be ClusterTask values, got {shown(self.tasks)}")
        if len(set(names)) != len(names):
            raise ValidationError(f"task names must differ, got {shown(names)}")

    def _check_skews(self) -> None:
        if not isinstance(self.skews, tuple) or len(self.skews) not in (0, self.nodes):
            raise ValidationError(
                f"skews must be empty or one offset per node ({self.nodes}), "
                f"got {shown(self.skews)}"
            )
        skews = tuple(checks.seconds(skew, name="skew") for skew in self.skews)
        _seconds(self, "skews", skews)

    @property
    def margin(self) -> float:
        """How far two nodes' clocks may differ without a live lease looking expired:
        ``lease - renewal`` (a lease is never older than one renewal interval)."""
        return self.lease - self.renewal

    def skew_of(self, node: int) -> float:
        """Node ``node``'s clock offset (0 when ``skews`` is empty)."""
        return self.skews[node] if self.skews else 0.0
