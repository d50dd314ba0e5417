"""WriteGate: the shared SQLite store's writers take the file's write lock in turn.

SQLite hands its write lock to no one: a writer that finds it taken sleeps in its busy
handler (1, 2, 5, ... up to 100 ms between tries) and tries again, so a process whose
writes come back to back (a commit, then at once the next ``BEGIN IMMEDIATE``) finds
the lock free at every try of its own and a waiter almost never does.  Measured
(``benchmarks/bench_write_fairness.py``): against one process writing 1 ms
transactions back to back, a waiter with a 0.5 s timeout got in 10 to 24 times of 50.

**The gate** is one OS lock on a sidecar file, ``fcntl.flock`` exclusive: the *write*
lock (``<file>.write``), held from before ``BEGIN IMMEDIATE`` to after the ``COMMIT``.
A write first tries for it without blocking, every millisecond for up to
:data:`PATIENCE` (50 ms): most waits are a write or two long and end there, the
writer that happens to run taking the lock, as SQLite's busy handler would, only
without its sleeps of up to 100 ms.  A write that waited that long blocks in
``flock``: the kernel wakes a blocked waiter as soon as the lock is let go, where
SQLite's busy handler would still be asleep.  It does not hand the lock over (the
process that let it go may take it again first), so a wait is not bounded by the
writes ahead of it; measured, the waiter got in 50 of 50 times, its longest wait
about 0.1 s.

**Not a turnstile.**  A second lock that a writer waiting past its patience held
while in line, and that every writer had to pass, bounded the wait a little better,
but a process stalled while in line (SIGSTOP, a VM freeze, a long GC pause) then held
up every other process's writes for the whole stall, the lease takeover that should
run its tasks included.  A stopped ``flock`` waiter holds nothing (Linux retries the
lock in the waiter's own context after the wake), so with the write lock alone only
a process stalled *inside* its write transaction holds the others up, as with
SQLite's own lock (docs/decisions/persistence.md, "Shared SQLite writers take the write lock in
turn").

**The timeout.**  ``flock`` has no timeout, so the blocking wait is made by the gate's
one thread (``lldsched-sqlite-write-gate``), started at the first such wait, while the
caller waits for it up to the store's ``timeout``.  Past it the caller gets
:class:`WriteLockTimeout` (an ``sqlite3.OperationalError``, so every caller treats it
as SQLite's own "database is locked": a :class:`~lldsched.errors.StoreError` naming
the file, the call and the wait), and the thread goes on waiting: once it gets the
lock, it gives it to the next write of its store waiting, or lets it go.  A ``flock``
that fails otherwise (an ``OSError``: ``ENOLCK``, say) fails the write waiting with
:class:`WriteLockFailed` naming it, and the next write starts a new thread.  Where the
interpreter's exit refuses that thread (Python 3.12.0 to 3.12.2:
:mod:`lldsched.threadstarts`; the exit's rewrite of the rows an outage left stale, a
run's settle as the process exits), the write goes on trying for the lock without
blocking, every :data:`POLL`, on its own thread, up to the same ``timeout``: a blocking
``flock`` there could hold the exit for as long as another process stalls in its write.

**One timeout for both waits.**  A writer that is not lldsched's of this release (an
older release during a rolling upgrade, the ``sqlite3`` shell) takes SQLite's lock
without the gate, and a gated write waits for it in SQLite's busy handler after the
gate.  The two waits together stay within ``timeout``: a shared store's connection
waits ``WriteGate.busy``, the timeout less the gate's patience, which covers
every write that got the gate without blocking for it; one that blocked is given
what is left for its ``BEGIN IMMEDIATE`` (:func:`~lldsched.stores.sqlite.rows.within`).

**Gated**: every write of a shared store, those at open too (creating the file,
migrating it, catching its record counter up: a store opened while the others write
back to back gets in as their writes do).  **Not gated**: unshared stores (one writer
per file), the switch of a new file to WAL (no write transaction; openers switching
it together are answered at once, :func:`~lldsched.stores.sqlite.schema._wal`).
**Windows** has no ``flock``: no gate there, writes wait in SQLite's busy handler as
before, up to ``timeout``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import threading
import time
import weakref
from collections.abc import Callable

from lldsched.errors import StoreError
from lldsched.stores.sqlite.claim import match_mode, sidecar_mode
from lldsched.stores.unclosed import collected
from lldsched.threadstarts import start

__all__ = [
    "PATIENCE",
    "POLL",
    "THREAD",
    "WRITE",
    "WriteGate",
    "WriteGateTakenTwice",
    "WriteLockFailed",
    "WriteLockTimeout",
    "gate_for",
]

WRITE = ".write"
PATIENCE = 0.05
"""Seconds a write tries for the lock before it blocks for it (half the timeout if
shorter)."""
POLL = 0.001
"""Seconds between those tries."""
THREAD = "lldsched-sqlite-write-gate"
"""The name of a gate's thread, the one that blocks in ``flock``."""
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)  # a planted symlink is refused, not followed
_ident = threading.get_ident


