"""How ``python -m lldsched tasks`` names a durable store, and opens it to read or to act.

``--store URL`` (or ``LLDSCHED_STORE``): ``sqlite:PATH`` (``sqlite:///var/lib/app/jobs.db``
an absolute path, what follows ``sqlite://``; ``sqlite:jobs.db`` a relative one, the path as
written, no percent-decoding) or a libpq URI, ``postgresql://`` (``postgres://``).
SQLAlchemy (APScheduler's job stores) reads ``sqlite:///jobs.db`` as the relative
``jobs.db``: where nothing is at the absolute path and the relative one is a file, the
refusal says so and names ``sqlite:jobs.db`` (:func:`_relative_meant`); so it does for a
``~`` no shell expanded (``sqlite:~/jobs.db``, :func:`_home_meant`).  A dsn's
password is never shown: every message names the store as
:func:`~lldsched.stores.postgres.redact.redact` (or, before psycopg is imported,
:func:`~lldsched.redaction.hide_passwords`) gives it.

To read, a :class:`~lldsched.stores.peek.Peek` (nothing imported, nothing written, no claim).
To act, the one way verbs reach the processes running a store (docs/CLUSTER.md, "Control
verbs from any process take effect in all of them"): a ``Scheduler`` built on the store,
shared (``SqliteTaskStore(path, shared=True)``, a ``PostgresTaskStore``), never started; its
verb writes the row, the running processes apply it from the change feed.  An SQLite file a
running scheduler holds unshared is refused before anything is opened (:func:`act_on`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from lldsched.errors import StoreError
from lldsched.redaction import hide_passwords
from lldsched.runtime import Runtime
from lldsched.stores.peek import Peek
from lldsched.stores.sqlite.peek import peek_sqlite

if TYPE_CHECKING:
    from lldsched.stores.postgres import PostgresTaskStore
    from lldsched.stores.sqlite import SqliteTaskStore

__all__ = ["BadStore", "StoreName", "act_on", "parse_store", "peek"]

_POSTGRES = ("postgresql://", "postgres://")


class BadStore(ValueError):
    """A ``--store`` value that names no store: the message names it (password hidden)."""


class StoreName(NamedTuple):
    """A store as ``--store`` named it: its ``engine`` (``"sqlite"`` or ``"postgres"``),
    what its opener takes (a path, a dsn) and how messages show it."""

    engine: str
    target: str
    shown: str


def parse_store(given: str, *, option: str = "--store") -> StoreName:
    """The store ``given`` names; :class:`BadStore` naming it, as ``option`` gave it
    (``--store``, or ``LLDSCHED_STORE`` when the environment did), otherwise."""
    if given.startswith("sqlite:"):
        path = given.removeprefix("sqlite:")
        path = path.removeprefix("//")
        if not path:
            raise BadStore(
                f"{option} {given!r} names no file: sqlite:///ABSOLUTE/PATH or sqlite:PATH"
            )
        return StoreName("sqlite", path, repr(path))
    if given.startswith(_POSTGRES):
        return StoreName("postgres", given, repr(hide_passwords(given)))
    near = f"; did you mean sqlite:{given}?" if os.path.isfile(given) else ""  # a file's path
    raise BadStore(
        f"{option} {hide_passwords(given)!r} is no store URL: name one as sqlite:///ABSOLUTE/PATH, "
        f"sqlite:RELATIVE/PATH or postgresql://USER@HOST/DATABASE{near}"
    )


def peek(store: StoreName) -> Peek:
    """The store opened to read (:mod:`lldsched.stores.peek`): :class:`StoreError` if it
    cannot be, ``ImportError`` for PostgreSQL without psycopg."""
    if store.engine == "sqlite":
        try:
            return peek_sqlite(store.target)
        except StoreError as exc:
            hint = _relative_meant(store.target) or _home_meant(store.target)
            raise StoreError(f"{exc}{hint}") from None
    from lldsched.stores.postgres.peek import peek_postgres  # psycopg imported only then

    return peek_postgres(store.target)


def _relative_meant(path: str) -> str:
    """A hint for an absolute ``path`` there is nothing at, where the same path read
    relative is a file: ``sqlite:///jobs.db`` is ``/jobs.db`` here (the path after
    ``sqlite://``, as ``file:///`` reads), where SQLAlchemy and APScheduler's job stores
    read it relative (``jobs.db``; ``sqlite:////jobs.db`` absolute).  "" otherwise."""
    relative = path.lstrip("/")
    if path == relative or os.path.exists(path) or not os.path.isfile(relative):
        return ""
    return (
        f"; {path!r} is read as absolute (sqlite:///PATH names /PATH here, unlike "
        f"SQLAlchemy): did you mean sqlite:{relative}?"
    )


def _home_meant(path: str) -> str:
    """A hint for a ``path`` that starts with ``~`` and names nothing, where the path in
    the home folder it stands for is a file: a shell expands a ``~`` only at a word's
    start (or after the ``=`` or ``:`` of an assignment), so ``--store sqlite:~/jobs.db``
    reaches the command as written, and the path is taken as written, never guessed.
    "" otherwise."""
    home = os.path.expanduser(path)
    if home == path or os.path.exists(path) or not os.path.isfile(home):
        return ""
    return (
        f"; no shell expanded its '~' (one does only at the start of a word): did you mean "
        f"sqlite://{home}?"
    )


class HeldUnshared(StoreError):
    """An SQLite store file a running scheduler holds without ``shared=True``: no other
    process can write it, so a verb from here is refused before anything is opened."""


@contextlib.contextmanager
def act_on(store: StoreName, command: str = "python -m lldsched tasks") -> Iterator[Runtime]:
    """A scheduler on ``store``, never started, for its verbs; shut down and its store
    closed at the end.  :class:`HeldUnshared` for an SQLite file held unshared.  An SQLite
    file's shared claim is ``command``'s (:func:`~lldsched.stores.sqlite.claim.briefly`): a
    service starting unshared in that moment is told so, and to start again."""
    from lldsched import Scheduler

    opened: SqliteTaskStore | PostgresTaskStore
    if store.engine == "sqlite":
        from lldsched.stores.sqlite import SqliteTaskStore
        from lldsched.stores.sqlite.claim import FileClaim, briefly

        with briefly(command):
            try:  # the shared claim is refused while an unshared store holds the file
                FileClaim.shared(store.target).release()
            except StoreError as exc:
                raise HeldUnshared(
                    f"the store {store.shown} is held by a running scheduler that does not "
                    f"share it (opened without shared=True): no other process can change its "
                    f"tasks. Nothing was changed. Call the verb in that process, or stop it "
                    f"first ({exc})"
                ) from None
            opened = SqliteTaskStore(store.target, shared=True)
    else:
        from lldsched.stores.postgres import PostgresTaskStore

        opened = PostgresTaskStore(store.target)
    try:
        scheduler = Scheduler(store=opened)
    except BaseException:
        opened.close()
        raise
    try:
        yield scheduler
    finally:
        try:
            scheduler.shutdown()
        finally:
            opened.close()
