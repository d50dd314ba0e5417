"""Store memory: what a durable store holds in memory after many one-off tasks.

A service that schedules one-off tasks all day: ``total`` no-op ``OneTime(delay=0)``
tasks on a started ``Scheduler`` (default ``retain_finished``, 10,000), registered 1,000
at a time, each batch run to the end (``wait_idle``).  Every ``step`` tasks, after
``gc.collect()``, tracemalloc's current total (traced from the first registration) and
the sizes of the store's per-task caches.  The scheduler retires finished tasks, so
what still grows past 10,000 is the store's.

    python benchmarks/bench_store_memory.py                 # 40,000 on a shared SQLite file
    python benchmarks/bench_store_memory.py 40000 10000 --unshared
    python benchmarks/bench_store_memory.py 40000 10000 --postgres   # the tests' server
"""

from __future__ import annotations

import gc
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

from lldsched import OneTime, Scheduler, SqliteTaskStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/pg_server.py

BATCH = 1_000


def _noop() -> None:
    return None


def measure(total: int = 40_000, step: int = 10_000, *, shared: bool = True) -> None:
    with tempfile.TemporaryDirectory() as folder:
        run(SqliteTaskStore(Path(folder) / "tasks.db", shared=shared), total, step)


def measure_postgres(total: int = 40_000, step: int = 10_000) -> None:
    from lldsched.stores.postgres import PostgresTaskStore
    from tests.pg_server import PostgresServer

    with PostgresServer() as server:
        run(PostgresTaskStore(server.create_schema()), total, step)


def run(store: Any, total: int, step: int) -> None:
    """The stream on ``store`` (closed at the end), printed every ``step`` tasks."""
    scheduler = Scheduler(store=store)
    with store, scheduler:
        tracemalloc.start()
        done = 0
        while done < total:
            for _ in range(BATCH):
                scheduler.schedule("once", _noop, OneTime(delay=0))
            done += BATCH
            if not scheduler.wait_idle(timeout=120):
                raise RuntimeError(f"{done} tasks not run within 120 s")
            if done % step == 0:
                gc.collect()
                current, _ = tracemalloc.get_traced_memory()
                caches = _caches(store)
                held = ", ".join(f"{name} {size:,}" for name, size in caches.items())
                print(
                    f"{done:>7,} tasks: {current / 1e6:5.1f} MB traced; registry "
                    f"{len(scheduler.tasks()):,}; store caches: {held}",
                    flush=True,
                )
        tracemalloc.stop()


def _caches(store: Any) -> dict[str, int]:
    """The sizes of the store's per-task caches (private: what this benchmark watches)."""
    if isinstance(store, SqliteTaskStore):
        caches = {"definitions": len(store._defined), "counts": len(store._counts)}
        if store._shared is not None:
            caches |= {"seen": len(store._shared.seen), "settled": len(store._shared.settled)}
        return caches
    return {
        "definitions": len(store._defined),
        "added": len(store._added),
        "seen": len(store._seen),
        "decoded": len(store._decoded),
    }


if __name__ == "__main__":
    numbers = [int(arg) for arg in sys.argv[1:] if not arg.startswith("--")]
    if "--postgres" in sys.argv:
        measure_postgres(*numbers)
    else:
        measure(*numbers, shared="--unshared" not in sys.argv)
