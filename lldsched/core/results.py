"""What an action returned: the text a record keeps, and the one test for "must be awaited".

A record carries an action's return value as **text** (:func:`result_text`): the
``repr`` of the value cut to :data:`RESULT_LIMIT` characters.  Never the object
itself (a record must stay small, immutable and storable) and never a pickle (a
store reads back data, never code).  ``None`` stays ``None``.

A return value that is **awaitable** (a coroutine from an ``async def`` action, a
future, anything with ``__await__``, and a thread's ``concurrent.futures.Future``:
:func:`must_await`) is not a result yet: the
runtime awaits it (the threaded runtime on its event loop, the simulation on a
private loop) and records what *that* produced, and so on while what it produced is
awaitable too (:func:`awaited`: a coroutine that returns ``fetch()`` where it meant
``return await fetch()``).  No awaitable is ever recorded as a success without being
awaited.  An async generator object (``return stream()``, ``stream`` an ``async def``
that yields) is no awaitable, and none of its body ran: awaiting it fails the run,
saying so (:func:`as_awaitable`), where it was recorded a success with its ``repr``.
What such a run started and left on that loop (a background task) is cancelled when
the runtime closes the loop (:func:`end_left_tasks`).
"""

from __future__ import annotations

import inspect
import sys
from types import AsyncGeneratorType
from typing import TYPE_CHECKING, Any, NoReturn

from lldsched.errors import escaped

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "RESULT_LIMIT",
    "as_awaitable",
    "awaited",
    "end_left_tasks",
    "must_await",
    "result_text",
]

RESULT_LIMIT = 200
"""The longest result text a record keeps, in characters (a longer ``repr`` is cut
and ends with ``"..."``)."""


def result_text(value: object) -> str | None:
    """``repr(value)`` cut to :data:`RESULT_LIMIT` characters; None for None.

    A ``repr`` that raises does not fail the run: the text says so instead, whatever it
    raised (a ``KeyboardInterrupt`` or ``SystemExit`` too: raised out of a worker's
    completion it killed the worker thread, left a coroutine run in flight and failed a
    process-isolated run that had succeeded).  A lone
    surrogate or NUL in it is written as its escape (:func:`lldsched.errors.escaped`).
    """
    if value is None:
        return None
    try:
        if type(value) in _LONG:
            try:
                text = _head(value, RESULT_LIMIT, set())
            except _Cycle:  # a container that holds itself: repr writes "[...]" for it
                text = repr(value)
        else:
            text = repr(value)
    except BaseException as exc:  # a user's __repr__: whatever it raised is named
        text = f"<{type(value).__qualname__} whose repr raised {type(exc).__name__}>"
    if len(text) > RESULT_LIMIT:
        text = text[: RESULT_LIMIT - 3] + "..."
    return escaped(text)  # a repr of one's own may hold a surrogate no store can write


_OPENINGS: dict[type, str] = {list: "[", tuple: "(", set: "{", frozenset: "frozenset({", dict: "{"}
_LONG = frozenset((str, bytes, bytearray, *_OPENINGS))  # what can be long: see _head


class _Cycle(Exception):
    """A container met inside itself while its head was written."""


def _head(value: object, budget: int, active: set[int]) -> str:
    """``repr(value)``, or a prefix of it longer than ``budget`` characters, built
    without the rest: what the record keeps of a long ``str``, ``bytes``, ``list``,
    ``tuple``, ``set``, ``frozenset`` or ``dict`` (those exact types, at any depth) no
    longer costs its whole ``repr``.  Before, a job that returned a downloaded file's
    ``bytes`` or three million ids built a ``repr`` of several times their size, on
    the worker, to keep 200 characters of it (3,000,000 ints: 26 MB and seconds).
    Any other type's own ``repr`` is used (pandas and numpy shorten theirs)."""
    kind = type(value)
    if kind is str or kind is bytes or kind is bytearray:
        text: Any = value
        if len(text) <= budget:
            return repr(text)
        head = text[: budget + 1]  # its repr is longer than the budget, and a prefix of
        quote, other = ("'", '"') if kind is str else (b"'", b'"')  # text's when repr
        if (quote in head and other not in head) == (quote in text and other not in text):
            return repr(head)  # picks the same quotes for both
        return repr(text)
    opening = _OPENINGS.get(kind)
    container: Any = value
    if opening is None or not container:
        return repr(value)
    if id(value) in active:
        raise _Cycle
    active.add(id(value))
    written = opening
    pairs = kind is dict
    for item in container.items() if pairs else container:
        if pairs:
            key, item = item
            written += _head(key, budget - len(written), active)
            if len(written) > budget:
                return written
            written += ": "
        written += _head(item, budget - len(written), active)
        if len(written) > budget:
            return written
        written += ", "
    active.discard(id(value))
    return repr(value)  # short enough: written whole, by repr itself


