"""The checks on what a registration passes: id, schedule, priority and options.

Each check raises :class:`~lldsched.errors.ValidationError` with the bad value in
its message, before anything is registered (:meth:`SchedulerCore.add
<lldsched.core.machine.SchedulerCore.add>` calls them first).  Two checks run on every
registration and are kept cheap by remembering what they learnt: which types
are schedules, and whether a function's code declares ``ctx``.

**What counts as a schedule** is decided here, once (:func:`schedule_of`): an
object with ``first_run`` and ``next_run``, or the text of a cron expression,
which becomes a :class:`~lldsched.schedules.cron.CronSchedule` in the
scheduler's default zone.  A ``CronSchedule`` that names no zone is read in that
default zone too.  :func:`registering` is the decorator form both runtimes offer.

**Isolation** (:data:`ISOLATIONS`): ``"thread"`` (the default) calls the action on a
worker thread; ``"process"`` runs it in a child process
(:mod:`lldsched.threaded.processes`), so the action is given as an import path
``"package.module:function"`` with arguments JSON keeps unchanged (the rule of
:mod:`lldsched.importpath`, the one durable stores follow), and it takes no ``ctx``.
:func:`isolated_action` turns the path into the function, checked here, at
registration.

**Dependencies** (``depends_on=``) are checked here too, in two steps: the value
(a list of task ids, in :func:`validated`) and the graph (:func:`check_graph`:
every id registered, no cycle), before anything is registered.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable, Mapping
from datetime import timedelta, tzinfo
from types import BuiltinFunctionType
from typing import Any, TypedDict, TypeVar, cast, get_args

from lldsched.checks import seconds, whole
from lldsched.core.task import DEFAULT_OPTIONS, Isolation, ScheduledTask, TaskOptions
from lldsched.errors import ScheduleError, ValidationError
from lldsched.importpath import import_callable, import_path, json_arguments
from lldsched.model import Priority
from lldsched.persistence import Task
from lldsched.policies import MisfirePolicy, Overlap, OverrunPolicy, RetryPolicy
from lldsched.schedules.base import Schedule, has_schedule_methods, wrapped_schedule
from lldsched.schedules.cron import CronSchedule
from lldsched.schedules.decorators import Jittered, Window
from lldsched.schedules.simple import FixedDelay, OneTime

__all__ = [
    "ISOLATIONS",
    "UNCHANGED",
    "Isolation",
    "TaskIds",
    "Unchanged",
    "check_call",
    "check_graph",
    "check_isolation",
    "check_overlap",
    "check_task_id",
    "check_zone",
    "is_schedule",
    "isolated_action",
    "not_callable",
    "options_of",
    "registering",
    "schedule_of",
    "validated",
    "wants_context",
]

DEFAULT_RETRY = RetryPolicy()

ISOLATIONS: tuple[Isolation, ...] = get_args(Isolation)
"""The values of a task's ``isolation`` option, ``("thread", "process")``: where its action
runs (the type :data:`~lldsched.core.task.Isolation` is the one list)."""

TaskIds = list[str] | tuple[str, ...]
"""What ``depends_on=`` takes: a list or tuple of task ids.  Not ``Sequence[str]``: a
``str`` is one, and ``depends_on="upstream"`` (the usual slip) passed a type checker to
be refused at registration."""


class Unchanged(enum.Enum):
    """The type of :data:`UNCHANGED`."""

    UNCHANGED = "unchanged"


UNCHANGED = Unchanged.UNCHANGED
"""The default of ``modify()``'s options: leave this one as it is (``None`` is a value:
no timeout, the default retry policy)."""

# Caches, filled as registrations come (plain structures written under the
# runtime's lock, or by the single-threaded simulation; a racing write stores the
# same answer).
SCHEDULE_TYPES: set[type] = set()  # types already seen to have first_run and next_run
# What calling a function of this code needs (bounded below): _BARE (no parameter at
# all: f() is the only call, nothing to check), _TAKES (parameters, no ctx), _CTX
# (declares ctx), _ASK_WRAPPED (no ctx, takes **kwargs: ask what it wraps).
CALL_BY_CODE: dict[Any, int] = {}
_BARE, _TAKES, _CTX, _ASK_WRAPPED = 0, 1, 2, 3  # compared by identity (cheaper than ==)
_CONTEXT_CACHE_LIMIT = 4096
# (code object, bound method?) -> its signature, None when it has none (bounded as above).
# Which parameters exist and which have defaults is the code's, not the function's: two
# functions made by one ``def`` bind arguments alike.
SIGNATURE_BY_CODE: dict[tuple[Any, bool], inspect.Signature | None] = {}


def is_schedule(schedule: object) -> bool:
    """True when ``schedule`` has ``first_run`` and ``next_run`` (the rule is
    :func:`~lldsched.schedules.base.has_schedule_methods`: a class is not a schedule, and
    remembering ``type`` let every class after one pass unchecked); remembers its type,
    unless it is a decorator's (``Jittered``, ``Window``, or one of one's own, which keeps
    what it wraps in ``.schedule``): :func:`schedule_of` reads the cron a decorator wraps
    in the default zone, so decorators never take the shortcut past it."""
    if has_schedule_methods(schedule):
        if wrapped_schedule(schedule) is None:
            SCHEDULE_TYPES.add(type(schedule))
        return True
    return False


def wants_context(action: Callable[..., Any]) -> bool:
    """True when ``action`` declares a parameter named ``ctx``, or is a wrapper that takes
    ``**kwargs`` around one that does (``functools.wraps`` sets ``__wrapped__``): the
    wrapper passes ``ctx=`` on."""
    return _call_shape(action) is _CTX


def _call_shape(action: Callable[..., Any]) -> int:
    """What calling ``action`` needs: ``_BARE``, ``_TAKES`` or ``_CTX`` (see CALL_BY_CODE)."""
    code = getattr(action, "__code__", None)  # a bound method passes its function's on
    if code is not None:  # plain functions and methods: no inspect.signature on the hot path
        known = CALL_BY_CODE.get(code)
        if known is None:
            names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
            if "ctx" in names:
                known = _CTX
            elif code.co_flags & inspect.CO_VARKEYWORDS:
                known = _ASK_WRAPPED
            else:
                known = _TAKES if names else _BARE
            if len(CALL_BY_CODE) < _CONTEXT_CACHE_LIMIT:
                CALL_BY_CODE[code] = known
        if known is _ASK_WRAPPED:  # the code is shared by wrappers of different functions
            wrapped = getattr(action, "__wrapped__", None)
            return _CTX if wrapped is not None and wants_context(wrapped) else _TAKES
        return known
    if isinstance(action, BuiltinFunctionType):  # print, len: C functions take no ctx, and
        return _TAKES  # inspect would parse their text signature at every registration (~100 µs)
    try:
        parameters = inspect.signature(action).parameters
    except (TypeError, ValueError):  # callables without a signature
        return _TAKES
    return _CTX if "ctx" in parameters else _TAKES


def check_call(name: str, action: Callable[..., Any], options: TaskOptions) -> None:
    """``action`` can be called as each run calls it: ``action(*args, **kwargs)``, with
    ``ctx=`` added when it declares ``ctx``.  ValidationError naming the arguments and
    what is wrong (a required parameter missing, one too many, an unknown keyword, a
    ``ctx`` in ``kwargs``), at registration rather than a ``TypeError`` in every attempt
    until the dead letter.  A callable whose signature cannot be read passes; a wrapper
    (``functools.wraps``) is judged by its own parameters, not the wrapped function's,
    since a decorator may supply some of those.
    """
    args, kwargs, pass_context = options.args, options.kwargs, options.pass_context
    code = getattr(action, "__code__", None)
    if code is not None:
        if not (args or kwargs or pass_context or code.co_argcount or code.co_kwonlyargcount):
            return  # f() called as f(): nothing to bind
        key = (code, inspect.ismethod(action))
        if key in SIGNATURE_BY_CODE:
            signature = SIGNATURE_BY_CODE[key]
        else:
            signature = _signature(action)
            # A __signature__ belongs to one function, not to its code (a decorator's
            # wrappers share one code object): such a function is read each time.
            own = getattr(action, "__signature__", None) is not None
            if not own and len(SIGNATURE_BY_CODE) < _CONTEXT_CACHE_LIMIT:
                SIGNATURE_BY_CODE[key] = signature
    else:  # builtins, partials, classes, callable objects
        signature = _signature(action)
    keywords = dict(kwargs or {})
    if pass_context:
        if "ctx" in keywords:
            raise ValidationError(
                f"task {name!r}: kwargs name 'ctx', which the scheduler passes to an action "
                f"that declares it (a RunContext): got kwargs={kwargs!r}"
            )
        keywords["ctx"] = None
    if signature is None:
        return
    try:
        signature.bind(*args, **keywords)
    except TypeError as exc:
        given = f"args={tuple(args)!r}" + (f", kwargs={dict(kwargs)!r}" if kwargs else "")
        bare = signature.replace(  # the parameters, without their annotations
            parameters=[p.replace(annotation=p.empty) for p in signature.parameters.values()],
            return_annotation=signature.empty,
        )
        raise ValidationError(
            f"task {name!r}: action {_action_name(action)}{bare} cannot be called with "
            f"{given}: {exc}"
        ) from None


def _signature(action: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(action, follow_wrapped=False)
    except (TypeError, ValueError):  # callables without a signature
        return None


def _action_name(action: Callable[..., Any]) -> str:
    return getattr(action, "__qualname__", None) or type(action).__qualname__


def validated(
    name: str,
    action: Callable[..., Any] | None,
    schedule: Schedule | str,
    *,
    tz: str,
    priority: Priority | int,
    retry: RetryPolicy | None,
    timeout: float | timedelta | None,
    args: tuple[Any, ...] | list[Any],
    kwargs: Mapping[str, Any] | None,
    misfire: MisfirePolicy | None,
    isolation: Isolation = "thread",
    depends_on: TaskIds = (),
    overlap: Overlap | None = None,
    max_instances: int | None = None,
    check_arguments: bool = True,
) -> tuple[Schedule, Priority, TaskOptions]:
    """Check everything a registration passes; return its schedule (:func:`schedule_of`:
    cron text and a ``CronSchedule`` naming no zone are read in ``tz``), its
    :class:`Priority` and its :class:`~lldsched.core.task.TaskOptions`.

    ``depends_on`` is checked as a value here (a list or tuple of task ids, none
    twice); whether those ids are registered and free of cycles is
    :func:`check_graph`'s question, asked by the core once it knows the task's id.

    ``action`` may be None (a simulated task needs none; the threaded runtime asks
    :func:`not_callable` for None first).  Options equal to the defaults are the shared
    :data:`~lldsched.core.task.DEFAULT_OPTIONS`.

    ``check_arguments``: also :func:`check_call` (default; a task restored from a store
    or modified passes False: it is not judged again).  An action with no parameter at
    all registered without arguments, the common case, needs no call to it.
    """
    if not isinstance(name, str) or not name or name.isspace():
        raise ValidationError(f"task name must be a non-empty string, got {name!r}")
    if action is not None and not callable(action):
        raise not_callable(name, action)
    kind = type(schedule)
    # Only cron, text or a type not seen yet need schedule_of: the common case skips
    # the call (2 % of a registration, callgrind); isinstance also tells mypy.
    if kind not in SCHEDULE_TYPES or kind is CronSchedule or isinstance(schedule, str):
        schedule = schedule_of(name, schedule, tz=tz)
    if type(priority) is not Priority:
        priority = _priority(name, priority)
    shape = _BARE if action is None else _call_shape(action)
    pass_context = shape is _CTX
    # Nothing given, nothing to check: the common registration skips _options().
    # (Five checks folded into this one call, and this shortcut, are worth about a
    # fifth of a registration: benchmarks/bench_scale.py.)
    if (
        retry is None
        and timeout is None
        and kwargs is None
        and misfire is None
        and overlap is None
        and max_instances is None
        and type(args) is tuple
        and not args
        and not pass_context
        and isolation == "thread"
        and not depends_on
        and depends_on is not None  # None is refused below, as with other options given
    ):
        if check_arguments and shape is not _BARE:
            check_call(name, cast(Callable[..., Any], action), DEFAULT_OPTIONS)
        return schedule, priority, DEFAULT_OPTIONS
    options = _options(
        name,
        retry=retry,
        timeout=timeout,
        args=args,
        kwargs=kwargs,
        misfire=misfire,
        pass_context=pass_context,
        isolation=isolation,
        depends_on=_depends_on(name, depends_on),
    )
    if overlap is not None or max_instances is not None:
        check_overlap(name, schedule, overlap=overlap, max_instances=max_instances)
        if options.depends_on and overlap in (Overlap.CANCEL_OTHER, Overlap.ALLOW):
            # A run started beside a running one does not pass the readiness check
            # (docs/DECISIONS.md, "Overlap policies"): refused rather than unchecked.
            raise ValidationError(
                f"task {name!r}: depends_on cannot be combined with overlap={overlap!r} "
                "(runs started beside a running one would skip the readiness check); "
                "use Overlap.BUFFER_ONE or no overlap policy"
            )
        options = options._replace(overlap=overlap, max_instances=max_instances)
    if check_arguments and action is not None:
        check_call(name, action, options)
    return schedule, priority, options


class StoredOptions(TypedDict):
    """A stored definition's options, under the keywords registration takes them by."""

    priority: Priority
    retry: RetryPolicy
    timeout: float | None
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] | None
    misfire: MisfirePolicy | None
    isolation: Isolation
    depends_on: tuple[str, ...]
    overlap: Overlap | None
    max_instances: int | None


