"""What each lifecycle of a Scheduler, a Simulation or a view leaves behind, per cycle.

Runs a lifecycle (build, start, a few tasks, shut down; never started and dropped; a
store dropped unclosed; ...) ``--cycles`` times after three to warm up, and prints
what grew: threads by name, file descriptors (``/proc/self/fd``), ``atexit`` and
``threading`` exit hooks, ``weakref.finalize`` registrations, open event loops, live
``sqlite3`` connections, schedulers and simulations alive, PostgreSQL sessions, and
the traced memory a cycle.  docs/OPERATIONS.md, "What a scheduler leaves behind",
tables what it found (run under ``python -X dev -W error::ResourceWarning``: the
``store-dropped`` lifecycle expects each store's own warning, and asserts it)::

    PYTHONPATH=. python -X dev tools/lifecycle_audit.py --cycles 200
    PYTHONPATH=. python tools/lifecycle_audit.py --stores postgres --cycles 50

``--stores postgres`` starts the tests' throwaway server (tests/pg_server.py).  A
started scheduler dropped without ``shutdown()`` keeps running, by design: it is
left out unless ``--lifecycles`` names ``dropped-running``.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import collections
import gc
import itertools
import os
import re
import sqlite3
import sys
import tempfile
import threading
import time
import tracemalloc
import warnings
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.pg_server, for --stores postgres

from lldsched import (  # noqa: E402 - after the path above
    EventLog,
    FixedRate,
    InMemoryTaskStore,
    OneTime,
    Scheduler,
    Simulation,
    SqliteTaskStore,
    TaskStore,
)
from lldsched.sim import fixed  # noqa: E402
from lldsched.threaded.dispatcher import LINGER  # noqa: E402

STORES = ("none", "memory", "sqlite-file", "sqlite-memory", "postgres")
SCHEDULER_CYCLES = ("shutdown", "shutdown-no-drain", "never-started", "in-loop", "store-dropped")
OTHER_CYCLES = ("simulation", "simulation-dropped", "simulation-in-loop", "views")
Cycle = Callable[[], None]
_numbers = itertools.count()


def noop() -> None:
    return None


async def anoop() -> None:
    await asyncio.sleep(0)


def measure(sessions: Callable[[], int] | None) -> dict[str, Any]:
    """What is open now, collected first, once the listeners' threads of schedulers
    never started have ended (each lingers ``LINGER`` seconds after its last event)."""
    time.sleep(LINGER + 0.1)
    gc.collect()
    objects = gc.get_objects()
    found: dict[str, Any] = {
        "threads": collections.Counter(re.sub(r"\d+", "N", t.name) for t in threading.enumerate()),
        "fds": len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 0,
        "atexit": atexit._ncallbacks(),
        "threading-atexit": len(threading._threading_atexits),  # type: ignore[attr-defined]
        "finalize": len(weakref.finalize._registry),  # type: ignore[attr-defined]
        "sqlite3": sum(isinstance(o, sqlite3.Connection) for o in objects),
        "loops": sum(
            isinstance(o, asyncio.AbstractEventLoop) and not o.is_closed() for o in objects
        ),
        "runtimes": sum(type(o).__name__ in ("Scheduler", "Simulation") for o in objects),
    }
    if sessions is not None:
        found["pg-sessions"] = sessions()
    return found


def audit(label: str, cycle: Cycle, cycles: int, sessions: Callable[[], int] | None) -> None:
    for _ in range(3):
        cycle()
    before = measure(sessions)
    tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    for _ in range(cycles):
        cycle()
    time.sleep(LINGER + 0.1)  # the listeners' threads of schedulers never started end
    gc.collect()  # what is kept, not what the collector has yet to free
    grown = (tracemalloc.get_traced_memory()[0] - start) / cycles
    tracemalloc.stop()
    after = measure(sessions)
    changed: dict[str, Any] = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    if "threads" in changed:
        changed["threads"] = dict(after["threads"] - before["threads"])
    print(f"{label:58} {grown:9,.0f} B/cycle  {changed or 'nothing grew'}", flush=True)


def scheduler_cycles(
    open_store: Callable[[], TaskStore | None], *, coroutines: bool, listeners: bool
) -> dict[str, Cycle]:
    def built() -> tuple[Scheduler, TaskStore | None]:
        store = open_store()
        scheduler = Scheduler(2, store=store, listeners=[EventLog()] if listeners else ())
        for n in range(3):
            action = anoop if coroutines and n == 0 else noop
            scheduler.schedule(f"job-{n}", action, OneTime(delay=0))
        return scheduler, store

    def closed(store: TaskStore | None) -> None:
        close = getattr(store, "close", None)  # every store of STORES has one
        if close is not None:
            close()

    def shutdown(drain: bool) -> Cycle:
        def cycle() -> None:
            scheduler, store = built()
            scheduler.start()
            scheduler.wait_idle(timeout=5.0)
            assert scheduler.shutdown(drain=drain, timeout=5.0)
            closed(store)

        return cycle

    def never_started() -> None:
        closed(built()[1])

    def in_loop() -> None:
        async def main() -> None:
            scheduler, store = built()
            scheduler.start()
            await scheduler.aclose()
            closed(store)

        asyncio.run(main())

    def store_dropped() -> None:
        # A durable store dropped open says so as it is collected (a ResourceWarning,
        # lldsched/stores/unclosed.py): expected here, once a store, and asserted.
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always", ResourceWarning)
            scheduler, store = built()
            scheduler.start()
            assert scheduler.shutdown(timeout=5.0)
            durable = not isinstance(store, InMemoryTaskStore)  # ("none" has no such cycle)
            del scheduler, store
            gc.collect()
        unclosed = [str(w.message) for w in said if issubclass(w.category, ResourceWarning)]
        assert len(unclosed) == durable and all(u.startswith("unclosed ") for u in unclosed)

    def dropped_running() -> None:
        built()[0].start()

    return {
        "shutdown": shutdown(True),
        "shutdown-no-drain": shutdown(False),
        "never-started": never_started,
        "in-loop": in_loop,
        "store-dropped": store_dropped,
        "dropped-running": dropped_running,
    }


def other_cycles(*, coroutines: bool, listeners: bool) -> dict[str, Cycle]:
    def simulated() -> Simulation:
        sim = Simulation(2, listeners=[EventLog()] if listeners else ())
        sim.schedule("job", FixedRate(60), duration=fixed(5))
        if coroutines:
            sim.schedule("coroutine", FixedRate(60), action=anoop)
        sim.run_for(600)
        return sim

    def in_loop() -> None:
        async def main() -> None:
            assert simulated().shutdown()

        asyncio.run(main())

    def views() -> None:
        from lldsched.views.widgets import ControlPanel, SimulationPlayer

        player = SimulationPlayer(simulated(), chart=False)
        player.step()
        player.close()
        scheduler = Scheduler(1)
        panel = ControlPanel(scheduler, loop=None)
        scheduler.start()
        panel.close()
        assert scheduler.shutdown(timeout=5.0)

    def shut_down() -> None:
        assert simulated().shutdown()

    def dropped() -> None:
        simulated()

    return {
        "simulation": shut_down,
        "simulation-dropped": dropped,
        "simulation-in-loop": in_loop,
        "views": views,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--stores", default="none,memory,sqlite-file,sqlite-memory")
    parser.add_argument("--lifecycles", default=",".join(SCHEDULER_CYCLES + OTHER_CYCLES))
    args = parser.parse_args(argv)
    stores, lifecycles = args.stores.split(","), args.lifecycles.split(",")
    folder = tempfile.mkdtemp()
    sessions: Callable[[], int] | None = None
    server: Any = None
    dsn = ""
    if "postgres" in stores:
        import psycopg

        from tests.pg_server import PostgresServer

        server = PostgresServer(scram_iterations=1).start()
        dsn = server.create_schema()
        admin = psycopg.connect(server.dsn(), autocommit=True)
        query = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'"

        def sessions() -> int:
            row = admin.execute(query).fetchone()
            return int(row[0]) if row else 0

    def opener(kind: str) -> Callable[[], TaskStore | None]:
        def open_store() -> TaskStore | None:
            if kind == "memory":
                return InMemoryTaskStore()
            if kind == "sqlite-file":
                return SqliteTaskStore(os.path.join(folder, f"{next(_numbers)}.db"))
            if kind == "sqlite-memory":
                return SqliteTaskStore(":memory:")
            if kind == "postgres":
                from lldsched.stores.postgres import PostgresTaskStore

                return PostgresTaskStore(dsn)
            return None

        return open_store

    try:
        for coroutines, listeners in itertools.product((False, True), repeat=2):
            flags = f"coroutines={coroutines:d} listeners={listeners:d}"
            for kind in stores:
                made = scheduler_cycles(opener(kind), coroutines=coroutines, listeners=listeners)
                for name in lifecycles:
                    if name in made and not (name == "store-dropped" and kind == "none"):
                        audit(f"{kind} {flags} {name}", made[name], args.cycles, sessions)
            others = other_cycles(coroutines=coroutines, listeners=listeners)
            for name in lifecycles:
                if name in others and not (name == "views" and (coroutines or listeners)):
                    audit(f"{flags} {name}", others[name], args.cycles, sessions)
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
