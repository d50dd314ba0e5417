"""What a store is given, checked, whichever store it is: the bounds every store holds a
task's id and text to (:data:`MAX_ID_BYTES`, :func:`check_id_size`, :func:`unstorable`,
:func:`check_storable`), the ids a store's reads and deletes take (:func:`records_asked`,
:func:`id_asked`), and the error for what is given as a runtime's store but is none
(:func:`not_a_store`).  Part of the persistence seam (:mod:`lldsched.persistence`); standard
library only, as the seam is.
"""

from __future__ import annotations

from lldsched.checks import id_hint, instance_hint
from lldsched.errors import ValidationError, shown
from lldsched.redaction import hide_passwords

__all__ = [
    "MAX_ID_BYTES",
    "SHORT_ID",
    "check_id_size",
    "check_storable",
    "id_asked",
    "not_a_store",
    "records_asked",
    "unstorable",
]


MAX_ID_BYTES = 2000
"""The longest task id, in bytes of UTF-8, on every store and runtime.  The PostgreSQL
store keeps an id as an index key (the tasks', records', leases' and removals'), and
PostgreSQL refuses a key over 2,704 bytes *after compression*: a random id over 2,689
bytes in the records' key (the id and an 8-byte sequence), a repetitive one of 100,000
passed.  A round bound under it, the same whatever the id is made of and whichever the
store: an id tried on the in-memory or SQLite store is not refused on moving to
PostgreSQL (docs/decisions/checking-input.md, "A task id is at most 2,000 bytes")."""


SHORT_ID = MAX_ID_BYTES // 4
"""An id of at most this many characters is within :data:`MAX_ID_BYTES` (UTF-8 takes at
most four bytes a character): only a longer one is encoded to be measured."""


_WHY_BOUNDED = {
    "id": "PostgreSQL keeps an id as an index key",
    "name": "a name is written with every record, log line and view of its task",
}


def check_id_size(task_id: str, *, nothing: str, field: str = "id") -> None:
    """Refuse a task id over :data:`MAX_ID_BYTES` with a :class:`ValidationError` naming
    its start, its size and the bound; ``nothing``: what the caller did not do
    (``"registered"``, ``"written"``).  One ``len`` for an id of at most
    :data:`SHORT_ID` characters (a caller on a hot path tests that first).
    ``field="name"``: the same bound on a task's name (a name of a million characters
    was taken, and written whole into every record, log line and message of its task)."""
    if len(task_id) <= SHORT_ID:
        return
    size = len(task_id.encode("utf-8", "surrogatepass"))
    if size > MAX_ID_BYTES:
        raise ValidationError(
            f"task {field} {task_id[:40]!r}... ({size} bytes in UTF-8) is longer than the "
            f"{MAX_ID_BYTES} bytes a task {field} may have (the same bound on every store: "
            f"{_WHY_BOUNDED[field]}); nothing was {nothing}"
        )


def unstorable(text: str) -> str | None:
    """What in ``text`` no durable store keeps as text, said; None if nothing: a NUL
    (PostgreSQL's ``text`` holds none; an SQLite store kept it, and a move to PostgreSQL
    failed on it) or a lone surrogate (UTF-8 refuses it: both drivers raised a bare
    ``UnicodeEncodeError`` naming neither the task nor the value).  The one rule of
    every text a durable store writes (docs/decisions/checking-input.md, "Text a durable store
    cannot keep"): :func:`check_storable`, ``stores.codec.check_written``."""
    if "\x00" in text:
        return "a NUL (\\x00)"
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "a lone surrogate (not UTF-8: text decoded from bytes with surrogateescape?)"
    return None


def check_storable(field: str, value: str, *, nothing: str) -> None:
    """Refuse a task's ``field`` (``"id"``, ``"name"``) holding text no durable store
    keeps (:func:`unstorable`) with a :class:`ValidationError` naming it; ``nothing``:
    what the caller did not do (``"registered"``, ``"written"``).  Asked by every
    registration for its name, whatever the store (as :func:`check_id_size` is for its
    id: a name tried on the in-memory store is not refused on moving to a durable one),
    and by a durable store for every definition it writes."""
    problem = unstorable(value)
    if problem is not None:
        raise ValidationError(
            f"task {field} {value!r} holds {problem}, which a durable store cannot keep "
            f"as text (refused on every store); nothing was {nothing}"
        )


def not_a_store(given: object) -> ValidationError:
    """The error for ``given`` where a runtime takes a :class:`TaskStore`.  A path or a
    dsn (``store=os.environ["DATABASE_URL"]``) is told which store opens it, and shown
    with any password in it hidden: the error was quoted whole into the traceback a
    service logs as it fails to start."""
    if isinstance(given, str | bytes) or hasattr(given, "__fspath__"):
        text = given.decode("utf-8", "replace") if isinstance(given, bytes) else str(given)
        return ValidationError(
            f"store must be a TaskStore (save, delete and load_all methods), got "
            f"{hide_passwords(text)!r}: open the store it names and pass that, "
            "SqliteTaskStore(path) for a file, "
            "lldsched.stores.postgres.PostgresTaskStore(dsn) for a PostgreSQL dsn"
        )
    return ValidationError(
        f"store must be a TaskStore (save, delete and load_all methods), got {shown(given)}"
        f"{instance_hint(given)}"
    )


def records_asked(task_id: object) -> str | None:
    """A store's ``records(task_id)`` argument checked: a task id (a ``str``) or None (every
    task's).  Another value matched no row and answered ``[]`` (``records(5)``), or failed
    in the database and was reported as the store failing (``records(["a"])``)."""
    if task_id is None or isinstance(task_id, str):
        return task_id
    raise ValidationError(f"records() takes a task id (a str) or None, got {shown(task_id)}")


def id_asked(task_id: object, verb: str) -> str:
    """A store's ``get(task_id)`` or ``delete(task_id)`` argument checked: a task id (a
    ``str``), else :class:`ValidationError` naming it.  ``get(5)`` answered None and
    ``delete(5)`` deleted nothing, unsaid, where ``records(5)`` is refused
    (:func:`records_asked`): a tool that forgets ``.id`` (``store.delete(snapshot)``)
    believed the row gone."""
    if isinstance(task_id, str):
        return task_id
    raise ValidationError(
        f"{verb}() takes a task id (a str), got {shown(task_id)}{id_hint(task_id)}"
    )