class WriteLockTimeout(sqlite3.OperationalError):
    """The gate was not passed within the store's ``timeout``: other processes' writes,
    or one process stalled inside its write, held it that long."""


class WriteLockFailed(sqlite3.OperationalError):
    """Taking the write lock failed with an ``OSError`` other than the lock being taken."""


class WriteGateTakenTwice(RuntimeError):
    """:meth:`WriteGate.acquire` called while the gate is held (not re-entrant): a mistake
    of the code taking it, not a lock another process holds.  Not an
    ``sqlite3.OperationalError``, which every caller takes for a lock not had in time
    (a verb's hold then runs unheld): it is raised as it is, naming the holder."""


def gate_for(path: str, timeout: float) -> WriteGate | None:
    """The gate of the shared store at ``path`` (its sidecar next to the file, symlinks
    resolved); None where there is no ``flock`` (Windows): writes wait as before."""
    if sys.platform == "win32":  # pragma: no cover - not run by this project's CI (Linux)
        return None
    real = os.path.realpath(path)
    try:
        return WriteGate(real, timeout)
    except OSError as exc:
        raise StoreError(
            f"cannot open the shared store {path!r}: cannot open its write lock file "
            f"{real + WRITE!r} ({exc})"
        ) from None


class WriteGate:
    """The write gate of one store (one per store object: two stores in one process take
    turns like two processes, ``flock`` locks being the open file's).  Not re-entrant;
    its store's lock serialises the callers, :meth:`acquire` then :meth:`release`.  A
    second :meth:`acquire` before the release, by any thread, raises
    :class:`WriteGateTakenTwice` naming the thread that holds it: ``flock`` on the
    descriptor that holds the lock succeeds, so it passed, and its release let the lock
    go under the first (a verb's hold did so, twice: docs/decisions/persistence.md,
    "Persistence")."""

    def __init__(self, path: str, timeout: float) -> None:
        import fcntl  # POSIX only: gate_for gives no gate elsewhere

        self._flock = fcntl.flock
        self._ex, self._un, self._now = fcntl.LOCK_EX, fcntl.LOCK_UN, fcntl.LOCK_EX | fcntl.LOCK_NB
        self.path = path
        self.timeout = timeout
        self.patience = min(PATIENCE, timeout / 2)
        # SQLite's own wait, for a writer that takes no gate, once this one was passed
        # within its patience: the two together stay within the timeout.
        self.busy = timeout - self.patience
        self._write = _open(path + WRITE, sidecar_mode(path))
        # Guards _wanted, _holder, _busy, _failed, _closed and _thread, and every flock
        # call on _write but the gate thread's blocking one (made while _busy says the
        # descriptor is its own); the thread waits on it for a caller, a caller for the
        # thread.  Held through a caller's tries within its patience.  Lock order: its
        # store's lock (held around a write's acquire and release), then this one.
        self._state = threading.Condition(threading.Lock())
        self._wanted: int | None = None  # the caller waiting for the gate's thread to take it
        self._holder: int | None = None  # the thread the write lock was taken for
        self._busy = False  # the thread is taking the lock (blocked in flock)
        self._failed: OSError | None = None  # the thread's flock failed: for the caller
        self._closed = False
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()  # a forked child has the descriptor, not the thread
        _OPEN.add(self)

    def acquire(self) -> float:
        """Take the write lock, blocking for it once a write waited :data:`PATIENCE`;
        :class:`WriteLockTimeout` past ``timeout``, :class:`WriteLockFailed` if
        ``flock`` fails otherwise.  Returns the seconds of ``timeout`` left for
        SQLite's own wait (``timeout`` itself when the first try got it): at least
        ``busy`` unless the gate was waited for past its patience, when the write's
        SQLite wait is cut to what is left (:func:`~lldsched.stores.sqlite.rows.within`)."""
        with self._state:
            if self._holder is not None:  # flock would pass: the lock is this descriptor's
                raise self._taken_twice()
            if not self._busy and self._try():  # the usual case: no clock read, one syscall
                self._holder = _ident()
                return self.timeout
            started = time.monotonic()
            if not self._busy and self._poll(started + self.patience):
                self._holder = _ident()
                return self._left(started)
            left = self.timeout - (time.monotonic() - started)
            if left <= 0:  # timeout=0: one try, never a blocking wait
                raise self._timed_out(started)
            if self._thread is None:
                thread = threading.Thread(target=self._take, name=THREAD, daemon=True)
                if not start(thread):  # the interpreter's exit (Python 3.12.0-3.12.2)
                    return self._tried_here(started)
                self._thread = thread
            # The thread blocks in flock; this caller waits for it up to the timeout.
            self._wanted = _ident()
            self._busy = True
            self._state.notify_all()
            if self._state.wait_for(
                lambda: self._holder is not None or self._failed is not None, left
            ):
                if self._holder is not None:
                    return self._left(started)
                failed, self._failed = self._failed, None
                raise self._failure(failed)
            self._wanted = None
        raise self._timed_out(started)

    def _tried_here(self, started: float) -> float:
        """The interpreter's exit refused the gate's thread: try for the lock without
        blocking, every :data:`POLL`, until the timeout from ``started`` (the caller holds
        ``_state``, as the patience's tries do); what is left of it, or
        :class:`WriteLockTimeout`."""
        if not self._poll(started + self.timeout):
            raise self._timed_out(started)
        self._holder = _ident()
        return self._left(started)

    def _left(self, started: float) -> float:
        return max(0.0, self.timeout - (time.monotonic() - started))

    def _timed_out(self, started: float) -> WriteLockTimeout:
        return WriteLockTimeout(
            f"the write lock was not obtained within the store's timeout={self.timeout:g} s "
            f"(waited {time.monotonic() - started:.1f} s for {self.path + WRITE!r}, "
            "behind the other processes' writes: one of them held it that long, stalled "
            "or in a long transaction). A claim or a read of the change feed is tried "
            "again at the next wake; if writes are that long, open every store on the "
            "file with a larger timeout"
        )

    def _taken_twice(self) -> WriteGateTakenTwice:
        holder = self._holder
        who = next(
            (
                f"thread {t.name!r} (ident {holder})"
                for t in threading.enumerate()
                if t.ident == holder
            ),
            f"a thread that has ended (ident {holder})",
        )
        return WriteGateTakenTwice(
            f"the write lock {self.path + WRITE!r} is taken twice: {who} holds it already (the "
            "gate is not re-entrant: a second take would let it go at its own release, under "
            "the first)"
        )

    def _failure(self, error: OSError | None) -> WriteLockFailed:
        return WriteLockFailed(f"cannot take the write lock {self.path + WRITE!r}: {error!r}")

    def _poll(self, until: float) -> bool:
        """Take the write lock without blocking (a first try failed), trying again every
        :data:`POLL` seconds until ``until``; False once the patience ran out.  The last
        try is a poll before ``until`` (a late wake aside), so that a write that got the
        lock this way finds SQLite's wait as it was (``busy``)."""
        while time.monotonic() + POLL <= until:
            time.sleep(POLL)
            if self._try():
                return True
        return False

    def _try(self) -> bool:
        try:
            self._flock(self._write, self._now)
        except BlockingIOError:
            return False
        except OSError as exc:
            raise self._failure(exc) from exc
        return True

    def release(self) -> None:
        """Let the write lock go (after the COMMIT or the ROLLBACK)."""
        with self._state:
            self._holder = None
            self._flock(self._write, self._un)

    def let_go_if_held(self) -> None:
        """Let the write lock go if it is held: its store calls this between calls, when no
        write of it may hold it (one an exception stopped between taking it and the
        ``try`` that lets it go left it held)."""
        if self._holder is None:  # the usual case, read without the lock: only the
            return  # store's calls take it, and none is under way
        with self._state:
            if self._holder is not None:
                self._holder = None
                self._flock(self._write, self._un)

    def _take(self) -> None:
        """The thread: whenever a caller waits, take the write lock, blocking."""
        state = self._state
        while True:
            with state:
                state.wait_for(lambda: self._busy or self._closed)
                if self._closed and not self._busy:
                    return
            # Only this thread touches the descriptor while busy (close waits for it).
            try:
                self._flock(self._write, self._ex)
            except OSError as exc:  # not the lock taken: the caller is told, no one waits
                with state:
                    self._busy = False
                    self._thread = None  # the next blocking wait starts a new thread
                    if self._wanted is not None:
                        self._wanted = None
                        self._failed = exc
                        state.notify_all()
                    if self._closed:
                        self._close()
                return
            with state:
                self._busy = False
                if self._wanted is not None and not self._closed:
                    self._holder, self._wanted = self._wanted, None
                    state.notify_all()
                else:  # its caller gave up: the next write of this store goes
                    self._flock(self._write, self._un)
                if self._closed:
                    self._close()
                    return

    def close(self) -> None:
        """Close the sidecar (idempotent); a thread still waiting for the lock closes it
        once it got the lock and let it go.  In a child forked since, only the child's
        copy of the descriptor is closed: the lock is the parent's (a lock let go here
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
            if self._holder is not None:
                self._holder = None
                self._flock(self._write, self._un)
            if not self._busy:
                self._close()
            self._state.notify_all()

    def _close(self) -> None:
        _OPEN.discard(self)
        os.close(self._write)

    def __del__(self, _collected: Callable[..., None] = collected) -> None:
        """Collected open: a ``ResourceWarning`` naming it, then its descriptor closed,
        as :class:`~lldsched.stores.sqlite.claim.FileClaim`'s (its store closes it first, and
        says so itself: :mod:`~lldsched.stores.unclosed`).  No thread of its is alive
        then: its thread holds the gate until the gate is closed."""
        if not getattr(self, "_closed", True):  # closed if the constructor raised
            _collected(self, self._let_go)

    def _let_go(self) -> None:
        """Close the descriptor, at collection (no thread of the gate's is alive)."""
        self._closed = True
        os.close(self._write)

    def __repr__(self) -> str:
        return f"WriteGate({self.path + WRITE!r}, {'closed' if self._closed else 'open'})"


_OPEN: weakref.WeakSet[WriteGate] = weakref.WeakSet()
"""The gates this process has open: a forked child lets go of its copies."""


def _let_go_in_child() -> None:
    """In a child just forked: close its copy of every gate's descriptor, as
    :func:`lldsched.stores.sqlite.claim._let_go_in_child` does the claims'.  A gate held at the
    fork (a write under way on another thread) stays the parent's, let go by its
    ``LOCK_UN``; before, a child that outlived a parent killed mid-write held it, and
    every other process's write failed on the gate (``WriteLockTimeout``) until that
    child exited.  Its ``close()`` in the child then has nothing left to close."""
    for gate in list(_OPEN):
        if not gate._closed:
            gate._closed = True
            with contextlib.suppress(OSError):
                os.close(gate._write)
    _OPEN.clear()


if hasattr(os, "register_at_fork"):  # POSIX (the only platform with a gate)
    os.register_at_fork(after_in_child=_let_go_in_child)


def _open(path: str, mode: int) -> int:
    """The gate's file, with ``mode`` (the store's: a file any user may read could be
    locked by any user, stopping every write:
    :func:`~lldsched.stores.sqlite.claim.sidecar_mode`)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW, mode)
    match_mode(fd, mode)
    return fd
