"""One running scheduler per store object: taken at ``start()``, let go by ``shutdown()``;
no other runtime uses the store meanwhile.

A store object is one writer.  An unshared SQLite store's claim on its file
(:mod:`lldsched.stores.sqlite.claim`) refuses a second *store* on the file, in this process
or another, but it cannot see a second *scheduler* given the same store object: two
running on one unshared store each restored every task and ran it, every slot twice.
A shared store object is one node (its node id, its leases, the versions its change
feed has read, whose own writes the feed leaves out): a second scheduler on it never
heard of the first one's registrations, pauses or removals.

So a scheduler takes its store as it starts (:func:`take`) and lets it go when its
first ``shutdown()`` ends (:func:`let_go`), whatever that shutdown left running; a
scheduler built on a store that a running scheduler holds is refused as well
(:func:`check`), since its verbs would write behind the running one's back.  A
scheduler built and never started holds nothing: it restored the store, and may read
it.  A :class:`~lldsched.sim.simulation.Simulation` is checked the same way, as it is
built (its recovery writes) and each time it runs (its runs write their rows and
records, at simulated instants; its ``shutdown()`` too), and holds nothing either: held
from construction, a store would stay held as long as the object lived (its
``shutdown()`` ends its runs, not a hold), and a restart is simulated by a second
simulation on the same store.  The verbs that change a task (register, pause, cancel,
remove, run now, ...) of a runtime that holds nothing (a scheduler never started or
shut down, a simulation) are refused while a running scheduler holds the store: they
wrote through it behind that one's back.  Every verb of the core asks
:meth:`~lldsched.core.store.writes.StoreWrites.check_open` first; in shared mode the
change feed is not read for such a verb (:func:`held_by_another`), since the feed says
each change once, to whoever reads it through the store object.  Every refusal is a
:class:`~lldsched.errors.StoreError` naming the store, the scheduler that holds it
and what was refused, raised before anything is changed.  A forked child holds
nothing (its copies of the parent's schedulers run nothing there).
Both runtimes use it, so it lives in ``core/`` (``threaded/`` and ``sim/`` never
import each other).

Nothing here is on a scheduler's run path: one dictionary look-up at construction, at
``start()`` and at ``shutdown()``; a simulation's run adds one per ``run``, ``run_for``
or ``step`` call (none per simulated event); a verb, on a runtime with a store, one
truth test of an empty dictionary while no scheduler runs on any store, else one
look-up.
"""

from __future__ import annotations

import os
import threading

from lldsched.errors import StoreError, doc_url

__all__ = ["check", "held_by_another", "let_go", "take"]

# The stores held, by id(): the store (kept alive while held, so its id names no other
# object meanwhile) and the scheduler that holds it (anything with a ``name``).
_held: dict[int, tuple[object, object]] = {}
_lock = threading.Lock()  # guards _held (schedulers start and stop on any thread)


def _forget_after_fork() -> None:
    """In a forked child nothing is held: the parent's schedulers are not running there
    (:mod:`lldsched.threaded.forked`), and a store it inherited refuses on its own
    (:mod:`lldsched.stores.forks`), saying to open one after the fork.  The lock is new
    too: a thread of the parent may have held it at the fork."""
    global _lock
    _lock = threading.Lock()
    _held.clear()


if hasattr(os, "register_at_fork"):  # POSIX; Windows has no fork
    os.register_at_fork(after_in_child=_forget_after_fork)


def _refusal(store: object, holder: object, user: object, doing: str | None) -> StoreError:
    name = getattr(holder, "name", holder)
    what = "use it" if doing is None else f"{doing} through it (nothing was changed)"
    return StoreError(
        f"the store {store!r} already serves the running scheduler {name!r}, so "
        f"{_described(user)} cannot {what}: a store object is one writer, taken by one "
        "running scheduler at a time (two on one store each ran every task; on a shared "
        "store it is one node, its leases and the versions it has read), and nothing else "
        "writes through it meanwhile. Shut that scheduler down first; for several "
        "schedulers on one set of tasks, give each a store of its own, opened shared "
        f"({doc_url('docs/CLUSTER.md')}); for a simulation, a store of its own (a copy of "
        "the file)"
    )


def _described(user: object) -> str:
    """``user`` in a refusal: ``"Scheduler 'b'"`` for a named one, ``"a Simulation"``."""
    name = getattr(user, "name", None)
    kind = type(user).__name__
    return f"{kind} {name!r}" if isinstance(name, str) else f"a {kind}"


def check(store: object, user: object, *, doing: str | None = None) -> None:
    """Raise if a running scheduler other than ``user`` (a scheduler, or a simulation
    about to be built on ``store`` or to run; or the runtime whose verb is ``doing``,
    e.g. ``"pause 'task-1'"``, which the refusal names) holds ``store``."""
    holder = _other_holder(store, user)
    if holder is not None:
        raise _refusal(store, holder, user, doing)


def held_by_another(store: object, user: object) -> bool:
    """True if a running scheduler other than ``user`` holds ``store`` (what
    :func:`check` refuses)."""
    return _other_holder(store, user) is not None


def _other_holder(store: object, user: object) -> object | None:
    if not _held:  # nothing held: a simulation's run, or a verb, checks no more than this
        return None
    with _lock:
        found = _held.get(id(store))
    return found[1] if found is not None and found[1] is not user else None


def take(store: object, scheduler: object) -> None:
    """``scheduler`` holds ``store`` from now on; raise if another one holds it."""
    with _lock:
        found = _held.get(id(store))
        if found is not None and found[1] is not scheduler:
            raise _refusal(store, found[1], scheduler, None)
        _held[id(store)] = (store, scheduler)


def let_go(store: object, scheduler: object) -> None:
    """``scheduler`` no longer holds ``store`` (nothing if it did not)."""
    with _lock:
        found = _held.get(id(store))
        if found is not None and found[1] is scheduler:
            del _held[id(store)]
