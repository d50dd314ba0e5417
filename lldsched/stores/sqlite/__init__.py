"""The SQLite store: :class:`SqliteTaskStore`, one file from the standard library.

The class is written in modules (``store.py`` opens and closes the file; the others,
mixed in or called, are listed in docs/ARCHITECTURE.md, "The packages"); this package
gives its public names where they have always been imported from:
``from lldsched.stores.sqlite import SqliteTaskStore`` (and ``SCHEMA_VERSION``, the
file format a release writes, docs/UPGRADING.md).  The file claim (``claim.py``) is
this engine's: PostgreSQL has no file to claim.
"""

from lldsched.stores.sqlite.store import (
    APPLICATION_ID,
    MIGRATIONS,
    SCHEMA_VERSION,
    SqliteTaskStore,
)

__all__ = ["APPLICATION_ID", "MIGRATIONS", "SCHEMA_VERSION", "SqliteTaskStore"]
