"""The checks on what a registration passes: id, schedule, priority and options.

Each check raises :class:`~lldsched.errors.ValidationError` with the bad value in
its message, before anything is registered (:meth:`SchedulerCore.add
<lldsched.core.machine.SchedulerCore.add>` calls them first).  :func:`validated` is
the one entry: it asks :mod:`~lldsched.core.schedulearg` what the schedule is (cron
text, the default zone), :mod:`~lldsched.core.calls` whether the action takes its
arguments (and ``ctx``), and :mod:`~lldsched.core.isolation` what a process-isolated
task must give; the options themselves are checked here.  :func:`registering` is
the decorator form both runtimes offer.

**Dependencies** (``depends_on=``) are checked here too, in two steps: the value
(a list of task ids, in :func:`validated`) and the graph (:func:`check_graph`:
every id registered, no cycle), before anything is registered.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable, Collection, Mapping
from datetime import timedelta
from typing import Any, TypedDict, TypeVar, cast

from lldsched.checks import id_hint, instance_hint, seconds, whole
from lldsched.core.calls import BARE, CTX, call_shape, check_call, not_callable
from lldsched.core.isolation import check_process_call
from lldsched.core.schedulearg import is_schedule, schedule_of
from lldsched.core.task import DEFAULT_OPTIONS, Isolation, ScheduledTask, TaskOptions
from lldsched.errors import ValidationError, shown
from lldsched.model import Priority
from lldsched.persistence import Task
from lldsched.policies import (
    MisfirePolicy,
    Overlap,
    OverrunPolicy,
    RetryPolicy,
    uncallable_override,
)
from lldsched.schedules.base import Schedule
from lldsched.schedules.objects import wrapped_schedule
from lldsched.schedules.simple import FixedDelay, OneTime
from lldsched.storechecks import SHORT_ID, check_id_size

__all__ = [
    "UNCHANGED",
    "Isolation",
    "TaskIds",
    "Unchanged",
    "check_graph",
    "check_overlap",
    "check_task_id",
    "options_of",
    "plain_text",
    "registering",
    "validated",
]

DEFAULT_RETRY = RetryPolicy()

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


def validated(
    name: str,
    action: Callable[..., Any] | str | None,
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
) -> tuple[Callable[..., Any] | None, Schedule, Priority, TaskOptions]:
    """Check everything a registration passes; return its action (a callable, or None:
    text, a thread's import path, is refused here by the callable check, with the error
    :func:`~lldsched.core.isolation.isolated_action` gives it), its schedule
    (:func:`schedule_of`: cron text and a ``CronSchedule`` naming no zone are read in
    ``tz``), its :class:`Priority` and its :class:`~lldsched.core.task.TaskOptions`.

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
        raise ValidationError(f"task name must be a non-empty string, got {shown(name)}")
    if len(name) > SHORT_ID and check_arguments:  # as an id's (check_task_id); checked
        check_id_size(name, nothing="registered", field="name")  # before a message quotes it
    if action is not None and not callable(action):
        raise not_callable(name, action)
    checked = schedule_of(name, schedule, tz=tz)
    if type(priority) is not Priority:
        priority = _priority(name, priority)
    shape = BARE if action is None else call_shape(action)
    pass_context = shape is CTX
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
        if check_arguments and shape is not BARE:
            check_call(name, cast(Callable[..., Any], action), DEFAULT_OPTIONS)
        return action, checked, priority, DEFAULT_OPTIONS
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
        check_overlap(name, checked, overlap=overlap, max_instances=max_instances)
        if options.depends_on and overlap in (Overlap.CANCEL_OTHER, Overlap.ALLOW):
            # A run started beside a running one does not pass the readiness check
            # (docs/decisions/overlap.md, "Overlap policies"): refused rather than unchecked.
            raise ValidationError(
                f"task {name!r}: depends_on cannot be combined with overlap={overlap} "
                "(runs started beside a running one would skip the readiness check); "
                "use Overlap.BUFFER_ONE or no overlap policy"
            )
        options = options._replace(overlap=overlap, max_instances=max_instances)
    if check_arguments and action is not None:
        check_call(name, action, options)
    return action, checked, priority, options


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
            f"got {shown(overlap)}"
        )
    if overlap is Overlap.ALLOW:
        if max_instances is None:
            raise ValidationError(
                f"task {name!r}: overlap=Overlap.ALLOW needs max_instances=N (N >= 1), got None"
            )
        whole(max_instances, name=f"task {name!r}: max_instances", at_least=1)
    elif max_instances is not None and overlap is None:
        raise _alone(name, max_instances)
    elif max_instances is not None:
        raise ValidationError(
            f"task {name!r}: max_instances={shown(max_instances)} is for overlap=Overlap.ALLOW, "
            f"got overlap={overlap}"
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
            f"task {name!r}: overlap={overlap} needs a schedule with slots on a grid "
            f"(fixed rate, cron); {why}: got {schedule!r}"
        )
    if getattr(inner, "on_overrun", None) is OverrunPolicy.CATCH_UP:
        raise ValidationError(
            f"task {name!r}: overlap={overlap} and on_overrun=OverrunPolicy.CATCH_UP both "
            f"decide the slots a long run overlaps; keep one: got {schedule!r}"
        )


