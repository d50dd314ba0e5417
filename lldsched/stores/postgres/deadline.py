"""The client's own deadline on a PostgreSQL round trip: the one bound a silent network
cannot escape.

A statement sent into a network that accepts bytes and answers nothing (a load
balancer or proxy that lost its server, a stateful firewall that forgot the
connection) waits for an answer forever: the client's data is acknowledged by the
middlebox, so ``tcp_user_timeout`` never fires, and so are its keepalive probes.
``statement_timeout`` is the server's, which never sees the statement.  psycopg 3
has no client-side bound on a statement, and its cancel goes out over the same
network (a new connection to the same address), so it would hang too.

:class:`Deadline` is that bound: a daemon thread that, when a call armed on a
connection outlives its deadline, shuts the connection's socket down.  The call
blocked in psycopg's wait wakes at once and fails as a lost connection
(``psycopg.OperationalError``); the store reconnects at its next call.  psycopg words
that as the server's doing ("server closed the connection unexpectedly"), so every
message about a failure on a connection the deadline cut says
:meth:`Deadline.reason` instead: the call it ended, and any call after it on that
connection (a call answered whose thread was paused past its deadline before
disarming it, a SIGSTOP or a suspended VM, leaves the next one to fail so).  Arming and
disarming cost a lock and two assignments; the thread sleeps until the earliest
deadline armed.

**What it cannot tell apart.**  A server that answers nothing in time looks the same to
the client whether the network swallowed the statement or the statement waits on a lock
another session holds on the store's tables (an operator's ``LOCK TABLE``): the server's
own ``statement_timeout`` is ``seconds`` too, begun after the deadline's, so the
deadline usually ends such a wait first.  Telling them apart would take a second
session, so the store's reason names both (``pg_locks`` names a lock); the listener's,
whose statements take no lock on the tables, names only the network.

**One timeout a call.**  A store call (:meth:`Deadline.call`) has ``seconds`` from its
start for everything it sends: the settles held back that it writes first, any
connection it opens, its own statements.  Each round trip is armed to the call's end, not
to ``seconds`` from its own start, and once the call has no time left (it passed, or a
connection could not be opened in it: :meth:`Deadline.spend`) the store sends nothing
more in it (:meth:`Deadline.spent`).  Before, each round trip had ``seconds`` of its own:
during an outage a call first waited for the retry of the settles it held, then again
for its own connection, two timeouts (three for the first call into a black hole, the
settles' second try on a new connection between them).  Calls nest: a verb's, a
registration's, a rewrite of the rows an outage left stale
(``PostgresHolds.verb_call``) is one call around the calls it makes, each of which
keeps a ``seconds`` of its own while the server answers; the first that finds the server
out of reach (no connection to be had, or a round trip cut) spends the one around it,
and the calls after it send nothing: one timeout for them all.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator

from lldsched.threadstarts import start

__all__ = ["Deadline"]


class Deadline:
    """Bounds each call, from :meth:`watch` to :meth:`disarm`, to ``seconds`` (to the end of
    the store call under way: :meth:`call`): past it the socket it watches is shut down
    (the call fails as a lost connection, and :meth:`reason` says why, for every call on
    that connection until :meth:`replaced`).  ``expired`` counts the calls it ended.
    ``locks``: the calls may wait on a lock on the store's tables (the store's; not the
    listener's), which :meth:`reason` then names as the other likely cause."""

    def __init__(
        self, seconds: float, *, name: str = "lldsched-pg-deadline", locks: bool = True
    ) -> None:
        self.seconds = seconds
        self._locks = locks
        self.expired = 0
        # The connection in use was cut by the deadline (until replaced()): every call on
        # it fails from then on, the one it ended and any later one alike.
        self.ended = False
        # Guards _armed, _stopped and expired: calls arm and disarm, the thread reads and ends.
        self._condition = threading.Condition()
        self._armed: tuple[float, int] | None = None  # (monotonic deadline, socket fd)
        self._stopped = False
        self._name = name
        self._thread: threading.Thread | None = None
        # The store call under way (call()), touched only by the thread holding the
        # store's lock: when its time ends (None: no call), and why it has none left
        # before that (spend()).
        self._until: float | None = None
        self._spent: str | None = None

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        """A store call (the caller holds the store's lock): everything it sends shares
        ``seconds`` from now (:meth:`watch` arms to its end, :meth:`spent` says when it is
        over); disarmed at its end.  A call inside another (a verb's hold's) has
        ``seconds`` of its own, as before, unless the one around it found the server out
        of reach (:meth:`spend`); and a call inside that finds it out of reach spends the
        one around it too: a connection that cannot be had in it, or a round trip the
        deadline cut in it (the server silent for a whole ``seconds``, which began after
        the outer call's: its time has passed as well)."""
        until = self._until
        self._until = time.monotonic() + self.seconds
        expired = self.expired
        try:
            yield
        finally:
            self.disarm()
            self._until = until
            if until is None:  # the outermost call: nothing carries over to the next
                self._spent = None
            elif self.expired != expired and self._spent is None:  # read after disarm's lock
                self._spent = self.reason(f"its {self.seconds:g} s timeout passed")

    def spend(self, why: str) -> None:
        """No connection could be had in the call under way (``why``: the error): it has
        no time left, whatever the clock says (a refused connection is said at once, and
        psycopg counts its connect timeout in whole seconds, at least 2, not the call's)."""
        if self._until is not None:
            self._spent = why

    def spent(self) -> str | None:
        """Why the call under way has no time left (None: it has, or no call is under way):
        a connection that could not be had in it (:meth:`spend`), or its ``seconds`` passed
        (:meth:`reason`'s words if they cut its connection)."""
        if self._until is None:
            return None
        if self._spent is not None:
            return self._spent
        if time.monotonic() >= self._until:
            return self.reason(f"its {self.seconds:g} s timeout passed")
        return None

    def watch(self, fileno: int, *, fresh: bool = False) -> None:
        """A round trip starts (or goes on, on a new connection) on the socket ``fileno``:
        it has until the end of the call under way (:meth:`call`; ``seconds`` from now
        outside one, or with ``fresh``), until :meth:`disarm`."""
        until = self._until
        if until is None or fresh:
            until = time.monotonic() + self.seconds
        with self._condition:
            self._armed = (until, fileno)
            if self._thread is None and not self._stopped:
                thread = threading.Thread(target=self._watch, name=self._name, daemon=True)
                if start(thread):
                    self._thread = thread
                # else the interpreter's exit refused it (Python 3.12.0-3.12.2): this round
                # trip goes unwatched, the process ending (lldsched/threadstarts.py); a
                # listener reconnecting then had its thread end in a traceback
            else:
                self._condition.notify()

    def disarm(self) -> None:
        """The call is over (answered or failed): nothing to end."""
        with self._condition:
            self._armed = None

    def replaced(self) -> None:
        """The connection the calls run on is being replaced (a new one is opened): a
        cut of the old one explains nothing that fails from now on, and nothing armed
        on it is to be cut (its socket's number may be the new one's)."""
        with self._condition:
            self._armed = None
            self.ended = False

    def reason(self, error: str) -> str:
        """Why a call on the connection in use failed: ``error`` (psycopg's words), or,
        if the deadline cut that connection (in this call or before it), that no answer
        came in time (psycopg would say the server closed the connection, which it did
        not), and its likely causes: a silent network or server, or (with ``locks``) a
        statement waiting on a lock another session holds."""
        if self.ended:
            lock = (
                ", or a statement waits on a lock another session holds on the store's "
                "tables, as LOCK TABLE takes: pg_locks names it"
                if self._locks
                else ""
            )
            return (
                f"no answer within {self.seconds:g} s (the network or the server is "
                f"silent{lock}); the connection was closed"
            )
        return error

    def stop(self) -> None:
        """End the thread (it is a daemon: nothing waits for it)."""
        with self._condition:
            self._stopped = True
            self._condition.notify()

    def _watch(self) -> None:
        with self._condition:
            while not self._stopped:
                armed = self._armed
                if armed is None:
                    self._condition.wait()
                    continue
                left = armed[0] - time.monotonic()
                if left > 0:
                    self._condition.wait(left)
                    continue
                self._armed = None  # ended once
                self.expired += 1
                self.ended = True
                _shut_down(armed[1])


def _shut_down(fileno: int) -> None:
    """Shut the socket ``fileno`` down both ways (through a duplicate of it: the
    connection still owns and closes the original), waking whoever waits on it."""
    with contextlib.suppress(OSError):
        duplicate = socket.socket(fileno=os.dup(fileno))
        with contextlib.suppress(OSError):
            duplicate.shutdown(socket.SHUT_RDWR)
        duplicate.close()
