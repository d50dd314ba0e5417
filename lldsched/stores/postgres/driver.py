"""psycopg, imported once for every module of the PostgreSQL store, and checked.

psycopg 3.3 or newer is an optional extra (``pip install 'lldsched[postgres]'``):
importing this module without it, or with an older psycopg, raises an ``ImportError``
that names the extra, and ``import lldsched`` never imports it.  Every module of the
store imports psycopg from here, after that check (``psycopg``, ``conninfo``,
``pq``), and names a session of the store as :data:`Connection`.  Hiding a dsn's
passwords is :mod:`~lldsched.stores.postgres.redact`'s, connecting and the LISTEN
thread :mod:`~lldsched.stores.postgres.listen`'s.
"""

from __future__ import annotations

import re
from typing import Any

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
__all__ = ["Connection", "conninfo", "idle", "lost", "pq", "psycopg"]

Connection = psycopg.Connection[tuple[Any, ...]]
"""A session of the store (its rows as tuples): the one each call is given
(:mod:`~lldsched.stores.postgres.connection`), a verb's hold's, the schema's install."""


# A command in flight on a connection no call is using any more: psycopg raised out of
# its wait for the reply without libpq seeing the loss (poll reported an error on the
# socket: "connection socket closed"), so the connection is neither ``closed`` nor
# ``broken``, and it refuses every later command ("another command is already in
# progress"). Between the store's calls a live session is idle or in a hold's transaction.
_UNFINISHED = (pq.TransactionStatus.ACTIVE, pq.TransactionStatus.UNKNOWN)


def lost(connection: Connection) -> bool:
    """Whether ``connection`` can carry no more commands: closed, broken, or left with a
    command in flight by a call that failed (a reused one failed every call after it for
    good: a scheduler on a store whose server restarted so stopped claiming)."""
    return (
        connection.closed or connection.broken or connection.info.transaction_status in _UNFINISHED
    )


def idle(connection: Connection) -> bool:
    """Whether ``connection`` is as a store call outside a verb's hold must leave it for
    the next: open and idle, no command in flight, no transaction open.  One left inside
    a transaction no call owns would run every later statement in it, never committed
    (and keep its row locks until the server ends the idle session, a ``lease`` later):
    a call interrupted between psycopg's end of a transaction block and the COMMIT it
    sends, or a verb's hold whose end failed, left it so."""
    return connection.info.transaction_status is pq.TransactionStatus.IDLE
