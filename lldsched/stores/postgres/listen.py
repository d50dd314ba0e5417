"""Connecting to the PostgreSQL store, and its LISTEN thread.

:func:`connect` makes a session with a clear :class:`~lldsched.errors.StoreError` (the
dsn's passwords hidden: :mod:`~lldsched.stores.postgres.redact`), under the network
bounds of every connection of the store (:func:`with_timeouts`) and, set on each session,
the server's own (:func:`session_bounds`); :func:`weakly` is what the store's own
threads are given to call.  psycopg's import is
:mod:`~lldsched.stores.postgres.driver`'s.

**The listener.**  :class:`Listener` owns one connection of its own that does
nothing but ``LISTEN``; its thread calls ``wake()`` for every notification sent
by another node (the payload is the sender's node id), and once after every
reconnection, since notifications sent while it was away are lost.  Between them it
sleeps on its socket and on :meth:`Listener.stop`'s, until the next ping: it never
polls, and a store's ``close()`` does not wait for it.  It is a
*hint*: the runtime's bounded wait (``poll``) is the safety net when the
listener is down.  A server away is said once an outage, as the scheduler says a
failing store (``lldsched/core/store/outage.py``): the first lost connection at
warning level, each failed attempt after it at debug level, and one warning when
it listens again, counting the attempts that failed.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import threading
import time
import weakref
from collections.abc import Callable

from lldsched.errors import StoreError
from lldsched.logs import STORE
from lldsched.stores.postgres.deadline import Deadline
from lldsched.stores.postgres.driver import conninfo, psycopg
from lldsched.stores.postgres.redact import redact, scrubbed
from lldsched.stores.postgres.sql import listen

__all__ = ["Listener", "connect", "session_bounds", "weakly", "with_timeouts"]

log = logging.getLogger(STORE)


def weakly(method: Callable[[], None]) -> Callable[[], None]:
    """``method``, called only while its object lives, if it is a bound method (a no-op
    once that object is collected); any other callable as it is.  What a store's own
    threads (the listener's, the settle writer's) are given to call: a thread holding its
    store, or its scheduler, kept a store dropped without ``close()`` from ever being
    collected, its connections and threads open for the life of the process
    (docs/decisions/teaching-kit.md, "A store dropped without close() lets its file go")."""
    if not hasattr(method, "__self__"):
        return method
    ref = weakref.WeakMethod(method)  # a bound method, checked

    def call() -> None:
        bound = ref()
        if bound is not None:
            bound()

    return call


_RECONNECT = 1.0  # seconds between attempts while the server is away


def connect(dsn: str, *, timeout: float) -> psycopg.Connection[tuple[object, ...]]:
    """An autocommit connection to ``dsn``, or :class:`StoreError` naming the redacted
    dsn and the server's reason (with any password in it redacted as well)."""
    try:
        return psycopg.connect(with_timeouts(dsn, timeout=timeout), autocommit=True)
    except psycopg.Error as exc:
        raise StoreError(
            f"cannot connect to the PostgreSQL store {redact(dsn)!r}: {scrubbed(exc, dsn)}"
        ) from None