def must_await(value: object) -> bool:
    """True when ``value`` is awaitable, or a ``concurrent.futures.Future``: it is run to
    completion (:func:`as_awaitable`), not recorded as is.

    A thread's future is what ``asyncio.run_coroutine_threadsafe(coro, app_loop)`` returns,
    the recipe of docs/ASYNCIO.md for reaching the application's loop, and what an
    executor's ``submit`` returns: a job that returned one (its ``await`` forgotten) was
    recorded a success with ``'<Future at 0x... state=pending>'`` while the work went on
    unwatched, its value and its error lost (docs/decisions/threaded.md, "A thread's
    future an action returns is awaited too").  No thread's future exists unless
    ``concurrent.futures`` was imported, and the look-up is made only for a value that is
    not awaitable."""
    if inspect.isawaitable(value) or type(value) is AsyncGeneratorType:  # the latter: refused
        return True
    futures = sys.modules.get("concurrent.futures")
    return futures is not None and isinstance(value, futures.Future)


def as_awaitable(value: Any) -> Any:
    """``value`` (:func:`must_await`) as something to ``await``: itself, or a thread's
    future wrapped for the running loop (``asyncio.wrap_future``: its cancellation, at a
    run's timeout, ``cancel`` or ``pause``, cancels that future, and so the coroutine
    ``run_coroutine_threadsafe`` runs on the application's loop).  Called on the loop that
    awaits it.  The simulation's loop (:class:`~lldsched.sim.looptime.SkippingLoop`),
    whose clock would otherwise skip the wait to the run's timeout, sees the wrap (as it
    sees one a coroutine makes) and waits for the thread."""
    if inspect.isawaitable(value):
        return value
    if type(value) is AsyncGeneratorType:
        return _refused(value)
    import asyncio  # imported by whoever runs the loop this is called on

    return asyncio.wrap_future(value, loop=asyncio.get_running_loop())


async def _refused(generator: AsyncGeneratorType[Any, Any]) -> NoReturn:
    """Fail the run that returned ``generator``, an async generator object, saying what it
    is: none of its body ran, and a record keeps a result's text, so nothing could iterate
    it (docs/decisions/threaded.md, "An async generator an action returns fails its run").
    Closed first (it never started: its ``finally`` does not run either)."""
    await generator.aclose()
    name = getattr(generator, "__qualname__", type(generator).__name__)
    raise TypeError(
        f"the action returned an async generator ({name}) and none of its body ran: "
        f"a run's result is kept as text, nothing iterates it; iterate it in an async def "
        f"job (async for item in {name}(...): ...), or return what it yields"
    )


async def awaited(awaitable: Any) -> object:
    """What awaiting ``awaitable`` gives, awaited again while that is awaitable: the
    value a run records.  A coroutine action that returns a coroutine (``return
    fetch()``, the ``await`` forgotten) was recorded a success with
    ``'<coroutine object fetch at 0x...>'``, its body never run, and asyncio warned
    "coroutine 'fetch' was never awaited" only when it was collected; a plain function
    that returns one has it awaited (:func:`must_await`), and so now has a coroutine
    (docs/decisions/threaded.md, "An awaitable a coroutine returns is awaited too").  The
    threaded event loop awaits it in its one task a run (``CoroutineRunner._drive``)."""
    value = await as_awaitable(awaitable)
    while value is not None and must_await(value):
        value = await as_awaitable(value)
    return value


def end_left_tasks(loop: asyncio.AbstractEventLoop, wait: float) -> None:
    """Cancel the tasks still on ``loop`` (stopped, not closed: on its thread) and run
    it until they end, for at most ``wait`` seconds, as ``asyncio.run`` does at its end:
    the tasks a coroutine action started and did not await (a ``create_task`` that
    outlived its run), and a run deaf to its cancellation.  A background task gets its
    ``CancelledError`` and runs its ``finally`` before its runtime closes the loop,
    rather than being dropped pending with it ("Task was destroyed but it is
    pending!"); one still not over after ``wait`` is left there."""
    import asyncio  # imported already by whoever made the loop

    tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.wait(tasks, timeout=wait))
