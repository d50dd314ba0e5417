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
definition this process cannot load with the one it has
(:class:`~lldsched.stores.unreadable.Unreadable`).

Text a durable store cannot keep is refused here too, before it is written: in a
definition's id and name (:func:`check_text`, asked by :func:`encode_task`) and in the
state and records written beside it (:func:`check_written`).  The rest of a stored row,
its columns read back and checked, is :mod:`lldsched.stores.rowvalues`'s; a row a load
cannot read, :mod:`lldsched.stores.unreadable`'s, whose :func:`load_each` and
:class:`Unreadable` this module re-exports (a durable store of one's own imported them
from here: docs/EXTENDING.md).
"""

from __future__ import annotations

import json
import logging
import marshal
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from lldsched.checks import seconds
from lldsched.core.registration import options_of, validated
from lldsched.errors import LldschedError, StoreError, ValidationError, shown
from lldsched.importpath import import_callable, import_path, json_arguments
from lldsched.logs import STORE
from lldsched.model import ExecutionRecord, Priority
from lldsched.persistence import Task, TaskSnapshot
from lldsched.policies import Misfire, MisfirePolicy, Overlap, RetryPolicy
from lldsched.schedules.catchup import unwrap
from lldsched.schedules.decorators import restore_runs
from lldsched.storechecks import check_storable, unstorable
from lldsched.stores.schedulecodec import (
    decode_schedule,
    encode_schedule,
    refuse_unknown,
    register_schedule,
)
from lldsched.stores.unreadable import Unreadable, load_each

__all__ = [
    "MISREAD",
    "PRIORITY_VALUES",
    "NotImported",
    "SharedParts",
    "Unreadable",
    "callable_path",
    "check_written",
    "decode_schedule",
    "decode_task",
    "encode_schedule",
    "encode_task",
    "load_each",
    "moved_paths",
    "register_schedule",
    "renamed",
    "resolve_callable",
    "schedule_as_is",
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
    (:func:`~lldsched.storechecks.unstorable`): an id made from a file name
    ``os.listdir`` decoded, say.  Every other string of a definition is JSON, which
    escapes both.  Asked by :func:`encode_task`, when a definition is written (a
    registration, a replacement); every registration asked it of the name already,
    whatever the store (:func:`~lldsched.storechecks.check_storable`)."""
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
    except MISREAD as exc:
        raise StoreError(f"task {task_id}: its stored definition is invalid: {exc!r}") from None


MISREAD = (LldschedError, ValueError, TypeError, KeyError, AttributeError, RecursionError)
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
        schedule = schedule_as_is(document["schedule"])
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


def schedule_as_is(document: Mapping[str, Any]) -> Any:
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
    if type(value) is not int or value not in PRIORITY_VALUES:
        raise ValueError(
            f"priority must be one of {sorted(PRIORITY_VALUES)} (Priority), got {value!r}"
        )
    return Priority(value)


PRIORITY_VALUES = frozenset(int(priority) for priority in Priority)
"""The integers a stored priority may be (:class:`Priority`'s values)."""


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