def _alone(name: str, max_instances: object) -> ValidationError:
    """The refusal of ``max_instances`` given without ``overlap`` (APScheduler's
    ``max_instances=3``, ported alone): what to pass instead, and for 1, APScheduler's
    default, that it is lldsched's default already."""
    given = f"task {name!r}: max_instances={shown(max_instances)} was given without overlap="
    given += ", and a task's runs never overlap unless it asks: "
    if max_instances == 1 and type(max_instances) is int:
        return ValidationError(
            f"{given}drop max_instances=1, one run at a time is the default "
            "(overlap=Overlap.ALLOW, max_instances=1 records a slot due during a run "
            "skipped as it comes due, as APScheduler does)"
        )
    many = type(max_instances) is int and max_instances > 1
    count = max_instances if many else "N (an int N >= 1)"
    return ValidationError(f"{given}pass overlap=Overlap.ALLOW, max_instances={count}")


def _depends_on(name: str, depends_on: object) -> tuple[str, ...]:
    """``depends_on`` as a tuple of ids: a list or tuple of non-empty strings, none twice."""
    if not isinstance(depends_on, list | tuple):
        raise ValidationError(
            f"task {name!r}: depends_on must be a list of task ids, got {shown(depends_on)}"
        )
    ids = tuple(depends_on)
    for upstream in ids:
        if not isinstance(upstream, str) or not upstream or upstream.isspace():
            raise ValidationError(
                f"task {name!r}: depends_on holds task ids (non-empty strings), "
                f"got {shown(upstream)}{id_hint(upstream)}"
            )
    twice = sorted({upstream for upstream in ids if ids.count(upstream) > 1})
    if twice:
        raise ValidationError(f"task {name!r}: depends_on names {twice} more than once")
    return tuple(plain_text(upstream) for upstream in ids)


def check_graph(
    name: str,
    task_id: str | None,
    depends_on: tuple[str, ...],
    tasks: Mapping[str, ScheduledTask],
    retired: Collection[str] = (),
) -> None:
    """The upstreams of a task registered (or replaced) as ``task_id`` are registered
    tasks, and the edges make no cycle; :class:`ValidationError` naming the unknown ids
    or the cycle's path (``a -> b -> a``) otherwise.  ``retired``: the upstreams that
    retired which the registered task ``task_id`` names already (the graph keeps how
    they ended): its new definition may name them again, as an identical one changes
    nothing; a new task cannot (docs/decisions/dependencies.md, "A retired upstream
    counts as it ended").

    ``task_id`` is None for a task whose id is not chosen yet: nothing registered
    can depend on it, so it closes no cycle.  A task that names its own id is the
    shortest cycle.
    """
    if task_id is not None and task_id in depends_on:
        raise ValidationError(
            f"task {name!r}: depends_on makes a cycle: {task_id} -> {task_id} "
            "(a task cannot wait for itself)"
        )
    unknown = [
        upstream for upstream in depends_on if upstream not in tasks and upstream not in retired
    ]
    if unknown:
        raise ValidationError(
            f"task {name!r}: depends_on names ids that are not registered: {shown(unknown)} "
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
        found = tasks.get(current)
        if found is None:  # a retired upstream names nothing: no edge leaves it
            continue
        for upstream in reversed(found.depends_on):
            if upstream == task_id:
                cycle = " -> ".join((*path, task_id))
                raise ValidationError(f"task {name!r}: depends_on makes a cycle: {cycle}")
            if upstream in tasks:
                stack.append((upstream, (*path, upstream)))


def plain_text(text: str) -> str:
    """``text`` as a plain ``str``: how a task's id, name and upstream ids are kept.

    A ``str`` subclass given there (an application's ``class Job(str, Enum)`` member) is
    kept as its text, the value a store keeps and a lookup matches, not as the object:
    its ``str()`` (``'Job.REPORT'``, or whatever its ``__str__`` says) is what log lines
    and reprs would show, an id no lookup finds, and its records' ids would change type
    across a restart (docs/decisions/checking-input.md, "An id given as a str subclass is kept as
    its text")."""
    return text if type(text) is str else str.__str__(text)


def check_task_id(task_id: object, *, who: str | None = None) -> str:
    """A caller-chosen task id: a non-empty printable string with no blank at either end
    (``who``: where it came from, when not the caller's ``id=``).  Printable, because
    log lines name the id as it is (an id with a newline could forge a line), as a
    scheduler's ``name`` is (returned as :func:`plain_text`); no blank at an end,
    because ``" nightly"`` and ``"nightly"`` would be two tasks that list alike (a
    copy-paste or a config file's padding); at most
    :data:`~lldsched.storechecks.MAX_ID_BYTES` of UTF-8, on every store (PostgreSQL's
    keeps it as an index key).  Ids already in a store are not judged again when they
    are loaded."""
    if not isinstance(task_id, str) or not task_id or task_id.isspace():
        source = f" from {who}" if who else ""
        raise ValidationError(f"a task id must be a non-empty string, got {shown(task_id)}{source}")
    task_id = plain_text(task_id)  # judged as the text it is kept as
    if not task_id.isprintable() or task_id != task_id.strip():
        source = f" from {who}" if who else ""
        raise ValidationError(
            "a task id must be printable, with no blank at either end, "
            f"got {shown(task_id)}{source}"
        )
    if len(task_id) > SHORT_ID:  # the same bound on every store; a short id is within it
        check_id_size(task_id, nothing="registered")
    return task_id


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
            f"scheduled() takes a schedule or a cron expression, got {shown(schedule)}{hint}"
        )

    def decorate(action: F) -> F:
        if not callable(action):
            raise ValidationError(f"scheduled() decorates a callable, got {shown(action)}")
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
        put_back = _bind_early(action)
        try:
            register(task_name, action)
        except BaseException:  # refused: the def statement raises, and binds nothing
            if put_back is not None:
                put_back()
            raise
        return action

    return decorate


