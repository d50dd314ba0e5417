"""A TCP proxy for the tests that a test can cut and restore: the network between a
scheduler and its PostgreSQL server, as a piece of the test (no packet filter needed).

``TcpProxy(host, port)`` listens on a free port of 127.0.0.1 and forwards each
connection to ``(host, port)``, one thread per direction.  :meth:`TcpProxy.cut`
drops every connection at once (both ends closed: the client's next read or write
fails, as it would once ``tcp_user_timeout`` or a keepalive gave up on a real cut)
and refuses new ones until :meth:`TcpProxy.restore`.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from types import TracebackType

__all__ = ["TcpProxy"]


class TcpProxy:
    """Forwards ``127.0.0.1:<port>`` to ``(host, port)`` until cut; close() ends it."""

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)  # the accept loop looks at _closed this often
        self.port = int(self._listener.getsockname()[1])
        # Guards _pairs, _cut and _closed: the accept thread adds pairs, cut() drops them.
        self._lock = threading.Lock()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._cut = False
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="tcp-proxy", daemon=True)
        self._thread.start()

    def dsn(self, dsn: str, *, port: int) -> str:
        """``dsn`` (a URI naming 127.0.0.1:``port``) through this proxy instead."""
        return dsn.replace(f"127.0.0.1:{port}", f"127.0.0.1:{self.port}", 1)

    def cut(self) -> None:
        """Drop every connection now and refuse new ones until :meth:`restore`."""
        with self._lock:
            self._cut = True
            pairs, self._pairs = self._pairs, []
        for client, upstream in pairs:
            _drop(client)
            _drop(upstream)

    def restore(self) -> None:
        """Accept and forward new connections again (the dropped ones stay dropped)."""
        with self._lock:
            self._cut = False

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self.cut()
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
                refused = self._cut or self._closed
            if refused:
                _drop(client)
                continue
            try:
                upstream = socket.create_connection(self._target, timeout=5.0)
            except OSError:
                _drop(client)
                continue
            client.settimeout(None)
            upstream.settimeout(None)
            with self._lock:
                self._pairs.append((client, upstream))
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(
                    target=_pump, args=(source, sink), name="tcp-proxy-pump", daemon=True
                ).start()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """Copy ``source`` to ``sink`` until either end goes away."""
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        _drop(sink)


def _drop(sock: socket.socket) -> None:
    """Close ``sock`` at once with a reset (no lingering), waking a thread blocked on it."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
