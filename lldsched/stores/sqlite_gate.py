"""WriteGate: the shared SQLite store's writers take the file's write lock in turn.

SQLite hands its write lock to no one: a writer that finds it taken sleeps in its busy
handler (1, 2, 5, ... up to 100 ms between tries) and tries again, so a process whose
writes come back to back (a commit, then at once the next ``BEGIN IMMEDIATE``) finds
the lock free at every try of its own and a waiter almost never does.  Measured
(``benchmarks/bench_write_fairness.py``): against one process writing 1 ms
transactions back to back, a waiter with a 0.5 s timeout got in 10 times of 50.

**The gate** is two OS locks on sidecar files, ``fcntl.flock`` exclusive: the *write*
lock (``<file>.write``), held from before ``BEGIN IMMEDIATE`` to after the ``COMMIT``,
and the *queue* lock (``<file>.queue``), held by a writer in line.  A write first tries
for the write lock without blocking, every millisecond for up to :data:`PATIENCE`
(50 ms), as long as nobody is in line (the queue lock free); most waits are a write or
two long and end there, the writer that happens to run taking the lock, as SQLite's
busy handler would, only without its sleeps of up to 100 ms.  A write that waited
that long, or that finds someone in line, lines up: it takes the queue lock, then the
write lock, blocking, and lets the queue lock go once it has the write lock (a
turnstile).  While it is in line, every other writer finds the queue lock taken and
lines up behind it, the one that just wrote included, so it is the next to write.  The
kernel wakes a blocked ``flock`` waiter when the lock is let go, but does not hand it
over: with the write lock alone the process that let it go could take it again first
(measured: a waiter behind 1 ms writes still waited up to 0.35-0.5 s now and then);
behind the queue lock it cannot.  So a write waits at most :data:`PATIENCE` plus the
writes already in line, not for a lucky moment; lining up at once for every write
instead halved the throughput of four processes on a 2-core host (each write waited
for the next process in line to be given a core), as Go's ``sync.Mutex`` found: it
also lets the running goroutine take its lock until a waiter has waited 1 ms.

**The timeout.**  ``flock`` has no timeout, so the blocking wait in line is made by the
gate's one thread, started at the first such wait, while the caller waits for it up to
the store's ``timeout``.  Past it the caller gets :class:`WriteLockTimeout` (an
``sqlite3.OperationalError``, so every caller treats it as SQLite's own "database is
locked": a :class:`~lldsched.errors.StoreError` naming the file, the call and the
wait), and the thread keeps its place in line: once it gets the lock, it gives it to
the next write of its store waiting, or lets it go.

**Not gated**: writes at open (creating or migrating the file, under SQLite's own
wait as before), unshared stores (one writer per file), and writers that are not
lldsched's of this release (an older release during a rolling upgrade, the
``sqlite3`` shell): those take SQLite's lock as before, and a gated writer waits for
them in SQLite's busy handler, up to ``timeout`` more.  **Windows** has no ``flock``:
no gate there, writes wait in SQLite's busy handler as before (docs/DECISIONS.md,
"Shared SQLite writers take the write lock in turn").
"""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
import time

from lldsched.errors import StoreError

__all__ = ["PATIENCE", "POLL", "QUEUE", "WRITE", "WriteGate", "WriteLockTimeout", "gate_for"]

QUEUE = ".queue"
WRITE = ".write"
PATIENCE = 0.05
"""Seconds a write tries for the lock before it lines up (half the timeout if shorter)."""
POLL = 0.001
"""Seconds between those tries."""
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # a planted symlink is refused, not followed


class WriteLockTimeout(sqlite3.OperationalError):
    """The gate was not passed within the store's ``timeout``: other processes' writes,
    or one process stalled inside its write, held it that long."""


def gate_for(path: str, timeout: float) -> WriteGate | None:
    """The gate of the shared store at ``path`` (its sidecars next to the file, symlinks
    resolved); None where there is no ``flock`` (Windows): writes wait as before."""
    if sys.platform == "win32":  # pragma: no cover - not run by this project's CI (Linux)
        return None
    real = os.path.realpath(path)
    try:
        return WriteGate(real, timeout)
    except OSError as exc:
        raise StoreError(
            f"cannot open the shared store {path!r}: cannot open its write lock files "
            f"{real + QUEUE!r} and {real + WRITE!r} ({exc})"
        ) from None


