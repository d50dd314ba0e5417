"""A simulation on a shared store: its rows registered as stored, its runs refused.

A store many processes share (``store.shared``: a SQLite store opened ``shared=True``, a
PostgreSQL store) is followed by live processes, each running only the slots it claims.
A simulation built on one registers its rows as they are and decides or writes nothing
there (:func:`load_as_stored`); it may register and read its tasks, and refuses to run
(:func:`runs_unclaimed`), for it would run every due slot itself, unclaimed
(docs/CLUSTER.md, "Limits").
"""

from __future__ import annotations

from lldsched.coordination import CoordinatedStore
from lldsched.core.follow import load
from lldsched.core.machine import SchedulerCore
from lldsched.errors import StoreError, ValidationError, shown
from lldsched.persistence import TaskStore

__all__ = ["load_as_stored", "runs_unclaimed"]


def load_as_stored(core: SchedulerCore, store: TaskStore) -> None:
    """Register a shared store's rows as they are, as a process of the cluster does
    (:meth:`lldsched.threaded.shared.Coordinator.load`), never a restart's recovery:
    that decides every task's passed slots and writes them (records of slots missed or
    coalesced, plans, due instants at the simulated clock's) into rows the live
    processes follow, with no lease and no fencing token.  Nothing is decided, and the
    store is muted while the rows are registered: building a simulation there writes
    nothing (docs/CLUSTER.md, "Limits")."""
    if not isinstance(store, CoordinatedStore):
        raise ValidationError(
            f"{shown(store)} says shared=True but lacks the CoordinatedStore methods"
        )
    rows = store.load_all()  # a row this code cannot load refuses the store, as recovery's
    with store.muted():
        load(core, rows, records_of=store.records, dead_letter=store.dead_letter())


def runs_unclaimed(store: TaskStore) -> StoreError:
    """The refusal of a simulation's runs on a shared store (``store.shared``: a SQLite
    store opened ``shared=True``, a PostgreSQL store): it runs every due slot itself,
    with no claim and no fencing token, and writes each run's record and its task's next
    state, which the processes sharing the store then follow (docs/CLUSTER.md, "Limits")."""
    return StoreError(
        f"a Simulation cannot run on the shared store {store!r}: it runs every due slot "
        "itself, with no claim and no fencing token, and writes each run's record and its "
        "task's next state, which every process sharing the store then follows (slots "
        "recorded as run that never ran, due instants moved to simulated ones). Simulate on "
        "a copy opened without shared=True (SQLite: a backup of the file; PostgreSQL: the "
        "tasks loaded with load_all() and registered on an in-memory simulation); a "
        "Simulation built on a shared store may still register and read its tasks"
    )
