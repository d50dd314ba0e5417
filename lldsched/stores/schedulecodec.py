"""The JSON form of a schedule, for durable stores: the registry of storable types.

A durable store keeps a task's schedule through a small explicit registry, type name
to ``to_dict`` / ``from_dict``, looked up by exact type (a subclass may add state its
base's ``to_dict`` would drop).  ``OneTime``, ``FixedDelay``, ``FixedRate``,
``CronSchedule`` and the decorators ``Jittered`` and ``Window`` (whose wrapped schedule
nests, through :func:`encode_schedule` / :func:`decode_schedule`) are registered here,
at import; :func:`register_schedule` adds a type, whose ``from_dict`` of the JSON
``to_dict`` gave must build a schedule equal to the one encoded (checked at every
encode of such a type, :func:`_check_round_trip`: a tuple field that came back a list
would make every restart see a changed definition).  A stored ``FixedDelay`` under a
microsecond, which an earlier release kept, is read as ``FixedDelay(FINEST)`` with a
WARNING (:func:`_stored_fixed_delay`), and a stored cron expression with a line break
between its fields with a space for it (:func:`_stored_cron`).

A stored field a built-in type does not know (a definition written by a newer
lldsched) is refused, naming it (:func:`refuse_unknown`, the one rule the whole
definition's decoding in :mod:`lldsched.stores.codec` applies too).  The task's
definition around the schedule is :mod:`lldsched.stores.codec`'s, which re-exports
these three functions: ``lldsched.stores.codec.register_schedule`` is the public path.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar

from lldsched.checks import FINEST
from lldsched.errors import LldschedError, StoreError, ValidationError
from lldsched.logs import STORE
from lldsched.policies import OverrunPolicy
from lldsched.schedules.base import Schedule
from lldsched.schedules.cron import CronSchedule
from lldsched.schedules.cron.parse import blanks_mended
from lldsched.schedules.decorators import Jittered, Window
from lldsched.schedules.simple import FixedDelay, FixedRate, OneTime

__all__ = [
    "FromDict",
    "ToDict",
    "decode_schedule",
    "encode_schedule",
    "refuse_unknown",
    "register_schedule",
]

log = logging.getLogger(STORE)

ToDict = Callable[[Any], dict[str, Any]]
FromDict = Callable[[Mapping[str, Any]], Schedule]
"""The registry's own view of a registered pair, one type for every class it holds.  A
registration is typed over its class (:func:`register_schedule`): the pair must fit it."""

S = TypeVar("S", bound=Schedule)
"""The schedule class a registration is for."""

# type name -> (class, to_dict, from_dict).  Looked up by exact type: a subclass
# may add state its base's to_dict would drop.
_SCHEDULES: dict[str, tuple[type, ToDict, FromDict]] = {}
# The types registered from outside this module: their round trip is checked at encode.
_CHECKED: set[type] = set()


def _named(cls: type) -> tuple[str, str]:
    return cls.__module__, cls.__qualname__


def register_schedule(
    name: str,
    cls: type[S],
    to_dict: Callable[[S], dict[str, Any]],
    from_dict: Callable[[Mapping[str, Any]], S],
) -> None:
    """Make schedules of exactly ``cls`` storable under ``name``: ``to_dict(schedule)``
    gives its fields as a JSON-ready dict (without ``"type"``), ``from_dict(fields)``
    builds it again from what JSON gave back.  Typed over ``cls``: a type checker
    refuses a ``to_dict`` that takes another schedule class, a ``from_dict`` that
    builds one or takes anything but the fields' mapping, and a ``cls`` that is no
    :class:`~lldsched.schedules.base.Schedule` (a lambda's parameter is read as
    ``cls``, so its attributes are checked too).  Call it where ``cls`` is defined, at
    import, so that any process that can import the class can open a store holding it.
    Registering the same name and class again replaces the pair, and so does a class
    defined again under the same module and qualified name (a notebook cell run again,
    a module reloaded); another class under a taken name, or one class under two
    names, is a :class:`ValidationError`."""
    for other, (other_cls, _, _) in list(_SCHEDULES.items()):
        same = other_cls is cls or _named(other_cls) == _named(cls)
        if (other == name) != same:
            raise ValidationError(
                f"schedule {name!r} / {cls!r} clashes with {other!r} / {other_cls!r}"
            )
        if same and other_cls is not cls:  # its earlier definition: no longer encodable
            _CHECKED.discard(other_cls)
    _SCHEDULES[name] = (cls, to_dict, from_dict)
    if cls.__module__ != __name__:
        _CHECKED.add(cls)


def _stored_fixed_delay(fields: Mapping[str, Any]) -> FixedDelay:
    """A ``FixedDelay`` as a store kept it.  One an earlier release stored with a delay
    under a microsecond (``FixedDelay(0)``: back to back), which a ``FixedDelay`` now
    refuses (:func:`~lldsched.checks.step`), is read as ``FixedDelay(FINEST)``, the same
    on a real clock, with a WARNING: refused, it would have made the whole store fail to
    open.  The code's own registration then names the delay it means."""
    delay = fields["delay"]
    if type(delay) in (int, float) and 0 <= delay < FINEST:
        log.warning(
            "a stored FixedDelay(%r) is read as FixedDelay(%g): a fixed delay is at least "
            "a microsecond (one under it ran for ever at one instant on a clock that "
            "stands still); register the task again with the delay you mean",
            delay,
            FINEST,
        )
        delay = FINEST
    return FixedDelay(delay, fields["start_delay"])


