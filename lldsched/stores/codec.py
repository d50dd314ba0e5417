"""The JSON form of a task definition, for durable stores.  No pickle, anywhere.

Opening a store must run no code beyond importing the functions it names, so a
definition is plain JSON:

* the **callable** as an import path, ``"package.module:qualified.name"``.  At
  registration the path must import back to the very same object; a lambda, a
  closure, a nested function, a ``functools.partial``, a bound method of an
  instance or anything else whose path does not round-trip is a
  :class:`~lldsched.errors.ValidationError` then, not a surprise at the next start;
* ``args`` and ``kwargs`` that survive ``json.dumps`` / ``json.loads`` unchanged
  (a tuple nested in the arguments would come back a list: rejected);
* the **schedule** through a small explicit registry, type name to
  ``to_dict`` / ``from_dict`` (:mod:`lldsched.stores.schedulecodec`, whose
  :func:`encode_schedule`, :func:`decode_schedule` and :func:`register_schedule` this
  module re-exports): ``OneTime``, ``FixedDelay``, ``FixedRate``, ``CronSchedule`` and
  the decorators ``Jittered`` and ``Window`` are registered; :func:`register_schedule`
  adds a type, whose ``from_dict`` of the JSON ``to_dict`` gave must build a schedule
  equal to the one encoded;
* the retry and misfire policies as their fields; a subclass of ``RetryPolicy`` (a
  backoff of one's own) adds its class as an import path (``"policy"``), checked at
  registration to be rebuilt equal from those fields;
* ``depends_on`` as a list of task ids (absent in documents written before it).
* an overlap policy (only when the task has one) as ``"overlap"`` (its value) and
  ``"max_instances"``.

A ``Window``'s count of successful runs is not part of the definition: a store
that rebuilds a task passes its counters to :func:`decode_task` (``runs=``), which
hands the count back to the window.

Decoding builds every value through its validating constructor, so a stored
value that became invalid is an error, never a half-built task, and a key it does
not know (a definition written by a newer lldsched) is refused, naming it, never
dropped (:func:`~lldsched.stores.schedulecodec.refuse_unknown`, the schedule's rule
too).  Upgrade day (docs/UPGRADING.md): a path that imported its callable under an
alias (a function renamed, its old name kept) is stored again under the
callable's own by a store's load (:func:`renamed`); a shared store's feed reads a
definition this process cannot load with the one it has (:class:`Unreadable`).
"""

from __future__ import annotations

import json
import logging
import marshal
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, NoReturn, TypeVar

from lldsched.checks import FARTHEST, seconds
from lldsched.core.registration import options_of, validated
from lldsched.errors import LldschedError, StoreError, ValidationError, shown
from lldsched.importpath import import_callable, import_path, json_arguments
from lldsched.logs import STORE
from lldsched.model import ExecutionRecord, Outcome, Priority, TaskStatus
from lldsched.persistence import Lease, Task, TaskSnapshot, check_storable, unstorable
from lldsched.policies import Misfire, MisfirePolicy, Overlap, RetryPolicy
from lldsched.schedules.catchup import unwrap
from lldsched.schedules.decorators import restore_runs
from lldsched.stores.schedulecodec import (
    decode_schedule,
    encode_schedule,
    refuse_unknown,
    register_schedule,
)

__all__ = [
    "BadValue",
    "Listed",
    "NotImported",
    "SharedParts",
    "Undecodable",
    "UnknownStatus",
    "Unreadable",
    "callable_path",
    "check_kept",
    "check_take_over",
    "check_written",
    "decode_schedule",
    "decode_task",
    "encode_schedule",
    "encode_task",
    "lease_from",
    "listed_from",
    "load_each",
    "moved_paths",
    "plan_ends",
    "record_from",
    "register_schedule",
    "renamed",
    "resolve_callable",
    "resume_at",
    "said",
    "snapshot_from",
    "status_of",
    "unstorable",
]

log = logging.getLogger(STORE)


# -- callables ---------------------------------------------------------------------------


def callable_path(action: Callable[..., Any]) -> str:
    """``"module:qualname"`` of ``action``, checked to import back to the same object
    (the rule of :func:`lldsched.importpath.import_path`)."""
    return import_path(action, who="a durable store")


def resolve_callable(path: str) -> Callable[..., Any]:
    """Import the callable named ``"module:qualname"``; :class:`StoreError` if it does not."""
    return import_callable(path, error=StoreError)


# -- definitions -------------------------------------------------------------------------


_DOCUMENT_FIELDS = frozenset(
    ("name", "action", "schedule", "priority", "retry", "timeout", "args", "kwargs", "misfire",
     "isolation", "depends_on", "overlap", "max_instances")
)  # fmt: skip
"""The keys of a definition :func:`encode_task` writes (the last four only when set)."""
_MISFIRE_FIELDS = frozenset(("on_misfire", "grace", "max_catch_up"))
_RETRY_FIELDS = (
    "max_attempts", "initial_backoff", "multiplier", "max_backoff", "jitter",
    "fail_after_given_up",  # absent in older documents
)  # fmt: skip
_RETRY_KEYS = frozenset((*_RETRY_FIELDS, "policy"))  # "policy": a subclass's import path


def check_text(task: Task) -> None:
    """Refuse a task whose id or name a durable store cannot keep as text
    (:func:`~lldsched.persistence.unstorable`): an id made from a file name
    ``os.listdir`` decoded, say.  Every other string of a definition is JSON, which
    escapes both.  Asked by :func:`encode_task`, when a definition is written (a
    registration, a replacement); every registration asked it of the name already,
    whatever the store (:func:`~lldsched.persistence.check_storable`)."""
    for field, value in (("id", task.id), ("name", task.name)):
        check_storable(field, value, nothing="written")


def check_written(snapshot: TaskSnapshot, records: Sequence[ExecutionRecord] = ()) -> None:
    """Refuse, before anything is written, a state or record holding text no durable
    store keeps (:func:`unstorable`): the snapshot's ``last_error``, a record's
    ``task_id``, ``name``, ``error``, ``result`` or ``node``.  A
    :class:`ValidationError` naming the task, the field and the value; nothing of the
    write is made (in a settle batch, nothing of the others' settles is lost with it).
    The runtimes never reach it: they write ``errors.escaped`` text
    (:func:`~lldsched.errors.error_text`, :func:`~lldsched.core.results.result_text`);
    a tool of one's own that saves records or snapshots it built does, and may escape
    the text so itself (:func:`~lldsched.errors.escaped`).  Every write of both durable
    stores asks it first.  Ordinary text costs one ``isascii`` and one scan for NUL of
    the texts joined, per snapshot and per record."""
    error = snapshot.last_error
    if error is not None and (not error.isascii() or "\x00" in error):
        _refuse_text(snapshot.task.id, "last_error", error)
    for record in records:
        task_id, name, error, result, node = _RECORD_TEXTS(record)
        joined = f"{task_id}{name}{error or ''}{result or ''}{node or ''}"
        if joined.isascii() and "\x00" not in joined:
            continue
        for field, value in zip(_RECORD_TEXT, (task_id, name, error, result, node), strict=True):
            if value is not None:
                _refuse_text(task_id, f"record's {field}", value)


