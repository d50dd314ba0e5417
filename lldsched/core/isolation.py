"""Where a task's action runs (``isolation=``), and what an isolated registration must give.

:data:`ISOLATIONS`: ``"thread"`` (the default) calls the action on a worker thread;
``"process"`` runs it in a child process (:mod:`lldsched.threaded.processes.pool`), so
the action is given as an import path ``"package.module:function"`` with arguments
JSON keeps unchanged (the rule of :mod:`lldsched.importpath`, the one durable
stores follow), and it takes no ``ctx``.  :func:`isolated_action` turns the path
into the function, checked here, at registration; :func:`check_process_call`
checks the arguments.  :func:`is_loop_action` says which thread tasks are coroutines,
whose runs the threaded scheduler's event loop awaits.  :func:`killed_at_deadline` and
:func:`worker_killed` word how a process-isolated run was stopped, and
:func:`killed_by_shutdown` why a shutdown killed it, for the threaded runtime's pool and
the simulation alike.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping
from functools import partial
from inspect import CO_COROUTINE
from types import CodeType, ModuleType
from typing import Any, get_args

from lldsched.core.calls import not_callable
from lldsched.core.runs import timeout_error
from lldsched.core.task import Isolation
from lldsched.errors import ValidationError, shown
from lldsched.importpath import import_callable, import_path, json_arguments

__all__ = [
    "DRAIN_OUT_OF_TIME",
    "ISOLATIONS",
    "KILLED",
    "check_isolation",
    "check_process_call",
    "is_loop_action",
    "isolated_action",
    "killed_at_deadline",
    "killed_by_shutdown",
    "worker_killed",
]

ISOLATIONS: tuple[Isolation, ...] = get_args(Isolation)
"""The values of a task's ``isolation`` option, ``("thread", "process")``: where its action
runs (the type :data:`~lldsched.core.task.Isolation` is the one list)."""


def check_isolation(name: str, isolation: object) -> Isolation:
    """``isolation`` if it is one of :data:`ISOLATIONS`, else ValidationError naming it."""
    if isolation not in ISOLATIONS or not isinstance(isolation, str):
        raise ValidationError(
            f"task {name!r}: isolation must be one of {ISOLATIONS}, got {shown(isolation)}"
        )
    return isolation


def is_loop_action(action: object, isolation: str) -> bool:
    """True for an ``async def`` function or an object whose class's ``__call__`` is
    one (or a ``functools.partial`` of either) run on a thread: its runs go to the
    loop.  The one statement of the rule: at registration, at restore and for a task
    another process registered.  A process-isolated one is awaited in its child
    (``isolation="process"``: :func:`lldsched.threaded.processes.child.serve`), so False.

    Asked at every registration, so a function's code flags are read first (tens of
    nanoseconds; ``inspect.iscoroutinefunction`` alone costs several times that, on
    a registration of about two microseconds).  An async callable object was a thread
    task whose action returned a coroutine: each run waited for a worker to call it,
    behind the thread runs (docs/decisions/threaded.md, "An async callable object is a
    coroutine action").
    """
    if isolation != "thread":
        return False
    code: CodeType | None = getattr(action, "__code__", None)  # bound methods pass it on
    if code is not None:
        return code.co_flags & CO_COROUTINE != 0
    if inspect.iscoroutinefunction(action):  # a partial of an async def function too
        return True
    while isinstance(action, partial):  # a partial of an async callable object
        action = action.func
    try:
        call: CodeType = type(action).__call__.__code__
    except AttributeError:  # not callable, or a class (type.__call__ is not Python code)
        return False
    return call.co_flags & CO_COROUTINE != 0


def isolated_action(name: str, action: object, *, isolation: object) -> Callable[..., Any] | None:
    """The action a task with this ``isolation`` runs: ``action`` itself for a thread;
    for a process, the function its import path names (imported here, checked to be
    named back by the same path), or None (a simulated task needs no action).

    ValidationError naming the bad value: an ``isolation`` that is not one of
    :data:`ISOLATIONS`, or a process-isolated ``action`` that is a callable object
    (it must be given by name: nothing is pickled; the message gives the path to write
    for it, or says why it has none: :func:`_instead`), a path that does not import, or
    a path into ``__main__`` (the child's ``__main__`` is its own, so the function could
    never be found there).  A class given by its path is accepted, as a thread takes
    one: the run calls it, and its record keeps the instance's repr
    (docs/decisions/threaded.md, "A class given by its path is an isolated action").
    """
    if check_isolation(name, isolation) == "thread":
        if isinstance(action, str):
            raise not_callable(name, action)
        return action  # type: ignore[return-value]  # validated() checks it is callable
    if action is None:
        return None
    if not isinstance(action, str):
        raise ValidationError(
            f"task {name!r}: a process-isolated action is given by its import path "
            f"'package.module:function', got {action!r}{_instead(action)}"
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
    unfound = _unfound_by_name(action.partition(":")[0])
    if unfound is not None:
        module = sys.modules.get(unfound)
        where = getattr(getattr(module, "__spec__", None), "origin", None)
        raise ValidationError(
            f"task {name!r}: the worker process imports {unfound!r} by its name, and no "
            "finder of sys.meta_path finds it by that name (this process loaded it"
            f"{f' from {where!r}' if where else ''} another way: "
            "importlib.util.spec_from_file_location, a plugin loader), so every run of "
            f"{action!r} would fail there: put its folder on sys.path, or the module in an "
            "installed package, before registering it"
        )
    return function


def _unfound_by_name(module: str) -> str | None:
    """The first of ``module`` and its parent packages (the outermost first) that no
    finder of ``sys.meta_path`` finds by its name, or None if each is found.  A worker
    process starts with this process's ``sys.path`` and the finders its start installs
    (``site``'s, an editable install's), and imports the module by its name there; a
    module this process loaded another way (from a file, by a plugin host's loader) is
    in ``sys.modules`` here, so it imports back here, but not there.  A finder only
    this process installed finds it here and not there: not caught.  A parent that is
    not a package (no ``__path__``) ends the walk: nothing can be said below it."""
    parts = module.split(".")
    path: list[str] | None = None
    for depth in range(1, len(parts) + 1):
        name = ".".join(parts[:depth])
        if not any(_finds(finder, name, path) for finder in sys.meta_path):
            return name
        search = getattr(sys.modules.get(name), "__path__", None)
        if search is None:
            return None
        path = list(search)
    return None


def _finds(finder: object, name: str, path: list[str] | None) -> bool:
    """``finder`` finds ``name`` (within the package folders ``path``); a finder that
    has no ``find_spec`` or raises finds nothing."""
    find = getattr(finder, "find_spec", None)
    if find is None:
        return False
    try:
        return find(name, path) is not None
    except Exception:  # a third-party finder's bug is not the registration's
        return False


def _instead(action: object) -> str:
    """What the refusal of a process-isolated ``action`` given as an object adds: the
    path to write (``"; give it by its import path: 'mypkg.jobs:nightly'"``), from its
    ``__module__`` and ``__qualname__`` when that path imports back to ``action``
    (:func:`~lldsched.importpath.import_path`); else why it has none (a lambda, a
    nested function, a function of ``__main__``, a bound method, a partial or another
    callable object); nothing for a value that is not callable."""
    if not callable(action):
        return ""
    module = getattr(action, "__module__", None)
    qualname = getattr(action, "__qualname__", None)
    define = "define a function at module level in a module and give 'module:function'"
    owner = getattr(action, "__self__", None)  # a builtin function's is its module
    if owner is not None and not isinstance(owner, (type, ModuleType)):
        return (
            "; a bound method has no import path (its instance stays in this process): "
            "define a function at module level in a module that makes the instance and "
            "calls the method, and give 'module:function'"
        )
    if not isinstance(module, str) or not isinstance(qualname, str):
        return f"; it has no import path (a partial or a callable object): {define}"
    if "<lambda>" in qualname:
        return f"; a lambda has no import path: {define}"
    if "<locals>" in qualname:
        return (
            f"; {qualname!r} is defined inside a function (a nested function or closure) "
            f"and has no import path: {define}"
        )
    if module == "__main__":
        return (
            "; it is defined in __main__, which the worker process does not import (it "
            "runs its own __main__): move it into a module, import it from there and give "
            f"'module:{qualname}'"
        )
    named = f"{module}:{qualname}"
    try:
        path = import_path(action, who="")  # callable, checked above
    except ValidationError:  # its name imports something else, or nothing
        return f"; {named!r} does not import back to it: {define}"
    return f"; give it by its import path: {path!r}"


def check_process_call(
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
            f"args={shown(args)}, kwargs={shown(kwargs)}: {exc}"
        ) from None


def worker_killed(pid: int | None) -> str:
    """How a process-isolated run was stopped, as its error text ends:
    ``(its worker process 4242 was killed)``; ``pid`` None for the simulation's, which
    models the kill and starts no child."""
    if pid is None:
        return "(its worker process was killed)"
    return f"(its worker process {pid} was killed)"


KILLED = "the scheduler shut down without draining"
"""Why a shutdown without a drain (``drain=False``) killed a process-isolated run (its
record's ``CancelledError: ...``).  A release before this one said it of a drain out of
time too (:data:`DRAIN_OUT_OF_TIME` now): a record of either in a durable store may
begin with it."""

DRAIN_OUT_OF_TIME = "the scheduler shut down, its drain out of time"
"""How the reason of a kill a drain out of time made begins (:func:`killed_by_shutdown`)."""


def killed_by_shutdown(*, drain: bool, drained: float | None) -> str:
    """Why a shutdown killed a process-isolated run, its record's ``CancelledError: ...``
    (:meth:`ProcessPool.kill_all <lldsched.threaded.processes.ProcessPool.kill_all>`'s
    ``reason``, and the simulation's cut without a drain, ``SimulationCuts._kill_isolated``,
    docs/decisions/simulation.md, "A shutdown without a drain kills an isolated run at once,
    in the simulation too"): :data:`KILLED` without a drain, else that
    its drain ran out of time after ``drained`` seconds (``shutdown(timeout=5)``'s 4: its
    last second is for the ends of the runs in flight,
    :func:`~lldsched.threaded.coroutines.shutdown.grace_for`; None: a drain with no bound, never
    out of time, which kills a run only where it gave up before its end, and names no
    time)."""
    if not drain:
        return KILLED
    if drained is None:
        return DRAIN_OUT_OF_TIME
    return f"{DRAIN_OUT_OF_TIME} after {drained:g} s"


def killed_at_deadline(duration: float, *, budget: float, pid: int | None) -> str:
    """The error text of a process-isolated run killed at its deadline, after
    ``duration`` seconds against ``budget``: the budget's wording is
    :func:`~lldsched.core.runs.timeout_error`'s, the one every runtime's record of a
    run over its timeout uses (``TimeoutError: stopped at its 5 s timeout``, or ``ran
    5.01 s, over its 5 s budget`` as its record measured it), then :func:`worker_killed`
    (docs/decisions/threaded.md, "A process-isolated run is cut at its deadline, in the
    simulation too")."""
    return f"{timeout_error(duration, budget=budget)} {worker_killed(pid)}"