def options_of(definition: Task) -> StoredOptions:
    """Every option of ``definition`` (all of a :class:`~lldsched.persistence.Task` but
    its id, name, action and schedule), as :func:`validated` and ``SchedulerCore.add``
    take them: one list, so that a task restored from a store and one redefined by
    another process's change (:mod:`lldsched.core.follow`) are given the same."""
    return StoredOptions(
        priority=definition.priority,
        retry=definition.retry,
        timeout=definition.timeout,
        args=definition.args,
        kwargs=definition.kwargs,
        misfire=definition.misfire,
        isolation=cast(Isolation, definition.isolation),  # checked when it was registered
        depends_on=definition.depends_on,
        overlap=definition.overlap,
        max_instances=definition.max_instances,
    )


def check_overlap(
    name: str, schedule: object, *, overlap: Overlap | None, max_instances: int | None
) -> None:
    """``overlap`` and ``max_instances`` suit each other and ``schedule`` (the rules of
    :class:`~lldsched.policies.Overlap`): ValidationError naming the bad value."""
    if overlap is not None and not isinstance(overlap, Overlap):
        raise ValidationError(
            f"task {name!r}: overlap must be Overlap.BUFFER_ONE, CANCEL_OTHER or ALLOW, "
            f"got {overlap!r}"
        )
    if overlap is Overlap.ALLOW:
        if max_instances is None:
            raise ValidationError(
                f"task {name!r}: overlap=Overlap.ALLOW needs max_instances=N (N >= 1), got None"
            )
        whole(max_instances, name=f"task {name!r}: max_instances", at_least=1)
    elif max_instances is not None:
        raise ValidationError(
            f"task {name!r}: max_instances={max_instances!r} is for overlap=Overlap.ALLOW, "
            f"got overlap={overlap!r}"
        )
    if overlap is None:
        return
    inner: object = schedule
    while (wrapped := wrapped_schedule(inner)) is not None:  # through the decorators
        inner = wrapped
    if isinstance(inner, FixedDelay | OneTime):
        why = (
            "a fixed delay never overlaps"
            if isinstance(inner, FixedDelay)
            else "a one-off runs once"
        )
        raise ValidationError(
            f"task {name!r}: overlap={overlap!r} needs a schedule with slots on a grid "
            f"(fixed rate, cron); {why}: got {schedule!r}"
        )
    if getattr(inner, "on_overrun", None) is OverrunPolicy.CATCH_UP:
        raise ValidationError(
            f"task {name!r}: overlap={overlap!r} and on_overrun=OverrunPolicy.CATCH_UP both "
            f"decide the slots a long run overlaps; keep one: got {schedule!r}"
        )


