"""A SQLite store's path: how it is opened, why it cannot be, whether it still names the file.

:data:`PRIVATE` names SQLite's private databases (no path: nobody else can open
them); :func:`check_encodable` refuses, naming it, a path the file system encoding
cannot encode; :func:`refuse_folder` a path ending in a separator (a folder's name);
:func:`create_owner_only` creates a new store's file readable by its owner only.

:func:`refuse_url` refuses a URL given where a file name goes (SQLAlchemy's
``sqlite:///jobs.sqlite`` from an APScheduler configuration, a PostgreSQL dsn): SQLite
read it as a relative path, so ``sqlite:jobs.db`` made a file of that name and
``sqlite:///jobs.db`` asked for a folder ``sqlite:`` to be created, the dsn's password
shown.

:func:`unopenable` is read when SQLite could not open a store's path, which it says
only as "unable to open database file": it names what is wrong with the path (a
folder missing on the way, a file where a folder should be, a folder at the path, a
folder that cannot be written), for the :class:`~lldsched.errors.StoreError` the store
raises.  It looks at the path only then: an open that works costs nothing more.

:func:`refuse_read_only` refuses, before SQLite opens it, a store file (or its ``-wal``
or ``-shm``) this process may not write: SQLite opens such a file read-only without a
word, its scheduler restored every task and then could store nothing (a registration
refused, or an outage from its first run on), as a PostgreSQL standby was refused at
open for.

FileWatch: whether an unshared SQLite store's path still names the file it opened.

SQLite writes to the file it opened, not to its path: a file deleted under an open
store (a cleanup job, an operator's ``rm``) or replaced (a restore copied over it, a
folder recreated by a deploy) takes every later write without an error, into a file
no one can open again, and a restart finds none of it.  :meth:`FileWatch.check`
compares the path's device and inode with the ones the store opened and raises a
:class:`~lldsched.errors.StoreError` naming the path when they differ, which the
scheduler treats as any failed write (a registration refused; later, an outage said
once, its registry authoritative).  A ``stat`` costs about a twentieth of a write
(5 against 114 microseconds, measured on a loaded host), so a store checks at most
once every :data:`CHECK_EVERY` seconds (``time.monotonic``): the writes of that last
second are the most a deletion loses.
A path that names the file again (moved away and back) is written again.  A shared
store checks the same :func:`identity` at every claim instead, and refuses to claim
(:meth:`~lldsched.stores.sqlite.shared.SharedState.check_file`).

What the check cannot undo while the store is open: the old file's ``-wal`` is still at
the path, and a connection that opens the path meanwhile reads its frames over the new
file.  SQLite's own close of a connection whose file moved neither checkpoints nor
removes the ``-wal`` (so that nothing is written into a file that moved), which left
those frames at the path for good: the next open read them over the file put there (a
backup renamed over an open store came back as the replaced store's last state), and a
file moved away lacked every commit since its last checkpoint.  So the store's
:meth:`~lldsched.stores.sqlite.SqliteTaskStore.close` checkpoints them into the file it
opened first (:func:`leave_no_frames`), both modes: the file moved away is whole, and the
``-wal`` left at the path is empty.  Restore a store's file with the store closed all the
same.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sqlite3
import sys
import time
from urllib.parse import unquote, urlsplit

from lldsched.errors import StoreError, ValidationError
from lldsched.logs import STORE
from lldsched.redaction import hide_passwords

__all__ = [
    "CHECK_EVERY",
    "PRIVATE",
    "FileWatch",
    "check_encodable",
    "create_owner_only",
    "identity",
    "leave_no_frames",
    "no_room",
    "refuse_empty",
    "refuse_folder",
    "refuse_read_only",
    "refuse_url",
    "still_names",
    "unopenable",
]

log = logging.getLogger(STORE)

PRIVATE = ("", ":memory:")  # SQLite's private databases: nobody else can open them

CHECK_EVERY = 1.0
"""Seconds between two checks of a store's path (monotonic time)."""


