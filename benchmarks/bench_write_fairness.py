"""Shared SQLite writers: does a waiter get the write lock while others write back to back?

SQLite's busy handler sleeps between tries (1, 2, 5, ... 100 ms), so a writer that
begins its next transaction as soon as it committed finds the lock free at each of its
own tries and a waiter rarely does.  The store's gate (``lldsched/stores/sqlite/gate.py``)
takes an OS lock before every shared write.  Three ways of taking the lock, each
measured the same way:

* ``sqlite``: ``BEGIN IMMEDIATE`` alone, SQLite's busy handler waiting (before the gate);
* ``flock``: one ``fcntl.flock`` lock taken blocking before it, at once (the kernel
  wakes a waiter when the lock is let go, but the writer that let it go can take it
  again first);
* ``gate``: the store's :class:`~lldsched.stores.sqlite.gate.WriteGate`: the same lock,
  tried without blocking for up to 50 ms, then taken blocking in the gate's thread
  within the timeout.

``HOGS`` processes write transactions back to back, each holding the lock ``HOLD``
seconds of computation; a waiter process makes ``TRIES`` write transactions, each
against ``TIMEOUT``, and counts how many got in and how long each waited.

Then the cost of the gate when nobody else writes: a shared store's ``release`` (one
write transaction: ``BEGIN IMMEDIATE``, a ``DELETE``, ``COMMIT``), with and without its
gate, in interleaved rounds; and processes writing back to back, with and without it.

Run: ``.venv/bin/python benchmarks/bench_write_fairness.py [--quick]``.
"""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import sqlite3
import sys
import tempfile
import time
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.synchronize import Event
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from lldsched import SqliteTaskStore  # noqa: E402
from lldsched.stores.sqlite.gate import gate_for  # noqa: E402

MODES = ("sqlite", "flock", "gate")
HOLD = 0.001
TIMEOUT = 0.5
HOGS = (1, 3)


@contextmanager
def written(connection: sqlite3.Connection, mode: str, path: str) -> Iterator[None]:
    """Yield inside one write transaction on ``connection``, the lock taken by ``mode``."""
    lock = _locks(mode, path)
    if lock is not None:
        lock.acquire()
    try:
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
    finally:
        if lock is not None:
            lock.release()


