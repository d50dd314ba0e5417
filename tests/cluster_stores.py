"""Shared stores by engine, as a child process opens them: :class:`StoreSpec` and
:func:`open_store` (re-exported by :mod:`tests.cluster`, where the fixtures are).

Apart from :mod:`tests.cluster` so that a child scheduler (:mod:`tests.cluster_child`)
imports neither pytest nor the fixtures: about a third of a child's start-up was pytest's
import, paid again by every child of every multi-process test.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NamedTuple

from lldsched.coordination import CoordinatedStore
from lldsched.stores.sqlite import SqliteTaskStore


class StoreSpec(NamedTuple):
    """Which engine, and what opens it (JSON-able: it is passed to child processes)."""

    engine: str
    params: dict[str, Any]

    def to_json(self) -> str:
        return json.dumps({"engine": self.engine, "params": self.params})

    @classmethod
    def from_json(cls, text: str) -> StoreSpec:
        data = json.loads(text)
        return cls(data["engine"], data["params"])


def _open_sqlite(spec: StoreSpec, *, lease: float, poll: float, **options: Any) -> CoordinatedStore:
    return SqliteTaskStore(spec.params["path"], shared=True, lease=lease, poll=poll, **options)


def _open_postgres(
    spec: StoreSpec, *, lease: float, poll: float, **options: Any
) -> CoordinatedStore:
    from lldsched.stores.postgres import PostgresTaskStore  # psycopg: only when it is used

    return PostgresTaskStore(spec.params["dsn"], lease=lease, poll=poll, **options)


OPENERS: dict[str, Callable[..., CoordinatedStore]] = {
    "pgbouncer": _open_postgres,  # the same store, its dsn PgBouncer's
    "postgres": _open_postgres,
    "sqlite": _open_sqlite,
}
"""Engine name -> ``opener(spec, lease=..., poll=..., **options)``: the spec opened with
``shared=True`` (``options``, such as ``timeout``, go to the store as they are)."""


def open_store(
    spec: StoreSpec, *, lease: float = 30.0, poll: float = 1.0, **options: Any
) -> CoordinatedStore:
    """``spec`` opened as a shared store in this process (``options`` go to the store:
    ``timeout``, say)."""
    return OPENERS[spec.engine](spec, lease=lease, poll=poll, **options)
