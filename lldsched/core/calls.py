"""What calling an action needs, and the check that a registration's arguments fit it.

Each run calls ``action(*args, **kwargs)``, with ``ctx=`` (a
:class:`~lldsched.core.context.RunContext`) added when the action declares ``ctx``
(:func:`wants_context`).  :func:`check_call` binds a registration's arguments to the
action's signature at registration, so a call that cannot work is a
:class:`~lldsched.errors.ValidationError` then, not a ``TypeError`` in every
attempt.  Both run on every registration (:func:`~lldsched.core.registration.validated`
calls them) and are kept cheap by remembering, per code object, what they learnt.

The caches find a code object by its identity (``id(code)``), never by its hash:
hashing a code object reads all of its bytecode, constants and names, so a function
of 3,000 lines (160 KB of bytecode) cost tens of µs a registration, against 0.1 µs
for a short one, and its signature check twice that again.  An
entry holds its code object only weakly, and goes when it is freed (:func:`_remember`),
so the memory of a function redefined (a notebook's cell run again) is given back, and
an id that a later code object takes after it never finds the freed one's answer.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Hashable, Mapping
from functools import partial
from types import BuiltinFunctionType, CodeType
from typing import Any, TypeVar

from lldsched import checks
from lldsched.core.schedulearg import ORDERS
from lldsched.core.task import TaskOptions
from lldsched.errors import ValidationError, shown

__all__ = ["BARE", "CTX", "call_shape", "check_call", "not_callable", "wants_context"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

# Caches, filled as registrations come (plain structures written under the
# runtime's lock, or by the single-threaded simulation; a racing write stores the
# same answer; an entry leaves when its code object is freed, on whichever thread).
# id(code) -> what calling a function of this code needs (bounded below): BARE (no
# parameter at all: f() is the only call, nothing to check), TAKES (parameters, no
# ctx), CTX (declares ctx), ASK_WRAPPED (no ctx, takes **kwargs: ask what it wraps).
CALL_BY_CODE: dict[int, int] = {}
BARE, TAKES, CTX, ASK_WRAPPED = 0, 1, 2, 3  # compared by identity (cheaper than ==)
_CONTEXT_CACHE_LIMIT = 4096
# (id(code), bound method?) -> its signature, None when it has none (bounded as above).
# Which parameters exist and which have defaults is the code's, not the function's: two
# functions made by one ``def`` bind arguments alike.
SIGNATURE_BY_CODE: dict[tuple[int, bool], inspect.Signature | None] = {}
_GENERATES = inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR  # code flags of a yield
_UNREAD = inspect.Signature()  # SIGNATURE_BY_CODE's answer for a code not read yet
# (id(cache), key) -> the weak reference to the code object of the cache's entry at key,
# whose callback drops the entry and this (see _remember).
_WATCHED: dict[tuple[int, Hashable], weakref.ref[CodeType]] = {}


def _remember(cache: dict[K, V], key: K, code: CodeType, answer: V) -> None:
    """Keep ``answer`` for ``code`` under ``key`` (made of ``id(code)``) while the cache
    has room, until ``code`` is freed: its weak reference's callback runs before the
    memory, and so the id, can be taken by another object."""
    if len(cache) >= _CONTEXT_CACHE_LIMIT:
        return
    watched, watching = (id(cache), key), _WATCHED  # held here: a module torn down at exit

    def forget(_: weakref.ref[CodeType]) -> None:
        cache.pop(key, None)
        watching.pop(watched, None)

    watching[watched] = weakref.ref(code, forget)
    cache[key] = answer


def wants_context(action: Callable[..., Any]) -> bool:
    """True when ``action`` declares a parameter named ``ctx``, or is a wrapper that takes
    ``**kwargs`` around one that does (``functools.wraps`` sets ``__wrapped__``): the
    wrapper passes ``ctx=`` on."""
    return call_shape(action) is CTX


def call_shape(action: Callable[..., Any]) -> int:
    """What calling ``action`` needs: ``BARE``, ``TAKES`` or ``CTX`` (see CALL_BY_CODE)."""
    code = getattr(action, "__code__", None)  # a bound method passes its function's on
    if code is not None:  # plain functions and methods: no inspect.signature on the hot path
        known = CALL_BY_CODE.get(id(code))  # by identity: see the module docstring
        if known is None:
            names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
            if "ctx" in names:
                known = CTX
            elif code.co_flags & inspect.CO_VARKEYWORDS:
                known = ASK_WRAPPED
            else:  # a generator function is never BARE: check_call refuses it
                known = TAKES if names or code.co_flags & _GENERATES else BARE
            _remember(CALL_BY_CODE, id(code), code, known)
        if known is ASK_WRAPPED:  # the code is shared by wrappers of different functions
            wrapped = getattr(action, "__wrapped__", None)
            return CTX if wrapped is not None and wants_context(wrapped) else TAKES
        return known
    if isinstance(action, BuiltinFunctionType):  # print, len: C functions take no ctx, and
        return TAKES  # inspect would parse their text signature at every registration (~100 µs)
    try:
        parameters = inspect.signature(action).parameters
    except (TypeError, ValueError):  # callables without a signature
        return TAKES
    return CTX if "ctx" in parameters else TAKES


def check_call(
    name: str, action: Callable[..., Any], options: TaskOptions, *, values: bool = True
) -> None:
    """``action`` can be called as each run calls it: ``action(*args, **kwargs)``, with
    ``ctx=`` added when it declares ``ctx``.  ValidationError naming the arguments and
    what is wrong (a required parameter missing, one too many, an unknown keyword, a
    ``ctx`` in ``kwargs``), at registration rather than a ``TypeError`` in every attempt
    until the dead letter.  A callable whose signature cannot be read passes; a wrapper
    (``functools.wraps``) is judged by its own parameters, not the wrapped function's,
    since a decorator may supply some of those.

    A generator function (``yield`` in a ``def`` or an ``async def``) is refused too,
    and so is a ``functools.partial`` of one or an object whose class's ``__call__`` is
    one: calling it runs none of its body, so every run would succeed having done nothing.

    ``values=False`` names the arguments by count and keyword, never by value: for a
    log line (a restored task's stored arguments may hold a token), where the
    registering caller who gave them is not the reader.
    """
    args, kwargs, pass_context = options.args, options.kwargs, options.pass_context
    code = getattr(action, "__code__", None)
    if code is not None:
        if code.co_flags & _GENERATES:
            raise _generates(name, action, code)
        if not (args or kwargs or pass_context or code.co_argcount or code.co_kwonlyargcount):
            return  # f() called as f(): nothing to bind
        key = (id(code), inspect.ismethod(action))  # by identity: see the module docstring
        signature = SIGNATURE_BY_CODE.get(key, _UNREAD)
        if signature is _UNREAD:
            signature = _signature(action)
            # A __signature__ belongs to one function, not to its code (a decorator's
            # wrappers share one code object): such a function is read each time.
            if getattr(action, "__signature__", None) is None:
                _remember(SIGNATURE_BY_CODE, key, code, signature)
    else:  # builtins, partials, classes, callable objects
        generating = _generating(action)
        if generating is not None:
            raise _generates(name, *generating)
        signature = _signature(action)
    keywords = dict(kwargs or {})
    if pass_context:
        if "ctx" in keywords:
            raise ValidationError(
                f"task {name!r}: kwargs name 'ctx', which the scheduler passes to an action "
                "that declares it (a RunContext): got "
                + (f"kwargs={shown(kwargs)}" if values else _shape((), kwargs))
            )
        keywords["ctx"] = None
    if signature is None:
        return
    try:
        signature.bind(*args, **keywords)
    except TypeError:
        wrong = checks.bind_error(signature, args, keywords)  # one wording on every Python
    else:  # Python 3.13.0's bind took f(a=1) for def f(a, /, **kw): asked once more then
        positional_only = code is None or code.co_posonlyargcount
        wrong = (
            checks.bind_error(signature, args, keywords) if keywords and positional_only else None
        )
    if wrong is not None:
        given = _given(args, kwargs) if values else _shape(args, kwargs)
        bare = signature.replace(  # the parameters, without their annotations
            parameters=[p.replace(annotation=p.empty) for p in signature.parameters.values()],
            return_annotation=signature.empty,
        )
        raise ValidationError(
            f"task {name!r}: action {_action_name(action)}{bare} cannot be called with "
            f"{given}: {wrong}"
        )


def _generating(action: object) -> tuple[Callable[..., Any], CodeType, str] | None:
    """What a partial or a callable object calls, when that is a generator function:
    the function, its code and where it was found (``" (in a functools.partial)"``, or
    ``""``); None for anything else.  A ``functools.partial`` of an async generator
    function, or an object whose class's ``__call__`` is one, was taken, and each of its
    runs recorded a success with ``<async_generator object ...>``, its body never run,
    where the function itself is refused (docs/decisions/threaded.md, "A generator
    function is refused as an action")."""
    where = ""
    while isinstance(action, partial):
        action, where = action.func, " (in a functools.partial)"
    if isinstance(action, type):  # a class: calling it makes an instance
        return None
    try:  # a function (or a bound method), else the object's class's __call__
        function = action if hasattr(action, "__code__") else type(action).__call__
    except AttributeError:
        return None
    code = getattr(function, "__code__", None)
    if callable(function) and isinstance(code, CodeType) and code.co_flags & _GENERATES:
        return function, code, where
    return None


def _generates(
    name: str, action: Callable[..., Any], code: CodeType, where: str = ""
) -> ValidationError:
    """The error of a generator function given as an action (``where`` it was found: in
    a ``functools.partial``)."""
    kind = "an async generator" if code.co_flags & inspect.CO_ASYNC_GENERATOR else "a generator"
    return ValidationError(
        f"task {name!r}: action {_action_name(action)}{where} is {kind} function (it yields): "
        f"calling it returns {kind} and runs none of its body, so every run would succeed "
        "having done nothing; make it return instead of yield"
    )


def _given(args: tuple[Any, ...], kwargs: Mapping[str, Any] | None) -> str:
    """The arguments as a registration's error shows them (its caller gave them)."""
    return f"args={shown(tuple(args))}" + (f", kwargs={shown(dict(kwargs))}" if kwargs else "")


def _shape(args: tuple[Any, ...], kwargs: Mapping[str, Any] | None) -> str:
    """The arguments by count and keyword, without a value (a log line's)."""
    count = len(args)
    said = f"{count} positional argument{'' if count == 1 else 's'}"
    if kwargs:
        said += " and the keywords " + ", ".join(repr(key) for key in kwargs)
    return said


def _signature(action: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(action, follow_wrapped=False)
    except (TypeError, ValueError):  # callables without a signature
        return None


def _action_name(action: Callable[..., Any]) -> str:
    return getattr(action, "__qualname__", None) or type(action).__qualname__


def not_callable(name: str, action: object) -> ValidationError:
    """The error of an ``action`` that cannot be called (the threaded runtime raises it
    for None too: it has nothing to run without one), with what it looks like instead:
    a coroutine (``f()`` for ``f``), a schedule or cron text (the action and the schedule
    swapped), an import path (the action of a process-isolated task)."""
    if inspect.iscoroutine(action):
        hint = " (a coroutine: pass the async def function itself, f, not f())"
    elif hasattr(action, "first_run") or (isinstance(action, str) and ":" not in action):
        hint = f" (a schedule, where the action goes: {ORDERS})"
    elif isinstance(action, str):
        hint = " (an import path is the action of a task registered with isolation='process')"
    else:
        hint = ""
    return ValidationError(f"task {name!r}: action must be callable, got {shown(action)}{hint}")