def _depends_on(name: str, depends_on: object) -> tuple[str, ...]:
    """``depends_on`` as a tuple of ids: a list or tuple of non-empty strings, none twice."""
    if not isinstance(depends_on, list | tuple):
        raise ValidationError(
            f"task {name!r}: depends_on must be a list of task ids, got {depends_on!r}"
        )
    ids = tuple(depends_on)
    for upstream in ids:
        if not isinstance(upstream, str) or not upstream or upstream.isspace():
            raise ValidationError(
                f"task {name!r}: depends_on holds task ids (non-empty strings), got {upstream!r}"
            )
    twice = sorted({upstream for upstream in ids if ids.count(upstream) > 1})
    if twice:
        raise ValidationError(f"task {name!r}: depends_on names {twice} more than once")
    return ids


def check_graph(
    name: str,
    task_id: str | None,
    depends_on: tuple[str, ...],
    tasks: Mapping[str, ScheduledTask],
) -> None:
    """The upstreams of a task registered (or replaced) as ``task_id`` are registered
    tasks, and the edges make no cycle; :class:`ValidationError` naming the unknown ids
    or the cycle's path (``a -> b -> a``) otherwise.

    ``task_id`` is None for a task whose id is not chosen yet: nothing registered
    can depend on it, so it closes no cycle.  A task that names its own id is the
    shortest cycle.
    """
    if task_id is not None and task_id in depends_on:
        raise ValidationError(
            f"task {name!r}: depends_on makes a cycle: {task_id} -> {task_id} "
            "(a task cannot wait for itself)"
        )
    unknown = [upstream for upstream in depends_on if upstream not in tasks]
    if unknown:
        raise ValidationError(
            f"task {name!r}: depends_on names ids that are not registered: {unknown} "
            "(register the upstream tasks first)"
        )
    if task_id is None:
        return
    # A cycle through the new edges is a path from one of the upstreams back to task_id
    # along the registered edges (the task's own old edges are replaced: skipped).
    stack: list[tuple[str, tuple[str, ...]]] = [
        (upstream, (task_id, upstream)) for upstream in reversed(depends_on)
    ]
    seen: set[str] = set()
    while stack:
        current, path = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        for upstream in reversed(tasks[current].depends_on):
            if upstream == task_id:
                cycle = " -> ".join((*path, task_id))
                raise ValidationError(f"task {name!r}: depends_on makes a cycle: {cycle}")
            if upstream in tasks:
                stack.append((upstream, (*path, upstream)))


