"""The PostgreSQL listener's ``stop()`` closes both ends of the socket pair that wakes
its thread, on every path (lldsched.stores.postgres.listen.Listener).

A ``stop()`` while the thread was still connecting (a server that accepts and answers
nothing, within ``connect_timeout``) left both sockets open, to the garbage collector
and its ``ResourceWarning``.  A socket's ``fileno()`` is -1 once closed: what these
tests read, no collection needed.
"""

from __future__ import annotations

import socket
import threading

import pytest

from lldsched.stores.postgres.listen import Listener
from tests.pg_server import PostgresServer
from tests.tcp_proxy import TcpProxy
from tests.waits import wait_until


def test_a_stop_while_the_listener_is_still_connecting_closes_both_ends_of_its_pair(
    postgres_server: PostgresServer, postgres_dsn: str
) -> None:
    with TcpProxy("127.0.0.1", postgres_server.port) as proxy:
        proxy.black_hole()  # the connection is accepted, and its startup never answered
        dsn = proxy.dsn(postgres_dsn, port=postgres_server.port)
        # connect_timeout 5 s: the attempt outlasts stop()'s 2 s wait for the thread
        listener = Listener(dsn, channel="c", node="n", wake=lambda: None, timeout=5)
        wait_until(lambda: proxy.accepted >= 1, timeout=10, what="the listener to connect")
        listener.stop()
        assert listener._thread.is_alive(), "the thread was to be still connecting"
        assert listener._stop_writer.fileno() == -1  # stop()'s end: closed at once
        proxy.reset()  # the attempt fails now: the thread ends
        listener._thread.join(10)
        assert not listener._thread.is_alive()
    assert listener._stop_reader.fileno() == -1  # the thread's end: closed as it ended
    listener.stop()  # a second stop(): nothing left to close, nothing raised


def test_a_stop_of_a_listening_listener_closes_both_ends_of_its_pair(postgres_dsn: str) -> None:
    woken = threading.Event()
    listener = Listener(postgres_dsn, channel="c", node="n", wake=woken.set, timeout=1)
    try:
        assert woken.wait(10)  # listening: asleep on its socket and the pair's
    finally:
        listener.stop()
    assert not listener._thread.is_alive()
    assert listener._stop_writer.fileno() == -1 and listener._stop_reader.fileno() == -1


def test_a_listener_whose_thread_cannot_start_closes_its_pair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``Thread.start`` refused (no thread to spare): the constructor raises, and the
    pair it made is closed, not left to the garbage collector."""
    pairs: list[tuple[socket.socket, socket.socket]] = []
    socketpair = socket.socketpair

    def recorded() -> tuple[socket.socket, socket.socket]:
        pair = socketpair()
        pairs.append(pair)
        return pair

    def refused(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(socket, "socketpair", recorded)
    monkeypatch.setattr(threading.Thread, "start", refused)
    with pytest.raises(RuntimeError, match="can't start new thread"):
        Listener("host=127.0.0.1 port=1", channel="c", node="n", wake=lambda: None)
    monkeypatch.undo()
    ((reader, writer),) = pairs
    assert reader.fileno() == -1 and writer.fileno() == -1