def _stored_cron(fields: Mapping[str, Any]) -> CronSchedule:
    """A ``CronSchedule`` as a store kept it.  One an earlier release stored with a line
    break or a control character between its fields (``'0\\n3 * * *'``, which
    ``str.split`` read as a blank), which a ``CronSchedule`` now refuses, is read with a
    space for it, the same schedule, with a WARNING: refused, it would have made the
    whole store fail to open.  The code's own registration then names the text it
    means."""
    expr, tz = fields["expr"], fields["tz"]
    mended = blanks_mended(expr) if isinstance(expr, str) else None
    if mended is None:
        return CronSchedule(expr, tz=tz)
    schedule = CronSchedule(mended, tz=tz)
    log.warning(
        "a stored CronSchedule(%r, tz=%r) is read as %r: a line break or a control "
        "character between a cron expression's fields is refused now; register the "
        "task again with the text you mean",
        expr,
        tz,
        schedule,
    )
    return schedule


register_schedule(
    "OneTime",
    OneTime,
    lambda s: {"at": s.at, "delay": s.delay},
    lambda d: OneTime(d["at"]) if d["at"] is not None else OneTime(delay=d["delay"]),
)
register_schedule(
    "FixedDelay",
    FixedDelay,
    lambda s: {"delay": s.delay, "start_delay": s.start_delay},
    _stored_fixed_delay,
)
register_schedule(
    "FixedRate",
    FixedRate,
    lambda s: {"period": s.period, "on_overrun": s.on_overrun.value, "start_delay": s.start_delay},
    lambda d: FixedRate(d["period"], OverrunPolicy(d["on_overrun"]), d["start_delay"]),
)
register_schedule(
    "CronSchedule",
    CronSchedule,
    lambda s: {"expr": s.expr, "tz": s.tz},
    _stored_cron,
)
register_schedule(
    "Jittered",
    Jittered,
    lambda s: {
        "schedule": encode_schedule(s.schedule),
        "max_delay": s.max_delay,
        "seed": s.seed,
    },
    lambda d: Jittered(decode_schedule(d["schedule"]), d["max_delay"], seed=d["seed"]),
)
register_schedule(
    "Window",
    Window,
    lambda s: {
        "schedule": encode_schedule(s.schedule),
        "start": s.start,
        "end": s.end,
        "max_runs": s.max_runs,
    },
    lambda d: Window(
        decode_schedule(d["schedule"]), start=d["start"], end=d["end"], max_runs=d["max_runs"]
    ),
)


_BUILT_IN = frozenset(_SCHEDULES)  # the types above; any other is registered from outside
_BUILT_IN_KEYS: dict[str, frozenset[str]] = {}  # type name -> the fields its to_dict writes


