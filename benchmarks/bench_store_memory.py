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

In ``run_all.py`` (``main``): the shared SQLite file, 40,000 tasks (``--quick``: 20,000);
its headlines are the traced memory after the first ``step`` and at the end, and the
store's cache entries at the end: flat from the first step on when the store forgets
what the scheduler retired.
"""

from __future__ import annotations

import gc
import sys
import tempfile
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lldsched import OneTime, Scheduler, SqliteTaskStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/pg_server.py

BATCH = 1_000
Step = tuple[int, float, int]


def _noop() -> None:
    return None


def main(argv: Sequence[str] = ()) -> dict[str, float]:
    """The shared SQLite stream, for ``run_all.py``: its headline figures."""
    total = 20_000 if "--quick" in argv else 40_000
    steps = measure(total=total, step=10_000)
    (first, first_mb, _), (last, last_mb, last_entries) = steps[0], steps[-1]
    return {
        f"traced after {first:,} tasks (MB)": first_mb,
        f"traced after {last:,} tasks (MB)": last_mb,
        f"store cache entries after {last:,} tasks": float(last_entries),
    }


def measure(total: int = 40_000, step: int = 10_000, *, shared: bool = True) -> list[Step]:
    with tempfile.TemporaryDirectory() as folder:
        return run(SqliteTaskStore(Path(folder) / "tasks.db", shared=shared), total, step)


def measure_postgres(total: int = 40_000, step: int = 10_000) -> list[Step]:
    from lldsched.stores.postgres import PostgresTaskStore
    from tests.pg_server import PostgresServer

    with PostgresServer() as server:
        return run(PostgresTaskStore(server.create_schema()), total, step)


def run(store: Any, total: int, step: int) -> list[Step]:
    """The stream on ``store`` (closed at the end), printed every ``step`` tasks; each
    step's (tasks run, MB traced, store cache entries)."""
    steps: list[Step] = []
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
                steps.append((done, current / 1e6, sum(caches.values())))
                print(
                    f"{done:>7,} tasks: {current / 1e6:5.1f} MB traced; registry "
                    f"{len(scheduler.tasks()):,}; store caches: {held}",
                    flush=True,
                )
        tracemalloc.stop()
    return steps


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
