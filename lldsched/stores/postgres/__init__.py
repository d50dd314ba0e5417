"""The PostgreSQL store: :class:`PostgresTaskStore`, one set of tasks shared by
scheduler processes on many hosts.

The class is written in modules (``store.py`` opens and closes it; the others, mixed
in or called, are listed in docs/ARCHITECTURE.md, "The packages"); this package gives
its public name where it has always been imported from:
``from lldsched.stores.postgres import PostgresTaskStore``.  psycopg is an optional
extra: importing this package (or any module of it) without it raises the
``ImportError`` that names the extra (:mod:`lldsched.stores.postgres.driver`), and
``import lldsched`` never imports it.
"""

from lldsched.stores.postgres.store import PostgresTaskStore

__all__ = ["PostgresTaskStore"]