class WriteGate:
    """The write gate of one store (one per store object: two stores in one process line
    up like two processes, ``flock`` locks being the open file's).  Not re-entrant; its
    store's lock serialises the callers, :meth:`acquire` then :meth:`release`."""

    def __init__(self, path: str, timeout: float) -> None:
        import fcntl  # POSIX only: gate_for gives no gate elsewhere

        self._flock = fcntl.flock
        self._ex, self._un, self._nb = fcntl.LOCK_EX, fcntl.LOCK_UN, fcntl.LOCK_NB
        self.path = path
        self.timeout = timeout
        self._queue = _open(path + QUEUE)
        try:
            self._write = _open(path + WRITE)
        except OSError:
            os.close(self._queue)
            raise
        self._state = threading.Condition(threading.Lock())
        self._wanted = False  # a caller waits for the thread to take the write lock
        self._held = False  # the write lock is this gate's (taken for a caller)
        self._busy = False  # the thread is taking the locks (blocked in flock)
        self._closed = False
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()  # a forked child has the descriptors, not the thread

    def acquire(self) -> None:
        """Take the write lock, in turn once a write waited :data:`PATIENCE`;
        :class:`WriteLockTimeout` past ``timeout``."""
        with self._state:
            started = time.monotonic()
            if not self._busy and self._poll(started + min(PATIENCE, self.timeout / 2)):
                self._held = True
                return
            left = self.timeout - (time.monotonic() - started)
            if left <= 0:  # timeout=0: one try, never in line
                raise self._timed_out(started)
            # In line: the thread takes the queue lock, then the write lock, blocking;
            # this caller waits for it up to the timeout.
            self._wanted = True
            self._busy = True
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._take, name=f"lldsched write gate {self.path}", daemon=True
                )
                self._thread.start()
            self._state.notify_all()
            if self._state.wait_for(lambda: self._held, left):
                return
            self._wanted = False
        raise self._timed_out(started)

    def _timed_out(self, started: float) -> WriteLockTimeout:
        return WriteLockTimeout(
            f"the write lock was not obtained within the store's timeout={self.timeout:g} s "
            f"(waited {time.monotonic() - started:.1f} s for {self.path + WRITE!r}, "
            "behind the other processes' writes: one of them held it that long, stalled "
            "or in a long transaction). A claim or a read of the change feed is tried "
            "again at the next wake; if writes are that long, open every store on the "
            "file with a larger timeout"
        )

    def _poll(self, until: float) -> bool:
        """Take the write lock without lining up, trying again every :data:`POLL` seconds
        until ``until``, while nobody is in line (the queue lock free: tested, let go);
        False to line up: someone is in line, or the patience ran out."""
        while self._try(self._queue):
            self._flock(self._queue, self._un)
            if self._try(self._write):
                return True
            if time.monotonic() >= until:
                return False
            time.sleep(POLL)
        return False

    def _try(self, fd: int) -> bool:
        try:
            self._flock(fd, self._ex | self._nb)
        except BlockingIOError:
            return False
        return True

    def release(self) -> None:
        """Let the write lock go (after the COMMIT or the ROLLBACK)."""
        with self._state:
            self._held = False
            self._flock(self._write, self._un)

    def _take(self) -> None:
        """The thread: whenever a caller waits, queue for the write lock, blocking."""
        state = self._state
        while True:
            with state:
                state.wait_for(lambda: self._busy or self._closed)
                if self._closed and not self._busy:
                    return
            # Only this thread touches the descriptors while busy (close waits for it).
            self._flock(self._queue, self._ex)
            self._flock(self._write, self._ex)
            self._flock(self._queue, self._un)
            with state:
                self._busy = False
                if self._wanted and not self._closed:
                    self._wanted = False
                    self._held = True
                    state.notify_all()
                else:  # its caller gave up: the next one in the queue goes
                    self._flock(self._write, self._un)
                if self._closed:
                    self._close()
                    return

    def close(self) -> None:
        """Close the sidecars (idempotent); a thread still in line closes them once it
        got the lock and let it go.  In a child forked since, only the child's copies
        of the descriptors are closed: the locks are the parent's (a lock let go here
        would be let go for it)."""
        if os.getpid() != self._pid:
            if not self._closed:
                self._closed = True
                self._close()
            return
        with self._state:
            if self._closed:
                return
            self._closed = True
            if self._held:
                self._held = False
                self._flock(self._write, self._un)
            if not self._busy:
                self._close()
            self._state.notify_all()

    def _close(self) -> None:
        os.close(self._queue)
        os.close(self._write)


def _open(path: str) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o666)
