"""Old call forms kept working for a release, with a ``DeprecationWarning``.

One rule for every parameter that became keyword-only: a call that still passes it by
position is accepted, the value goes to the parameter that position used to fill, and
a ``DeprecationWarning`` names the parameters to write by keyword and the release that
refuses the old form, :data:`REMOVED_IN` (docs/UPGRADING.md, "Deprecated call forms").
The wrapped function keeps its new signature for ``inspect``, ``help`` and type
checkers, so a strict user's mypy flags the old form before it stops working; a
coroutine function stays one (its warning is raised when it is first awaited, so it
names the line that awaits it).  Standard library only.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

from lldsched.errors import doc_url

__all__ = ["REMOVED_IN", "keyword_only_now"]

REMOVED_IN = "0.2.0"
"""The release from which the positional forms wrapped here raise ``TypeError``: the next
minor release after 0.1, the one that deprecated them (before 1.0 a minor release may
break; a form deprecated in 0.1.x keeps working for all of 0.1.x).  A form deprecated
later gets its own decorator argument when that day comes."""

P = ParamSpec("P")
R = TypeVar("R")


def keyword_only_now(
    *, kept: int, moved: tuple[str, ...]
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Wrap a method whose positional parameters after the first ``kept`` (``self``
    not counted) became the keyword-only ``moved``, in their old order."""

    def wrap(function: Callable[P, R]) -> Callable[P, R]:
        def moving(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
            extra = args[1 + kept :]
            if not extra:
                return args
            if len(extra) > len(moved):
                raise TypeError(
                    f"{function.__qualname__}() takes at most {1 + kept + len(moved)} "
                    f"positional arguments ({len(args)} given)"
                )
            names = moved[: len(extra)]
            for name, value in zip(names, extra, strict=True):
                if name in kwargs:
                    raise TypeError(
                        f"{function.__qualname__}() got multiple values for argument {name!r}"
                    )
                kwargs[name] = value
            kind = type(args[0]).__name__  # what the caller called: its class, a subclass
            called = kind if function.__name__ == "__init__" else f"{kind}.{function.__name__}"
            warnings.warn(
                f"{called}: passing {', '.join(names)} by position is deprecated and "
                f"refused from lldsched {REMOVED_IN} on ({doc_url('docs/UPGRADING.md')}); "
                "write "
                f"{', '.join(f'{name}=...' for name in names)}",
                DeprecationWarning,
                stacklevel=3,
            )
            return args[: 1 + kept]

        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def awaited(*args: Any, **kwargs: Any) -> Any:
                args = moving(args, kwargs)
                return await function(*args, **kwargs)

            return cast("Callable[P, R]", awaited)

        @functools.wraps(function)
        def called(*args: Any, **kwargs: Any) -> R:
            args = moving(args, kwargs)
            return function(*args, **kwargs)

        return called

    return wrap