class FileWatch:
    """The identity (device, inode) of the file an SQLite store opened at ``path``.

    A relative ``path`` is watched as it read at the open, in the working directory of
    then, as SQLite opened it: read again after a ``chdir`` (a daemon's ``chdir("/")``,
    a test's ``monkeypatch.chdir``) it named no file, and every write after the next
    check was refused as if the file had been deleted."""

    __slots__ = ("_at", "_identity", "_where", "path")

    def __init__(self, path: str) -> None:
        self.path = path  # as given: what the messages say
        self._where = os.path.abspath(path)  # what is checked: the file SQLite opened
        try:  # None: the path names no file already (a check then passes while it names none)
            self._identity = _identity(self._where)
        except OSError:
            self._identity = None
        self._at = time.monotonic() + CHECK_EVERY  # the next check

    def names_it(self) -> bool:
        """Whether the path names the file opened now (one ``stat``; never raises)."""
        return still_names(self._where, self._identity)

    def at_every_call(self) -> None:
        """Check at every call from now on, until a check passes (the store's claim found
        taken by another opener)."""
        self._at = 0.0

    def due(self) -> bool:
        """True when the path is to be checked again (a clock read: the write path's)."""
        return time.monotonic() >= self._at

    def check(self) -> None:
        """Raise a :class:`StoreError` naming the path if it no longer names the file
        opened; the next check is then at the next call, until it does again."""
        try:
            now = _identity(self._where)
        except OSError:  # the folder cannot be read: nothing to tell, the next check may
            now = self._identity
        if now == self._identity:
            self._at = time.monotonic() + CHECK_EVERY
            return
        self._at = 0.0
        what = "deleted" if now is None else "replaced"
        raise StoreError(
            f"{self.path!r} was {what} while this store had it open: the writes since went "
            "to a file no one can open again, and are lost.  Nothing more is written "
            "(its scheduler keeps every task in memory meanwhile); close the store, and "
            "put a file back (with its -wal and -shm, or none) before opening the path again"
        )


def still_names(path: str, opened: tuple[int, int] | None) -> bool:
    """Whether ``path`` still names the file of identity ``opened`` (True as well when
    its folder cannot be read: nothing to tell)."""
    try:
        return _identity(path) == opened
    except OSError:
        return True


def leave_no_frames(connection: sqlite3.Connection, path: str) -> None:
    """Checkpoint the store's ``-wal`` into the file ``connection`` opened, which ``path``
    no longer names (deleted, replaced or moved away), before the connection is closed.

    SQLite's close of such a connection neither checkpoints nor removes the ``-wal``, and
    its frames stayed at the path, to be read over whichever file is opened there next.
    Checkpointed with ``TRUNCATE``, they are in the file they belong to (whole, if it was
    moved away) and the ``-wal`` at the path is empty; one whose checkpoint cannot be
    made (a reader of an older state, past the store's ``timeout``) is named, to remove
    with its ``-shm`` before the path is opened again."""
    what = "it was deleted or moved away" if _identity_or_none(path) is None else "it was replaced"
    try:
        (busy, _, _) = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        cause = "a reader of the file still reads an older state of it" if busy else None
    except sqlite3.Error as exc:
        cause = f"{type(exc).__name__}: {exc}"
    if cause is None:
        log.info(
            "closing the SQLite store %r, whose path no longer names the file it opened "
            "(%s): its last writes were checkpointed into that file, and the -wal left at "
            "the path holds none, so a file put at the path is read as itself",
            path, what,
        )  # fmt: skip
        return
    log.warning(
        "closing the SQLite store %r, whose path no longer names the file it opened (%s): "
        "its last writes could not be checkpointed into that file (%s), and %r holds them: "
        "remove it and %r before the path is opened again, or they are read over the file "
        "put there",
        path, what, cause, f"{path}-wal", f"{path}-shm",
    )  # fmt: skip


def _identity_or_none(path: str) -> tuple[int, int] | None:
    """:func:`_identity`, None also when the folder cannot be read."""
    try:
        return _identity(path)
    except OSError:
        return None


def identity(path: str) -> tuple[int, int]:
    """The (device, inode) of the file at ``path`` (an ``OSError`` if there is none): what
    says a path still names the file a store opened, here and in shared mode
    (:meth:`~lldsched.stores.sqlite.shared.SharedState.check_file`)."""
    found = os.stat(path)
    return found.st_dev, found.st_ino


