"""The connection helpers of the PostgreSQL store: psycopg's import, dsn redaction,
connecting with a clear :class:`~lldsched.errors.StoreError`, and the LISTEN thread.

psycopg 3.3 or newer is an optional extra (``pip install 'lldsched[postgres]'``):
importing this module without it, or with an older psycopg, raises an ``ImportError``
that names the extra, and
``import lldsched`` never imports it.

**The listener.**  :class:`Listener` owns one connection of its own that does
nothing but ``LISTEN``; its thread calls ``wake()`` for every notification sent
by another node (the payload is the sender's node id), and once after every
reconnection, since notifications sent while it was away are lost.  Between them it
sleeps on its socket and on :meth:`Listener.stop`'s, until the next ping: it never
polls, and a store's ``close()`` does not wait for it.  It is a
*hint*: the runtime's bounded wait (``poll``) is the safety net when the
listener is down.  A server away is said once an outage, as the scheduler says a
failing store (``lldsched/core/outage.py``): the first lost connection at
warning level, each failed attempt after it at debug level, and one warning when
it listens again, counting the attempts that failed.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import selectors
import socket
import threading
import time
import weakref
from collections.abc import Callable

from lldsched.errors import StoreError
from lldsched.logs import STORE
from lldsched.redaction import PASSWORD_IN_URI, PASSWORD_KEY, hide_passwords
from lldsched.stores.postgres_deadline import Deadline
from lldsched.stores.postgres_sql import listen

try:
    import psycopg
    from psycopg import conninfo, pq
except ImportError as exc:  # pragma: no cover - exercised by a test that hides psycopg
    raise ImportError(
        "PostgresTaskStore needs psycopg 3, which is not installed: "
        "install the extra: pip install 'lldsched[postgres]'"
    ) from exc

# The listener's notifies(timeout=...) is new in psycopg 3.2, and Transaction.status,
# which a verb's hold reads to tell a commit from a connection lost inside, in 3.3.
_OLDEST = (3, 3)
if tuple(int(part) for part in re.findall(r"\d+", psycopg.__version__)[:2]) < _OLDEST:
    raise ImportError(
        f"PostgresTaskStore needs psycopg 3.3 or newer, found {psycopg.__version__} (its "
        "LISTEN thread calls notifies(timeout=...), and a verb's hold reads its "
        "transaction's status): install the extra: pip install 'lldsched[postgres]'"
    )

# psycopg is re-exported: the store imports it from here, after the check above.
__all__ = [
    "Listener",
    "connect",
    "psycopg",
    "redact",
    "redact_by_pattern",
    "scrubbed",
    "session_bounds",
    "shown_keys",
    "weakly",
    "with_timeouts",
]

log = logging.getLogger(STORE)


def weakly(method: Callable[[], None]) -> Callable[[], None]:
    """``method``, called only while its object lives, if it is a bound method (a no-op
    once that object is collected); any other callable as it is.  What a store's own
    threads (the listener's, the settle writer's) are given to call: a thread holding its
    store, or its scheduler, kept a store dropped without ``close()`` from ever being
    collected, its connections and threads open for the life of the process
    (docs/DECISIONS.md, "A store dropped without close() lets its file go")."""
    if not hasattr(method, "__self__"):
        return method
    ref = weakref.WeakMethod(method)  # a bound method, checked

    def call() -> None:
        bound = ref()
        if bound is not None:
            bound()

    return call


_RECONNECT = 1.0  # seconds between attempts while the server is away


def redact(dsn: str) -> str:
    """``dsn`` with every value a message may not show replaced by ``***`` (key/value or
    URI form, parsed or not): see :func:`_secrets`.  Any ``str`` will do: one libpq
    cannot be given (a NUL, a lone surrogate) is redacted by pattern, as one it cannot
    parse, the NUL and the surrogate ending a key or a value as a blank does.

    Every message that names the dsn goes through here: a password never reaches
    a log or an exception.
    """
    parts = _parsed(dsn)
    if parts is None:
        return redact_by_pattern(dsn)
    shown = shown_keys()
    return conninfo.make_conninfo(
        "", **{key: value if key in shown else "***" for key, value in parts.items()}
    )


def redact_by_pattern(dsn: str) -> str:
    """:func:`redact` of a dsn libpq cannot parse, or should not be asked to: one the
    store refuses because libpq would misread it (a URI whose password holds an ``@``:
    libpq takes what follows it for the host, and would show it)."""
    return _tokens(dsn).sub(_hide_token, hide_passwords(dsn))


def _parsed(dsn: str) -> dict[str, str | int | None] | None:
    """libpq's keys and values of ``dsn``; None for one it cannot parse, or cannot be
    given at all: a NUL would end its C string there (libpq would read what comes
    before it alone), and a lone surrogate cannot be encoded (``UnicodeEncodeError``)."""
    if _UNGIVEN.search(dsn):
        return None
    try:
        return conninfo.conninfo_to_dict(dsn)
    except psycopg.Error:
        return None


@functools.cache
def shown_keys() -> frozenset[str]:
    """The libpq keys whose values a message may show: those libpq itself displays
    (not ``password``, ``sslpassword``, ``oauth_client_secret``, marked ``*``, nor the
    debug keys, such as ``scram_client_key``, marked ``D``)."""
    return frozenset(
        option.keyword.decode() for option in pq.Conninfo.get_defaults() if not option.dispchar
    )


@functools.cache
def libpq_keys() -> frozenset[str]:
    """Every key libpq knows: a word of a dsn libpq cannot parse that is one of them is
    a key that lost its ``=``, which a message may name (not its value)."""
    return frozenset(option.keyword.decode() for option in pq.Conninfo.get_defaults())


_UNGIVEN = re.compile(r"[\x00\ud800-\udfff]")
"""What libpq cannot be given: a NUL, a lone surrogate (an undecodable byte of a file
name or an environment variable, as Python decodes one)."""

_URI = re.compile(r"\s*postgres(?:ql)?://", re.IGNORECASE)
"""The start of a libpq URI (the rest is key/value form)."""

# A key/value pair of a dsn libpq cannot parse: a key/value dsn's, or a URI query's.
# A blank, a NUL or a lone surrogate ends a key or a value (a URI query's '&' and '#'
# too), and may begin the next.
_PAIR = re.compile(
    r"(?:^|(?<=[\s?&\x00\ud800-\udfff]))([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"
    r"('(?:[^'\\]|\\.)*'|[^\s&#\x00\ud800-\udfff]+)"
)

# A word of a key/value dsn libpq cannot parse that is no key=value pair (a key that
# lost its '=', or a value whose key did: ``password secret``): _PAIR or this, the first
# that matches, from left to right (a quoted value's words are its pair's).
_PAIR_OR_WORD = re.compile(
    rf"{_PAIR.pattern}|(?:^|(?<=[\s\x00\ud800-\udfff]))([^\s=\x00\ud800-\udfff]+)"
    r"(?=[\s\x00\ud800-\udfff]|$)"
)


def _tokens(dsn: str) -> re.Pattern[str]:
    """What :func:`redact` and :func:`_secrets` find in ``dsn``, which libpq cannot
    parse: a URI's query pairs, or a key/value dsn's pairs and words."""
    return _PAIR if _URI.match(dsn) else _PAIR_OR_WORD


def _hide_token(token: re.Match[str]) -> str:
    """A pair :data:`_PAIR` found, its value hidden unless libpq displays its key's; a
    word :data:`_PAIR_OR_WORD` found, shown if it is a key libpq knows (``password``
    that lost its ``=``) or ``***``, hidden otherwise (the value after such a key, or a
    key and its value run together: ``passwordsecret``)."""
    if token.group(1) is not None:
        return token.group(0) if token.group(1) in shown_keys() else f"{token.group(1)}=***"
    return token.group(0) if token.group(3) in libpq_keys() | {"***"} else "***"


def _secrets(dsn: str) -> list[str]:
    """The values ``dsn`` holds that no message shows: the password, and the value of
    every key but those libpq displays (:func:`shown_keys`), a key libpq does not know
    included (a misspelled ``pasword=``, whose value is the password), and, in a
    key/value dsn libpq cannot parse, every word that is not a key libpq knows.  For a
    dsn libpq cannot parse, found by pattern; longest first, so none is left half
    hidden."""
    parts = _parsed(dsn)
    if parts is None:
        values = [found.group(2).strip("'") for found in PASSWORD_IN_URI.finditer(dsn)]
        values += [found.group(2).strip("'") for found in PASSWORD_KEY.finditer(dsn)]
        for token in _tokens(dsn).finditer(dsn):
            key, value = token.group(1, 2)
            if key is not None:  # a pair (_PAIR's groups); else a word (the third)
                if key not in shown_keys():
                    values.append(value.strip("'"))
            elif token.group(3) not in libpq_keys():
                values.append(token.group(3))
    else:
        shown = shown_keys()
        values = [str(value) for key, value in parts.items() if key not in shown]
    return sorted({value for value in values if value}, key=len, reverse=True)


def connect(dsn: str, *, timeout: float) -> psycopg.Connection[tuple[object, ...]]:
    """An autocommit connection to ``dsn``, or :class:`StoreError` naming the redacted
    dsn and the server's reason (with any password in it redacted as well)."""
    try:
        return psycopg.connect(with_timeouts(dsn, timeout=timeout), autocommit=True)
    except psycopg.Error as exc:
        raise StoreError(
            f"cannot connect to the PostgreSQL store {redact(dsn)!r}: {scrubbed(exc, dsn)}"
        ) from None