class _Flock:
    def __init__(self, path: str) -> None:
        self.fd = os.open(path + ".bench-flock", os.O_RDWR | os.O_CREAT, 0o666)

    def acquire(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def release(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)


_opened: dict[tuple[str, str], object] = {}


def _locks(mode: str, path: str) -> _Flock | None:
    """The process's lock for ``mode`` on ``path`` (one per process), or None."""
    if mode == "sqlite":
        return None
    if (mode, path) not in _opened:
        _opened[mode, path] = _Flock(path) if mode == "flock" else gate_for(path, TIMEOUT)
    return _opened[mode, path]  # type: ignore[return-value]


def hog(path: str, mode: str, stop: Event, ready: Event) -> None:
    connection = sqlite3.connect(path, timeout=60, isolation_level=None)
    ready.set()
    while not stop.is_set():
        with written(connection, mode, path):
            connection.execute("UPDATE t SET v = v + 1 WHERE k = 1")
            end = time.perf_counter() + HOLD
            while time.perf_counter() < end:
                pass


def waiter(path: str, mode: str, tries: int, out: multiprocessing.Queue[object]) -> None:
    connection = sqlite3.connect(path, timeout=TIMEOUT, isolation_level=None)
    waits: list[float] = []
    got = 0
    for _ in range(tries):
        began = time.perf_counter()
        try:
            with written(connection, mode, path):
                connection.execute("UPDATE t SET v = v + 1 WHERE k = 2")
            got += 1
        except sqlite3.OperationalError:  # SQLite's "database is locked", the gate's too
            pass
        waits.append(time.perf_counter() - began)
        time.sleep(0.005)  # a waiter, not a writer back to back
    out.put((got, sorted(waits)))


def fairness(mode: str, hogs: int, tries: int) -> tuple[int, float, float]:
    """How many of the waiter's ``tries`` got in; its median and longest wait (ms)."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "s.db")
        connection = sqlite3.connect(path, isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v INTEGER)")
        connection.execute("INSERT INTO t VALUES (1, 0), (2, 0)")
        connection.close()
        context = multiprocessing.get_context("spawn")
        stop = context.Event()
        readies = [context.Event() for _ in range(hogs)]
        processes = [
            context.Process(target=hog, args=(path, mode, stop, ready)) for ready in readies
        ]
        for process in processes:
            process.start()
        for ready in readies:
            ready.wait()
        out: multiprocessing.Queue[object] = context.Queue()
        process = context.Process(target=waiter, args=(path, mode, tries, out))
        process.start()
        got, waits = typing.cast(tuple[int, list[float]], out.get())
        process.join()
        stop.set()
        for each in processes:
            each.join()
    return got, waits[len(waits) // 2] * 1e3, waits[-1] * 1e3


def ungate(store: SqliteTaskStore) -> None:
    """Take ``store``'s gate away: its writes wait in SQLite's busy handler, as before."""
    gate = store._gate
    store._gate = store._coordinated().gate = None
    if gate is not None:
        gate.close()


def cost(rounds: int, writes: int) -> tuple[float, float]:
    """Microseconds per shared ``release`` (one write transaction), without and with the
    gate, nobody else writing: the best of ``rounds`` interleaved rounds each."""
    best = {False: float("inf"), True: float("inf")}
    with tempfile.TemporaryDirectory() as directory:
        for _ in range(rounds):
            for gated in (False, True):
                with SqliteTaskStore(Path(directory) / "tasks.db", shared=True) as store:
                    if not gated:
                        ungate(store)
                    began = time.perf_counter()
                    for _ in range(writes):
                        store.release(task_id="a", token=1)
                    took = (time.perf_counter() - began) / writes * 1e6
                    best[gated] = min(best[gated], took)
    return best[False], best[True]


def writer(path: str, gated: bool, writes: int, go: Event, ready: Event) -> None:
    with SqliteTaskStore(path, shared=True) as store:
        if not gated:
            ungate(store)
        ready.set()
        go.wait()
        for _ in range(writes):
            store.release(task_id="a", token=1)


def throughput(processes: int, writes: int, gated: bool) -> float:
    """Write transactions per second of ``processes`` stores each writing ``writes``
    ``release``s back to back, all at once."""
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "tasks.db")
        SqliteTaskStore(path, shared=True).close()
        context = multiprocessing.get_context("spawn")
        go = context.Event()
        readies = [context.Event() for _ in range(processes)]
        started = [
            context.Process(target=writer, args=(path, gated, writes, go, ready))
            for ready in readies
        ]
        for process in started:
            process.start()
        for ready in readies:
            ready.wait()
        began = time.perf_counter()
        go.set()
        for process in started:
            process.join()
        return processes * writes / (time.perf_counter() - began)


def main(argv: list[str] | None = None) -> dict[str, float]:
    quick = "--quick" in (argv or [])
    tries = 20 if quick else 50
    results: dict[str, float] = {}
    print(f"waiter: {tries} write transactions, timeout {TIMEOUT} s; hogs hold {HOLD * 1e3} ms")
    for hogs in HOGS:
        for mode in MODES:
            got, median, longest = fairness(mode, hogs, tries)
            print(
                f"  {hogs} hog(s), {mode:6}: got in {got:3}/{tries}, wait median "
                f"{median:7.1f} ms, longest {longest:7.1f} ms"
            )
            results[f"{mode}, {hogs} hog(s): waiter got in (%)"] = 100 * got / tries
            results[f"{mode}, {hogs} hog(s): longest wait (ms)"] = longest
    bare, gated = cost(rounds=3 if quick else 7, writes=500 if quick else 2000)
    print(f"shared release, nobody else writing: {bare:.1f} us bare, {gated:.1f} us gated")
    results["shared write, no gate (us)"] = bare
    results["shared write, gated (us)"] = gated
    for processes in (2, 4):
        rates = {False: [], True: []}  # type: dict[bool, list[float]]
        for _ in range(3 if quick else 5):
            for gate in (False, True):
                rates[gate].append(throughput(processes, 300 if quick else 1000, gate))
        bare, gated = (sorted(rates[gate])[len(rates[gate]) // 2] for gate in (False, True))
        print(
            f"{processes} processes writing back to back: {bare:,.0f} writes/s bare, "
            f"{gated:,.0f} gated (medians of interleaved rounds)"
        )
        results[f"{processes} writers back to back, no gate (writes/s)"] = bare
        results[f"{processes} writers back to back, gated (writes/s)"] = gated
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