def check_task_id(task_id: object, *, who: str | None = None) -> str:
    """A caller-chosen task id: a non-empty string that is not all blanks (``who``: where
    it came from, when not the caller's ``id=``)."""
    if not isinstance(task_id, str) or not task_id or task_id.isspace():
        source = f" from {who}" if who else ""
        raise ValidationError(f"a task id must be a non-empty string, got {task_id!r}{source}")
    return task_id


def check_zone(tz: object) -> str:
    """A scheduler's default zone for cron: an IANA name (or a ZoneInfo), as its key;
    :class:`~lldsched.errors.ScheduleError` quoting it otherwise."""
    if not isinstance(tz, str | tzinfo):
        raise ScheduleError(f"tz={tz!r}: a zone is an IANA name such as 'Europe/Berlin'")
    try:
        return CronSchedule("* * * * *", tz=tz).tz
    except ScheduleError as exc:
        raise ScheduleError(f"tz={tz!r}: {exc}") from None


def schedule_of(name: str, schedule: object, *, tz: str) -> Schedule:
    """``schedule`` as a :class:`Schedule`: cron text becomes a ``CronSchedule`` read in
    ``tz``, as does a ``CronSchedule`` that names no zone; any other object must have
    ``first_run`` and ``next_run`` (ValidationError otherwise) and is returned as is."""
    kind = type(schedule)
    if kind in SCHEDULE_TYPES and kind is not CronSchedule:  # the common case, first
        return cast(Schedule, schedule)
    if isinstance(schedule, str):
        try:
            return CronSchedule(schedule, tz=tz)
        except ScheduleError as exc:
            raise ScheduleError(f"task {name!r}: {exc}") from None
    if isinstance(schedule, CronSchedule) and kind is CronSchedule:
        if schedule.names_zone or schedule.tz == tz:
            return schedule
        return schedule.in_zone(tz)
    if kind is Jittered or kind is Window:
        return _in_zone(cast(Schedule, schedule), tz)
    if not is_schedule(schedule):
        raise _not_a_schedule(name, schedule)
    if wrapped_schedule(schedule) is not None:  # a decorator of one's own
        return _in_zone(cast(Schedule, schedule), tz, task=name)
    return cast(Schedule, schedule)


