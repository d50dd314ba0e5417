"""A user-mypy cache that starts from the project's own (tests/test_typing_user.py).

The tests that run mypy as a user's project would (``--strict``, no configuration of
ours) keep a cache of their own, and from no cache a run spends 15 to 20 s of CPU time,
most of it reading pandas' stubs and what they import.  A fresh clone has no such
cache, but ``make test`` runs the project's own mypy first (``make typecheck``), whose
cache, ``.mypy_cache``, holds the same third-party modules and the package.  mypy
checks each cached module's options, source and dependencies against its own run and
checks again whatever differs (the package's modules whose imports another
configuration treats otherwise, say), so a run started from a copy of it reports what a
run from nothing reports, reading only what the user's run sees differently.

A copy, never the project's cache itself: the two runs' settings would overwrite each
other's entries.  mypy keeps its cache in SQLite files, each copied through SQLite's
backup (one read transaction: whole, even while a project run writes it), the rest
copied as files."""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from pathlib import Path

DATABASES = ("*.db", "*.db-wal", "*.db-shm", "*.db-journal")
"""A cache's SQLite files: each database copied by :func:`_backup`, its journals with it."""


def seed(cache: Path, *, project: Path) -> bool:
    """Make ``cache`` a copy of the mypy cache ``project`` if ``cache`` does not exist yet
    and ``project`` does; whether it did.  The copy is made beside ``cache`` and renamed
    into place whole: a copy cut short (a full disk, a database that cannot be read)
    leaves no ``cache``, and the run then starts from nothing, as it did before."""
    if cache.exists() or not project.is_dir():
        return False
    part = cache.with_name(f"{cache.name}.part")
    shutil.rmtree(part, ignore_errors=True)  # a copy an earlier run left cut short
    try:
        shutil.copytree(project, part, ignore=shutil.ignore_patterns(*DATABASES))
        for database in project.rglob("*.db"):
            _backup(database, part / database.relative_to(project))
    except (OSError, sqlite3.Error):
        shutil.rmtree(part, ignore_errors=True)
        return False
    part.rename(cache)
    return True


def _backup(source: Path, target: Path) -> None:
    """Copy the SQLite database ``source`` to ``target`` (its committed state, whole)."""
    uri = f"{source.absolute().as_uri()}?mode=ro"  # read only: the project's is never written
    with (
        contextlib.closing(sqlite3.connect(uri, uri=True)) as reading,
        contextlib.closing(sqlite3.connect(target)) as writing,
    ):
        reading.backup(writing)