def _bind_early(action: Callable[..., Any]) -> Callable[[], None] | None:
    """Bind a module-level function decorated by ``scheduled`` under its name in its
    module now, as Python does once the decorator returns it (unchanged): a durable
    store checks, as it registers, that the function's import path gives it back, and
    before this the name was not bound yet (every function so decorated was refused:
    "'jobs' has no attribute 'cleanup'") or held the definition that a cell or a reload
    run again replaces ("does not round-trip").  Nothing is bound for a nested function
    or a method (their qualified name is not their name), or where the module's name
    holds something other than an earlier definition of this function.  Returns what
    puts the module's name back as it was, if it bound it.

    Nor where the name holds the very function ``action`` wraps (``functools.wraps``, a
    ``staticmethod``): ``scheduler.scheduled(FixedRate(60))(timed(job))``, a call on a
    function already bound, replaced the module's ``job`` with the wrapper, which
    copies its name, qualified name and module."""
    name = getattr(action, "__name__", None)
    module = sys.modules.get(getattr(action, "__module__", None) or "")
    if module is None or not isinstance(name, str):
        return None
    if name != getattr(action, "__qualname__", None):
        return None
    missing = object()
    held = getattr(module, name, missing)
    if held is not missing and (
        getattr(held, "__module__", None) != action.__module__
        or getattr(held, "__qualname__", None) != name
        or _wraps(action, held)
    ):
        return None
    setattr(module, name, action)

    def put_back() -> None:
        if held is missing:
            delattr(module, name)
        else:
            setattr(module, name, held)

    return put_back


def _wraps(action: object, held: object) -> bool:
    """Whether ``held`` is on ``action``'s ``__wrapped__`` chain (``functools.wraps``, a
    ``staticmethod``); a chain that loops is not followed past its first repeat."""
    seen = {id(action)}
    inner = getattr(action, "__wrapped__", None)
    while inner is not None and id(inner) not in seen:
        if inner is held:
            return True
        seen.add(id(inner))
        inner = getattr(inner, "__wrapped__", None)
    return False


def _priority(name: str, value: object) -> Priority:
    """``value`` as a :class:`Priority` (a member or its int), or ValidationError."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return Priority(value)
        except ValueError:
            pass
    raise ValidationError(
        f"task {name!r}: priority must be a Priority (HIGH, NORMAL, LOW), got {shown(value)}"
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
        raise ValidationError(
            f"task {name!r}: retry must be a RetryPolicy, got {shown(retry)}{instance_hint(retry)}"
        )
    elif (wrong := uncallable_override(retry)) is not None:  # found now, not at a failure
        raise ValidationError(f"task {name!r}: retry {shown(retry)}: {wrong}")
    if timeout is not None:
        timeout = float(
            seconds(
                timeout, name=f"task {name!r}: timeout", above=0, expected="must be seconds > 0"
            )
        )
    if not isinstance(args, tuple | list):
        one = f" (one argument: args=({shown(args)},))" if isinstance(args, str) else ""
        raise ValidationError(
            f"task {name!r}: args must be a tuple or a list, got {shown(args)}{one}"
        )
    if kwargs is not None and (
        not isinstance(kwargs, Mapping) or not all(isinstance(k, str) for k in kwargs)
    ):
        raise ValidationError(f"task {name!r}: kwargs must map str to values, got {shown(kwargs)}")
    if misfire is not None and not isinstance(misfire, MisfirePolicy):
        raise ValidationError(
            f"task {name!r}: misfire must be a MisfirePolicy, got {shown(misfire)}"
            f"{instance_hint(misfire)}"
        )
    if isolation != "thread":
        check_process_call(name, isolation, args=args, kwargs=kwargs, pass_context=pass_context)
    # a copy, as tuple(args) is: the caller's dict changed afterwards changes neither the
    # runs nor the store's row
    given = dict(kwargs) if kwargs else None
    options = TaskOptions(
        retry, timeout, tuple(args), given, pass_context, misfire, isolation, depends_on
    )
    return DEFAULT_OPTIONS if options == DEFAULT_OPTIONS else options  # equal values shared
