"""Naming a function by its import path, and arguments that JSON keeps: one rule, two users.

A durable store (:mod:`lldsched.stores.codec`) keeps a task's action as text, and a
process-isolated task (``isolation="process"``, :mod:`lldsched.threaded.processes.pool`)
sends its call to a child process as text.  Both follow the same rule, which lives
here:

* a callable is named ``"package.module:qualified.name"`` (:func:`import_callable`
  imports it; :func:`import_path` names one, and checks the name imports back to the
  very same object: a lambda, a closure, a nested function, a ``functools.partial``
  or a bound method of an instance has no such name);
* ``args`` and ``kwargs`` are what ``json.dumps`` / ``json.loads`` give back unchanged
  (:func:`json_arguments`): str, int, float, bool, None, lists and str-keyed dicts.
  A tuple nested in the arguments would come back a list: refused; so is an argument
  nesting more than :data:`NESTING_LIMIT` (500) lists and dicts within one another.
  That limit is lldsched's, the same on every Python version: how deep ``json``
  writes and reads follows the interpreter (about 990 levels on Python 3.11, 1,500 on
  3.12, 10,000 on 3.13) and, on 3.11, how deep the stack already is; the check of
  what a registration could write once passed arguments 985 deep that the restore,
  a few frames deeper, could not read, and 3.13 wrote 5,000-deep arguments a 3.11
  node of the same store could not read (docs/decisions/platforms.md, "Python 3.12 and 3.13").
  The callers' messages quote such values by :func:`~lldsched.errors.shown`, whose
  ``repr`` does not raise ``RecursionError`` on them.

Each function raises ``error`` (the caller's: :class:`~lldsched.errors.StoreError`
when a store reads, :class:`~lldsched.errors.ValidationError` at registration) with
the bad value in the message.  No pickle anywhere: only a module is imported.

**Trust.**  Importing a path runs the module's top-level code, and calling what it
names runs that: whoever can write a store's rows (or the text sent to a worker
process) can run any importable callable with arguments of their choice
(``"builtins:exec"`` included), so a store is as trusted as the code itself
(docs/decisions/security.md, "Security and trust").  What this module does refuse is anything
beyond the documented form: the module and the qualified name must be dotted
identifiers, and no part of the qualified name may be a dunder (``"m:f.__class__"``,
``"m:C.__init__.__globals__"``): a path names a function or class, it does not walk
through objects.
"""

from __future__ import annotations

import importlib
import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any

from lldsched.errors import ValidationError

__all__ = ["NESTING_LIMIT", "import_callable", "import_path", "json_arguments"]

NESTING_LIMIT = 500
"""How many lists and dicts one argument may nest within one another (``[[1]]``: 2)."""

_STACK_TOO_DEEP = (
    "they nest deeper than JSON can be written or read here (Python's recursion limit, "
    "on a call stack this deep)"
)


def import_callable(
    path: object, *, error: type[Exception] = ValidationError
) -> Callable[..., Any]:
    """Import the callable named ``"module:qualname"``; ``error`` if it does not import."""
    if not isinstance(path, str):
        raise error(f"{path!r} is not an import path of the form 'package.module:function'")
    module_name, colon, qualname = path.partition(":")
    if not colon or not _dotted(module_name) or not _dotted(qualname):
        raise error(f"{path!r} is not an import path of the form 'package.module:function'")
    if any(part.startswith("__") and part.endswith("__") for part in qualname.split(".")):
        raise error(
            f"{path!r} walks into a dunder attribute: an import path names a function "
            "or class by its own qualified name"
        )
    try:
        found: Any = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or whatever the module raised while importing
        raise error(f"cannot import module {module_name!r} for {path!r}: {exc!r}") from None
    for part in qualname.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise error(f"{path!r}: {module_name!r} has no attribute {qualname!r}") from None
    if not callable(found):
        raise error(f"{path!r} names {found!r}, which is not callable")
    return found  # type: ignore[no-any-return]