def encode_schedule(schedule: Schedule) -> dict[str, Any]:
    """``schedule`` as a JSON-ready dict ``{"type": name, ...fields}``;
    :class:`ValidationError` for a type nobody registered."""
    entry = next((item for item in _SCHEDULES.items() if item[1][0] is type(schedule)), None)
    if entry is None:
        raise ValidationError(
            f"a durable store cannot keep a {type(schedule).__name__} ({schedule!r}); "
            "register it with lldsched.stores.codec.register_schedule"
        )
    kind, (cls, to_dict, from_dict) = entry
    document = {"type": kind, **to_dict(schedule)}
    if cls in _CHECKED:
        _check_round_trip(schedule, document, from_dict)
    return document


def _check_round_trip(schedule: Schedule, document: dict[str, Any], from_dict: FromDict) -> None:
    """``from_dict`` of ``document`` as JSON gives it back builds ``schedule`` again
    (``==``); ValidationError naming both otherwise, or naming ``schedule`` when JSON
    cannot hold ``document`` (a NaN or an infinity in it)."""
    try:
        fields = json.loads(json.dumps(document, allow_nan=False))
    except ValueError as exc:  # a NaN or an infinity: JSON has neither
        raise ValidationError(
            f"a durable store cannot keep {schedule!r} as JSON ({document!r}): {exc}"
        ) from None
    fields.pop("type")
    try:
        again = from_dict(fields)
    except Exception as exc:
        raise ValidationError(
            f"a durable store cannot rebuild {schedule!r} from {fields!r}: "
            f"its from_dict raised {exc!r}"
        ) from None
    if again == schedule:
        return
    kind = type(schedule)
    if type(again) is kind and kind.__eq__ is object.__eq__:  # no from_dict can help
        raise ValidationError(
            f"a durable store cannot give {schedule!r} back equal: {kind.__qualname__} "
            "compares by identity (it defines no __eq__), and a registration compares a "
            "stored definition with ==: make it a frozen dataclass, or define __eq__"
        )
    raise ValidationError(
        f"a durable store would give {schedule!r} back as {again!r} (from {fields!r}): "
        "the from_dict registered with register_schedule must rebuild an equal "
        "schedule from what JSON keeps (lists, not tuples)"
    )


def decode_schedule(document: Mapping[str, Any]) -> Schedule:
    """The schedule :func:`encode_schedule` wrote; :class:`StoreError` for an unknown type
    (a bad field raises what the schedule's constructor raises)."""
    fields = dict(document)
    kind = fields.pop("type")
    if kind not in _SCHEDULES:
        raise StoreError(
            f"unknown schedule type {kind!r} (known: {sorted(_SCHEDULES)}); a schedule "
            "class of one's own must be registered with "
            "lldsched.stores.codec.register_schedule before the store is opened (import "
            "the module that registers it first)"
        )
    _, to_dict, from_dict = _SCHEDULES[kind]
    if kind in _BUILT_IN:
        schedule = from_dict(fields)
        known = _BUILT_IN_KEYS.get(kind)
        if known is None:  # the keys its to_dict writes, whatever the instance: once a type
            known = _BUILT_IN_KEYS[kind] = frozenset(to_dict(schedule))
        if not fields.keys() <= known:
            refuse_unknown(fields, known, where=f"schedule {kind!r}")
        return schedule
    try:  # one's own class: its from_dict may predate (or postdate) the stored fields
        return from_dict(fields)
    except (LldschedError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise StoreError(
            f"schedule {kind!r} cannot be rebuilt from the stored fields {fields!r}: its "
            f"from_dict (registered with register_schedule) raised {exc!r}; if the class "
            "changed, make from_dict accept what the previous version stored"
        ) from None


def refuse_unknown(fields: Mapping[str, Any], known: Collection[str], *, where: str) -> None:
    """StoreError naming the keys of ``fields`` not in ``known``: a definition written by
    a newer lldsched, whose meaning this one would silently drop."""
    unknown = [key for key in fields if key not in known]
    if unknown:
        raise StoreError(
            f"{where} has fields this lldsched does not know: {unknown} (written by a newer "
            "lldsched?); it is refused rather than run without them: upgrade lldsched, or "
            "register the task again with the version that wrote it, without them"
        )