_RECORD_TEXT = ("task_id", "name", "error", "result", "node")
_RECORD_TEXTS = operator.itemgetter(*map(ExecutionRecord._fields.index, _RECORD_TEXT))
"""A record's texts, in the order of ``_RECORD_TEXT``: one call (the per-run path)."""


def _refuse_text(task_id: str, field: str, value: str) -> None:
    """A :class:`ValidationError` if ``value`` (the ``field`` of task ``task_id``) is
    :func:`unstorable`."""
    problem = unstorable(value)
    if problem is not None:
        raise ValidationError(
            f"task {task_id!r}: the {field} {value!r} holds {problem}, which a durable "
            "store cannot keep as text; nothing was written (errors.escaped writes such "
            "text as its escapes, as the runtimes do)"
        )


def encode_task(task: Task) -> str:
    """The definition of ``task`` as JSON text; :class:`ValidationError` if it cannot be
    (its id and name too: :func:`check_text`)."""
    check_text(task)
    try:
        schedule = encode_schedule(unwrap(task.schedule))
    except ValidationError as exc:
        raise ValidationError(f"task {task.name!r}: {exc}") from None
    try:
        args, kwargs = json_arguments(task.args, task.kwargs)
    except (TypeError, ValueError) as exc:
        raise ValidationError(
            f"task {task.name!r}: a durable store needs args and kwargs that JSON keeps "
            f"unchanged (str, int, float, bool, None, lists, str-keyed dicts), got "
            f"args={shown(task.args)}, kwargs={shown(task.kwargs)}: {exc}"
        ) from None
    try:
        action = None if task.action is None else callable_path(task.action)
    except ValidationError as exc:
        raise ValidationError(f"task {task.name!r}: {exc}") from None
    retry = task.retry
    retry_document = _retry_document(task.name, retry)
    misfire = task.misfire
    document = {
        "name": task.name,
        "action": action,
        "schedule": schedule,
        "priority": int(task.priority),
        "retry": retry_document,
        "timeout": task.timeout,
        "args": args,
        "kwargs": kwargs,
        "misfire": None
        if misfire is None
        else {
            "on_misfire": misfire.on_misfire.value,
            "grace": misfire.grace,
            "max_catch_up": misfire.max_catch_up,
        },
    }  # every key written here and below is in _DOCUMENT_FIELDS (decode refuses others)
    if task.isolation != "thread":  # absent in older documents, and for thread tasks
        document["isolation"] = task.isolation
    if task.depends_on:  # absent in older documents, and for tasks without upstreams
        document["depends_on"] = list(task.depends_on)
    if task.overlap is not None:  # only then: documents of other tasks stay as they were
        document["overlap"] = task.overlap.value
        document["max_instances"] = task.max_instances
    try:
        return json.dumps(document, allow_nan=False, separators=(",", ":"))
    except ValueError as exc:  # a NaN or infinity: a guard, every value was checked before
        raise ValidationError(f"task {task.name!r}: cannot be stored as JSON: {exc}") from None


def decode_task(
    task_id: str,
    text: str,
    *,
    runs: int = 0,
    imports: bool = True,
    shared: SharedParts | None = None,
) -> Task:
    """The :class:`Task` stored as ``text``; :class:`StoreError` naming what is wrong.
    ``runs``: the task's successful runs so far (a ``Window``'s ``max_runs`` counts
    them).  A field this version does not know (written by a newer lldsched) is
    refused, never dropped: the task would run without it, and a later write would
    erase it.  ``imports=False`` (a read to show, :mod:`lldsched.stores.peek`) imports
    nothing the definition names: the action is its path as text (:class:`NotImported`),
    a retry policy of one's own class is read as a plain ``RetryPolicy`` of its fields,
    and a schedule type not registered here is :class:`NotImported` too.  ``shared``: a
    read of many rows decodes the parts their definitions share once
    (:class:`SharedParts`); the task, or the error, is the one decoded without it."""
    try:
        document = json.loads(text)
        if not isinstance(document, dict):  # valid JSON, but no definition: a damaged row
            raise ValueError(f"it is JSON {type(document).__name__}, not an object")
        if not document.keys() <= _DOCUMENT_FIELDS:  # the check a load makes per task: a
            refuse_unknown(document, _DOCUMENT_FIELDS, where="the definition")  # set test
        misfire_doc = document["misfire"]
        if misfire_doc is not None and not misfire_doc.keys() <= _MISFIRE_FIELDS:
            refuse_unknown(misfire_doc, _MISFIRE_FIELDS, where="its misfire policy")
        if not document["retry"].keys() <= _RETRY_KEYS:
            refuse_unknown(document["retry"], _RETRY_KEYS, where="its retry policy")
        name = document["name"]
        _of_type(name, str, "name")
        if (problem := unstorable(name)) is not None:  # JSON escapes what no write makes;
            # loaded, each write of the task (its records hold the name) was refused
            raise StoreError(
                f"its stored definition is invalid: its name {shown(name)} holds {problem}, "
                "which no write of lldsched makes"
            )
        _of_type(document["args"], list, "args")
        if document["kwargs"] is not None:  # None: no keyword arguments
            _of_type(document["kwargs"], dict, "kwargs")
        path = document["action"]
        if not imports:
            action: Any = None if path is None else NotImported(path)
        else:
            action = None if path is None else resolve_callable(path)
        parts = _parts if shared is None else shared.parts
        schedule, misfire, timeout, priority, retry = parts(document, imports)
        restore_runs(schedule, task_id, runs)
        overlap = document.get("overlap")  # absent: no policy (and in older documents)
        task = Task(
            task_id,
            name,
            action,
            schedule,
            priority,
            retry,
            timeout,
            tuple(document["args"]),
            document["kwargs"],
            misfire,
            document.get("isolation", "thread"),
            _depends_on(document.get("depends_on", [])),
            None if overlap is None else Overlap(overlap),
            document.get("max_instances"),
        )
        # What registration checks and the lines above do not: an isolation, the ids of
        # depends_on, an overlap with max_instances, all together, and a blank name; else
        # refused only as a start restores the task, every start of a shared store's
        # nodes with it. Asked of a definition that has one of them (registration's rule
        # costs a fifth of a load); without the action: whether it takes ctx is the
        # code's, read by the start; not beside a schedule a read to show has as text.
        if (
            task.isolation != "thread" or task.depends_on or overlap is not None
            or task.max_instances is not None or not name.strip()
        ) and not isinstance(schedule, NotImported):  # fmt: skip
            validated(name, None, schedule, tz="UTC", **options_of(task), check_arguments=False)
        return task
    except StoreError as exc:
        raise StoreError(f"task {task_id}: {exc}") from None
    except _MISREAD as exc:
        raise StoreError(f"task {task_id}: its stored definition is invalid: {exc!r}") from None


