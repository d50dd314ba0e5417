"""A TCP proxy for the tests: the network between a scheduler and its PostgreSQL server,
as a piece of the test that the test breaks and heals (no packet filter needed).

``TcpProxy(host, port)`` listens on a free port of 127.0.0.1 and forwards each
connection to ``(host, port)``, one thread per direction.  What the network does:

* :meth:`TcpProxy.black_hole`: the nasty partition.  Every connection, open or opened
  while it lasts, is accepted and its bytes are read and dropped: nothing is forwarded
  and nothing is ever reset.  The client's kernel sees its data acknowledged (by this
  proxy's), so neither TCP keepalives nor ``tcp_user_timeout`` notice anything: only a
  deadline of the client's own does.  Those connections stay dead after
  :meth:`heal` (as behind a stateful firewall or NAT that forgot them); new ones pass.
* :meth:`TcpProxy.reset`: drops every connection at once with a reset (both ends) and
  resets new ones until :meth:`heal` (a server or a middlebox that refuses).
* :meth:`TcpProxy.delay`: adds ``seconds`` to every round trip (half each way).
* :meth:`TcpProxy.heal`: new connections pass again (and the delay is gone).

:meth:`cut` and :meth:`restore` are the older names of :meth:`reset` and :meth:`heal`.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from types import TracebackType

__all__ = ["TcpProxy"]

_PASS, _BLACK_HOLE, _RESET = "pass", "black hole", "reset"


class _Link:
    """One proxied connection: its two sockets, and whether the black hole swallowed it."""

    def __init__(self, client: socket.socket, upstream: socket.socket | None) -> None:
        self.client = client
        self.upstream = upstream
        self.dead = upstream is None  # swallowed: bytes read and dropped, for good


class TcpProxy:
    """Forwards ``127.0.0.1:<port>`` to ``(host, port)``, as told; close() ends it."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)  # the accept loop looks at _closed this often
        self.port = int(self._listener.getsockname()[1])
        # Guards _links, _mode, _delay, _closed and every link's `dead`: the accept
        # thread adds links, the test's calls change the mode, the pumps read it.
        self._lock = threading.Lock()
        self._links: list[_Link] = []
        self._mode = _PASS
        self._delay = 0.0  # seconds added to each round trip
        self._closed = False
        self.accepted = 0  # connections accepted so far (any mode)
        self._thread = threading.Thread(target=self._accept, name="tcp-proxy", daemon=True)
        self._thread.start()

    def dsn(self, dsn: str, *, port: int) -> str:
        """``dsn`` (a URI naming 127.0.0.1:``port``) through this proxy instead."""
        return dsn.replace(f"127.0.0.1:{port}", f"127.0.0.1:{self.port}", 1)

    def black_hole(self) -> None:
        """From now on forward nothing and reset nothing: every connection open now, and
        every one opened until :meth:`heal`, swallows what it is sent, for good."""
        with self._lock:
            self._mode = _BLACK_HOLE
            for link in self._links:
                link.dead = True

    def reset(self) -> None:
        """Drop every connection now with a reset, and reset new ones until :meth:`heal`."""
        with self._lock:
            self._mode = _RESET
            links, self._links = self._links, []
        for link in links:
            _drop(link.client)
            if link.upstream is not None:
                _drop(link.upstream)

    def delay(self, seconds: float) -> None:
        """Add ``seconds`` to every round trip from now on (half each way)."""
        with self._lock:
            self._delay = seconds

    def heal(self) -> None:
        """New connections pass again, without delay (black-holed ones stay dead)."""
        with self._lock:
            self._mode = _PASS
            self._delay = 0.0

    cut = reset
    restore = heal

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self.reset()
        self._thread.join(timeout=2.0)
        self._listener.close()

    def _accept(self) -> None:
        while True:
            with self._lock:
                if self._closed:
                    return
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.accepted += 1
                mode = _RESET if self._closed else self._mode
            if mode == _RESET:
                _drop(client)
                continue
            upstream = None
            if mode == _PASS:
                try:
                    upstream = socket.create_connection(self._target, timeout=5.0)
                except OSError:
                    _drop(client)
                    continue
                upstream.settimeout(None)
            client.settimeout(None)
            link = _Link(client, upstream)
            with self._lock:
                self._links.append(link)
            if upstream is None:
                self._start(link, client, None)
                continue
            self._start(link, client, upstream)
            self._start(link, upstream, client)

    def _start(self, link: _Link, source: socket.socket, sink: socket.socket | None) -> None:
        threading.Thread(
            target=self._pump, args=(link, source, sink), name="tcp-proxy-pump", daemon=True
        ).start()

    def _pump(self, link: _Link, source: socket.socket, sink: socket.socket | None) -> None:
        """Copy ``source`` to ``sink`` until either end goes away; while ``link`` is dead,
        read and drop (and never close: a black hole does not say so)."""
        try:
            while data := source.recv(65536):
                with self._lock:
                    dead, delay = link.dead, self._delay
                if dead or sink is None:
                    continue
                if delay:
                    time.sleep(delay / 2)  # the network's latency, one way
                sink.sendall(data)
        except OSError:
            pass
        with self._lock:
            dead = link.dead and not self._closed
        if not dead and sink is not None:
            _drop(sink)

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _drop(sock: socket.socket) -> None:
    """Close ``sock`` at once with a reset (no lingering), waking a thread blocked on it."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
