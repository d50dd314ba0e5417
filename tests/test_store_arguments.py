# The rows capture their wrong value as a lambda's default, whose type mypy cannot infer
# ([misc]); the values are wrong on purpose.
# mypy: disable-error-code="misc"
"""Every store refuses a malformed argument the same way: a ``ValidationError`` (a
``ValueError``), raised by its constructor before anything is opened, quoting the bad value
(tests/test_bad_input_table.py's rule, with its type pinned: a wrong argument is not a
store that cannot be opened, ``StoreError``).

Before, ``PostgresTaskStore(5432)`` raised a ``StoreError`` where ``SqliteTaskStore(5)``
raised a ``ValidationError``; a dsn holding a NUL opened what came before it (libpq's C
string ends there), one holding a lone surrogate raised a bare ``UnicodeEncodeError``; and
a path-like whose ``__fspath__`` gives bytes raised a bare ``TypeError`` from inside the
SQLite open.  Nothing here reaches a server: each is refused before connecting.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lldsched import InMemoryTaskStore, SqliteTaskStore, ValidationError
from lldsched.stores.postgres import PostgresTaskStore
from tests.test_bad_input_table import Named, check_error, ids

# Where a dsn that slipped through would connect: nothing listens on port 1.
NOWHERE = "host=127.0.0.1 port=1 connect_timeout=1"


class BytesPath(os.PathLike[str]):
    """A path-like whose ``__fspath__`` gives bytes (``os.DirEntry`` of a bytes listing)."""

    def __fspath__(self) -> str:
        return b"tasks.db"  # type: ignore[return-value]  # wrong on purpose

    def __repr__(self) -> str:
        return "BytesPath(b'tasks.db')"


class BrokenPath(os.PathLike[str]):
    """A path-like whose ``__fspath__`` raises."""

    def __fspath__(self) -> str:
        raise TypeError("no path here")

    def __repr__(self) -> str:
        return "BrokenPath()"


Build = Callable[[], object]
ROWS: list[tuple[str, Build, object]] = []
value: Any  # the loop variables of the table: a wrong value of any type, on purpose
key: str

for value in (5432, None, 2.5, ["host=h"]):
    ROWS.append((f"PostgresTaskStore({value!r})", lambda v=value: PostgresTaskStore(v), value))
ROWS.append(("PostgresTaskStore(b'...')", lambda: PostgresTaskStore(b"host=h"),  # type: ignore[arg-type]
             Named("got bytes 'host=h'")))  # fmt: skip
for value in (f"{NOWHERE}\x00 dbname=other", f"{NOWHERE} dbname=\udcff"):
    ROWS.append(
        (f"PostgresTaskStore({value!r})", lambda v=value: PostgresTaskStore(v, timeout=2), value)
    )
for key, value in [("lease", 0), ("poll", math.nan), ("retention", 0), ("retention", "10"),
                   ("timeout", 0), ("timeout", None)]:  # fmt: skip
    ROWS.append((f"PostgresTaskStore({key}={value!r})",
                 lambda k=key, v=value: PostgresTaskStore(NOWHERE, **{k: v}), value))  # fmt: skip
for value in (5, None, b"tasks.db", BytesPath(), BrokenPath()):
    ROWS.append((f"SqliteTaskStore({value!r})", lambda v=value: SqliteTaskStore(v), value))
for key, value in [("retention", 0), ("timeout", -1), ("synchronous", "fast"), ("shared", 1)]:
    ROWS.append((f"SqliteTaskStore({key}={value!r})",
                 lambda k=key, v=value: SqliteTaskStore(":memory:", **{k: v}), value))  # fmt: skip
for value in (0, True, "10", 2.5):
    ROWS.append((f"InMemoryTaskStore(retention={value!r})",
                 lambda v=value: InMemoryTaskStore(retention=v), value))  # fmt: skip


@pytest.mark.parametrize(("label", "call", "bad"), ROWS, ids=ids(ROWS))
def test_every_store_refuses_a_malformed_argument_with_a_validation_error_quoting_it(
    label: str, call: Build, bad: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a relative path slipped through is made here
    with pytest.raises(Exception) as caught:
        made = call()
        close = getattr(made, "close", None)
        if close is not None:
            close()
    check_error(caught.value, bad)
    assert isinstance(caught.value, ValidationError), (
        f"{label}: {type(caught.value).__name__}, not a ValidationError: {caught.value}"
    )
    assert list(tmp_path.iterdir()) == []  # refused before anything was made