def _in_zone(schedule: Schedule, tz: str, *, task: str = "") -> Schedule:
    """``schedule`` with a ``CronSchedule`` that names no zone read in ``tz``, also inside
    ``Jittered`` and ``Window`` (rebuilt around it, with their own settings) and inside a
    decorator of one's own (a schedule that keeps what it wraps in ``.schedule``: rebuilt
    by its ``with_schedule(inner)``, or refused with a ScheduleError naming the ways out
    when it has none); the same object when nothing in it changes."""
    kind = type(schedule)
    if kind is CronSchedule:
        assert isinstance(schedule, CronSchedule)
        return schedule if schedule.names_zone or schedule.tz == tz else schedule.in_zone(tz)
    if kind is Jittered:
        assert isinstance(schedule, Jittered)
        inner = _in_zone(schedule.schedule, tz, task=task)
        if inner is schedule.schedule:
            return schedule
        return Jittered(inner, schedule.max_delay, seed=schedule.seed)
    if kind is Window:
        assert isinstance(schedule, Window)
        inner = _in_zone(schedule.schedule, tz, task=task)
        if inner is schedule.schedule:
            return schedule
        return Window(inner, start=schedule.start, end=schedule.end, max_runs=schedule.max_runs)
    wrapped = wrapped_schedule(schedule)
    if wrapped is None:
        return schedule
    inner = _in_zone(wrapped, tz, task=task)
    if inner is wrapped:
        return schedule
    rebuild = getattr(schedule, "with_schedule", None)
    if not callable(rebuild):
        raise ScheduleError(
            f"task {task!r}: {schedule!r} wraps a CronSchedule that names no zone, which "
            f"the scheduler reads in its tz={tz!r}; give the decorator a "
            "with_schedule(schedule) method that returns a copy wrapping the schedule it "
            "is given, or name the zone: CronSchedule(..., tz=...)"
        )
    rebuilt: Schedule = rebuild(inner)
    return rebuilt