def _identity(path: str) -> tuple[int, int] | None:
    """:func:`identity`, or None when no file is there (its folder gone too)."""
    try:
        return identity(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def unopenable(path: str) -> str | None:
    """What keeps a file at ``path`` from being opened or created, said for a person
    (``None``: nothing this can see; the cause is SQLite's words alone).

    The first folder on the way that does not exist, or that is a file; the path itself
    a folder; its folder on a read-only file system, or not writable by this process
    (which a new store must create its file in, and SQLite its ``-wal`` beside it); its
    file system full (:func:`no_room`)."""
    full = os.path.abspath(path)
    if os.path.isdir(full):
        return f"{full!r} is a folder, not a database file: name a file in it"
    folder = os.path.dirname(full)
    ancestors = [folder]
    while os.path.dirname(ancestors[-1]) != ancestors[-1]:
        ancestors.append(os.path.dirname(ancestors[-1]))
    for ancestor in reversed(ancestors):  # from the root down: the first one wrong
        if not os.path.exists(ancestor):
            if os.path.basename(ancestor) == "~" and path.startswith("~"):
                return (
                    f"the folder {ancestor!r} does not exist: '~' is not your home here, "
                    "nothing expands it; pass Path(path).expanduser()"
                )
            return f"the folder {ancestor!r} does not exist: create it first"
        if not os.path.isdir(ancestor):
            return f"{ancestor!r} is a file, not a folder"
    if _on_read_only_system(folder):
        return f"the folder {folder!r} is on a read-only file system"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"this process may not create files in the folder {folder!r} (its permissions)"
    if os.path.exists(full) and not os.access(full, os.R_OK):
        return f"this process may not read {full!r} (its permissions)"
    return no_room(full)


FULL_BELOW = 1 << 20
"""Bytes free (for this process) under which a store's file system is said full."""


def no_room(path: str) -> str | None:
    """That the file system holding the store at ``path`` is full (less than
    :data:`FULL_BELOW` bytes, or no inode, free for this process), said for a person;
    None otherwise, or where it cannot be told (no ``statvfs``).  SQLite says a full
    disk as "database or disk is full" only where it writes a page: a ``-shm`` it could
    not make or grow at the open is a "disk I/O error", read as a failing disk."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        found = os.statvfs(folder)
    except (OSError, AttributeError):  # statvfs: POSIX only
        return None
    root = hasattr(os, "geteuid") and os.geteuid() == 0  # root may use the reserved blocks
    free = (found.f_bfree if root else found.f_bavail) * found.f_frsize
    if free < FULL_BELOW:
        return f"the file system of the folder {folder!r} is full: {free // 1024} KiB free"
    if found.f_files and (found.f_ffree if root else found.f_favail) == 0:
        return f"the file system of the folder {folder!r} has no free inode: no file can be made"
    return None


def _on_read_only_system(path: str) -> bool:
    """True if ``path`` is on a file system mounted read-only (POSIX; False elsewhere)."""
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # statvfs: POSIX only
        return False


def refuse_read_only(path: str) -> None:
    """Raise a :class:`StoreError` naming the store at ``path`` when this process may not
    write its file, or the ``-wal`` or ``-shm`` beside it, that exists (its permissions,
    a read-only file system): SQLite would open it read-only without a word, and every
    write of its scheduler would fail after a restore that went well (a registration
    refused; with none, an outage from its first run, its records lost, a restart
    running the same runs again).  A file that does not exist yet is left to SQLite,
    which creates it or names why not (:func:`unopenable`).  Read before the open: the
    file is left untouched."""
    for name in (path, f"{path}-wal", f"{path}-shm"):
        if not os.path.exists(name) or os.access(name, os.W_OK):
            continue
        full = os.path.abspath(name)
        why = (
            f"{full!r} is on a read-only file system"
            if _on_read_only_system(full)
            else f"this process may not write {full!r} (its permissions)"
        )
        raise StoreError(
            f"the SQLite store {path!r} cannot be written by this process ({why}): every "
            "write of its scheduler would fail; it was left untouched.  Give this process "
            "write access to it (a -wal or -shm another user's process left: open and close "
            "the store once as that user, which removes them), or copy it elsewhere"
        )


def create_owner_only(path: str) -> None:
    """Create ``path`` empty (SQLite reads that as a new database) with mode 0600, unless
    it exists: a store holds its tasks' arguments and results in plain text, and SQLite
    would create it as the umask says (0644 by default: readable by every user).  Its
    ``-wal`` and ``-shm`` files take the database file's mode.  A file that exists keeps
    its mode (an operator's ``chmod g+rw`` for a group of users stays).  Any other
    failure is left to ``sqlite3.connect``, which names it."""
    with contextlib.suppress(OSError):  # FileExistsError: as it is; others: connect says
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


_CONTROL = re.compile("[\x01-\x1f\x7f]")  # C0 controls and DEL (NUL is said by itself)

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")  # two letters at least: not C:\\
_FILE_URLS = ("sqlite", "file")  # SQLAlchemy's sqlite:///..., SQLite's own file: URIs


def refuse_url(path: str) -> None:
    """Refuse, naming it (its password hidden), a ``str`` path that begins with a URL's
    scheme (``sqlite:``, ``file:``, ``postgresql://``, ...), saying what to pass instead:
    the file's own path for a ``sqlite:`` or ``file:`` URL (SQLAlchemy's
    ``sqlite:///jobs.db`` is ``jobs.db``, ``sqlite:////srv/jobs.db`` is ``/srv/jobs.db``),
    :class:`~lldsched.stores.postgres.PostgresTaskStore` for a PostgreSQL dsn.  A file
    whose name does begin so is opened as ``./name`` (a ``pathlib.Path`` is never read
    as a URL: the caller checks a ``str`` only).  A drive letter (``C:``) is no scheme."""
    found = _SCHEME.match(path)
    if found is None:
        return
    scheme = found.group(1).lower()
    kind = scheme.split("+")[0]  # sqlite+pysqlite: SQLAlchemy names the driver so
    shown = hide_passwords(path)
    if kind in _FILE_URLS:
        file = unquote(urlsplit(path).path)
        if kind == "sqlite" and file.startswith("/"):  # sqlite:///a.db is a.db, relative
            file = file[1:]
        advice = f"pass the file's path: {file!r}" if file else "pass the file's path"
    elif kind in ("postgresql", "postgres"):
        advice = (
            "a PostgreSQL database is opened by lldsched.stores.postgres.PostgresTaskStore(dsn)"
        )
    else:
        advice = f"pass a file's path (a file of that very name is {'./' + shown!r})"
    raise ValidationError(
        f"the SQLite store path {shown!r} is a URL ({scheme}:), and an SQLite store opens a "
        f"file by its path: {advice}"
    )


def refuse_empty(path: str) -> None:
    """Refuse an empty path: SQLite opens a private temporary database for it, deleted at
    close, so a store given ``os.environ.get("STORE", "")`` kept its tasks until the
    process ended and no restart found them.  ``":memory:"`` asks for a store that keeps
    nothing by name."""
    if not path:
        raise ValidationError(
            "the SQLite store path is empty: SQLite would open a private temporary "
            "database, deleted at close, and no task would survive a restart; give a "
            "file's path (or ':memory:' for a store that keeps nothing, on purpose)"
        )


def refuse_folder(path: str) -> None:
    """Refuse a ``str`` path that ends in a separator (``"/srv/app/data/"``): it names a
    folder, never a file.  SQLite opened it without the separator: a folder missing there
    became a database *file* of that name (``/srv/app/data``), and the deploy that made
    the folder next found a file in its way.  A ``pathlib.Path`` drops the separator
    before anyone sees it, so only a ``str`` says it."""
    separators = (os.sep, os.altsep) if os.altsep else (os.sep,)
    if path.endswith(separators):
        raise ValidationError(
            f"the SQLite store path {path!r} ends in a separator, so it names a folder, "
            f"not a database file: name a file in it, e.g. {path + 'tasks.db'!r}"
        )


def check_encodable(path: str) -> None:
    """Refuse, naming it, a path the file system encoding cannot encode: under the C
    locale with UTF-8 mode off (``LC_ALL=C PYTHONUTF8=0``: a minimal container, a cron
    job's environment) it is ASCII, and a non-ASCII path raised a bare
    ``UnicodeEncodeError`` that named no file.  A ``ValidationError`` is a ``ValueError``,
    as that error was.  A name read from the file system (surrogates) encodes back.
    Nor can a path hold a NUL (``"\\x00"``), which no file name does: ``open`` raised a
    bare ``ValueError("embedded null byte")``, quoting nothing.  Nor another control
    character (a line end, a tab): legal in a POSIX name, but what they make is a path
    read with its line end (``Path("store-path").read_text()``, a mounted secret), whose
    store SQLite created as ``tasks.db\\n`` beside the ``tasks.db`` the backups, the
    operators and the next release without the typo read."""
    if "\x00" in path:
        raise ValidationError(
            f"the SQLite store path {path!r} cannot be a file name: it holds a NUL"
        )
    control = _CONTROL.search(path)
    if control is not None:
        raise ValidationError(
            f"the SQLite store path {path!r} holds the control character "
            f"{control.group()!r}, which no store's file name needs: a path read with its "
            "line end? strip it (path.strip())"
        )
    encoding = sys.getfilesystemencoding()
    try:
        os.fsencode(path)
    except UnicodeEncodeError as exc:
        raise ValidationError(
            f"the SQLite store path {path!r} cannot be a file name here: the file system "
            f"encoding {encoding!r} (from the locale) cannot encode {path[exc.start : exc.end]!r}; "
            "run Python in UTF-8 mode (PYTHONUTF8=1 or -X utf8), under a UTF-8 locale, "
            "or give an ASCII path"
        ) from exc
