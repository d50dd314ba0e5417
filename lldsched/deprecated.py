"""Old call forms kept working for a release, with a ``DeprecationWarning``.

One rule for every parameter that became keyword-only: a call that still passes it by
position is accepted, the value goes to the parameter that position used to fill, and
a ``DeprecationWarning`` names the parameters to write by keyword (docs/UPGRADING.md,
"Deprecated").  The wrapped function keeps its new signature for ``inspect``, ``help``
and type checkers, so a strict user's mypy flags the old form before it stops working.
Standard library only.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

__all__ = ["keyword_only_now"]

P = ParamSpec("P")
R = TypeVar("R")


def keyword_only_now(
    *, kept: int, moved: tuple[str, ...]
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Wrap a method whose positional parameters after the first ``kept`` (``self``
    not counted) became the keyword-only ``moved``, in their old order."""

    def wrap(function: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(function)
        def called(*args: Any, **kwargs: Any) -> R:
            extra = args[1 + kept :]
            if extra:
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
                warnings.warn(
                    f"{function.__qualname__.split('.')[0]}: passing "
                    f"{', '.join(names)} by position is deprecated (docs/UPGRADING.md); "
                    f"write {', '.join(f'{name}=...' for name in names)}",
                    DeprecationWarning,
                    stacklevel=2,
                )
                args = args[: 1 + kept]
            return function(*args, **kwargs)

        return called

    return wrap
