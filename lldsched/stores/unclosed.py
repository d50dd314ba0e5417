"""Unclosed: a store collected while still open says so, as Python's own files do.

A file, a socket or (from Python 3.13) an ``sqlite3`` connection that the garbage
collector finds still open closes itself and says so with a ``ResourceWarning``
("unclosed file ..."), which Python shows only when asked (``-W default``, ``python -X
dev``, ``-W error::ResourceWarning``): the way a forgotten ``close()`` is found.  A
durable store (:class:`~lldsched.stores.sqlite.SqliteTaskStore`,
:class:`~lldsched.stores.postgres.PostgresTaskStore`) and the parts of an SQLite store
that hold a descriptor (its file claim, :class:`~lldsched.stores.sqlite.claim.FileClaim`, and
a shared store's write gate, :class:`~lldsched.stores.sqlite.gate.WriteGate`) do the
same from their ``__del__`` through :func:`collected`: a ``ResourceWarning``, "unclosed
" and the object's repr (its path, or its dsn with the password as ``***``), then the
close.  Before, they closed themselves in silence, and a store left to the collector
was never told: its file stays claimed and its sessions open until the collector comes,
which for an object in a reference cycle is whenever it next runs.

As CPython's classes do (``asyncio``'s event loop, ``subprocess.Popen``):

* the warning is said first and names the object (``source=``: under ``-X
  tracemalloc`` Python also says where it was made), and the close runs after it even
  when a filter made the warning an error (``-W error::ResourceWarning``): that error
  then leaves ``__del__`` as an "Exception ignored in" line on stderr, which pytest
  reports as a ``PytestUnraisableExceptionWarning``.  Nothing else leaves it: an
  exception of the close (at interpreter shutdown, where a module's globals may be
  ``None`` already) is dropped, as a file's finaliser drops its close's;
* what it calls at collection is bound as a default argument (``_warn=warnings.warn``),
  not looked up in a module that may be torn down by then.

A store's copy in a child forked since it was opened is let go without a warning (its
``close()`` there lets go of the child's copies only: the store is the parent's, whose
own copy says so if it is left open).  The parts, collected once their store closed
them (its ``close()``, or its own ``__del__`` first), say nothing: one leak, one warning
(docs/decisions/teaching-kit.md, "A store left open says so when it is collected").
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from lldsched.stores import forks

__all__ = ["collected"]


def collected(
    owner: object,
    close: Callable[[], object],
    *,
    opened_in: int | None = None,
    _warn: Callable[..., object] = warnings.warn,
    _current: list[int] = forks.current,
) -> None:
    """``owner`` is being collected while still open: warn ``ResourceWarning`` naming it
    (unless it was opened in another process than this one, ``opened_in``: a forked
    child's copy), then ``close()`` it.  For a ``__del__``, which binds this function as
    a default argument; an exception of ``close`` is dropped."""
    try:
        if opened_in is None or opened_in == _current[0]:
            _warn(f"unclosed {owner!r}", ResourceWarning, source=owner)
    finally:
        # As a file's finaliser: only the warning escapes.  Not contextlib.suppress: a
        # module global, which may be gone at interpreter shutdown.
        try:  # noqa: SIM105
            close()
        except Exception:
            pass