def _not_a_schedule(name: str, schedule: object) -> ValidationError:
    return ValidationError(
        f"task {name!r}: schedule must provide first_run() and next_run(), got {schedule!r}"
    )


F = TypeVar("F", bound=Callable[..., Any])


def registering(
    schedule: object, *, name: str | None, register: Callable[[str, Callable[..., Any]], object]
) -> Callable[[F], F]:
    """The decorator a runtime's ``scheduled(schedule, ...)`` returns: it calls
    ``register(task_name, function)`` (the task's name is ``name``, or the function's
    ``__name__``) and gives the function back unchanged.

    The schedule is checked here, before any function is decorated: a bare
    ``@scheduler.scheduled`` (the function arrives where the schedule belongs) is a
    :class:`ValidationError` at once, not a function silently replaced.
    """
    if not isinstance(schedule, str) and not is_schedule(schedule):
        hint = (
            "; write @scheduler.scheduled(FixedRate(60)), with the schedule in parentheses"
            if callable(schedule)
            else ""
        )
        raise ValidationError(
            f"scheduled() takes a schedule or a cron expression, got {schedule!r}{hint}"
        )

    def decorate(action: F) -> F:
        if not callable(action):
            raise ValidationError(f"scheduled() decorates a callable, got {action!r}")
        # A bad name= is the registration's to refuse, quoting it (it was blamed on the
        # function: "has no __name__"); only a missing __name__ is said here.
        task_name: str
        if name is not None:
            task_name = name
        else:
            found = getattr(action, "__name__", None)
            if not isinstance(found, str):
                raise ValidationError(
                    f"{action!r} has no __name__ to register it under; pass name="
                )
            task_name = found
        register(task_name, action)
        return action

    return decorate


def not_callable(name: str, action: object) -> ValidationError:
    """The error of an ``action`` that cannot be called (the threaded runtime raises it
    for None too: it has nothing to run without one)."""
    return ValidationError(f"task {name!r}: action must be callable, got {action!r}")