def _dotted(name: str) -> bool:
    """``name`` is identifiers joined by dots (``"a.b"``, never ``""``, ``"a..b"`` or ``"a b"``)."""
    return all(part.isidentifier() for part in name.split("."))


def import_path(
    action: Callable[..., Any], *, who: str, error: type[Exception] = ValidationError
) -> str:
    """``"module:qualname"`` of ``action``, checked to import back to the same object.

    ``who`` says who needs the path, for the message (``"a durable store"``).
    """
    module = getattr(action, "__module__", None)
    qualname = getattr(action, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
        raise error(
            f"{who} keeps the action as an import path, and {action!r} has none "
            "(a lambda, closure, nested function, partial or callable object): "
            "use a function defined at module level"
        )
    path = f"{module}:{qualname}"
    try:
        found = import_callable(path, error=ValidationError)
    except ValidationError as exc:
        raise error(f"the action {action!r} does not import back: {exc}") from None
    if found is not action and found != action:  # == for classmethods, bound anew each time
        raise error(
            f"the action {action!r} does not round-trip: {path!r} imports {found!r}; "
            + _why_another(action, found, name=(module, qualname))
        )
    return path


def _why_another(action: Callable[..., Any], found: object, *, name: tuple[str, str]) -> str:
    """Why ``action``'s path (``name``: its module and qualified name) imports ``found``,
    another object: a bound method of an instance (its path names the class's
    function), or a function whose module's name now holds another definition of it
    (``importlib.reload``, a plugin host's reload, the same ``def`` run again) while the
    caller still holds the earlier one (it was told "a bound method of an instance
    cannot be named", of a plain function)."""
    same_name = (getattr(found, "__module__", None), getattr(found, "__qualname__", None))
    if same_name == name and not inspect.ismethod(action):
        return (
            "its module holds another definition of that name now (the module was "
            "reloaded, or the def run again): register the one it holds now "
            "(module.function, read after the reload)"
        )
    return "a bound method of an instance cannot be named, use a module-level function"


def json_arguments(
    args: tuple[Any, ...] | list[Any], kwargs: Mapping[str, Any] | None
) -> tuple[list[Any], dict[str, Any] | None]:
    """``args`` and ``kwargs`` as JSON-ready values; ``ValueError`` (or ``TypeError``) if
    JSON would not give them back unchanged."""
    arguments = list(args)
    keywords = dict(kwargs) if kwargs is not None else None
    document = [arguments, keywords]
    try:
        text = json.dumps(document, allow_nan=False)
        # Each list and dict writes a bracket (so do brackets in strings): with no more
        # brackets than the limit, no argument can nest deeper, and none is walked.
        walk = text.count("[") + text.count("{") > NESTING_LIMIT
    except RecursionError:  # deeper than json writes on this Python and stack
        text, walk = "", True
    if walk:
        deepest = _nesting(document) - 2  # less the document's list and args' list
        if deepest > NESTING_LIMIT:
            raise ValueError(
                f"they nest {deepest} lists and dicts within one another, more than the "
                f"{NESTING_LIMIT} a stored or process-isolated call keeps (lldsched's limit, "
                "the same on every Python version: deeper arguments could be written "
                "here and not read back at a restart or by another Python)"
            )
    if not text:  # within the limit, yet deeper than json writes on a stack this deep
        raise ValueError(_STACK_TOO_DEEP)
    try:
        kept = json.loads(text) == document
    except RecursionError:
        raise ValueError(_STACK_TOO_DEEP) from None
    if not kept:
        raise ValueError("they change on the way through JSON")
    return arguments, keywords


def _nesting(value: object) -> int:
    """How many lists, tuples and dicts ``value`` nests within one another (``[[1]]``:
    2), walked without recursion, whatever the depth."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list | tuple):
            depth += 1
            deepest = max(deepest, depth)
            stack.extend((inner, depth) for inner in item)
    return deepest
