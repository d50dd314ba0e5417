"""Naming a function by its import path, and arguments that JSON keeps: one rule, two users.

A durable store (:mod:`lldsched.stores.codec`) keeps a task's action as text, and a
process-isolated task (``isolation="process"``, :mod:`lldsched.threaded.processes`)
sends its call to a child process as text.  Both follow the same rule, which lives
here:

* a callable is named ``"package.module:qualified.name"`` (:func:`import_callable`
  imports it; :func:`import_path` names one, and checks the name imports back to the
  very same object: a lambda, a closure, a nested function, a ``functools.partial``
  or a bound method of an instance has no such name);
* ``args`` and ``kwargs`` are what ``json.dumps`` / ``json.loads`` give back unchanged
  (:func:`json_arguments`): str, int, float, bool, None, lists and str-keyed dicts.
  A tuple nested in the arguments would come back a list: refused; so are values
  nested deeper than Python's recursion limit lets JSON write them (``RecursionError``);
  the callers' messages quote them by :func:`~lldsched.errors.shown`, whose ``repr``
  does not raise that too.

Each function raises ``error`` (the caller's: :class:`~lldsched.errors.StoreError`
when a store reads, :class:`~lldsched.errors.ValidationError` at registration) with
the bad value in the message.  No pickle anywhere: only a module is imported.

**Trust.**  Importing a path runs the module's top-level code, and calling what it
names runs that: whoever can write a store's rows (or the text sent to a worker
process) can run any importable callable with arguments of their choice
(``"builtins:exec"`` included), so a store is as trusted as the code itself
(docs/DECISIONS.md, "Security and trust").  What this module does refuse is anything
beyond the documented form: the module and the qualified name must be dotted
identifiers, and no part of the qualified name may be a dunder (``"m:f.__class__"``,
``"m:C.__init__.__globals__"``): a path names a function or class, it does not walk
through objects.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from lldsched.errors import ValidationError

__all__ = ["import_callable", "import_path", "json_arguments"]


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
            "a bound method of an instance cannot be named, use a module-level function"
        )
    return path


def json_arguments(
    args: tuple[Any, ...] | list[Any], kwargs: Mapping[str, Any] | None
) -> tuple[list[Any], dict[str, Any] | None]:
    """``args`` and ``kwargs`` as JSON-ready values; ``ValueError`` (or ``TypeError``) if
    JSON would not give them back unchanged."""
    arguments = list(args)
    keywords = dict(kwargs) if kwargs is not None else None
    try:
        text = json.dumps([arguments, keywords], allow_nan=False)
        kept = json.loads(text) == [arguments, keywords]
    except RecursionError:  # a bare RecursionError named no task: a ValueError, as the rest
        raise ValueError(
            "they nest deeper than JSON can be written or read here (Python's recursion limit)"
        ) from None
    if not kept:
        raise ValueError("they change on the way through JSON")
    return arguments, keywords