def with_timeouts(dsn: str, *, timeout: float) -> str:
    """``dsn`` with bounds on how long a dead server or a cut network can hold a call,
    unless the dsn sets them itself: ``connect_timeout``, TCP keepalives, and
    ``tcp_user_timeout`` (sent data unacknowledged that long fails the connection).
    Without them a statement sent into a cut network waits for the kernel's TCP
    retransmission limit (about 15 minutes), holding the scheduler's lock.

    The network bounds of the store's connections, all of them here (docs/CLUSTER.md,
    "Network partitions"); the others are the session's (:func:`session_bounds`) and
    the client's own deadline on each call
    (:class:`~lldsched.stores.postgres.deadline.Deadline`, the one a network that
    acknowledges and answers nothing cannot escape)."""
    try:
        given = conninfo.conninfo_to_dict(dsn)
    except psycopg.Error:
        return dsn  # psycopg.connect reports it
    seconds = max(1, round(timeout))
    defaults = {
        "connect_timeout": seconds,  # psycopg counts at least 2 s
        "keepalives": 1,
        "keepalives_idle": seconds,
        "keepalives_interval": max(1, seconds // 3),
        "keepalives_count": 3,
        "tcp_user_timeout": seconds * 1000,  # milliseconds
    }
    extra = {name: value for name, value in defaults.items() if name not in given}
    return conninfo.make_conninfo(dsn, **extra)


def session_bounds(*, lease: float, timeout: float) -> dict[str, str]:
    """The server's bounds on each session of the store, in milliseconds (``SESSION`` in
    :mod:`~lldsched.stores.postgres.sql` sets them): a session idle inside a transaction
    for a whole ``lease`` is ended (a stalled or cut process would otherwise keep its
    rows locked, and no one could take its runs over), and a statement running longer
    than ``timeout`` is cancelled (the client gave up on it then: see
    :class:`~lldsched.stores.postgres.deadline.Deadline`; without it a statement waiting
    for a lock would go on holding its own after its client left)."""
    return {
        "idle": str(max(1, round(lease * 1000))),
        "statement": str(max(1, round(timeout * 1000))),
    }


class Listener:
    """A daemon thread that LISTENs on ``channel`` and calls ``wake()`` when another
    node notifies (any payload but ``node``).  :meth:`stop` ends it.

    A connection that only listens sends nothing, so a network that swallows what it
    is sent (see :mod:`~lldsched.stores.postgres.deadline`) would leave it listening
    to silence for good: every ``timeout`` seconds it asks the server for an empty
    answer, bounded by ``timeout`` too, so such a network is noticed within
    ``2 * timeout`` and the listener reconnects (the runtime polls meanwhile)."""

    def __init__(
        self,
        dsn: str,
        *,
        channel: str,
        node: str,
        wake: Callable[[], None],
        timeout: float = 10.0,
    ) -> None:
        self._dsn = dsn
        self._channel = channel
        self._node = node
        self._wake = weakly(wake)  # its scheduler is not kept alive by this thread
        self._timeout = timeout
        # Ends a ping (or the LISTEN) the network leaves unanswered for `timeout`.
        self._deadline = Deadline(timeout, name="lldsched-pg-listen-deadline", locks=False)
        self._stopping = threading.Event()  # set once by stop()
        self._stop_lock = threading.Lock()  # one stop() writes and closes the writer
        # stop() writes a byte here: it ends the thread's wait for the connection's socket.
        # Each end has one owner that closes it on every path: the writer stop()'s, the
        # reader the thread's (as it ends), or this constructor's if the thread never starts.
        self._stop_reader, self._stop_writer = socket.socketpair()
        self._thread = threading.Thread(target=self._loop, name="lldsched-pg-listen", daemon=True)
        try:
            self._stop_writer.setblocking(False)
            self._thread.start()
        except BaseException:
            self._stop_reader.close()
            self._stop_writer.close()
            raise

    def _loop(self) -> None:
        try:
            self._connections()
        finally:  # whichever way the thread ends: its end of the pair, and the deadline
            self._stop_reader.close()
            self._deadline.stop()

    def _connections(self) -> None:
        """Connect, listen, reconnect, until stopped."""
        failed = 0  # attempts failed since the connection was lost (0: listening, or new)
        while not self._stopping.is_set():
            try:
                self._deadline.replaced()  # the lost connection's cut explains no new failure
                dsn = with_timeouts(self._dsn, timeout=self._timeout)
                with psycopg.connect(dsn, autocommit=True) as connection:
                    self._bounded(connection, listen(self._channel))
                    if failed:
                        log.warning(
                            "PostgreSQL listener on %r listens again, after %d failed attempts",
                            redact(self._dsn),
                            failed,
                        )
                        failed = 0
                    self._wake()  # what was sent while we were not listening is lost
                    self._listen(connection)
            except psycopg.Error as exc:
                failed += 1
                why = self._deadline.reason(scrubbed(exc, self._dsn))  # psycopg's, or the cut
                if failed == 1:
                    log.warning(  # which store: a process may have several
                        "PostgreSQL listener on %r lost its connection (%s); retrying every "
                        "%g s, quietly until it is back",
                        redact(self._dsn),
                        why,
                        _RECONNECT,
                    )
                else:
                    log.debug(
                        "PostgreSQL listener on %r still cannot connect (%s)",
                        redact(self._dsn),
                        why,
                    )
                self._stopping.wait(_RECONNECT)

    def _listen(self, connection: psycopg.Connection[tuple[object, ...]]) -> None:
        """Wake for each notification from another node until stopped; ping every
        ``timeout`` (a psycopg error when the connection is lost or silent).  Sleeps
        until the socket has something to read, :meth:`stop` is called, or the ping
        is due; each turn first takes what arrived (``notifies(timeout=0)``: also what
        came in with a ping's answer, which psycopg keeps aside)."""
        ping = time.monotonic() + self._timeout
        with selectors.DefaultSelector() as selector:
            selector.register(connection.fileno(), selectors.EVENT_READ)
            selector.register(self._stop_reader, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for notice in connection.notifies(timeout=0):
                    if notice.payload != self._node:
                        self._wake()
                if time.monotonic() >= ping:
                    self._bounded(connection, "SELECT 1")
                    ping = time.monotonic() + self._timeout
                    continue  # what came with the answer first
                selector.select(max(0.0, ping - time.monotonic()))

    def _bounded(self, connection: psycopg.Connection[tuple[object, ...]], statement: str) -> None:
        """Run ``statement`` within the deadline."""
        self._deadline.watch(connection.fileno())
        try:
            connection.execute(statement)
        finally:
            self._deadline.disarm()

    def stop(self) -> None:
        """End the thread (its wait ends at once) and wait for it, at most 2 s: a thread
        still connecting ends when the attempt does (``connect_timeout``, or the
        server's answer).  Before, the thread looked for the stop every 0.2 s, and each
        ``close()`` of a subscribed store waited for that.

        Both ends of the pair that wakes the thread are closed on every path, none left
        to the garbage collector (a ``ResourceWarning``): stop()'s end here, once
        written to (the byte stays readable with the writer closed), the thread's as the
        thread ends.  A ``stop()`` while the thread was still connecting closed neither.
        A second ``stop()`` only waits again.  On the thread itself (its store collected
        there: ``PostgresTaskStore.__del__``) it waits for nothing: a thread cannot join
        itself, and the store's close stopped there."""
        with self._stop_lock:
            if not self._stopping.is_set():
                self._stopping.set()
                with contextlib.suppress(OSError):  # the thread ended already: reader closed
                    self._stop_writer.send(b"\0")
                self._stop_writer.close()
        if self._thread is not threading.current_thread():  # its store collected on it
            self._thread.join(timeout=2.0)
