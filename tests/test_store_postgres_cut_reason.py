"""When the store's own deadline cut a connection, the store says so, not psycopg.

psycopg words a socket the client shut down as the server's doing ("server closed the
connection unexpectedly").  The change-feed listener logged those words, and a store
call that failed on a connection the deadline had cut after the answer of the call
before it arrived (the thread paused past the deadline between reading the answer
and disarming it: a SIGSTOP, a suspended VM) raised them too.  Each case here is
provoked without a fixed sleep: a black hole (a TCP proxy that answers nothing), or
a ``disarm`` held until the deadline has fired (``expired``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import psycopg
import pytest

from lldsched import StoreError
from lldsched.stores.postgres import PostgresTaskStore
from lldsched.stores.postgres_deadline import Deadline
from lldsched.stores.postgres_listen import Listener
from tests.pg_server import PostgresServer
from tests.tcp_proxy import TcpProxy
from tests.waits import wait_until

CUT = "no answer within 1 s"  # the deadline's reason, for a timeout of 1 s


def disarmed_late(deadline: Deadline) -> None:
    """The next call armed on ``deadline`` is answered, then its thread pauses until
    the deadline has fired (it cuts the connection), then disarms: once."""
    disarm = deadline.disarm
    before = deadline.expired

    def late() -> None:
        deadline.disarm = disarm  # type: ignore[method-assign]
        wait_until(lambda: deadline.expired > before, timeout=10, what="the deadline to fire")
        disarm()

    deadline.disarm = late  # type: ignore[method-assign]


class Warnings(logging.Handler):
    """The listener's warnings (and its debug lines, once ``debug()``), and an event set
    at the first warning and at the first debug line."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []
        self.debugs: list[str] = []
        self.said = threading.Event()
        self.said_debug = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.WARNING:
            self.messages.append(record.getMessage())
            self.said.set()
        elif record.levelno == logging.DEBUG and "still cannot" in record.getMessage():
            self.debugs.append(record.getMessage())
            self.said_debug.set()


@pytest.fixture
def warnings() -> Iterator[Warnings]:
    handler = Warnings()
    logger = logging.getLogger("lldsched")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)  # setLevel: it clears the logger's enabled-for cache
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_a_call_after_one_whose_deadline_passed_once_answered_names_the_deadline(
    postgres_dsn: str,
) -> None:
    with PostgresTaskStore(postgres_dsn, timeout=1) as store:
        disarmed_late(store._deadline)
        assert store.get("anything") is None  # answered before the deadline cut it
        with pytest.raises(StoreError) as caught:
            store.get("anything")  # on the socket the deadline shut down
        assert CUT in str(caught.value)
        assert "server closed" not in str(caught.value)
        assert store.get("anything") is None  # a new connection: it works again


def test_a_failure_on_the_connection_after_a_cut_one_is_not_blamed_on_the_deadline(
    postgres_dsn: str,
) -> None:
    """The cut is the old connection's: a failure on the new one says its own words."""
    with PostgresTaskStore(postgres_dsn, timeout=1) as store:
        disarmed_late(store._deadline)
        assert store.get("anything") is None
        with pytest.raises(StoreError, match=CUT):
            store.get("anything")
        with psycopg.connect(postgres_dsn, autocommit=True) as other:
            other.execute("ALTER TABLE tasks RENAME TO tasks_away")
        with pytest.raises(StoreError) as caught:
            store.get("anything")  # reconnects, and reads a table that is not there
        assert 'relation "tasks" does not exist' in str(caught.value)
        assert CUT not in str(caught.value)


def test_the_listener_names_its_deadline_when_it_cut_a_ping_into_a_black_hole(
    postgres_server: PostgresServer, postgres_dsn: str, warnings: Warnings
) -> None:
    with TcpProxy("127.0.0.1", postgres_server.port) as proxy:
        woken = threading.Event()
        dsn = proxy.dsn(postgres_dsn, port=postgres_server.port)
        listener = Listener(dsn, channel="c", node="n", wake=woken.set, timeout=1)
        try:
            assert woken.wait(10)  # listening
            proxy.black_hole()  # its next ping is never answered
            assert warnings.said.wait(10)
        finally:
            listener.stop()
            proxy.heal()
    (said,) = warnings.messages
    assert "listener lost its connection" in said and CUT in said, said


def test_the_listener_names_its_deadline_when_it_cut_after_the_answer(
    postgres_dsn: str, warnings: Warnings
) -> None:
    """Its thread paused past the deadline after a ping's answer (a SIGSTOP): the wait
    for notifications that follows fails on the socket the deadline shut down."""
    woken = threading.Event()
    listener = Listener(postgres_dsn, channel="c", node="n", wake=woken.set, timeout=1)
    try:
        disarmed_late(listener._deadline)  # its LISTEN's, or its next ping's
        assert warnings.said.wait(10)
    finally:
        listener.stop()
    said = warnings.messages[0]
    assert "listener lost its connection" in said and CUT in said, said


def test_the_listener_does_not_blame_its_deadline_for_a_reconnection_that_fails(
    postgres_dsn: str, warnings: Warnings
) -> None:
    """The cut is the lost connection's: the attempts after it say their own words."""
    woken = threading.Event()
    listener = Listener(postgres_dsn, channel="c", node="n", wake=woken.set, timeout=1)
    try:
        assert woken.wait(10)  # listening: the dsn is read again only to reconnect
        listener._dsn = postgres_dsn.replace("/postgres?", "/no_such_database?", 1)
        disarmed_late(listener._deadline)  # its next ping's
        assert warnings.said_debug.wait(10)
    finally:
        listener.stop()
    assert CUT in warnings.messages[0]
    said = warnings.debugs[0]
    assert "no_such_database" in said and CUT not in said, said
