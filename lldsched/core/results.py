"""What an action returned: the text a record keeps, and the one test for "must be awaited".

A record carries an action's return value as **text** (:func:`result_text`): the
``repr`` of the value cut to :data:`RESULT_LIMIT` characters.  Never the object
itself (a record must stay small, immutable and storable) and never a pickle (a
store reads back data, never code).  ``None`` stays ``None``.

A return value that is **awaitable** (a coroutine from an ``async def`` action, a
future, anything with ``__await__``: :func:`must_await`) is not a result yet: the
runtime awaits it (the threaded runtime on its event loop, the simulation on a
private loop) and records what *that* produced.  No awaitable is ever recorded as
a success without being awaited.
"""

from __future__ import annotations

import inspect

__all__ = ["RESULT_LIMIT", "must_await", "result_text"]

RESULT_LIMIT = 200
"""The longest result text a record keeps, in characters (a longer ``repr`` is cut
and ends with ``"..."``)."""


def result_text(value: object) -> str | None:
    """``repr(value)`` cut to :data:`RESULT_LIMIT` characters; None for None.

    A ``repr`` that raises does not fail the run: the text says so instead.
    """
    if value is None:
        return None
    try:
        text = repr(value)
    except Exception as exc:
        text = f"<{type(value).__qualname__} whose repr raised {type(exc).__name__}>"
    if len(text) > RESULT_LIMIT:
        text = text[: RESULT_LIMIT - 3] + "..."
    return text


def must_await(value: object) -> bool:
    """True when ``value`` is awaitable: it is run to completion, not recorded as is."""
    return inspect.isawaitable(value)