def _priority(name: str, value: object) -> Priority:
    """``value`` as a :class:`Priority` (a member or its int), or ValidationError."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return Priority(value)
        except ValueError:
            pass
    raise ValidationError(
        f"task {name!r}: priority must be a Priority (HIGH, NORMAL, LOW), got {value!r}"
    )


def _options(
    name: str,
    *,
    retry: RetryPolicy | None,
    timeout: float | timedelta | None,
    args: tuple[Any, ...] | list[Any],
    kwargs: Mapping[str, Any] | None,
    misfire: MisfirePolicy | None,
    pass_context: bool,
    isolation: Isolation,
    depends_on: tuple[str, ...],
) -> TaskOptions:
    if retry is None:
        retry = DEFAULT_RETRY
    elif not isinstance(retry, RetryPolicy):
        raise ValidationError(f"task {name!r}: retry must be a RetryPolicy, got {retry!r}")
    if timeout is not None:
        timeout = float(
            seconds(
                timeout, name=f"task {name!r}: timeout", above=0, expected="must be seconds > 0"
            )
        )
    if not isinstance(args, tuple | list):
        raise ValidationError(f"task {name!r}: args must be a tuple, got {args!r}")
    if kwargs is not None and (
        not isinstance(kwargs, Mapping) or not all(isinstance(k, str) for k in kwargs)
    ):
        raise ValidationError(f"task {name!r}: kwargs must map str to values, got {kwargs!r}")
    if misfire is not None and not isinstance(misfire, MisfirePolicy):
        raise ValidationError(f"task {name!r}: misfire must be a MisfirePolicy, got {misfire!r}")
    if isolation != "thread":
        _check_process_call(name, isolation, args=args, kwargs=kwargs, pass_context=pass_context)
    options = TaskOptions(
        retry, timeout, tuple(args), kwargs or None, pass_context, misfire, isolation, depends_on
    )
    return DEFAULT_OPTIONS if options == DEFAULT_OPTIONS else options  # equal values shared


def check_isolation(name: str, isolation: object) -> Isolation:
    """``isolation`` if it is one of :data:`ISOLATIONS`, else ValidationError naming it."""
    if isolation not in ISOLATIONS or not isinstance(isolation, str):
        raise ValidationError(
            f"task {name!r}: isolation must be one of {ISOLATIONS}, got {isolation!r}"
        )
    return isolation


def isolated_action(name: str, action: object, *, isolation: object) -> Callable[..., Any] | None:
    """The action a task with this ``isolation`` runs: ``action`` itself for a thread;
    for a process, the function its import path names (imported here, checked to be
    named back by the same path), or None (a simulated task needs no action).

    ValidationError naming the bad value: an ``isolation`` that is not one of
    :data:`ISOLATIONS`, or a process-isolated ``action`` that is a callable object
    (it must be given by name: nothing is pickled), a path that does not import, or a
    path into ``__main__`` (the child's ``__main__`` is its own, so the function could
    never be found there).
    """
    if check_isolation(name, isolation) == "thread":
        if isinstance(action, str):
            raise ValidationError(
                f"task {name!r}: action must be callable, got {action!r} (an import path "
                "is the action of a task registered with isolation='process')"
            )
        return action  # type: ignore[return-value]  # validated() checks it is callable
    if action is None:
        return None
    if not isinstance(action, str):
        raise ValidationError(
            f"task {name!r}: a process-isolated action is given by its import path "
            f"'package.module:function', got {action!r}"
        )
    if action.partition(":")[0] == "__main__":
        raise ValidationError(
            f"task {name!r}: a process-isolated action cannot live in __main__, got "
            f"{action!r}: the worker process runs its own __main__, where the function "
            "does not exist; move it into a module and name it 'module:function'"
        )
    try:
        function = import_callable(action)
        import_path(function, who=f"task {name!r} (isolation='process')")
    except ValidationError as exc:
        raise ValidationError(f"task {name!r}: {exc}") from None
    return function


def _check_process_call(
    name: str,
    isolation: str,
    *,
    args: tuple[Any, ...] | list[Any],
    kwargs: Mapping[str, Any] | None,
    pass_context: bool,
) -> None:
    """A process-isolated call: arguments JSON keeps unchanged, and no ``ctx``."""
    check_isolation(name, isolation)
    if pass_context:
        raise ValidationError(
            f"task {name!r}: a process-isolated action cannot take ctx (a RunContext "
            "stays in this process; the child is killed at the timeout instead)"
        )
    try:
        json_arguments(args, kwargs)
    except (TypeError, ValueError) as exc:
        raise ValidationError(
            f"task {name!r}: a process-isolated task needs args and kwargs that JSON keeps "
            f"unchanged (str, int, float, bool, None, lists, str-keyed dicts), got "
            f"args={args!r}, kwargs={kwargs!r}: {exc}"
        ) from None