_MISREAD = (LldschedError, ValueError, TypeError, KeyError, AttributeError, RecursionError)
"""What decoding a damaged definition raises.  AttributeError: a part stored as another
JSON type (a list where an object is read), which raised past the load (every row lost its
say, not only this one's); RecursionError: values nested deeper than json.loads reads (a
row edited by hand)."""


_Parts = tuple[Any, "MisfirePolicy | None", "float | None", Priority, RetryPolicy]
"""A definition's schedule, misfire policy, timeout, priority and retry policy: what
many tasks of a store have alike (:class:`SharedParts`)."""


def _parts(document: Mapping[str, Any], imports: bool) -> _Parts:
    """The parts of ``document`` :data:`_Parts` names, each built and checked (what is
    wrong raises, in this order: as :func:`decode_task` read them before they were
    shared, so a row wrong twice is named by the same error)."""
    if imports:
        schedule = decode_schedule(document["schedule"])
    else:
        schedule = _schedule_as_is(document["schedule"])
    misfire_doc = document["misfire"]
    misfire = None
    if misfire_doc is not None:
        misfire = MisfirePolicy(
            Misfire(misfire_doc["on_misfire"]),
            grace=misfire_doc["grace"],
            max_catch_up=misfire_doc["max_catch_up"],
        )
    timeout = document["timeout"]
    if timeout is not None:
        seconds(timeout, name="timeout", above=0, error=ValueError, expected="must be seconds > 0")
    priority = _priority(document["priority"])
    return schedule, misfire, timeout, priority, _retry_policy(document["retry"], imports=imports)


class SharedParts:
    """The parts of definitions (:data:`_Parts`) decoded once for every row that holds
    them alike, in one read of many rows: ``decode_task(..., shared=SharedParts())``.
    A store's tasks mostly share them (a few schedules, one retry policy); building
    them was most of a definition's decoding (a retry policy's checks), and a listing of
    100,000 tasks built each 100,000 times.

    The rows holding equal parts are given the same objects: immutable values, but a
    schedule is shared too (as ``FixedRate``'s equal values are; a ``Window`` counts each
    task's runs apart), so a read for a runtime to run builds its own.  Parts are equal
    when their parsed JSON is, types included: the key is its ``marshal`` bytes (format
    2: no references; a float by its bits), which tell ``1``, ``1.0`` and ``true`` apart,
    and ``-0.0`` from ``0.0``, where ``==`` does not.  Parts that fail are not kept: each
    row holding them raises its own error, as without sharing."""

    def __init__(self) -> None:
        self._parts: dict[bytes, _Parts] = {}

    def parts(self, document: Mapping[str, Any], imports: bool) -> _Parts:
        """:func:`_parts` of ``document``, built once for equal parts."""
        try:
            key = marshal.dumps(
                (imports, *(document.get(name, _ABSENT) for name in _SHARED_FIELDS)), 2
            )
        except ValueError:  # a part absent (or nested past marshal's 2,000): built alone
            return _parts(document, imports)
        found = self._parts.get(key)
        if found is None:
            found = self._parts[key] = _parts(document, imports)
        return found


_SHARED_FIELDS = ("schedule", "misfire", "timeout", "priority", "retry")
_ABSENT = object()  # a part the document lacks (not null): marshal refuses it; _parts raises