def scrubbed(exc: BaseException, dsn: str) -> str:
    """``str(exc)`` with the password ``dsn`` carries replaced by ``***``: libpq quotes
    the part of a dsn it cannot parse, which may be the password.  Every message and
    log line that shows a psycopg error goes through here.  A secret shorter than
    :data:`_SHORT` characters is replaced where it stands alone, not inside a word:
    ``pasword=a`` made libpq's ``invalid connection option`` ``inv***lid``."""
    reason = str(exc).strip()
    for secret in _secrets(dsn):
        if len(secret) >= _SHORT:
            reason = reason.replace(secret, "***")
        else:
            reason = re.sub(rf"(?<!\w){re.escape(secret)}(?!\w)", "***", reason)
    return reason


_SHORT = 4
"""The length from which a secret is replaced wherever it is in libpq's words (inside a
word too: libpq may quote a password run into other text); a shorter one is a part of
too many words."""


def with_timeouts(dsn: str, *, timeout: float) -> str:
    """``dsn`` with bounds on how long a dead server or a cut network can hold a call,
    unless the dsn sets them itself: ``connect_timeout``, TCP keepalives, and
    ``tcp_user_timeout`` (sent data unacknowledged that long fails the connection).
    Without them a statement sent into a cut network waits for the kernel's TCP
    retransmission limit (about 15 minutes), holding the scheduler's lock.

    The network bounds of the store's connections, all of them here (docs/CLUSTER.md,
    "Network partitions"); the others are the session's (:func:`session_bounds`) and
    the client's own deadline on each call
    (:class:`~lldsched.stores.postgres_deadline.Deadline`, the one a network that
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
    :mod:`~lldsched.stores.postgres_sql` sets them): a session idle inside a transaction
    for a whole ``lease`` is ended (a stalled or cut process would otherwise keep its
    rows locked, and no one could take its runs over), and a statement running longer
    than ``timeout`` is cancelled (the client gave up on it then: see
    :class:`~lldsched.stores.postgres_deadline.Deadline`; without it a statement waiting
    for a lock would go on holding its own after its client left)."""
    return {
        "idle": str(max(1, round(lease * 1000))),
        "statement": str(max(1, round(timeout * 1000))),
    }


class Listener:
    """A daemon thread that LISTENs on ``channel`` and calls ``wake()`` when another
    node notifies (any payload but ``node``).  :meth:`stop` ends it.

    A connection that only listens sends nothing, so a network that swallows what it
    is sent (see :mod:`~lldsched.stores.postgres_deadline`) would leave it listening
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
        self._deadline = Deadline(timeout, name="lldsched-pg-listen-deadline")
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
                            "PostgreSQL listener listens again, after %d failed attempts",
                            failed,
                        )
                        failed = 0
                    self._wake()  # what was sent while we were not listening is lost
                    self._listen(connection)
            except psycopg.Error as exc:
                failed += 1
                why = self._deadline.reason(scrubbed(exc, self._dsn))  # psycopg's, or the cut
                if failed == 1:
                    log.warning(
                        "PostgreSQL listener lost its connection (%s); retrying every %g s, "
                        "quietly until it is back",
                        why,
                        _RECONNECT,
                    )
                else:
                    log.debug("PostgreSQL listener still cannot connect (%s)", why)
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