class NotImported:
    """What a definition names by its import path (an action, a schedule class of one's
    own), kept as that text by a read that imports nothing (``decode_task(...,
    imports=False)``): an operator's shell need not have the service's code.  Calling it
    raises a :class:`StoreError` naming the path; it is never run."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self, *args: object, **kwargs: object) -> NoReturn:
        raise StoreError(f"{self.path} was read as text, not imported: it cannot run here")

    def explain(self) -> str:
        """The path itself (a schedule's ``explain``: what :func:`describe` shows)."""
        return self.path

    def __repr__(self) -> str:
        return self.path


def _schedule_as_is(document: Mapping[str, Any]) -> Any:
    """The schedule ``document`` describes, built if its type is registered here (the
    built-in ones always are), else :class:`NotImported` naming its type and fields."""
    try:
        return decode_schedule(document)
    except StoreError:
        fields = {key: value for key, value in document.items() if key != "type"}
        return NotImported(f"{document.get('type')} {json.dumps(fields, sort_keys=True)}")


def _priority(value: object) -> Priority:
    """The stored priority: one of :class:`Priority`'s values, as an integer (ValueError
    otherwise: ``Priority(True)`` and ``Priority(1.0)`` were read as ``NORMAL``)."""
    if type(value) is not int or value not in _PRIORITIES:
        raise ValueError(f"priority must be one of {sorted(_PRIORITIES)} (Priority), got {value!r}")
    return Priority(value)


_PRIORITIES = frozenset(int(priority) for priority in Priority)


def _of_type(value: object, kind: type, field: str) -> None:
    """ValueError unless the stored ``field`` is a ``kind`` (a damaged or hand-edited
    row: a ``"name"`` of 5 was restored as a task named 5, ``"args"`` of ``"ab"`` as
    ``("a", "b")``)."""
    if not isinstance(value, kind):
        raise ValueError(f"{field} must be a JSON {_JSON[kind]}, got {value!r}")


_JSON: dict[type, str] = {str: "string", list: "array", dict: "object"}


def _retry_document(name: str, retry: RetryPolicy) -> dict[str, Any]:
    """``retry`` as its fields; a subclass also as its class's import path (``"policy"``),
    checked to be rebuilt equal from those fields (ValidationError otherwise)."""
    fields: dict[str, Any] = {name: getattr(retry, name) for name in _RETRY_FIELDS}
    kind = type(retry)
    if kind is RetryPolicy:
        return fields
    try:
        path = callable_path(kind)
        again = kind(**fields)
    except ValidationError as exc:
        raise ValidationError(f"task {name!r}: its retry policy {retry!r}: {exc}") from None
    except TypeError as exc:
        raise ValidationError(
            f"task {name!r}: a durable store rebuilds the retry policy {retry!r} as "
            f"{kind.__name__}(**fields), which raised {exc!r}"
        ) from None
    if again != retry:
        raise ValidationError(
            f"task {name!r}: a durable store would give the retry policy {retry!r} back as "
            f"{again!r}: a RetryPolicy subclass keeps no state beyond RetryPolicy's fields"
        )
    return {**fields, "policy": path}


def _retry_policy(document: Mapping[str, Any], *, imports: bool = True) -> RetryPolicy:
    """The retry policy :func:`_retry_document` wrote (its class imported by path; not
    imported, a plain ``RetryPolicy`` of its fields, when ``imports`` is False)."""
    fields = dict(document)
    path = fields.pop("policy", None)
    if path is None or not imports:
        return RetryPolicy(**fields)
    kind = resolve_callable(path)
    if not (isinstance(kind, type) and issubclass(kind, RetryPolicy)):
        raise StoreError(f"retry policy {path!r} is {kind!r}, not a RetryPolicy subclass")
    policy: RetryPolicy = kind(**fields)
    return policy


def _depends_on(ids: object) -> tuple[str, ...]:
    """The stored upstream ids: a list of strings (ValueError otherwise)."""
    if not isinstance(ids, list) or not all(isinstance(i, str) and i for i in ids):
        raise ValueError(f"depends_on must be a list of task ids, got {ids!r}")
    return tuple(ids)


def moved_paths(task: Task, text: str) -> tuple[str, list[str]] | None:
    """The definition to store instead of ``text`` (and the paths it changes, ``"old ->
    new"``), when a path in ``text`` imported a callable that now lives under another
    name: an alias kept after a rename or a move (``old_name = new_name``).  None when
    ``text`` names every callable by its own path, or when the callable has no path of
    its own to name (it is left as stored).

    A store writes the new text when it loads the task, so the alias may go in the next
    release; without it, registering the same function again changes nothing (the
    definitions are equal) and the row would keep naming the alias for ever."""
    named = [task.action, type(task.retry)]
    if all(thing is None or thing is RetryPolicy or _stored_as(thing) in text for thing in named):
        return None  # the common case: a substring test per callable, no parsing
    try:
        current = encode_task(task)
    except ValidationError:  # no importable path of its own (a wrapper): leave it
        return None
    old, new = json.loads(text), json.loads(current)
    moves = [
        f"{before} -> {after}"
        for before, after in (
            (old["action"], new["action"]),
            (old["retry"].get("policy"), new["retry"].get("policy")),
        )
        if before != after
    ]
    return (current, moves) if moves else None


def renamed(
    snapshots: Sequence[TaskSnapshot], texts: Sequence[str], *, store: str
) -> list[tuple[str, str, str]]:
    """The definitions a store rewrites after a load (``texts[i]`` is what it held for
    ``snapshots[i]``): ``(new text, task id, old text)`` for each whose callable moved
    (:func:`moved_paths`), each said once in an INFO line naming the task and both paths.
    A store writes each only if its row still holds the old text."""
    moved = []
    for snapshot, text in zip(snapshots, texts, strict=True):
        found = moved_paths(snapshot.task, text)
        if found is not None:
            current, moves = found
            moved.append((current, snapshot.task.id, text))
            log.info(
                "task %s in %s named its callable by an alias: stored again as %s "
                "(the old name can go in the next release)",
                snapshot.task.id,
                store,
                ", ".join(moves),
                extra={"task_id": snapshot.task.id},
            )
    return moved


def _stored_as(thing: object) -> str:
    """How :func:`encode_task` writes the path of ``thing``, quoted (a path JSON would
    escape, a non-ASCII name, is not found: the caller then parses and compares)."""
    return f'"{getattr(thing, "__module__", "")}:{getattr(thing, "__qualname__", "")}"'


class UnknownStatus(StoreError):
    """A row's status this release does not know: a newer release wrote it (a rolling
    deploy), or the row was written by hand.  Its ``status`` is the stored text."""

    def __init__(self, task_id: str, status: object) -> None:
        self.status = status
        super().__init__(
            f"task {task_id}: status {status!r} is none this release of lldsched knows "
            "(a newer release wrote it?)"
        )


class BadValue(StoreError):
    """A row holding a value of another type than its store writes there (an SQLite row
    edited by hand or written by another tool: SQLite keeps text in a numeric column).
    Its ``said`` names each such value (table, row, column, value).  Like an
    :class:`UnknownStatus`, the row's state cannot be followed: a shared store's feed
    leaves the task out (:class:`Unreadable`) and reads the row again at its next write."""

    def __init__(self, task_id: str, said: Sequence[str]) -> None:
        self.said = tuple(said)
        super().__init__(
            f"task {task_id}: its row holds a value the store cannot read: {'; '.join(said)}"
        )


def status_of(task_id: str, text: object) -> TaskStatus:
    """The status a row of ``task_id`` stores as ``text``; :class:`UnknownStatus` if this
    release knows none of that name.  The one rule of both durable stores' rows."""
    try:
        return TaskStatus(text)
    except ValueError:
        raise UnknownStatus(task_id, text) from None


def check_take_over(task_id: str, status: object) -> None:
    """Refuse to take over (:meth:`CoordinatedStore.take_over
    <lldsched.persistence.CoordinatedStore.take_over>`: a registration with
    ``replace_existing=True`` of a task left out here) a row whose status this release
    does not know: a replacement keeps the row's state, and this one cannot be read, nor
    guessed (a newer release's status may mean its task must not run).  A
    :class:`StoreError` saying so and what to do; nothing is written."""
    try:
        status_of(task_id, status)
    except UnknownStatus as exc:
        raise StoreError(
            f"cannot replace task {task_id!r}: {exc}; its row was left untouched. Run the "
            "release that wrote it (its processes follow it), register the task under "
            "another id, or delete its row with the store's delete(task_id) if what that "
            "status meant is known to be over"
        ) from None


# -- the values of a row -----------------------------------------------------------------
#
# The one place a durable store's row becomes values (SQLite's and PostgreSQL's, shared or
# not): each value it reads is checked here, its type and its range, before anything uses
# it.  A value no write of lldsched makes (a row edited by hand, written by another tool or
# damaged: an attempt of -1, a failure count above the run count, a NaN, infinite or absurd due
# instant, a record's outcome no release knows) is a BadValue naming the task, the column
# and the value, never a task half restored, a TypeError deep inside, or a silent misread.


def said(table: str, key: str, column: str, value: object, expected: str) -> str:
    """How a value a store cannot read is named, the one wording of every store's rows
    (``sqlite_rows.misread``, the SQLite open's scan, too): ``"table tasks, row id='b',
    column attempt holds the integer -1, where the store writes an integer >= 0"``.  The
    value is quoted by :func:`~lldsched.errors.shown` (a long text by its start)."""
    kind = _KIND.get(type(value), type(value).__name__)
    return (
        f"table {table}, row {key}, column {column} holds the {kind} {shown(value)}, "
        f"where the store writes {expected}"
    )


class Undecodable(bytes):
    """A text a store read that is not UTF-8 (written by another tool, or damaged), kept
    as its bytes for the row's check to name (SQLite keeps any bytes as text; its driver
    failed the whole read, every row's, naming no task: ``sqlite_rows.fetch``)."""


_KIND = {str: "text", int: "integer", float: "real", bytes: "blob", bool: "boolean"}
_KIND[type(None)] = "null"
_KIND[Undecodable] = "text that is not UTF-8,"
_FAR = FARTHEST  # an instant no schedule passes (checks.FARTHEST); NaN compares False


def _instant(value: object) -> bool:
    return type(value) is float and -_FAR <= value <= _FAR


def _instant_or_none(value: object) -> bool:
    return value is None or (type(value) is float and -_FAR <= value <= _FAR)


def _count(value: object) -> bool:
    return type(value) is int and value >= 0


def _text(value: object) -> bool:
    return type(value) is str


def _text_or_none(value: object) -> bool:
    return value is None or type(value) is str


def _flag(value: object) -> bool:  # SQLite keeps 0 or 1, PostgreSQL a boolean
    return type(value) is bool or (type(value) is int and 0 <= value <= 1)


_STATE = (  # the state columns of a task's row, in the order snapshot_from takes them
    ("next_run_at", _instant_or_none, "a finite real within 1e15 of 0 or NULL"),
    ("attempt", _count, "an integer >= 0"),
    ("run_count", _count, "an integer >= 0"),
    ("failure_count", _count, "an integer >= 0"),
    ("last_error", _text_or_none, "a text or NULL"),
    ("running", _flag, "0 or 1 (false or true)"),
    ("waited", _instant_or_none, "a finite real within 1e15 of 0 or NULL"),
    ("slot", _instant_or_none, "a finite real within 1e15 of 0 or NULL"),
    ("resume_at", _instant_or_none, "a finite real within 1e15 of 0 or NULL"),
    ("grid", _instant_or_none, "a finite real within 1e15 of 0 or NULL"),
)


def resume_at(snapshot: TaskSnapshot) -> float | None:
    """What a row keeps of ``snapshot``'s plan beside ``waited`` (the column ``resume_at``
    of both durable stores): the first slot of the task's own schedule no misfire decision
    took.  That is ``waited`` itself when the plan resumes there (``resumes``), or the
    slot after the runs it decided when ``waited`` is one of them (``until``, always after
    ``waited``); None otherwise.  Read back by :func:`plan_ends`."""
    return snapshot.waited if snapshot.resumes else snapshot.until


def plan_ends(waited: float | None, kept: float | None) -> tuple[bool, float | None]:
    """``resumes`` and ``until`` of a row that keeps ``waited`` and ``kept`` (its
    ``resume_at``, :func:`resume_at`): ``waited`` is the slot to resume at while the row
    keeps that very slot; a slot after it is where the plan's runs end.  A row an older
    release wrote (a rolling upgrade) keeps NULL, or ``waited`` for the slot to resume at,
    and reads as it did; one whose ``waited`` it moved past the slot kept (a plan of its
    own) reads neither, and a ``waited`` it moved back before a slot to resume at kept
    reads that slot as the plan's end (:attr:`TaskSnapshot.until
    <lldsched.persistence.TaskSnapshot.until>`: a ``RUN_ALL`` plan's slots up to it run,
    and those after it meet the policy)."""
    if waited is None or kept is None or kept < waited:
        return False, None
    if kept == waited:
        return True, None
    return False, kept


def snapshot_from(
    task_id: str,
    definition: str,
    status: object,
    state: Sequence[Any],
    *,
    task: Task | None = None,
    kept: Sequence[Any] = (),
) -> TaskSnapshot:
    """The snapshot of a task's row: its ``status`` text, its ``definition`` (decoded by
    :func:`decode_task`, unless ``task`` is given: the definition this process has, for a
    row whose own it cannot load, :class:`Unreadable`) and its ``state``, the values of
    ``next_run_at, attempt, run_count, failure_count, last_error, running, waited, slot,
    resume_at, grid`` (``resume_at`` read with ``waited`` as ``resumes`` and ``until``:
    :func:`plan_ends`; ``grid`` NULL in a row an older release wrote).

    The one rule of both durable stores' rows, checked in this order: a status this
    release does not know is an :class:`UnknownStatus` (whatever ``task``); a state value
    of the wrong type or out of its range (:data:`_STATE`; a failure count above the run
    count) a :class:`BadValue` naming each; values that do not go together (a status of
    :data:`_DUE` with no due instant, a SCHEDULED row with attempts behind it, a RETRYING
    one with none: :func:`_misread_together`) a :class:`BadValue` too; the values the
    store keeps beside the state (``kept``: :func:`check_kept`'s), if given; then the
    definition."""
    status_value = status_of(task_id, status)  # UnknownStatus: a newer release's
    (
        next_run_at, attempt, run_count, failure_count, last_error, running, waited, slot,
        resume, grid,
    ) = state  # fmt: skip
    # Every column at the cost of a test or two (a shared store's feed reads each row
    # written elsewhere); what is wrong, and how, said only for a row that fails one.
    if not (
        (next_run_at is None or (type(next_run_at) is float and -_FAR <= next_run_at <= _FAR))
        and type(attempt) is int and attempt >= 0
        and type(run_count) is int and type(failure_count) is int
        and 0 <= failure_count <= run_count
        and (last_error is None or type(last_error) is str)
        and (type(running) is bool or (type(running) is int and 0 <= running <= 1))
        and (waited is None or (type(waited) is float and -_FAR <= waited <= _FAR))
        and (slot is None or (type(slot) is float and -_FAR <= slot <= _FAR))
        and (resume is None or (type(resume) is float and -_FAR <= resume <= _FAR))
        and (grid is None or (type(grid) is float and -_FAR <= grid <= _FAR))
    ):  # fmt: skip
        raise BadValue(task_id, _misread_state(task_id, state))
    if not _together(status_value, next_run_at, attempt):
        raise BadValue(task_id, _misread_together(task_id, status_value, next_run_at, attempt))
    if kept:
        check_kept(task_id, kept)
    if task is None:  # a Window's max_runs counts the successful runs
        task = decode_task(task_id, definition, runs=run_count - failure_count)
    resumes, until = plan_ends(waited, resume)
    return TaskSnapshot(
        task, status_value, next_run_at, attempt, run_count, failure_count, last_error,
        bool(running), waited, slot, resumes, until, grid,
    )  # fmt: skip


_RETRYING = TaskStatus.RETRYING
_WAITING = frozenset((TaskStatus.SCHEDULED, _RETRYING))
_DUE = frozenset((*_WAITING, TaskStatus.RUNNING, TaskStatus.PAUSED))
"""The statuses every write gives a due instant: without one a SCHEDULED, RETRYING or
RUNNING row is never queued again (its task never runs), and a PAUSED one's ``resume``
fails (an ``AssertionError``, ``core.control``)."""


def _together(status: TaskStatus, next_run_at: float | None, attempt: int) -> bool:
    """Whether a row's status, due instant and attempt go together: the combinations a
    restart cannot follow are not (docs/DECISIONS.md, "A row whose values do not go
    together"; :func:`_misread_together` says how).  One set test and one comparison."""
    return not (next_run_at is None and status in _DUE) and (
        status not in _WAITING or (status is _RETRYING) == (attempt > 0)
    )


def _misread_together(
    task_id: str, status: TaskStatus, next_run_at: float | None, attempt: int
) -> list[str]:
    """The values of a task's row that :func:`snapshot_from` refuses together, each
    :func:`said` with the status it goes with and what a restart would do with it."""
    key = f"id={task_id!r}"
    found = []
    if next_run_at is None and status in _DUE:
        found.append(
            said("tasks", key, "next_run_at", None, f"a due instant with the status "
                 f"{status.value!r} (without one the task never runs again)")
        )  # fmt: skip
    if status is _RETRYING and not attempt:
        found.append(
            said("tasks", key, "attempt", attempt, "an integer >= 1 with the status "
                 "'retrying' (a retry with no attempt behind it is read as a slot of its "
                 "own: its grid moves by the backoff, its slot gets one attempt more)")
        )  # fmt: skip
    elif status is TaskStatus.SCHEDULED and attempt:
        found.append(
            said("tasks", key, "attempt", attempt, "0 with the status 'scheduled' (the "
                 "attempts of a slot are a 'retrying' row's: its slot would be given up "
                 "after fewer attempts than its retry policy allows)")
        )  # fmt: skip
    return found


class Listed(NamedTuple):
    """What a listing of many tasks shows of one (``python -m lldsched tasks``'s table):
    read from its row's columns and two parts of its definition (:func:`listed_from`),
    not its whole snapshot."""

    id: str
    name: str
    status: TaskStatus
    schedule: Any  # as a read to show decodes it (a type not registered here: its text)
    next_run_at: float | None
    attempt: int


def listed_from(row: Sequence[Any], schedules: dict[str, Any]) -> Listed | None:
    """The task a listing's row shows: ``id, name, status, next_run_at, attempt,
    schedule``, the name and the schedule as the JSON texts of those parts of the
    definition (the database reads them out).  Each value as every read checks it
    (:func:`snapshot_from`, :func:`decode_task` with ``imports=False``), alone and
    together; None for a row that fails one, or whose name or schedule is one no read
    takes: the caller reads it whole, for the error that read names.  ``schedules``:
    those decoded so far, by their text (the rows of one schedule share its object).

    What the listing does not show is not read, nor checked: a row damaged there alone
    (its retry policy, its run count) is listed; ``show ID`` reads it whole."""
    task_id, name_text, status, next_run_at, attempt, schedule_text = row
    if not (
        status in _STATUS_TEXTS and _instant_or_none(next_run_at) and _count(attempt)
        and type(name_text) is str and type(schedule_text) is str
    ):  # fmt: skip
        return None
    status_value = TaskStatus(status)
    if not _together(status_value, next_run_at, attempt):
        return None
    try:
        name = json.loads(name_text)
        schedule = schedules.get(schedule_text)
        if schedule is None:
            schedule = schedules[schedule_text] = _schedule_as_is(json.loads(schedule_text))
    except _MISREAD:
        return None
    if type(name) is not str or not name.strip() or unstorable(name) is not None:
        return None  # a blank name: refused by the whole read (registration's rule)
    return Listed(task_id, name, status_value, schedule, next_run_at, attempt)


_STATUS_TEXTS = frozenset(status.value for status in TaskStatus)


def _priority_column(value: object) -> bool:
    return type(value) is int and value in _PRIORITIES


def _count_or_none(value: object) -> bool:
    return value is None or (type(value) is int and value >= 0)


_KEPT = (  # what a store keeps beside a task's state, in the order check_kept takes them
    ("failed_seq", _count_or_none, "an integer >= 0 or NULL"),
    ("priority", _priority_column, f"one of {sorted(_PRIORITIES)} (Priority)"),
    ("version", _count, "an integer >= 0"),
    ("slot_due", _instant_or_none, "a finite real within 1e15 of 0 or NULL"),
)
_LEASE = (  # the task's lease, if it has one (else every value NULL)
    ("slot", _instant, "a finite real within 1e15 of 0"),
    ("attempt", _count, "an integer >= 0"),
    ("token", _count, "an integer >= 0"),
    ("holder", _text, "a text"),
    ("expires_at", _instant, "a finite real within 1e15 of 0"),
)


def check_kept(task_id: str, kept: Sequence[Any]) -> None:
    """Refuse the values a store keeps beside a task's state, which it uses without
    decoding them: ``failed_seq, priority, version, slot_due`` (the dead letter's order,
    the claim's, the change feed's, the due instant its slot goes with), then its
    lease's ``slot, attempt, token, holder, expires_at`` (all NULL: no lease).  A
    :class:`BadValue` naming each value of the wrong type or out of its range, as for
    the state (:func:`snapshot_from` asks it): a row edited by hand or written by
    another tool is its task's alone, refused by itself, so a shared store leaves the
    task out and runs the others (docs/DECISIONS.md, "A value a store keeps beside a
    task's state").  One chain of tests while every value is good."""
    failed_seq, priority, version, slot_due, *lease = kept
    if (
        (failed_seq is None or (type(failed_seq) is int and failed_seq >= 0))
        and type(priority) is int and priority in _PRIORITIES
        and type(version) is int and version >= 0
        and (slot_due is None or (type(slot_due) is float and -_FAR <= slot_due <= _FAR))
        and (not lease or lease[3] is None or all(  # no holder: no lease (NOT NULL)
            valid(value) for (_, valid, _), value in zip(_LEASE, lease, strict=True)
        ))
    ):  # fmt: skip
        return
    key = f"id={task_id!r}"
    found = [
        said("tasks", key, column, value, expected)
        for (column, valid, expected), value in zip(_KEPT, kept[:4], strict=True)
        if not valid(value)
    ]
    if lease and lease[3] is not None:
        found += _misread_lease(task_id, lease)
    raise BadValue(task_id, found)


def lease_from(row: Sequence[Any]) -> Lease:
    """The :class:`~lldsched.persistence.Lease` a row of a store's ``leases`` table holds
    (``task_id, slot, attempt, token, holder, expires_at``: ``CoordinatedStore.leases``),
    checked as a task's row checks its lease (:func:`check_kept`): a :class:`BadValue`
    naming each value no write makes (a NaN or infinite ``expires_at``, which no clock
    passes: the lease held its task for good).  Both engines' rule."""
    task_id, *lease = row
    if all(valid(value) for (_, valid, _), value in zip(_LEASE, lease, strict=True)):
        return Lease(task_id, *lease)
    raise BadValue(task_id, _misread_lease(task_id, lease))


def _misread_lease(task_id: object, lease: Sequence[Any]) -> list[str]:
    """Each value of the lease of ``task_id`` that :data:`_LEASE` refuses, :func:`said`."""
    return [
        said("leases", f"task_id={task_id!r}", column, value, expected)
        for (column, valid, expected), value in zip(_LEASE, lease, strict=True)
        if not valid(value)
    ]


def _misread_state(task_id: str, state: Sequence[Any]) -> list[str]:
    """Each value of a task's ``state`` that :func:`snapshot_from` refuses, :func:`said`."""
    key = f"id={task_id!r}"
    found = [
        said("tasks", key, column, value, expected)
        for (column, valid, expected), value in zip(_STATE, state, strict=True)
        if not valid(value)
    ]
    run_count, failure_count = state[2], state[3]
    if _count(run_count) and _count(failure_count) and failure_count > run_count:
        expected = f"an integer from 0 to the run count ({run_count})"
        found.append(said("tasks", key, "failure_count", failure_count, expected))
    return found


def _worker(value: object) -> bool:  # -1: a slot decided without a run
    return type(value) is int and value >= -1


def _outcome_or_none(value: object) -> bool:
    return value is None or (type(value) is str and value in _OUTCOMES)


def _integer_or_none(value: object) -> bool:
    return value is None or type(value) is int


_OUTCOMES = frozenset(outcome.value for outcome in Outcome)
_RECORD = (  # a record's columns, in the order record_from takes them (but its seq, last)
    ("task_id", _text, "a text"),
    ("name", _text, "a text"),  # the run's, or its task's (coalesce): never NULL
    ("attempt", _count, "an integer >= 0"),
    ("due", _instant, "a finite real within 1e15 of 0"),
    ("slot", _instant, "a finite real within 1e15 of 0"),
    ("worker", _worker, "an integer >= -1"),
    ("started", _instant, "a finite real within 1e15 of 0"),
    ("finished", _instant, "a finite real within 1e15 of 0"),
    ("ok", _flag, "0 or 1 (false or true)"),
    ("error", _text_or_none, "a text or NULL"),
    ("timed_out", _flag, "0 or 1 (false or true)"),
    ("misfire", _outcome_or_none, "an outcome's name or NULL"),
    ("result", _text_or_none, "a text or NULL"),
    ("token", _integer_or_none, "an integer or NULL"),
    ("node", _text_or_none, "a text or NULL"),
)


def record_from(row: Sequence[Any]) -> ExecutionRecord:
    """The record a row of the records table describes: ``task_id, name, attempt, due,
    slot, worker, started, finished, ok, error, timed_out, misfire, result, token, node,
    seq``, both stores' (``RECORD_COLUMNS``).  A :class:`BadValue` naming each value of the
    wrong type or out of its range (:data:`_RECORD`: an instant that is not finite, a
    negative attempt, an outcome this release does not know)."""
    (
        task_id, name, attempt, due, slot, worker, started, finished, ok, error, timed_out,
        misfire, result, token, node, _,
    ) = row  # fmt: skip
    # Every column at the cost of a test or two each (a history read is thousands of
    # rows); what is wrong, and how, said only for a row that fails one.
    if not (
        type(due) is float and -_FAR <= due <= _FAR
        and type(slot) is float and -_FAR <= slot <= _FAR
        and type(started) is float and -_FAR <= started <= _FAR
        and type(finished) is float and -_FAR <= finished <= _FAR
        and type(attempt) is int and attempt >= 0 and type(worker) is int and worker >= -1
        and (type(ok) is bool or (type(ok) is int and 0 <= ok <= 1))
        and (type(timed_out) is bool or (type(timed_out) is int and 0 <= timed_out <= 1))
        and type(task_id) is str and type(name) is str
        and (error is None or type(error) is str)
        and (misfire is None or (type(misfire) is str and misfire in _OUTCOMES))
        and (result is None or type(result) is str) and (token is None or type(token) is int)
        and (node is None or type(node) is str)
    ):  # fmt: skip
        key = f"task_id={task_id!r} seq={row[-1]!r}"
        raise BadValue(
            str(task_id),
            [
                said("records", key, column, value, expected)
                for (column, valid, expected), value in zip(_RECORD, row[:-1], strict=True)
                if not valid(value)
            ],
        )
    return ExecutionRecord.of(
        task_id=task_id, name=name, attempt=attempt, due=due, slot=slot, worker=worker,
        started=started, finished=finished, ok=bool(ok), error=error,
        timed_out=bool(timed_out), misfire=None if misfire is None else Outcome(misfire),
        result=result, token=token, node=node,
    )  # fmt: skip


class Unreadable:
    """The rows other processes wrote to a shared store that this one cannot load:
    newer code in a rolling upgrade (an action this deploy does not have, a field this
    lldsched does not know, a status it does not know).  Each is said once, at WARNING
    (expected during a rollout), naming the task and why.

    A definition it cannot load: the feed still gives the row's state (status, due
    instant, counters: a pause, a settle made there) with the definition this process
    has, which it keeps, and runs the slots of the task it claims with, until it is
    upgraded; a task it never had (at start, :func:`load_each`, or since) is left out,
    listed by :meth:`left_out` (the processes that can load it run it; this one never
    deletes or rewrites it unless its own code registers the id with
    ``replace_existing=True``).

    A status it does not know (:class:`UnknownStatus`): no state of it can be followed,
    so the task is left out whether this process had it or not (the feed gives a task it
    had as removed *here*: nothing is written), until a later write gives the row a
    status it knows; then it is read as any row learnt from the feed.  So is a row
    holding a value it cannot read (:class:`BadValue`: another tool's write), tried
    again at each write of the row.

    Used by a store's ``load_all()`` and ``changes()``, which its runtime calls under its
    own lock."""

    def __init__(self, store: str) -> None:
        self._store = store
        # task id -> the definition text that failed (said once), the status that failed
        # (None: the definition did, whatever the status) and the error it raised
        self._said: dict[str, tuple[str, object, StoreError]] = {}
        self._left: dict[str, str] = {}  # task id -> the text of a row left out here

    def again(self, task_id: str, text: str, status: object) -> None:
        """Before a row of ``task_id`` (its definition ``text`` and ``status``) is loaded:
        raise the :class:`StoreError` it raised here last, if that is the text that failed
        (or the text and status, for a status this release does not know).  A definition
        is tried once per text: every change to the row (each run settled elsewhere, each
        pause) came with another attempt, an import searched for along ``sys.path`` per
        run of a busy task in another process.  Another text (a new definition written
        there) is tried, and so is another status after an unknown one; so is this one
        after it loaded or its row went (:meth:`read`).  One dictionary look-up while
        nothing failed."""
        if self._said:
            said = self._said.get(task_id)
            if said is not None and said[0] == text and (said[1] is None or said[1] == status):
                raise said[2].with_traceback(None)  # no traceback grown per raise

    def failed(self, task_id: str, text: str, error: StoreError, known: Task | None) -> bool:
        """A row of ``task_id`` whose definition is ``text`` raised ``error``; ``known`` is
        the definition this process has of it (None: it has none).  Whether the task is
        left out here (:meth:`left_out`): one it had none of, or one whose status this
        release does not know (:class:`UnknownStatus`), whose state it cannot follow."""
        # A bad value is kept as its ``said``, which no status equals: a row holding one
        # is tried again at each write (the one setting it right is read), said once.
        status: object = None
        if isinstance(error, UnknownStatus):
            status = error.status
        elif isinstance(error, BadValue):
            status = error.said
        left = known is None or status is not None
        if left:
            self._left[task_id] = text
        said = self._said.get(task_id)
        if said is None or said[0] != text or said[1] != status:
            self._said[task_id] = (text, status, error)
            if isinstance(error, BadValue):
                why = "it leaves the task out until a write gives the row values it can read"
            elif status is not None:
                why = (
                    "it leaves the task to the processes that can, until a write gives the "
                    "row a status it knows"
                )
            elif known is None:
                why = (
                    "it leaves the task to the processes that can until it runs the code "
                    "that wrote it, or registers the id itself with replace_existing=True "
                    "(a redeploy or a rollback takes the task over so, its state kept)"
                )
            else:
                why = (
                    "it follows the task's state with the definition it has, and runs the "
                    "task's slots it claims with it, until it runs the code that wrote it"
                )
            log.warning(
                "another process wrote task %s in %s %s this one cannot load (%s); %s",
                task_id,
                self._store,
                _with(error),
                error,
                why,
                extra={"task_id": task_id},
            )
        return left

    def read(self, task_id: str) -> None:
        """``task_id``'s row was loaded (or removed): said again if it fails again."""
        if self._said:
            self._said.pop(task_id, None)
            self._left.pop(task_id, None)

    def left_out(self) -> list[str]:
        """The ids of the tasks left out here (rows this process cannot load), sorted
        (from any thread: the copy is one step under the GIL)."""
        return sorted(self._left.copy())

    def text(self, task_id: str) -> str | None:
        """The definition text of ``task_id``'s row left out here (None: not left out)."""
        return self._left.get(task_id)


def _with(error: StoreError) -> str:
    """What of a row ``error`` says this process cannot load, as :class:`Unreadable` logs it."""
    if isinstance(error, BadValue):
        return "with a value"
    return "with a status" if isinstance(error, UnknownStatus) else "with a definition"


Row = TypeVar("Row", bound=Sequence[Any])


def load_each(
    rows: Sequence[Row],
    read: Callable[[Row], TaskSnapshot],
    *,
    store: str,
    delete: str,
    unreadable: Unreadable | None = None,
) -> tuple[list[TaskSnapshot], list[Row]]:
    """What a durable store's ``load_all`` does with its rows (each ``(id, definition
    text, status, ...)``): each read by ``read``, in order; the snapshots, and the rows they
    were read from.  A row that cannot be (``read`` raises :class:`StoreError`: a
    callable that no longer imports, a definition that is no longer valid) stops
    nothing: the others are still read, then

    * on a store no other process uses (``unreadable`` None), one :class:`StoreError`
      names every one, and nothing is written: nobody else would run the task, so the
      process does not start without it.  ``store`` names the store (its path or DSN),
      ``delete`` the call that removes a task from it, the way out the message offers;
    * on a shared store (``unreadable``: the store's :class:`Unreadable`), each is left
      out and said once: another process (a newer release, in a rolling deploy) may
      load and run it, and deleting it would remove a task those run."""
    snapshots: list[TaskSnapshot] = []
    kept: list[Row] = []
    problems: list[str] = []
    for row in rows:
        try:
            if unreadable is not None:  # a text that failed here is not tried again
                unreadable.again(row[0], row[1], row[2])  # id, definition text, status
            snapshots.append(read(row))
        except StoreError as exc:
            if unreadable is not None:
                unreadable.failed(row[0], row[1], exc, None)  # id, definition text
            else:
                problems.append(str(exc))
        else:
            kept.append(row)
    if problems:
        raise StoreError(
            f"cannot load {len(problems)} of the {len(rows)} tasks in {store}; "
            "the store was left untouched. Make what each line names import again (a "
            "function, its module, a schedule class, a retry policy; an alias of a renamed "
            "one will do), set a value a line names right (a row edited by hand or written "
            f"by another tool), or remove the task with {delete}, and open it again:\n  "
            + "\n  ".join(problems)
        )
    return snapshots, kept
